// whatif: the scenario's own point against one change at a time (NIC x2, switch x2, one more PS,
// with racks uplinks x2 and the PS template spread over racks,
// GPUs x2, replicas x2, another placement, sync with a backup; for all-reduce, Horovod's
// algorithm, fusion buffer, cycle time and NCCL streams instead of the PS's; each other strategy),
// each simulated as a sweep point (cached, --jobs at once), sorted by throughput gain.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/sweep_engine.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/output_file.h"
#include "core/hardware/collective_transport.h"
#include "core/plan/kinds.h"
#include "core/strategy/strategy.h"

namespace replisim::cli {
namespace {

using nlohmann::json;

struct Change {
  std::string name;
  std::vector<std::pair<std::string, std::string>> knobs;
};

// The changes tried, ending with each other strategy of the registry. An all-reduce point (no
// parameter server) tries Horovod's knobs instead of the PS's: each other algorithm, the fusion
// buffer x2, a cycle time a fifth as long and four times NCCL's streams per peer.
std::vector<Change> changes_for(const std::string& strategy, const nlohmann::json& scenario) {
  const core::Strategy* compiler = core::find_strategy(strategy);
  const bool ranks = compiler != nullptr && compiler->rank_per_replica;
  std::vector<Change> changes = {{"NIC bandwidth x2", {{"nic_bandwidth", "x2"}}},
                                 {"switch bandwidth x2", {{"switch_bandwidth", "x2"}}}};
  if (!ranks) changes.push_back({"one more PS", {{"ps", "+1"}}});
  // Racks (cluster.topology): their uplinks, and a PS template spread over them; a fat tree's
  // racks (level 0) take the spread too (its uplinks are per level: no single knob).
  const nlohmann::json topology =
      scenario.value("/cluster/topology"_json_pointer, nlohmann::json());
  const std::string kind = topology.is_object() ? topology.value("kind", "") : "";
  if (kind == "racks" || kind == "fat_tree") {
    if (kind == "racks") changes.push_back({"uplinks x2", {{"uplink_bandwidth", "x2"}}});
    const nlohmann::json ps = scenario.value("/training/ps"_json_pointer, nlohmann::json());
    if (!ranks && ps.is_object() && ps.value("spread", "") != "racks") {
      changes.push_back({"PS spread over racks", {{"ps_spread", "racks"}}});
    }
  }
  changes.push_back({"GPU speed x2", {{"gpu_speed", "x2"}}});
  changes.push_back({"replicas x2", {{"replicas", "x2"}}});
  if (ranks) {
    const nlohmann::json* allreduce = nullptr;
    if (scenario.contains("training") && scenario["training"].is_object() &&
        scenario["training"].contains("allreduce")) {
      allreduce = &scenario["training"]["allreduce"];
    }
    const std::string algorithm = allreduce != nullptr && allreduce->is_object()
                                      ? allreduce->value("algorithm", "ring")
                                      : std::string("ring");
    for (const std::string& a : core::collective_algorithm_names()) {
      if (a != algorithm) changes.push_back({a + " algorithm", {{"algorithm", a}}});
    }
    changes.push_back({"fusion buffer x2", {{"fusion_threshold", "x2"}}});
    changes.push_back({"cycle time x0.2", {{"cycle_time", "x0.2"}}});
    changes.push_back({"NCCL streams x4", {{"nccl_streams", "x4"}}});
  } else {
    changes.push_back({"greedy_by_bytes placement", {{"variable_placement", "greedy_by_bytes"}}});
    changes.push_back({"partitioned placement", {{"variable_placement", "partitioned"}}});
    changes.push_back({"sync with one backup worker", {{"backups", "1"}}});
  }
  for (const std::string& other : core::strategy_names()) {
    if (other != strategy) changes.push_back({other + " strategy", {{"strategy", other}}});
  }
  return changes;
}

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * fraction);
  return buffer;
}

// The variant's time to target against the base's (variant / base - 1), and its global steps to
// target less the base's; unset when either lacks an objective or did not reach its target.
std::optional<double> time_to_target_change(const core::SweepRow& base, const core::SweepRow& r) {
  if (!base.objective || !r.objective || !base.objective->time_to_target_s ||
      !r.objective->time_to_target_s || *base.objective->time_to_target_s <= 0) {
    return std::nullopt;
  }
  return *r.objective->time_to_target_s / *base.objective->time_to_target_s - 1;
}
std::optional<int64_t> global_steps_change(const core::SweepRow& base, const core::SweepRow& r) {
  if (!base.objective || !r.objective || !base.objective->global_steps_to_target ||
      !r.objective->global_steps_to_target) {
    return std::nullopt;
  }
  return *r.objective->global_steps_to_target - *base.objective->global_steps_to_target;
}

// The table's objective cells of a change: its time to target with the change ("0.912 (-21.3%)"),
// its global steps to target with theirs ("36 (+4)"), or "not reached".
std::vector<std::string> objective_change_cells(const core::SweepRow& base,
                                                const core::SweepRow& r) {
  std::vector<std::string> cells = objective_cells(r.objective);
  if (!r.objective || !r.objective->time_to_target_s) return {cells[0], cells[1]};
  const std::optional<double> time = time_to_target_change(base, r);
  const std::optional<int64_t> steps = global_steps_change(base, r);
  if (time) cells[0] += " (" + percent(*time) + ")";
  if (steps) cells[1] += " (" + std::string(*steps >= 0 ? "+" : "") + std::to_string(*steps) + ")";
  return {cells[0], cells[1]};
}

json row_json(const core::SweepRow& row) {
  if (!row.error.empty()) return {{"error", row.error}};
  return {
      {"objective", core::sweep_objective_to_json(row.objective)},
      {"throughput_samples_per_s", row.throughput_samples_per_s},
      {"step_time_p50_s", row.step_time_p50_s},
      {"replica_devices", row.replica_devices},
      {"bound_by",
       {{"text", row.bound_by}, {"kind", row.bound_by_kind}, {"fraction", row.bound_by_fraction}}},
      {"bottleneck",
       {{"resource", row.bottleneck},
        {"kind", row.bottleneck_kind},
        {"utilization", row.bottleneck_utilization}}}};
}

// "objective: test accuracy >= 0.8 reached at 1.730 s (global step 36)", or not reached.
void print_base_objective(const core::SweepRow& base, const CliArgs& args, std::ostream& out) {
  const core::SweepObjective& o = *base.objective;
  out << "objective: " << objective_target_text(base.objective)
      << (args.objective_target.empty() ? "" : " (--objective-target)");
  if (o.time_to_target_s) {
    out << " reached at " << fixed_decimals(*o.time_to_target_s, 3) << " s (global step "
        << *o.global_steps_to_target << ")\n";
  } else if (o.evaluations > 0) {
    out << " not reached (final accuracy " << fixed_decimals(100 * o.final_accuracy, 1)
        << "%): the changes' times to target have nothing to compare with\n";
  } else {
    out << ": not computed for this plan (docs/scenario-format.md, training.objective)\n";
  }
}

}  // namespace

int run_whatif(const CliArgs& args, std::ostream& out) {
  const LoadedScenario loaded = load(args.scenario);
  core::ScenarioDocument document = core::load_scenario_document(args.scenario);
  apply_objective_target(args, document.json);
  const SweepSettings settings = sweep_settings(args);
  core::OutputFiles files(args.force);
  files.protect(args.scenario, "the scenario");
  const std::vector<Change> changes = changes_for(args.strategy, document.json);
  // The base point first (its errors are the scenario's own: raised), then each change.
  std::vector<PreparedPoint> prepared = {prepare_point(loaded, document.json, settings, {})};
  std::vector<const Change*> applied;
  std::vector<std::pair<const Change*, std::string>> not_applicable;
  const std::string placement =
      document.json["training"].value("variable_placement", "round_robin");
  for (const Change& c : changes) {
    if (c.knobs.front().first == "variable_placement" && c.knobs.front().second == placement) {
      not_applicable.emplace_back(&c, "the scenario's own placement");
      continue;
    }
    core::SweepPoint point{prepared.size(), c.knobs};
    if (interrupted()) throw core::RunCancelled();
    try {
      prepared.push_back(prepare_point(loaded, document.json, settings, point));
      applied.push_back(&c);
    } catch (const core::InputError& e) {
      std::string why = e.message();
      const std::string prefix = "point " + point.label() + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      not_applicable.emplace_back(&c, why);
    }
  }
  json report = {
      {"format", "replisim-whatif"},
      {"version", 1},
      {"scenario", loaded.scenario.name},
      {"strategy", args.strategy},
      {"objective_target", args.objective_target.empty() ? json() : json(args.objective_target)},
      {"provenance", provenance(args, loaded)}};
  if (!args.json_path.empty()) {
    files.add("--json", args.json_path,
              [&report](std::ostream& o) { o << report.dump(1) << "\n"; });
  }
  SweepCounts counts;
  const std::vector<core::SweepRow> rows = run_prepared_points(prepared, settings, &counts);
  const core::SweepRow& base = rows.front();
  if (!base.error.empty()) {
    // Exit code 2: the scenario (or a flag) is bad input, which the child's line names.
    if (counts.exit_codes.front() == 2) throw core::InputError("", "", base.error);
    throw core::BackendError("the scenario's own point failed: " + base.error);
  }
  std::vector<size_t> order(applied.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto gain = [&](size_t i) {
    const core::SweepRow& r = rows[i + 1];
    return r.error.empty() ? r.throughput_samples_per_s / base.throughput_samples_per_s - 1
                           : -1e300;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return gain(a) > gain(b); });

  out << "replisim whatif: scenario \"" << loaded.scenario.name << "\" (" << args.scenario << "), "
      << args.strategy << ", seed " << args.seed << "\n"
      << "as it is: " << fixed_decimals(base.throughput_samples_per_s, 1) << " samples/s on "
      << base.replica_devices << " replica device(s), bound by " << bound_by_text(base)
      << " (busiest: " << bottleneck_text(base) << ")\n";
  const bool objective = base.objective.has_value();
  if (objective) print_base_objective(base, args, out);
  out << "\n";
  std::vector<std::vector<std::string>> table = {
      {"change", "samples/s", "gain", "devices", "then bound by", "busiest resource"}};
  if (objective) table.front().insert(table.front().end(), {"to target (s)", "global steps"});
  report["base"] = row_json(base);
  report["changes"] = json::array();
  for (size_t i : order) {
    const core::SweepRow& r = rows[i + 1];
    json entry = row_json(r);
    entry["change"] = applied[i]->name;
    entry["knobs"] = json::object();
    for (const auto& [k, v] : applied[i]->knobs) entry["knobs"][k] = v;
    if (r.error.empty()) {
      entry["gain"] = gain(i);
      table.push_back({applied[i]->name, fixed_decimals(r.throughput_samples_per_s, 1),
                       percent(gain(i)), std::to_string(r.replica_devices), bound_by_text(r),
                       bottleneck_text(r)});
      if (objective) {
        const std::optional<double> time = time_to_target_change(base, r);
        const std::optional<int64_t> steps = global_steps_change(base, r);
        entry["time_to_target_change"] = time ? json(*time) : json();
        entry["global_steps_to_target_change"] = steps ? json(*steps) : json();
        for (std::string& cell : objective_change_cells(base, r)) {
          table.back().push_back(std::move(cell));
        }
      }
    } else {
      table.push_back({applied[i]->name, "failed: " + r.error});
    }
    report["changes"].push_back(entry);
  }
  print_columns(table, out);
  report["not_applicable"] = json::array();
  if (!not_applicable.empty()) out << "\nnot applicable here:\n";
  for (const auto& [change, why] : not_applicable) {
    out << "  " << change->name << ": " << why << "\n";
    report["not_applicable"].push_back({{"change", change->name}, {"why", why}});
  }
  files.set_cancel(interrupted);
  files.write_all();
  return 0;
}

}  // namespace replisim::cli
