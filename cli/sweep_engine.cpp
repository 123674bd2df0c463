#include "cli/sweep_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <unistd.h>

#include "cli/interrupt.h"
#include "cli/point_pool.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/plan/plan.h"
#include "core/sweep/sweep_objective.h"

namespace replisim::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kPointFormat = "replisim-sweep-point";

std::string point_path(const SweepSettings& s, const std::string& key, const char* suffix) {
  return (fs::path(s.cache_dir) / (key + suffix)).string();
}

void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& writer) {
  core::OutputFiles files(true);
  files.add("--cache", path, writer);
  files.write_all();
}

// The summary cached for `key`, or null when there is none (or it is not a complete point file).
json cached_summary(const SweepSettings& s, const std::string& key, double* wall_s) {
  const std::string path = point_path(s, key, ".point.json");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  std::ifstream in(path);
  const json point = json::parse(in, nullptr, false);
  if (point.is_discarded() || !point.is_object() || point.value("format", "") != kPointFormat ||
      point.value("key", "") != key || !point.contains("summary")) {
    return nullptr;  // not ours, or damaged: computed again and replaced
  }
  const json& wall = point.contains("wall_s") ? point["wall_s"] : json();
  if (!wall.is_number() || wall.get<double>() < 0) return nullptr;
  *wall_s = wall.get<double>();
  return point["summary"];
}

}  // namespace

std::string sweep_cache_dir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return (fs::path(xdg) / "replisim" / "sweep").string();
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] != '/') {
    throw core::InputError("", "--cache",
                           "neither XDG_CACHE_HOME nor HOME is set: give --cache DIR");
  }
  return (fs::path(home) / ".cache" / "replisim" / "sweep").string();
}

SweepSettings sweep_settings(const CliArgs& args) {
  SweepSettings s;
  s.scenario_file = args.scenario;
  s.default_strategy = args.strategy;
  s.seed = args.seed;
  s.steps = args.steps;
  s.scale_compute = args.scale_compute;
  s.plan_budget = args.plan_budget;
  if (args.network_engine != "auto" && args.network_engine != "simgrid") {
    throw core::InputError("", "--network-engine",
                           "expected simgrid or auto, found \"" + args.network_engine + "\"");
  }
  s.network_engine = args.network_engine;
  s.jobs = args.jobs;
  s.cache_dir = sweep_cache_dir(args.cache_dir);
  s.progress = parse_progress_mode(args.progress);
  return s;
}

void apply_objective_target(const CliArgs& args, json& document) {
  if (args.objective_target.empty()) return;
  const std::string flag = "--objective-target";
  core::set_objective_target(document, core::parse_objective_target(args.objective_target, flag),
                             args.scenario, flag);
}

PreparedPoint prepare_point(const LoadedScenario& base, const json& document,
                            const SweepSettings& settings, const core::SweepPoint& point) {
  core::ResolvedPoint resolved =
      core::resolve_sweep_point(document, settings.scenario_file, point, settings.default_strategy);
  PreparedPoint p{point, json(), core::sweep_point_facts(resolved), ""};
  CliArgs args;
  args.strategy = resolved.strategy;
  args.seed = settings.seed;
  args.steps = settings.steps;
  args.scale_compute = settings.scale_compute;
  args.plan_budget = settings.plan_budget;
  std::string plan_hash;
  try {
    // The parsed scenario goes into the plan and is dropped with it: a point keeps its document.
    const LoadedScenario loaded{std::move(resolved.scenario), base.hash, base.files};
    plan_hash = core::plan_hash(compile_plans(loaded, args).front());
  } catch (const core::InputError& e) {
    if (point.knobs.empty()) throw;
    throw core::InputError(e.file(), e.json_path(), "point " + point.label() + ": " + e.message());
  }
  p.key = core::sweep_point_key(resolved, settings.seed, settings.steps, plan_hash,
                                settings.network_engine);
  p.document = std::move(resolved.document);
  return p;
}

std::vector<PreparedPoint> prepare_points(const LoadedScenario& base, const json& document,
                                          const SweepSettings& settings,
                                          const std::vector<core::SweepPoint>& points) {
  std::vector<PreparedPoint> prepared;
  std::map<std::string, std::string> label_of_key;
  for (const core::SweepPoint& point : points) {
    if (interrupted()) throw core::RunCancelled("no output was written; no point was simulated");
    prepared.push_back(prepare_point(base, document, settings, point));
    const auto [it, added] = label_of_key.emplace(prepared.back().key, point.label());
    if (!added) {
      throw core::InputError("", "--vary",
                             "points " + it->second + " and " + point.label() +
                                 " are the same configuration: give each value once");
    }
  }
  return prepared;
}

std::vector<core::SweepRow> run_prepared_points(const std::vector<PreparedPoint>& points,
                                                const SweepSettings& settings,
                                                SweepCounts* counts) {
  std::error_code ec;
  fs::create_directories(settings.cache_dir, ec);
  if (ec || !fs::is_directory(settings.cache_dir)) {
    throw core::OutputError(settings.cache_dir, "cannot create the sweep cache directory: " +
                                                    (ec ? ec.message() : "not a directory"));
  }
  std::vector<core::SweepRow> rows(points.size());
  std::vector<size_t> missing;  // indices into points
  SweepCounts local;
  local.exit_codes.assign(points.size(), 0);
  for (size_t i = 0; i < points.size(); ++i) {
    double wall_s = 0;
    const json summary = cached_summary(settings, points[i].key, &wall_s);
    if (summary.is_null()) {
      missing.push_back(i);
      continue;
    }
    const std::string file = point_path(settings, points[i].key, ".point.json");
    try {
      rows[i] = core::sweep_row_from_summary(points[i].point, points[i].facts, points[i].key,
                                             summary, file, wall_s);
    } catch (const core::InputError&) {
      missing.push_back(i);  // a damaged cache entry: computed again and replaced
      continue;
    }
    ++local.cached;
  }
  // Each missing point: its scenario file, then a simulate child writing its summary.
  std::vector<PointCommand> commands;
  for (size_t i : missing) {
    const PreparedPoint& p = points[i];
    const std::string result = point_path(settings, p.key, ".point.json");
    if (fs::exists(result, ec) && !fs::is_regular_file(result, ec)) {
      throw core::OutputError(result, "in the way of a point's result: not a regular file");
    }
    const std::string scenario = point_path(settings, p.key, ".scenario.json");
    write_atomically(scenario, [&](std::ostream& out) { out << p.document.dump(1) << "\n"; });
    PointCommand c;
    c.args = {"simulate",         scenario,
              "--strategy",       p.facts.strategy,
              "--seed",           std::to_string(settings.seed),
              "--json",           point_path(settings, p.key, ".summary.json"),
              "--progress",       "none",
              "--network-engine", settings.network_engine,
              "--force"};
    if (settings.steps > 0)
      c.args.insert(c.args.end(), {"--steps", std::to_string(settings.steps)});
    if (settings.scale_compute != 1) {
      char factor[40];
      std::snprintf(factor, sizeof factor, "%.17g", settings.scale_compute);
      c.args.insert(c.args.end(), {"--scale-compute", factor});
    }
    for (const std::string& flag : plan_budget_flags(settings.plan_budget)) c.args.push_back(flag);
    c.log_path = point_path(settings, p.key, ".log");
    commands.push_back(std::move(c));
  }
  PointProgress progress("sweep", "points", settings.progress, points.size(), local.cached,
                         settings.jobs);
  auto on_exit = [&](const PointExit& exit) {
    const size_t i = missing[exit.command];
    const PreparedPoint& p = points[i];
    const std::string summary_path = point_path(settings, p.key, ".summary.json");
    progress.point_done(p.point.index, p.point.label(), exit.exit_code, exit.wall_s);
    ++local.computed;
    local.exit_codes[i] = exit.exit_code;
    if (exit.exit_code != 0) {
      // A child stopped (Ctrl-C) or failed after writing its summary: not a result, so the cache
      // keeps none of it (the point is computed again next time).
      fs::remove(summary_path, ec);
      core::SweepRow& row = rows[i];
      row.index = p.point.index;
      row.knobs = p.point.knobs;
      row.strategy = p.facts.strategy;
      row.replica_devices = p.facts.replica_devices;
      row.workers = p.facts.workers;
      row.ps_tasks = p.facts.ps_tasks;
      row.key = p.key;
      row.wall_s = exit.wall_s;
      // The child read the point's copy in the cache: name the user's file (the row names the
      // point).
      row.error =
          child_error(exit, point_path(settings, p.key, ".scenario.json"), settings.scenario_file);
      ++local.failed;
      return;
    }
    const json summary = core::read_json_file(summary_path);
    rows[i] =
        core::sweep_row_from_summary(p.point, p.facts, p.key, summary, summary_path, exit.wall_s);
    const json point = {{"format", kPointFormat},   {"version", 1},          {"key", p.key},
                        {"label", p.point.label()}, {"wall_s", exit.wall_s}, {"summary", summary}};
    write_atomically(point_path(settings, p.key, ".point.json"),
                     [&](std::ostream& out) { out << point.dump() << "\n"; });
    fs::remove(summary_path, ec);
    fs::remove(commands[exit.command].log_path, ec);
  };
  try {
    run_point_commands(commands, settings.jobs, on_exit, interrupted);
  } catch (...) {
    // Stopped (Ctrl-C) or failed: the summaries of children that were reaped without being read
    // are not results; the points are computed again next time.
    for (size_t i : missing) fs::remove(point_path(settings, points[i].key, ".summary.json"), ec);
    throw;
  }
  progress.finish(local.computed, local.cached, local.failed);
  if (counts != nullptr) *counts = local;
  return rows;
}

void print_columns(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string fixed_decimals(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string bound_by_text(const core::SweepRow& row) {
  return row.bound_by.empty() ? std::string("-") : row.bound_by;
}

std::string bottleneck_text(const core::SweepRow& row) {
  return row.bottleneck + " " + fixed_decimals(100 * row.bottleneck_utilization, 0) + "% (" +
         row.bottleneck_kind + ")";
}

std::vector<std::string> objective_cells(const std::optional<core::SweepObjective>& objective) {
  if (!objective) return {"-", "-", "-"};
  const core::SweepObjective& o = *objective;
  const std::string accuracy =
      o.evaluations > 0 ? fixed_decimals(100 * o.final_accuracy, 1) + "%" : std::string("-");
  // No evaluation: a plan the simulator does not compute the objective for (yet).
  if (!o.time_to_target_s)
    return {o.evaluations > 0 ? "not reached" : "not computed", "-", accuracy};
  return {fixed_decimals(*o.time_to_target_s, 3), std::to_string(*o.global_steps_to_target),
          accuracy};
}

std::string objective_target_text(const std::optional<core::SweepObjective>& objective) {
  if (!objective) return "";
  char value[32];
  std::snprintf(value, sizeof value, "%g", objective->target_value);
  return "test " + objective->target + (objective->target == "accuracy" ? " >= " : " <= ") + value;
}

}  // namespace replisim::cli
