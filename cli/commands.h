// The `replisim` commands, callable from main() and from tests.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "core/trace/trace.h"

namespace replisim::cli {

// Each returns the process exit code (0) and throws core::InputError (exit 2) or other
// exceptions (exit 1); main() maps them. Reports go to `out`.
int run_simulate(const CliArgs& args, std::ostream& out);
// simulate --seeds: each seed a `replisim simulate` child (--jobs at once); the report gives each
// metric's mean and min..max over the seeds, --json every seed's summary (cli/seeds_command.cpp).
// Throws core::BackendError naming the first seed whose child failed.
int run_seed_spread(const CliArgs& args, std::ostream& out);
// run: the same report and outputs as simulate, from real processes of this machine (the "real"
// backend); one strategy (default between_graph).
int run_real(const CliArgs& args, std::ostream& out);
int run_plan(const CliArgs& args, std::ostream& out);
// validate: the simulation and --repeat real runs of each selected plan (default between_graph),
// compared per metric and per phase (core/metrics/validation.h). Returns 0 when every plan's
// throughput and step time p50 are within --tolerance, kExitOutsideTolerance when not.
inline constexpr int kExitOutsideTolerance = 3;
int run_validate(const CliArgs& args, std::ostream& out);

// calibrate's in-process microbenchmarks (real/calibrate/microbench.h) and the shaped network's
// precondition check (calibrate's and validate's), set by main() (this library does not link the
// real backend).
struct CalibrationProbes {
  using Cancelled = std::function<bool()>;
  // One rate per window (real/calibrate/microbench.h): their median is the figure, their spread
  // a stability check.
  std::function<std::vector<double>(int busy_cores, double seconds, int windows, const Cancelled&)>
      sgemm_flop_per_s;
  std::function<double(double seconds, const Cancelled&)> sgd_apply_s_per_param;
  std::function<double(double seconds, const Cancelled&)> copy_bytes_per_s;
  // The first CUDA GPU's SGEMM flop/s at the shapes GPU ops use; 0 without one. May be empty.
  std::function<double(double seconds, const Cancelled&)> gpu_sgemm_flop_per_s;
  std::function<void()> check_isolation;  // throws core::InputError (--isolate)
  std::function<double(bool shaped)> tcp_one_way_latency_s;
};
CalibrationProbes& calibration_probes();
// calibrate: measures this machine and writes the calibration file scenarios include (--out,
// default calibration.json; never over an existing file without --force); prints the figures
// and the two reference plans' predicted and measured throughput.
// A host not stable enough to calibrate (cli/calibration_stability.h) is refused with
// kExitUnstableCalibration and one line saying what was unstable and by how much; nothing is
// written unless --accept-unstable (then the file records the problems).
inline constexpr int kExitUnstableCalibration = 3;
int run_calibrate(const CliArgs& args, std::ostream& out);
// Rebuilds the report of saved native traces (args.trace_files) without simulating; its table is
// byte for byte the one `simulate` printed for the same runs. Bad trace files throw InputError
// naming the file.
int run_report(const CliArgs& args, std::ostream& out);
// A node that gathered its run's trace (the coordinator of nodes a cluster's launcher started):
// the report `run` prints, titled with where the trace was written (`file`).
void print_gathered_report(const core::Trace& run, const std::string& file, std::ostream& out);

// Capacity planning (docs/capacity-planning.md; planning_commands.cpp, plot_command.cpp).
// sweep: every point of the --vary product (or of --shard I/N), each simulated in a child process
// (--jobs at once) unless cached; prints a table, writes --csv and --json. Returns 0, or 1 when a
// point's simulation failed (its row then says why). Throws core::RunCancelled on Ctrl-C after
// keeping the points done in the cache (no output file is written).
int run_sweep(const CliArgs& args, std::ostream& out);
// whatif: the scenario's own point against one change each, sorted by throughput gain.
int run_whatif(const CliArgs& args, std::ostream& out);
// recommend: the configurations a price catalog allows, pruned by closed-form bounds, simulated
// as sweep points, priced; the cost-time Pareto front and the cheapest point meeting the target.
int run_recommend(const CliArgs& args, std::ostream& out);
// merge: the shards of one sweep into its whole results (--csv, --json; a table otherwise).
int run_merge(const CliArgs& args, std::ostream& out);
// plot: a sweep's charts as PNG and SVG files, drawn by the renderer main() sets (Qt Charts, in
// gui/charts); without one (a build without Qt) throws core::InputError saying so.
struct PlotRequest {
  std::string results_file;
  std::string prefix;  // files PREFIX-<chart>.png and .svg
  bool force = false;
  double target_samples_per_s = 0;  // a horizontal line on the throughput chart (0: none)
};
using PlotRenderer = std::function<std::vector<std::string>(const PlotRequest&)>;
PlotRenderer& plot_renderer();
int run_plot(const CliArgs& args, std::ostream& out);

// "replisim 0.1.0 (git abc123), SimGrid 3.32.0".
std::string version_text();

}  // namespace replisim::cli
