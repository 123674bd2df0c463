// `replisim report`: the report, summary, Chrome trace and events CSV of saved native traces,
// rebuilt by the same code as `simulate` without simulating again.
#include <algorithm>
#include <iostream>
#include <ostream>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/run_outputs.h"
#include "core/base/error.h"
#include "core/metrics/report.h"
#include "core/pipeline/run_pipeline.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_merge.h"

namespace replisim::cli {
namespace {

constexpr const char* kStandardInput = "-";

// How messages name a TRACE argument.
std::string source_name(const std::string& file) {
  return file == kStandardInput ? "<standard input>" : file;
}

std::string text_at(const nlohmann::json& json, const char* key) {
  const auto found = json.is_object() ? json.find(key) : json.end();
  return found != json.end() && found->is_string() ? found->get<std::string>() : "?";
}

// A real run's network, as its provenance says ("loopback" before runs recorded it).
std::string real_network(const nlohmann::json& provenance) {
  const std::string network = text_at(provenance, "network");
  return network == "?" ? std::string("loopback") : network;
}

// The title simulate printed for this run, from the trace's metadata and provenance.
RunTitle title_of(const core::Trace& trace) {
  const nlohmann::json& provenance = trace.meta.provenance;
  const auto seed = provenance.is_object() ? provenance.find("seed") : provenance.end();
  const bool real = trace.meta.backend == "real";
  const std::string file = text_at(provenance, "scenario_file");
  return {trace.meta.scenario,
          file == "?" && real ? text_at(provenance, "plan_file") : file,
          trace.meta.backend.empty() ? "?" : trace.meta.backend,
          real ? real_network(provenance) : network_model_name(trace.meta.platform.network_model),
          seed != provenance.end() && seed->is_number_integer() ? seed->dump()
                                                                : std::to_string(trace.meta.seed),
          engine_title(provenance),
          real ? "" : transport_title(trace.meta.platform.transport)};
}

// The workload lines simulate and run printed (workload_line), from the runs' provenance: one
// line when every run that recorded one recorded the same, else one per distinct line, each
// named by its scenario ("workload (scenario \"NAME\"): ..."); "" when none did (traces written
// before runs recorded it, or by a node of a cluster).
std::string workloads_of(const std::vector<const core::Trace*>& traces) {
  std::vector<std::pair<std::string, std::string>> distinct;  // (scenario, line)
  size_t without = 0;                                         // runs that recorded none
  for (const core::Trace* trace : traces) {
    const std::string line = text_at(trace->meta.provenance, "workload");
    if (line == "?") {
      ++without;
      continue;
    }
    const std::pair<std::string, std::string> entry{trace->meta.scenario, line};
    if (std::find(distinct.begin(), distinct.end(), entry) == distinct.end())
      distinct.push_back(entry);
  }
  // Named when a line does not describe every run shown.
  const bool named = distinct.size() > 1 || (!distinct.empty() && without > 0);
  std::string text;
  const std::string prefix = "workload: ";
  for (const auto& [scenario, line] : distinct) {
    text += "\n" + (named && line.rfind(prefix, 0) == 0
                        ? "workload (scenario \"" + scenario + "\"): " + line.substr(prefix.size())
                        : line);
  }
  return text;
}

// simulate's title (each distinct one when the runs come from different simulations), then
// where the runs were read from, then their workload lines.
std::string report_title(const std::vector<core::Trace>& traces,
                         const std::vector<std::string>& files) {
  std::vector<RunTitle> distinct;
  for (const core::Trace& trace : traces) {
    const RunTitle title = title_of(trace);
    if (std::find(distinct.begin(), distinct.end(), title) == distinct.end()) {
      distinct.push_back(title);
    }
  }
  const std::string prefix = "replisim: ";
  std::string line = title_line(distinct.front());
  for (size_t i = 1; i < distinct.size(); ++i) {
    line += "; " + title_line(distinct[i]).substr(prefix.size());
  }
  line += files.size() == 1 ? ", from saved trace " : ", from saved traces ";
  for (size_t i = 0; i < files.size(); ++i) {
    line += (i > 0 ? ", " : "") + (files[i] == kStandardInput ? "standard input" : files[i]);
  }
  std::vector<const core::Trace*> runs;
  for (const core::Trace& trace : traces) runs.push_back(&trace);
  return line + workloads_of(runs);
}

// The runs' common provenance, or an array of each run's when they differ (docs/cli.md).
nlohmann::json shared_provenance(const std::vector<core::Trace>& traces) {
  nlohmann::json each = nlohmann::json::array();
  for (const core::Trace& trace : traces) each.push_back(trace.meta.provenance);
  for (const nlohmann::json& p : each) {
    if (p != each.front()) return each;
  }
  return each.front();
}

}  // namespace

int run_report(const CliArgs& args, std::ostream& out) {
  RunSet runs;
  // Outputs are checked before any trace is read, and may not replace one of them.
  core::OutputFiles outputs(args.force, &out);
  if (std::count(args.trace_files.begin(), args.trace_files.end(), kStandardInput) > 1) {
    throw core::InputError("", kStandardInput, "given twice (standard input can be read once)");
  }
  for (const std::string& file : args.trace_files) {
    // Standard input redirected from a file: that file is an input too.
    outputs.protect(file == kStandardInput ? "/proc/self/fd/0" : file,
                    file == kStandardInput ? "read from standard input" : "");
  }
  add_run_outputs(outputs, args, runs, std::cerr);
  outputs.set_cancel(interrupted);
  for (const std::string& file : args.trace_files) {
    if (interrupted()) throw core::RunCancelled();
    // "-": a trace piped in (`replisim simulate s.json --trace-out - | replisim report -`).
    std::vector<core::Trace> read =
        file == kStandardInput ? read_piped_traces(source_name(file)) : core::read_trace_file(file);
    if (args.merge && read.size() != 1) {
      throw core::InputError(source_name(file), "",
                             "holds " + std::to_string(read.size()) +
                                 " runs; --merge takes each node's part of one run");
    }
    for (core::Trace& trace : read) {
      const std::string task = text_at(trace.meta.provenance, "task");
      if (!args.merge && trace.meta.backend == "real" && task != "?") {
        throw core::InputError(
            source_name(file), "",
            "task " + task + "'s part of a real run: report --merge every node's trace");
      }
      if (!args.merge) runs.metrics.push_back(core::measure_trace(trace, source_name(file)));
      runs.traces.push_back(std::move(trace));
    }
  }
  if (args.merge) {
    std::vector<std::string> sources;
    for (const std::string& file : args.trace_files) sources.push_back(source_name(file));
    core::Trace merged = core::merge_parts(runs.traces, sources);
    runs.traces.clear();
    runs.metrics.push_back(core::measure_trace(merged, "the merged trace"));
    runs.traces.push_back(std::move(merged));
  }
  runs.provenance = shared_provenance(runs.traces);
  (outputs.writes_standard_output() ? std::cerr : out)
      << core::format_report(runs.metrics, report_title(runs.traces, args.trace_files));
  outputs.write_all();
  return 0;
}

void print_gathered_report(const core::Trace& run, const std::string& file, std::ostream& out) {
  const std::vector<core::RunMetrics> metrics = {core::measure_trace(run, file)};
  out << core::format_report(
      metrics, title_line(title_of(run)) + ", gathered into " + file + workloads_of({&run}));
}

}  // namespace replisim::cli
