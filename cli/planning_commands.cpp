// sweep, whatif and merge: capacity planning over many simulated points
// (docs/capacity-planning.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <ostream>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/sweep_engine.h"
#include "core/base/error.h"
#include "core/base/output_file.h"
#include "core/sweep/sweep_knobs.h"
#include "core/sweep/sweep_results.h"

namespace replisim::cli {
namespace {

using nlohmann::json;

void print_rows(const core::SweepResults& r, std::ostream& out) {
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header;
  for (const core::SweepAxis& a : r.axes) header.push_back(a.key);
  for (const char* h : {"devices", "samples/s", "step p50 (ms)", "efficiency",
                        "bound by (critical path)", "busiest resource"}) {
    header.push_back(h);
  }
  const bool objective = std::any_of(r.rows.begin(), r.rows.end(),
                                     [](const core::SweepRow& row) { return row.objective; });
  if (objective) {
    for (const char* h : {"to target (s)", "global steps", "final accuracy"}) header.push_back(h);
  }
  header.push_back("wall (s)");
  table.push_back(header);
  for (const core::SweepRow& row : r.rows) {
    std::vector<std::string> cells;
    for (const auto& kv : row.knobs) cells.push_back(kv.second);
    cells.push_back(std::to_string(row.replica_devices));
    if (!row.error.empty()) {
      cells.push_back("failed (below)");
      table.push_back(cells);
      continue;
    }
    cells.push_back(fixed_decimals(row.throughput_samples_per_s, 1));
    cells.push_back(row.step_time_p50_s > 0 ? fixed_decimals(1000 * row.step_time_p50_s, 2) : "-");
    cells.push_back(row.scaling_efficiency ? fixed_decimals(100 * *row.scaling_efficiency, 0) + "%"
                                           : "-");
    cells.push_back(bound_by_text(row));
    cells.push_back(bottleneck_text(row));
    if (objective) {
      for (std::string& cell : objective_cells(row.objective)) cells.push_back(std::move(cell));
    }
    cells.push_back(fixed_decimals(row.wall_s, 2));
    table.push_back(cells);
  }
  print_columns(table, out);
  bool failures_done = false;
  for (const core::SweepRow& row : r.rows) {
    if (row.error.empty()) continue;
    if (!failures_done) out << "\nfailed points:\n";
    failures_done = true;
    out << "  " << core::SweepPoint{row.index, row.knobs}.label() << ": " << row.error << "\n";
  }
  // The simulations' caveats, grouped by what they say (the text before its first " (" or ": ",
  // the figures after it differ from point to point): a caveat of one point in full, one that many
  // points share once with the points named (the first few).
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> points_of;
  for (const core::SweepRow& row : r.rows) {
    for (const std::string& warning : row.warnings) {
      const std::string kind = warning.substr(0, std::min(warning.find(" ("), warning.find(": ")));
      auto& points = points_of[kind];
      if (points.empty()) order.push_back(kind);
      points.emplace_back(core::SweepPoint{row.index, row.knobs}.label(), warning);
    }
  }
  if (order.empty()) return;
  out << "\nwarnings (in the --json and --csv rows in full):\n";
  constexpr size_t kNamed = 3;
  for (const std::string& kind : order) {
    const auto& points = points_of[kind];
    if (points.size() == 1) {
      out << "  " << points.front().first << ": " << points.front().second << "\n";
      continue;
    }
    out << "  " << kind << ": " << points.size() << " points (";
    for (size_t i = 0; i < std::min(kNamed, points.size()); ++i) {
      out << (i > 0 ? ", " : "") << points[i].first;
    }
    if (points.size() > kNamed) out << " and " << points.size() - kNamed << " more";
    out << ")\n";
  }
}

void write_results(const CliArgs& args, const core::SweepResults& results,
                   core::OutputFiles& files) {
  if (!args.csv_path.empty()) {
    files.add("--csv", args.csv_path,
              [&results](std::ostream& o) { core::write_sweep_csv(results, o); });
  }
  if (!args.json_path.empty()) {
    files.add("--json", args.json_path, [&results](std::ostream& o) {
      o << core::sweep_results_to_json(results).dump(1) << "\n";
    });
  }
}

json sweep_provenance(const CliArgs& args, const LoadedScenario& loaded) {
  json p = provenance(args, loaded);
  p["cache_dir"] = sweep_cache_dir(args.cache_dir);
  return p;
}

}  // namespace

int run_sweep(const CliArgs& args, std::ostream& out) {
  const LoadedScenario loaded = load(args.scenario);
  core::ScenarioDocument document = core::load_scenario_document(args.scenario);
  apply_objective_target(args, document.json);
  core::SweepResults results;
  for (const std::string& text : args.vary) results.axes.push_back(core::parse_sweep_axis(text));
  core::check_sweep_axes(results.axes);
  const std::vector<core::SweepPoint> all = core::sweep_points(results.axes);
  const std::vector<core::SweepPoint> points =
      core::shard_points(all, args.shard_index, args.shard_count);
  results.scenario_name = loaded.scenario.name;
  results.scenario_file = args.scenario;
  results.scenario_hash = loaded.hash;
  results.default_strategy = args.strategy;
  results.seed = args.seed;
  results.steps = args.steps;
  results.shard_index = args.shard_index;
  results.shard_count = args.shard_count;
  results.objective_target = args.objective_target;
  results.points_total = all.size();
  results.provenance = sweep_provenance(args, loaded);
  results.sweep_id = core::sweep_id(results);
  // Outputs checked before anything runs; written only once every point is in.
  core::OutputFiles files(args.force);
  files.protect(args.scenario, "the scenario");
  write_results(args, results, files);
  const SweepSettings settings = sweep_settings(args);
  const std::vector<PreparedPoint> prepared =
      prepare_points(loaded, document.json, settings, points);
  SweepCounts counts;
  try {
    results.rows = run_prepared_points(prepared, settings, &counts);
  } catch (const core::RunCancelled&) {
    throw core::RunCancelled("no output was written; the points done are cached in " +
                             settings.cache_dir + ": run the same command again to finish");
  }
  if (results.shard_count == 1) core::compute_scaling_efficiency(results.rows);
  out << "replisim sweep: scenario \"" << results.scenario_name << "\" (" << args.scenario << "), "
      << points.size() << " point(s)";
  if (results.shard_count > 1) {
    out << " of " << all.size() << " (shard " << results.shard_index << "/" << results.shard_count
        << ")";
  }
  out << ": " << counts.computed << " simulated, " << counts.cached << " from the cache, "
      << counts.failed << " failed; " << results.default_strategy << " unless varied, seed "
      << results.seed << "\n";
  const auto with_objective = std::find_if(results.rows.begin(), results.rows.end(),
                                           [](const core::SweepRow& row) { return row.objective; });
  if (with_objective != results.rows.end()) {
    out << "objective: " << objective_target_text(with_objective->objective)
        << (args.objective_target.empty() ? " (the scenario's target)" : " (--objective-target)")
        << "\n";
  }
  out << "\n";
  print_rows(results, out);
  files.set_cancel(interrupted);
  files.write_all();
  if (counts.failed > 0) {
    std::cerr << "replisim sweep: " << counts.failed
              << " point(s) failed; their rows say why (the error column)\n";
    return 1;
  }
  return 0;
}

int run_merge(const CliArgs& args, std::ostream& out) {
  std::vector<core::SweepResults> shards;
  for (const std::string& f : args.result_files) shards.push_back(core::read_sweep_results(f));
  const core::SweepResults merged = core::merge_sweep_shards(shards, args.result_files);
  core::OutputFiles files(args.force);
  for (const std::string& f : args.result_files) files.protect(f, "a shard");
  write_results(args, merged, files);
  out << "replisim merge: " << shards.size() << " shard(s) of scenario \"" << merged.scenario_name
      << "\", " << merged.rows.size() << " point(s)\n\n";
  print_rows(merged, out);
  files.write_all();
  return 0;
}

}  // namespace replisim::cli
