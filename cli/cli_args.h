// Command-line flags of the `replisim` executable (docs/cli.md), parsed with CLI11: one
// subcommand per command, generated --help, and the project's own one-line errors (exit 2).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/strategy/strategy.h"

namespace replisim::cli {

struct CliArgs {
  // "simulate", "plan", "report", "run", "node", "validate", "calibrate",
  // "cleanup", "sweep", "whatif", "merge", "plot", "help", "version"
  std::string command;
  std::string help_text;                 // help: what --help printed for the command asked about
  std::string scenario;                  // simulate, plan, run: path of the scenario file
  std::vector<std::string> trace_files;  // report: native trace files, in the order given
  // --strategy as given: a name, a comma-separated list, both or all (core::parse_strategy_list);
  // default both (run, validate, sweep, whatif: between_graph)
  std::string strategy = "both";
  uint64_t seed = 1;
  std::vector<uint64_t> seed_list;  // simulate: --seeds (empty: one run with --seed)
  std::string json_path;            // simulate, report, run: --json FILE
  bool json_stdout = false;         // plan: --json (print the plan data)
  std::string trace_path;           // simulate, report, run: --trace FILE (Chrome Trace Event JSON)
  double trace_from_s = 0;          // --trace-window FROM..UNTIL (seconds)
  double trace_until_s = std::numeric_limits<double>::infinity();
  bool trace_window = false;      // --trace-window given
  std::string trace_out_path;     // simulate, run: --trace-out FILE (native trace)
  std::string csv_path;           // report: --csv FILE (events as CSV)
  bool merge = false;             // report: --merge (the TRACEs are one real run's parts)
  bool force = false;             // overwrite existing output files
  bool strict = false;            // simulate: fail when a GPU cannot hold its share of the plan
  std::string progress = "auto";  // simulate, run, validate, calibrate: --progress MODE
  int steps = 0;                  // simulate, plan, run: --steps N (0: the scenario's)
  double scale_compute = 1;       // simulate, plan, run: --scale-compute F
  // simulate, plan, run, validate, sweep, whatif: --max-plan-ops N, --max-plan-memory SIZE
  core::PlanBudget plan_budget;
  std::string network_engine = "auto";  // simulate: --network-engine simgrid|auto
  // run, node
  std::string checkpoint_dir;     // --checkpoint-dir DIR (a new directory)
  int threads = 1;                // --threads N: SGEMM threads per op (CPU compute)
  double connect_timeout_s = 30;  // --connect-timeout S: every peer connected by then
  std::string isolate;            // run: --isolate netns ("": loopback)
  bool shaped_links = false;      // node: --shaped-links (from run --isolate netns; internal)
  bool insecure_frames = false;   // run, node, validate: --insecure-frames (no frame MACs)
  // validate
  int repeat = 3;             // --repeat N: real runs of each plan
  int seeds = 5;              // --seeds N: predictions of each plan, seeds --seed.. --seed+N-1
  double tolerance = 0.08;    // --tolerance F: the verdict's bound on |relative error|
  std::string baseline_path;  // --baseline FILE: an earlier validate --json
  // --measured FILE: validate against the real runs of a native trace made before (run
  // --trace-out, on this machine or another) instead of running them.
  std::string measured_path;
  std::string markdown_path;  // --markdown FILE: the comparison as Markdown tables
  // calibrate
  std::string calibration_out;   // --out FILE (default calibration.json)
  bool accept_unstable = false;  // --accept-unstable: write despite failed stability checks
  // --probe-seconds S (hidden; tests): the SGEMM probes' wall time, each (0: the default, 2 s);
  // the other probes take half of it. The checks are the same.
  double probe_seconds = 0;
  // node
  std::string plan_path;      // --plan PLAN.json
  std::string role;           // --role NAME
  std::string cluster_path;   // --cluster CLUSTER.json
  int listen_fd = -1;         // --listen-fd N: a listening socket the launcher opened
  std::string node_trace;     // --trace-out FILE: the node's own native trace
  int progress_fd = -1;       // --progress-fd N: the chief's progress lines (from run)
  bool launched = false;      // --launched: started by run (internal)
  std::string resume_path;    // --resume FILE: a restart's facts, from run (internal)
  int base_port = 43000;      // --base-port: under srun without --cluster, each node's first port
  std::string run_trace_out;  // --run-trace-out FILE: the coordinator's gathered trace
  // sweep, whatif, merge, plot (docs/capacity-planning.md)
  std::vector<std::string> vary;          // --vary KEY=VALUES, in the order given
  int jobs = 1;                           // --jobs N (default: the cores)
  std::string cache_dir;                  // --cache DIR ("": the default, sweep_engine.h)
  int shard_index = 0, shard_count = 1;   // --shard I/N
  std::vector<std::string> result_files;  // merge: the shards; plot: the results
  std::string plot_out;                   // plot: --out PREFIX
  double plot_target_samples_per_s = 0;   // plot: --target (0: none)
  std::string
      objective_target;  // sweep, whatif: --objective-target KIND=VALUE ("": the scenario's)
  // recommend (docs/capacity-planning.md#what-to-buy): values as typed, parsed by the command
  std::string catalog_path;  // --catalog FILE
  std::string target_throughput, target_samples, target_accuracy, deadline, budget, as_of;
  std::string max_machines, ps_counts, sync_modes;
  bool no_prune = false, no_spot = false;
  std::string command_line;  // as typed, for provenance
};

// The flags that give `budget` to a child `replisim simulate` (a sweep's point, a seed), none
// for the default.
std::vector<std::string> plan_budget_flags(const core::PlanBudget& budget);

// Parses argv. Throws core::InputError("", "<flag>", message) on an unknown command or flag, a
// flag given twice, a missing or bad value, a missing or extra positional argument; an unknown
// command or flag suggests the nearest known one. --help gives command "help" with the generated
// help of the command it follows (or of replisim).
CliArgs parse_cli_args(int argc, const char* const* argv);

// The strategies --strategy selects, in run order (core::parse_strategy_list: "both" = in_graph
// then between_graph, "all" = every registered one, or the comma-separated list as given).
std::vector<std::string> selected_strategies(const CliArgs& args);

// replisim's generated help (every command, one line each).
std::string usage_text();

}  // namespace replisim::cli
