#include "cli/planning_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <tuple>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/strategy/strategy.h"
#include "core/sweep/sweep_objective.h"
#include "core/sweep/sweep_points.h"

namespace replisim::cli {
namespace {

void add_run_knobs(CLI::App* sub, CliArgs& args, PlanningRaw& raw) {
  sub->add_option("--jobs", raw.jobs, "points simulated at once (default: this machine's cores)")
      ->type_name("N");
  sub->add_option("--cache", args.cache_dir,
                  "where each point's result is kept (default ~/.cache/replisim/sweep)")
      ->type_name("DIR");
  sub->add_option("--progress", args.progress, "auto (default), bar, json or none")
      ->type_name("MODE");
  sub->add_option("--network-engine", args.network_engine,
                  "each point's simulate --network-engine: auto (default) or simgrid")
      ->type_name("ENGINE");
  sub->add_option("--objective-target", args.objective_target,
                  "every point's training.objective target instead of the scenario's: "
                  "accuracy=FRACTION or loss=NATS")
      ->type_name("KIND=VALUE");
}

}  // namespace

void define_planning_commands(CLI::App& app, CliArgs& args, PlanningRaw& raw,
                              const std::function<void(CLI::App*)>& add_plan_knobs) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "simulate a scenario over the product of knob values; a table of every point");
  sweep->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  sweep
      ->add_option("--vary", args.vary,
                   "KEY=VALUES: a knob and its values (replicas=1..64x2, ps=1,2,4, "
                   "nic_bandwidth=10Gbps,25Gbps); repeat for more knobs")
      ->type_name("KEY=VALUES");
  add_plan_knobs(sweep);
  add_run_knobs(sweep, args, raw);
  sweep->add_option("--shard", raw.shard, "run only shard I of N (points whose index mod N is I)")
      ->type_name("I/N");
  sweep->add_option("--csv", args.csv_path, "write one row per point (CSV)")->type_name("FILE");
  sweep->add_option("--json", args.json_path, "write the sweep's results (JSON; merge, plot)")
      ->type_name("FILE");
  sweep->add_flag("--force", args.force, "replace existing output files");

  CLI::App* whatif = app.add_subcommand(
      "whatif", "what one change buys: NIC x2, one more PS, GPUs x2, ... sorted by gain");
  whatif->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  add_plan_knobs(whatif);
  add_run_knobs(whatif, args, raw);
  whatif->add_option("--json", args.json_path, "write the what-ifs (JSON)")->type_name("FILE");
  whatif->add_flag("--force", args.force, "replace an existing output file");

  CLI::App* recommend = app.add_subcommand(
      "recommend",
      "what to buy: the cheapest configuration of a price catalog meeting a target, and the "
      "cost-time Pareto front");
  recommend->add_option("SCENARIO", args.scenario, "the scenario file")->required()->type_name("");
  recommend->add_option("--catalog", args.catalog_path, "the price catalog (scenarios/catalog/)")
      ->required()
      ->type_name("FILE");
  recommend->add_option("--throughput", args.target_throughput, "target: \"2000 images/s\"")
      ->type_name("RATE");
  recommend->add_option("--samples", args.target_samples, "target: samples to train by --deadline")
      ->type_name("N");
  recommend
      ->add_option("--accuracy", args.target_accuracy,
                   "target: an accuracy by --deadline (not supported yet: refused)")
      ->type_name("FRACTION");
  recommend->add_option("--deadline", args.deadline, "with --samples: \"72 h\" (s, min, h, d)")
      ->type_name("TIME");
  recommend
      ->add_option("--budget", args.budget,
                   "most dollars for the job (a throughput target: dollars per hour)")
      ->type_name("USD");
  recommend
      ->add_option("--max-machines", args.max_machines,
                   "machine counts 1, 2, 4, ... up to this (default 16)")
      ->type_name("N");
  recommend->add_option("--ps", args.ps_counts, "PS counts searched (default 1,2,4,8)")
      ->type_name("LIST");
  recommend
      ->add_option("--sync", args.sync_modes,
                   "between-graph sync modes searched (default async,sync)")
      ->type_name("LIST");
  recommend
      ->add_option("--as-of", args.as_of,
                   "prices stated on or before this date, YYYY-MM[-DD] (default: the newest)")
      ->type_name("DATE");
  recommend->add_flag("--no-spot", args.no_spot, "on-demand prices only");
  recommend->add_flag("--no-prune", args.no_prune,
                      "simulate every configuration, even those the bounds rule out");
  add_plan_knobs(recommend);
  add_run_knobs(recommend, args, raw);
  recommend->add_option("--shard", raw.shard, "simulate only shard I of N of the survivors")
      ->type_name("I/N");
  recommend->add_option("--csv", args.csv_path, "write one row per priced point (CSV)")
      ->type_name("FILE");
  recommend->add_option("--json", args.json_path, "write the points and the front (JSON; plot)")
      ->type_name("FILE");
  recommend->add_flag("--force", args.force, "replace existing output files");

  CLI::App* merge =
      app.add_subcommand("merge", "join the shards of a sweep (sweep --shard I/N --json FILE)");
  merge->add_option("SHARD", args.result_files, "the shards' JSON files")
      ->required()
      ->type_name("");
  merge->add_option("--csv", args.csv_path, "write one row per point (CSV)")->type_name("FILE");
  merge->add_option("--json", args.json_path, "write the merged results (JSON)")->type_name("FILE");
  merge->add_flag("--force", args.force, "replace existing output files");

  CLI::App* plot = app.add_subcommand(
      "plot",
      "draw a sweep's throughput, scaling efficiency and step breakdown, or recommend's "
      "cost-time front (PNG and SVG)");
  plot->add_option("RESULTS", args.result_files,
                   "a sweep's JSON file (sweep --json, merge --json) or recommend --json's")
      ->required()
      ->type_name("");
  plot->add_option("--out", args.plot_out,
                   "the files' prefix: PREFIX-throughput.png, ... (default: RESULTS without .json)")
      ->type_name("PREFIX");
  plot->add_option("--target", raw.target,
                   "draw a target throughput on the throughput chart (samples/s)")
      ->type_name("SAMPLES_PER_S");
  plot->add_flag("--force", args.force, "replace existing output files");
}

void check_planning_values(CliArgs& args, const PlanningRaw& raw) {
  if (!raw.jobs.empty()) {
    errno = 0;
    char* end = nullptr;
    const long jobs = std::strtol(raw.jobs.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || jobs < 1 || jobs > 256) {
      throw core::InputError("", "--jobs",
                             "expected an integer from 1 to 256, got \"" + raw.jobs + "\"");
    }
    args.jobs = int(jobs);
  } else {
    args.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (!raw.shard.empty()) {
    std::tie(args.shard_index, args.shard_count) = core::parse_shard(raw.shard);
  }
  if ((args.command == "sweep" || args.command == "whatif") &&
      core::parse_strategy_list(args.strategy).size() != 1) {
    std::string listed;  // "in_graph,between_graph"
    for (const std::string& s : core::parse_strategy_list(args.strategy)) {
      listed += (listed.empty() ? "" : ",") + s;
    }
    throw core::InputError("", "--strategy",
                           "a point runs one strategy: give one of " +
                               core::join_names(core::strategy_names()) +
                               " (default between_graph), or --vary strategy=" + listed);
  }
  if (!raw.target.empty()) {
    char* end = nullptr;
    args.plot_target_samples_per_s = std::strtod(raw.target.c_str(), &end);
    if (*end != '\0' || !std::isfinite(args.plot_target_samples_per_s) ||
        args.plot_target_samples_per_s <= 0) {
      throw core::InputError(
          "", "--target", "expected a throughput above 0 in samples/s, got \"" + raw.target + "\"");
    }
  }
  // Checked here so that a bad value names the flag before any point is resolved.
  if (!args.objective_target.empty()) {
    core::parse_objective_target(args.objective_target, "--objective-target");
  }
  if (args.command == "plot" && args.result_files.size() != 1) {
    throw core::InputError("", args.result_files.size() > 1 ? args.result_files[1] : "",
                           "plot takes one RESULTS file (merge shards first)");
  }
}

}  // namespace replisim::cli
