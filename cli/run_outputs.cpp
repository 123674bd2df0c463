#include "cli/run_outputs.h"

#include <algorithm>
#include <ostream>

#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/metrics/report.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/trace_csv.h"
#include "core/trace/trace_format.h"

namespace replisim::cli {
namespace {

std::vector<const core::Trace*> pointers(const std::vector<core::Trace>& traces) {
  std::vector<const core::Trace*> out;
  for (const core::Trace& t : traces) out.push_back(&t);
  return out;
}

}  // namespace

bool RunTitle::operator==(const RunTitle& other) const {
  return scenario_name == other.scenario_name && scenario_file == other.scenario_file &&
         backend == other.backend && network == other.network && seed == other.seed &&
         engine == other.engine && transport == other.transport;
}

std::string engine_title(const nlohmann::json& provenance) {
  if (!provenance.is_object()) return "";
  const auto engine = provenance.find("network_engine");
  const auto tolerance = provenance.find("tolerance_s");
  if (engine == provenance.end() || !engine->is_string()) return "";
  std::string out = "network engine " + engine->get<std::string>();
  if (tolerance != provenance.end() && tolerance->is_number()) {
    out += ", tolerance " + core::format_quantity(tolerance->get<double>(), core::Dimension::kTime);
  }
  return out;
}

std::string transport_title(const core::Transport& transport) {
  const std::vector<std::string> presets = core::transport_preset_names();
  if (std::find(presets.begin(), presets.end(), transport.preset) == presets.end()) {
    return transport.preset;
  }
  const bool changed = core::transport_to_json(transport) !=
                       core::transport_to_json(core::transport_preset(transport.preset));
  if (transport.preset == "ideal" && !changed) return "";
  return transport.preset + (changed ? " (changed)" : "");
}

std::string title_line(const RunTitle& title) {
  return "replisim: scenario \"" + title.scenario_name + "\" (" + title.scenario_file + "), " +
         title.backend + " backend" + (title.engine.empty() ? "" : " (" + title.engine + ")") +
         ", " + title.network + " network" +
         (title.transport.empty() ? "" : ", " + title.transport + " transport") +
         (title.seed.empty() ? "" : ", seed " + title.seed);
}

void add_run_outputs(core::OutputFiles& outputs, const CliArgs& args, const RunSet& runs) {
  if (!args.json_path.empty()) {
    outputs.add("--json", args.json_path, [&runs](std::ostream& file) {
      file << core::dump_json(core::summary_json(runs.metrics, runs.provenance), 2) << "\n";
    });
  }
  if (!args.trace_path.empty()) {
    outputs.add("--trace", args.trace_path, [&runs, &args](std::ostream& file) {
      std::vector<core::ChromeTraceInput> inputs;
      for (const core::Trace& trace : runs.traces) {
        inputs.push_back({&trace, runs.traces.size() > 1 ? trace.meta.strategy + " " : ""});
      }
      core::write_chrome_trace(file, inputs, runs.provenance,
                               {args.trace_from_s, args.trace_until_s});
    });
  }
  if (!args.trace_out_path.empty()) {
    outputs.add("--trace-out", args.trace_out_path, [&runs](std::ostream& file) {
      core::write_traces_binary(file, pointers(runs.traces));
    });
  }
  if (!args.csv_path.empty()) {
    outputs.add("--csv", args.csv_path, [&runs](std::ostream& file) {
      core::write_events_csv(file, pointers(runs.traces), runs.provenance);
    });
  }
}

}  // namespace replisim::cli
