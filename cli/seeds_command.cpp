// simulate --seeds: the scenario's prediction under several seeds (start-up stagger and jitter
// draws), each seed a `replisim simulate --seed S` child process (--jobs at once); the report gives
// each metric's mean and min..max over the seeds, and --json every seed's summary.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/point_pool.h"
#include "cli/progress.h"
#include "cli/run_outputs.h"
#include "cli/scenario_plans.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/base/temp_dir.h"
#include "core/base/version.h"
#include "core/scenario/scenario.h"

namespace replisim::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A metric of a run's summary (simulate --json), by its JSON pointer, with its report label and
// the factor that turns it into the label's unit.
struct SpreadMetric {
  const char* label;
  const char* pointer;
  double scale;
  int decimals;
};

const SpreadMetric kMetrics[] = {
    {"throughput (samples/s)", "/throughput_samples_per_s", 1, 1},
    {"step time mean (ms)", "/step_time_s/mean", 1e3, 2},
    {"step time p50 (ms)", "/step_time_s/p50", 1e3, 2},
    {"step time p95 (ms)", "/step_time_s/p95", 1e3, 2},
    {"global update interval (ms)", "/update_interval_s", 1e3, 2},
    {"staleness mean (global steps)", "/staleness/mean", 1, 2},
    {"bottleneck utilisation (%)", "/bottleneck/utilization", 100, 1},
    {"simulated time (s)", "/simulated_time_s", 1, 3},
};

struct Spread {
  double mean = 0, min = 0, max = 0;
  std::vector<double> values;  // per seed, in the seeds' order
};

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// The child's command: simulate `scenario` (the snapshot) with one seed, the parent's plan knobs,
// no progress, its summary into `summary`.
PointCommand seed_command(const CliArgs& args, const std::string& scenario, uint64_t seed,
                          const std::string& dir) {
  const std::string stem = dir + "/seed-" + std::to_string(seed);
  PointCommand c;
  c.args = {"simulate",   scenario,       "--seed",           std::to_string(seed),
            "--json",     stem + ".json", "--progress",       "none",
            "--strategy", args.strategy,  "--network-engine", args.network_engine};
  if (args.steps > 0) c.args.insert(c.args.end(), {"--steps", std::to_string(args.steps)});
  if (args.scale_compute != 1) {
    char factor[40];
    std::snprintf(factor, sizeof factor, "%.17g", args.scale_compute);
    c.args.insert(c.args.end(), {"--scale-compute", factor});
  }
  for (const std::string& flag : plan_budget_flags(args.plan_budget)) c.args.push_back(flag);
  if (args.strict) c.args.push_back("--strict");
  c.log_path = stem + ".log";
  return c;
}

// Per strategy (in the first summary's order), per metric: the spread over the seeds.
std::map<std::string, std::vector<Spread>> spreads(const std::vector<json>& summaries,
                                                   std::vector<std::string>& strategies) {
  std::map<std::string, std::vector<Spread>> out;
  for (const json& summary : summaries) {
    for (const json& run : summary.at("runs")) {
      const std::string strategy = run.at("strategy").get<std::string>();
      if (out.count(strategy) == 0) {
        strategies.push_back(strategy);
        out[strategy].resize(std::size(kMetrics));
      }
      for (size_t m = 0; m < std::size(kMetrics); ++m) {
        const json::json_pointer pointer(kMetrics[m].pointer);
        const double value = run.contains(pointer) && run.at(pointer).is_number()
                                 ? run.at(pointer).get<double>() * kMetrics[m].scale
                                 : 0.0;
        out[strategy][m].values.push_back(value);
      }
    }
  }
  for (auto& [strategy, metrics] : out) {
    for (Spread& s : metrics) {
      s.min = *std::min_element(s.values.begin(), s.values.end());
      s.max = *std::max_element(s.values.begin(), s.values.end());
      double sum = 0;
      for (double v : s.values) sum += v;
      s.mean = sum / double(s.values.size());
    }
  }
  return out;
}

void print_spread(const std::map<std::string, std::vector<Spread>>& table,
                  const std::vector<std::string>& strategies, const std::vector<json>& summaries,
                  std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"mean (min .. max) over the seeds"}};
  for (const std::string& s : strategies) rows[0].push_back(s);
  for (size_t m = 0; m < std::size(kMetrics); ++m) {
    std::vector<std::string> row = {kMetrics[m].label};
    for (const std::string& s : strategies) {
      const Spread& v = table.at(s)[m];
      const int d = kMetrics[m].decimals;
      row.push_back(fixed(v.mean, d) + " (" + fixed(v.min, d) + " .. " + fixed(v.max, d) + ")");
    }
    rows.push_back(row);
  }
  // The bottleneck each seed named, with how many of the seeds named it.
  std::vector<std::string> row = {"bottleneck"};
  for (const std::string& s : strategies) {
    std::map<std::string, int> names;
    for (const json& summary : summaries) {
      for (const json& run : summary.at("runs")) {
        if (run.at("strategy") == s) ++names[run.at("bottleneck").value("resource", "-")];
      }
    }
    std::string text;
    for (const auto& [name, n] : names) {
      text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " of " +
              std::to_string(summaries.size()) + " seeds)";
    }
    row.push_back(text);
  }
  rows.push_back(row);
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) {
      out << r[c] << (c + 1 < r.size() ? std::string(width[c] - r[c].size() + 2, ' ') : "");
    }
    out << "\n";
  }
}

// Each seed's warnings, identical texts once with the seeds that gave them (at most kShown).
void print_warnings(const std::vector<json>& summaries, const std::vector<uint64_t>& seeds,
                    std::ostream& out) {
  constexpr size_t kShown = 20;
  std::vector<std::pair<std::string, std::string>> order;  // (strategy, text), first seen first
  std::map<std::pair<std::string, std::string>, std::vector<uint64_t>> seeds_of;
  for (size_t i = 0; i < summaries.size(); ++i) {
    for (const json& run : summaries[i].at("runs")) {
      for (const json& w : run.value("warnings", json::array())) {
        const auto key =
            std::make_pair(run.at("strategy").get<std::string>(), w.get<std::string>());
        if (seeds_of.count(key) == 0) order.push_back(key);
        seeds_of[key].push_back(seeds[i]);
      }
    }
  }
  for (size_t k = 0; k < order.size() && k < kShown; ++k) {
    std::string list;
    for (uint64_t seed : seeds_of[order[k]])
      list += (list.empty() ? "" : ",") + std::to_string(seed);
    out << "warning (" << order[k].first << ", seed" << (seeds_of[order[k]].size() > 1 ? "s " : " ")
        << list << "): " << order[k].second << "\n";
  }
  if (order.size() > kShown) {
    out << "... and " << order.size() - kShown << " other warning(s): see --json\n";
  }
}

json spread_json(const std::map<std::string, std::vector<Spread>>& table) {
  json j = json::object();
  for (const auto& [strategy, metrics] : table) {
    for (size_t m = 0; m < std::size(kMetrics); ++m) {
      const Spread& s = metrics[m];
      // The summary's own name and unit (the pointer), not the report's label.
      j[strategy][std::string(kMetrics[m].pointer).substr(1)] = {
          {"mean", s.mean / kMetrics[m].scale},
          {"min", s.min / kMetrics[m].scale},
          {"max", s.max / kMetrics[m].scale}};
    }
  }
  return j;
}

}  // namespace

int run_seed_spread(const CliArgs& args, std::ostream& out) {
  core::OutputFiles outputs(args.force, &out);
  outputs.protect(args.scenario);
  const LoadedScenario loaded = load(args.scenario);
  for (const std::string& file : loaded.files) outputs.protect(file);
  // Bad input fails here, once, before any child starts (memory too, under --strict).
  compile_plans(loaded, args);
  std::vector<json> summaries(args.seed_list.size());
  json document;
  if (!args.json_path.empty()) {
    outputs.add("--json", args.json_path,
                [&document](std::ostream& o) { o << core::dump_json(document, 1) << "\n"; });
  }
  // With an output on standard output, the table goes to standard error.
  std::ostream& text = outputs.writes_standard_output() ? std::cerr : out;
  // The children's summaries and logs, removed on every way out.
  const core::ScopedTempDir scratch("replisim-seeds");
  // Every seed simulates the scenario as it was read here (includes merged), whatever happens to
  // its files meanwhile.
  const std::string snapshot = scratch.path() + "/scenario.json";
  {
    std::ofstream file(snapshot);
    file << core::dump_json(core::load_scenario_document(args.scenario).json, 1) << "\n";
    if (!file.flush()) throw core::OutputError(snapshot, "cannot write the scenario's snapshot");
  }
  std::vector<PointCommand> commands;
  for (uint64_t seed : args.seed_list) {
    commands.push_back(seed_command(args, snapshot, seed, scratch.path()));
  }
  // The first seed (in the list's order) of those that failed, and whether it was bad input.
  std::map<size_t, std::pair<int, std::string>> failures;
  PointProgress progress("seeds", "seeds", parse_progress_mode(args.progress), commands.size(), 0,
                         args.jobs);
  size_t computed = 0;
  try {
    run_point_commands(
        commands, args.jobs,
        [&](const PointExit& exit) {
          if (exit.exit_code != -1) {
            ++computed;
            progress.point_done(exit.command,
                                "seed " + std::to_string(args.seed_list[exit.command]),
                                exit.exit_code, exit.wall_s);
          }
          if (exit.exit_code == 0) {
            summaries[exit.command] = core::read_json_file(commands[exit.command].args[5]);
            return;
          }
          if (exit.exit_code == -1 && !failures.empty()) return;  // stopped for that failure
          // The child read the snapshot: name the user's file.
          failures[exit.command] = {exit.exit_code, child_error(exit, snapshot, args.scenario)};
        },
        [&failures] { return interrupted() || !failures.empty(); });
  } catch (const core::RunCancelled&) {
    if (failures.empty()) {  // Ctrl-C: RunCancelled's own line
      progress.finish(computed, 0, 0);
      throw;
    }
  }
  progress.finish(computed, 0, failures.size());
  if (!failures.empty()) {
    const auto& [index, failure] = *failures.begin();
    const std::string what =
        "seed " + std::to_string(args.seed_list[index]) + ": " + failure.second;
    if (failure.first == 2) throw core::InputError("", "--seeds", what);
    throw core::BackendError(what);
  }
  for (size_t i = 0; i < summaries.size(); ++i) {
    // The child's provenance names the snapshot, gone with the scratch folder: name the user's.
    json& provenance = summaries[i]["provenance"];
    provenance["scenario_file"] = args.scenario;
    provenance["command_line"] =
        args.command_line + " (seed " + std::to_string(args.seed_list[i]) + ")";
  }
  std::vector<std::string> strategies;
  const auto table = spreads(summaries, strategies);
  // As a single run's title (the children's provenance names engine and tolerance), then the seeds.
  const RunTitle title{loaded.scenario.name,
                       args.scenario,
                       "sim",
                       core::network_model_name(loaded.scenario.cluster.network_model),
                       "",
                       engine_title(summaries.front()["provenance"]),
                       transport_title(loaded.scenario.cluster.transport)};
  text << title_line(title) << ", " << args.seed_list.size() << " seeds (" << args.seed_list.front()
       << " .. " << args.seed_list.back() << ")\n\n";
  print_spread(table, strategies, summaries, text);
  print_warnings(summaries, args.seed_list, text);
  if (!args.json_path.empty()) {
    document = {{"format", "replisim-seeds"},
                {"format_version", 1},
                {"scenario", loaded.scenario.name},
                {"scenario_file", args.scenario},
                {"scenario_hash", loaded.hash},
                {"replisim", std::string(core::kVersion) + " (" + core::kGitDescribe + ")"},
                {"command_line", args.command_line},
                {"seeds", args.seed_list},
                {"spread", spread_json(table)},
                {"runs", json::array()}};
    for (size_t i = 0; i < summaries.size(); ++i) {
      document["runs"].push_back({{"seed", args.seed_list[i]}, {"summary", summaries[i]}});
    }
  }
  outputs.set_cancel(interrupted);
  outputs.write_all();
  return 0;
}

}  // namespace replisim::cli
