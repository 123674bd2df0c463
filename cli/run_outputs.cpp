#include "cli/run_outputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <ostream>
#include <streambuf>

#include "cli/interrupt.h"
#include "core/base/error.h"
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

// A stream buffer that only counts what is written to it.
class ByteCounter : public std::streambuf {
 public:
  double bytes() const { return bytes_; }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) bytes_ += 1;
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes_ += double(n);
    return n;
  }

 private:
  double bytes_ = 0;
};

// Writes one trace output, first announcing it on `notices` when it is estimated over
// kLargeTraceOutputBytes.
void write_announced(std::ostream& file, std::ostream& notices, const std::string& flag,
                     const std::string& path, const std::vector<const core::Trace*>& runs,
                     const TraceWriter& write, const core::TimelineWindow& window = {}) {
  const double bytes = estimated_trace_output_bytes(runs, write, window);
  if (bytes > kLargeTraceOutputBytes) {
    size_t events = 0;
    for (const core::Trace* t : runs) {
      for (const core::TraceEvent& e : t->events) events += window.overlaps(e.start_s, e.end_s);
    }
    notices << "replisim: " << flag << " " << path << ": about "
            << core::format_quantity(bytes, core::Dimension::kBytes, 3) << " (" << events
            << " events); writing it" << std::endl;
  }
  write(file, runs);
}

}  // namespace

double estimated_trace_output_bytes(const std::vector<const core::Trace*>& runs,
                                    const TraceWriter& write, const core::TimelineWindow& window,
                                    size_t sample_events) {
  // What every file has whatever its events (metadata, string table, headers), then the sample:
  // the estimate is that part plus the sample's bytes per event times the events kept.
  std::vector<core::Trace> bare, samples;
  double kept = 0, sampled = 0;
  for (const core::Trace* run : runs) {
    core::Trace sample = *run;
    sample.events.clear();
    sample.counters.clear();
    bare.push_back(sample);
    size_t run_kept = 0;
    for (const core::TraceEvent& e : run->events) {
      if (!window.overlaps(e.start_s, e.end_s)) continue;
      ++run_kept;
      if (sample.events.size() < sample_events) sample.events.push_back(e);
    }
    // The counters in the same proportion.
    sample.counters.assign(
        run->counters.begin(),
        run->counters.begin() + long(run_kept > sample.events.size()
                                         ? double(run->counters.size()) *
                                               double(sample.events.size()) / double(run_kept)
                                         : double(run->counters.size())));
    kept += double(run_kept);
    sampled += double(sample.events.size());
    samples.push_back(std::move(sample));
  }
  auto bytes_of = [&write](const std::vector<core::Trace>& traces) {
    ByteCounter counter;
    std::ostream out(&counter);
    write(out, pointers(traces));
    return counter.bytes();
  };
  const double fixed = bytes_of(bare);
  const double with_sample = bytes_of(samples);
  if (!(sampled > 0)) return with_sample;
  return fixed + (with_sample - fixed) * kept / sampled;
}

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

namespace {

// `value` in `units` of 1000 each ("%.4g" of the largest that keeps it at least 1): "10 Gbit/s",
// "25.56 M", "40 B".
std::string scaled_text(double value, const std::vector<std::string>& units) {
  size_t u = 0;
  while (u + 1 < units.size() && std::abs(value) >= 1000) {
    value /= 1000;
    ++u;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.4g", value);
  return std::string(text) + units[u];
}

// Bits per second, as NICs are sold, in the units scenarios give them ("10 Gbps").
std::string bits_per_s_text(double bytes_per_s) {
  return scaled_text(8 * bytes_per_s, {" bps", " kbps", " Mbps", " Gbps", " Tbps"});
}

std::string count_text(size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// ", one switch"; ", 4 racks of 8 machines, uplinks 3:1 oversubscribed"; a fat tree's levels
// above the racks after it: "; 4 pods of 16 racks, uplinks 4:1 oversubscribed".
std::string topology_text(const core::TopologySpec& topology) {
  if (!topology.has_racks()) return ", one switch";
  const auto uplinks = [](double oversubscription, const core::LinkSpec& uplink) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3g:1", oversubscription);
    return oversubscription > 0 ? std::string(ratio) + " oversubscribed"
                                : bits_per_s_text(uplink.bandwidth_bytes_per_s);
  };
  std::string text = ", " + count_text(size_t(topology.rack_count), "rack", "racks") + " of " +
                     count_text(size_t(topology.machines_per_rack), "machine", "machines") +
                     ", uplinks " + uplinks(topology.oversubscription, topology.uplink);
  // Level 1's groups are pods (of racks), level 2's superpods (of pods), as the platform names
  // their links (core/hardware/platform.h).
  const auto group = [](size_t level, size_t n) {
    if (level == 1) return count_text(n, "pod", "pods");
    if (level == 2) return count_text(n, "superpod", "superpods");
    return count_text(n, "level-" + std::to_string(level) + " group",
                      "level-" + std::to_string(level) + " groups");
  };
  for (size_t k = 0; k < topology.upper_levels.size(); ++k) {
    const core::FatTreeLevelSpec& level = topology.upper_levels[k];
    const std::string children =
        k == 0 ? count_text(size_t(level.down), "rack", "racks") : group(k, size_t(level.down));
    text += "; " + group(k + 1, size_t(level.group_count)) + " of " + children + ", uplinks " +
            uplinks(level.oversubscription, level.uplink);
  }
  return text;
}

}  // namespace

std::vector<core::Trace> read_piped_traces(const std::string& source) {
  try {
    return core::read_traces_binary(std::cin, source);
  } catch (...) {
    if (interrupted()) throw core::RunCancelled();
    throw;
  }
}

namespace {

// "batch 64 per replica"; per-replica batches in replica order ("batch 64/64/32 per replica"), or
// their range and sum when there are more than eight.
std::string batch_text(const core::TrainingSpec& t) {
  const std::vector<int>& b = t.replica_batches;
  if (b.empty()) return "batch " + std::to_string(t.batch_per_replica) + " per replica";
  if (b.size() <= 8) {
    std::string list;
    for (int batch : b) list += (list.empty() ? "" : "/") + std::to_string(batch);
    return "batch " + list + " per replica";
  }
  const auto [least, most] = std::minmax_element(b.begin(), b.end());
  return "batch " + std::to_string(*least) + " to " + std::to_string(*most) + " per replica (" +
         std::to_string(std::accumulate(b.begin(), b.end(), 0)) + " in all)";
}

}  // namespace

std::string workload_line(const core::Scenario& scenario, const core::Plan& plan) {
  const core::Model& model = scenario.model;
  std::string steps =
      std::to_string(plan.steps) + " steps (" + std::to_string(plan.warmup_steps) + " warm-up)";
  if (plan.steady_tolerance > 0) {
    char tolerance[32];
    std::snprintf(tolerance, sizeof tolerance, "%.3g%%", 100 * plan.steady_tolerance);
    steps = "steps until steady (+-" + std::string(tolerance) + "), at most " + steps;
  }
  std::string line = "workload: model " + model.name + ", " +
                     scaled_text(model.total_params(), {"", " k", " M", " G", " T"}) +
                     " parameters (" +
                     core::format_quantity(model.parameter_bytes(), core::Dimension::kBytes) +
                     "); " + batch_text(scenario.training) +
                     (plan.forward_only ? ", forward only" : "") + ", " + steps + "; cluster: ";
  const std::vector<core::MachineSpec>& machines = scenario.cluster.machines;
  size_t gpus = 0;
  double nic_min = 0, nic_max = 0;
  int count_min = 0, count_max = 0;  // NICs per machine (nic.count)
  for (size_t i = 0; i < machines.size(); ++i) {
    gpus += machines[i].gpus.size();
    const double nic = machines[i].nic.bandwidth_bytes_per_s;
    nic_min = i == 0 ? nic : std::min(nic_min, nic);
    nic_max = i == 0 ? nic : std::max(nic_max, nic);
    count_min = i == 0 ? machines[i].nic_count : std::min(count_min, machines[i].nic_count);
    count_max = i == 0 ? machines[i].nic_count : std::max(count_max, machines[i].nic_count);
  }
  // "NICs 10 Gbps"; several per machine: "NICs 2 x 25 Gbps", or with machines that differ
  // "NICs 10 Gbps to 25 Gbps, 1 to 2 per machine".
  std::string nics = nic_min == nic_max
                         ? bits_per_s_text(nic_max)
                         : bits_per_s_text(nic_min) + " to " + bits_per_s_text(nic_max);
  if (count_max > 1) {
    nics = nic_min == nic_max && count_min == count_max
               ? std::to_string(count_max) + " x " + nics
               : nics + ", " +
                     (count_min == count_max
                          ? std::to_string(count_max)
                          : std::to_string(count_min) + " to " + std::to_string(count_max)) +
                     " per machine";
  }
  return line + count_text(machines.size(), "machine", "machines") + ", " +
         count_text(gpus, "GPU", "GPUs") + ", NICs " + nics +
         topology_text(scenario.cluster.topology);
}

void add_run_outputs(core::OutputFiles& outputs, const CliArgs& args, const RunSet& runs,
                     std::ostream& notices) {
  if (!args.json_path.empty()) {
    outputs.add("--json", args.json_path, [&runs](std::ostream& file) {
      file << core::dump_json(core::summary_json(runs.metrics, runs.provenance), 2) << "\n";
    });
  }
  if (!args.trace_path.empty()) {
    outputs.add("--trace", args.trace_path, [&runs, &args, &notices](std::ostream& file) {
      const core::TimelineWindow window{args.trace_from_s, args.trace_until_s};
      const TraceWriter chrome = [&runs, &window](std::ostream& out,
                                                  const std::vector<const core::Trace*>& traces) {
        std::vector<core::ChromeTraceInput> inputs;
        for (const core::Trace* trace : traces) {
          inputs.push_back({trace, traces.size() > 1 ? trace->meta.strategy + " " : ""});
        }
        core::write_chrome_trace(out, inputs, runs.provenance, window);
      };
      write_announced(file, notices, "--trace", args.trace_path, pointers(runs.traces), chrome,
                      window);
    });
  }
  if (!args.trace_out_path.empty()) {
    outputs.add("--trace-out", args.trace_out_path, [&runs, &args, &notices](std::ostream& file) {
      write_announced(file, notices, "--trace-out", args.trace_out_path, pointers(runs.traces),
                      [](std::ostream& out, const std::vector<const core::Trace*>& traces) {
                        core::write_traces_binary(out, traces);
                      });
    });
  }
  if (!args.csv_path.empty()) {
    outputs.add("--csv", args.csv_path, [&runs, &args, &notices](std::ostream& file) {
      write_announced(file, notices, "--csv", args.csv_path, pointers(runs.traces),
                      [&runs](std::ostream& out, const std::vector<const core::Trace*>& traces) {
                        core::write_events_csv(out, traces, runs.provenance);
                      });
    });
  }
}

}  // namespace replisim::cli
