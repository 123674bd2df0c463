// What `simulate` and `report` share: the title of the report and the output files computed
// from a set of runs (summary JSON, Chrome trace, native trace, events CSV). Both commands go
// through these, so identical runs give identical reports and files whichever command made them.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_args.h"
#include "core/base/output_file.h"
#include "core/hardware/transport.h"
#include "core/metrics/metrics.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/trace/timeline_layout.h"
#include "core/trace/trace.h"

namespace replisim::cli {

// Runs in report order, with what was computed from them.
struct RunSet {
  std::vector<core::Trace> traces;
  std::vector<core::RunMetrics> metrics;  // metrics[i] from traces[i]
  nlohmann::json provenance;              // goes into every output (docs/cli.md)
};

// What the report's title line says about a run.
struct RunTitle {
  std::string scenario_name;
  std::string scenario_file;
  std::string backend;  // "sim"
  std::string network;  // "lv08", "ideal"
  std::string seed;
  std::string engine = "";     // the simulator's, engine_title(); "" for none
  std::string transport = "";  // transport_title(); "" for none
  bool operator==(const RunTitle& other) const;
};

// The modelled transport's preset name ("tf1_grpc", "tcp (changed)" when fields differ from the
// preset's), or "" for the default `ideal` one untouched.
std::string transport_title(const core::Transport& transport);

// "replisim: scenario "NAME" (FILE), sim backend (ENGINE), lv08 network, seed 1" ("sim backend,"
// without an engine; "lv08 network, tcp transport," with a transport; no ", seed" part when the
// title's seed is empty).
std::string title_line(const RunTitle& title);

// The runs of a native trace piped in on standard input (`report -`, `validate --measured -`),
// errors naming `source`. A read that Ctrl-C (or another of interrupt.h's signals) ended throws
// core::RunCancelled (exit 130) rather than the truncated or empty trace's InputError.
std::vector<core::Trace> read_piped_traces(const std::string& source);

// The report's second line, what was run on what: "workload: model resnet50, 25.56 M parameters
// (102.2 MB); batch 32 per replica, 60 steps (10 warm-up); cluster: 2 machines, 2 GPUs, NICs
// 10 Gbps, one switch". The steps are `plan`'s (--steps; "steps until steady (+-1%), at most
// 1000 steps (2 warm-up)" for training.steps "auto"), ", forward only" after the batch for
// forward-only plans; NICs as a range "1 to 10 Gbps" when they differ, several per machine
// (nic.count) "2 x 25 Gbps" or, when machines differ, "10 Gbps to 25 Gbps, 1 to 2 per machine";
// racks: "4 racks of 8
// machines, uplinks 3:1 oversubscribed" (or the uplink's bandwidth), a fat tree's levels above
// them after it ("; 4 pods of 16 racks, uplinks 4:1 oversubscribed; 2 superpods of 2 pods, ...").
std::string workload_line(const core::Scenario& scenario, const core::Plan& plan);

// "network engine auto, tolerance 1 ns" when a run's provenance records the simulator's network
// engine and tolerance (sim/sim_settings.h), else "".
std::string engine_title(const nlohmann::json& provenance);

// A trace output (--trace, --trace-out, --csv) estimated over this many bytes is announced on
// standard error before it is written: a planner who asked for a long run's trace learns why the
// command has not ended and how much disk it takes.
inline constexpr double kLargeTraceOutputBytes = 100e6;

// Writes `runs` (one of the trace formats) to `out`.
using TraceWriter = std::function<void(std::ostream& out, const std::vector<const core::Trace*>&)>;

// About how many bytes `write` makes of `runs`: it writes into a byte counter the runs without
// events or counters (what every file has: metadata, string table) and a sample (each run's
// first `sample_events` events that `window` keeps, and as large a part of its counters), and
// adds to the first the sample's bytes per event times the events `window` keeps; exact when
// every event fits in the sample. Costs two writes of the sample (20000 events: milliseconds).
double estimated_trace_output_bytes(const std::vector<const core::Trace*>& runs,
                                    const TraceWriter& write,
                                    const core::TimelineWindow& window = {},
                                    size_t sample_events = 20000);

// Registers with `outputs` each output flag of `args` that is set (--json, --trace, --trace-out,
// --csv). The writers read `runs` when outputs.write_all() runs, so `runs` must then be
// complete and still alive. Before writing a trace output estimated over kLargeTraceOutputBytes,
// its writer prints one line to `notices` ("replisim: --trace t.json: about 312 MB (1843210
// events); writing it"). Throws InputError as OutputFiles::add.
void add_run_outputs(core::OutputFiles& outputs, const CliArgs& args, const RunSet& runs,
                     std::ostream& notices);

}  // namespace replisim::cli
