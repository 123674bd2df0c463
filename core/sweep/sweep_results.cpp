#include "core/sweep/sweep_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/metrics/critical_path.h"

namespace replisim::core {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "replisim-sweep";
// Version 2 (2026-12-06) added each row's `bound_by`; version 1 files still read (without it).
constexpr int kFormatVersion = 2;

// The kind of resource a bottleneck is, in the words of a capacity planner.
std::string resource_kind(const std::string& resource, const std::set<std::string>& ps_machines,
                          const std::string& client_machine) {
  // With racks (core::Platform::racks): the core switch, "<rack>/tor" and "<rack>/uplink/up".
  if (resource == "switch" || resource == "core") return "switch";
  const std::string machine = resource.substr(0, resource.find('/'));
  const std::string rest = resource.substr(std::min(resource.size(), machine.size() + 1));
  // A fat tree's pods (core::Platform::pods): "<pod>/aggregation", ".../aggregation/uplink/up".
  if (rest == "tor" || rest == "aggregation") return "switch";
  if (rest.rfind("uplink/", 0) == 0 || rest.rfind("aggregation/uplink/", 0) == 0) return "uplink";
  if (rest.rfind("gpu", 0) == 0) return "gpu";
  if (rest == "cpu") return "cpu";
  if (rest.rfind("pcie", 0) == 0) return "pcie";
  if (rest.rfind("nic", 0) == 0) {
    if (ps_machines.count(machine) != 0) return "ps nic";
    if (machine == client_machine) return "client nic";
    return "worker nic";
  }
  return "other";
}

double number_at(const JsonCursor& c, const std::string& key) {
  return c.at(key).as_number();
}

// A step time: null (no step wholly inside the measured window) reads as 0, "none".
double time_at(const JsonCursor& c, const std::string& key) {
  return c.at(key).value().is_null() ? 0.0 : number_at(c, key);
}

}  // namespace

SweepRow sweep_row_from_summary(const SweepPoint& point, const SweepPointFacts& facts,
                                const std::string& key, const json& summary,
                                const std::string& file, double wall_s) {
  SweepRow row;
  row.index = point.index;
  row.knobs = point.knobs;
  row.strategy = facts.strategy;
  row.key = key;
  row.wall_s = wall_s;
  row.replica_devices = facts.replica_devices;
  row.workers = facts.workers;
  row.ps_tasks = facts.ps_tasks;
  const JsonCursor root(summary, file);
  const JsonCursor run = root.at("runs").at(0);
  row.throughput_samples_per_s = number_at(run, "throughput_samples_per_s");
  const JsonCursor step = run.at("step_time_s");
  row.step_time_mean_s = time_at(step, "mean");
  row.step_time_p50_s = time_at(step, "p50");
  row.step_time_p95_s = time_at(step, "p95");
  if (run.has("bound_by")) {
    const CriticalPath path = critical_path_from_json(run.at("bound_by"));
    row.bound_by = describe_path(path, 2, false);
    if (!path.shares.empty() && path.seconds > 0) {
      row.bound_by_share = path.shares.front().name;
      row.bound_by_kind = path_share_kind(path.shares.front());
      // The shares are summed in another order than the path: a share that is the whole path
      // can exceed it by a rounding error.
      row.bound_by_fraction = std::min(1.0, path.shares.front().seconds / path.seconds);
    }
  }
  const JsonCursor bottleneck = run.at("bottleneck");
  row.bottleneck = bottleneck.at("resource").as_string();
  row.bottleneck_utilization = number_at(bottleneck, "utilization");
  row.bottleneck_kind = resource_kind(row.bottleneck, facts.ps_machines, facts.client);
  const JsonCursor bytes = run.at("bytes_per_ps");
  double sum = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const double b = bytes.at(i).as_number();
    row.ps_bytes_max = std::max(row.ps_bytes_max, b);
    sum += b;
  }
  row.ps_bytes_mean = bytes.size() == 0 ? 0 : sum / double(bytes.size());
  if (run.has("memory")) {
    const JsonCursor memory = run.at("memory");
    for (size_t i = 0; i < memory.size(); ++i) {
      const JsonCursor m = memory.at(i);
      if (m.at("device").as_string().find("/gpu") == std::string::npos) continue;
      const double headroom = m.at("headroom_bytes").as_number();  // negative: short
      if (!row.gpu_memory_headroom_bytes || headroom < *row.gpu_memory_headroom_bytes) {
        row.gpu_memory_headroom_bytes = headroom;
      }
    }
  }
  // The replicas' step breakdown: between-graph workers, in-graph towers.
  const std::string& kind = facts.replica_role_kind;
  const JsonCursor waits = run.at("waits");
  int roles = 0;
  for (size_t i = 0; i < waits.size(); ++i) {
    const JsonCursor w = waits.at(i);
    if (w.at("role_kind").as_string() != kind) continue;
    ++roles;
    row.compute_share += number_at(w, "compute");
    row.network_share += number_at(w, "network");
    for (const char* k : {"peers", "client", "ps", "token", "other"}) {
      row.waiting_share += number_at(w, k);
    }
    // All-reduce ranks waiting on their collectives (summaries from before it have none).
    if (w.has("collective")) row.waiting_share += number_at(w, "collective");
  }
  if (run.has("warnings")) {
    const JsonCursor warnings = run.at("warnings");
    for (size_t i = 0; i < warnings.size(); ++i) row.warnings.push_back(warnings.at(i).as_string());
  }
  row.objective = sweep_objective_from_summary(run);
  if (roles > 0) {
    row.compute_share /= roles;
    row.network_share /= roles;
    row.waiting_share /= roles;
  }
  return row;
}

std::string sweep_id(const SweepResults& r) {
  json axes = json::array();
  for (const SweepAxis& a : r.axes) axes.push_back({a.key, a.values});
  std::string text = r.scenario_hash + "\n" + axes.dump() + "\n" + r.default_strategy + "\n" +
                     std::to_string(r.seed) + "\n" + std::to_string(r.steps);
  // Only an overridden target adds to it: sweeps without one keep the ids they had.
  if (!r.objective_target.empty()) text += "\nobjective_target " + r.objective_target;
  return fnv1a_hex(text);
}

void compute_scaling_efficiency(std::vector<SweepRow>& rows) {
  // Rows that differ only in `replicas` form a group; its base is the row with the fewest devices.
  std::map<std::string, const SweepRow*> base;
  auto group_of = [](const SweepRow& row) {
    std::string g = row.strategy;
    for (const auto& [key, value] : row.knobs) {
      if (key != "replicas") g += "\n" + key + "=" + value;
    }
    return g;
  };
  // A group whose rows all have one device count (`replicas` not varied) has nothing to scale
  // against: its efficiency stays unset rather than a meaningless 100%.
  std::map<std::string, std::set<int>> device_counts;
  for (const SweepRow& row : rows) {
    if (!row.error.empty() || row.replica_devices <= 0) continue;
    const SweepRow*& b = base[group_of(row)];
    if (b == nullptr || row.replica_devices < b->replica_devices) b = &row;
    device_counts[group_of(row)].insert(row.replica_devices);
  }
  std::vector<std::optional<double>> efficiency(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& row = rows[i];
    auto it = base.find(group_of(row));
    if (!row.error.empty() || it == base.end() || it->second->throughput_samples_per_s <= 0 ||
        device_counts[it->first].size() < 2) {
      continue;
    }
    const SweepRow& b = *it->second;
    efficiency[i] = (row.throughput_samples_per_s / row.replica_devices) /
                    (b.throughput_samples_per_s / b.replica_devices);
  }
  for (size_t i = 0; i < rows.size(); ++i) rows[i].scaling_efficiency = efficiency[i];
}

json sweep_results_to_json(const SweepResults& r) {
  json axes = json::array();
  for (const SweepAxis& a : r.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  json rows = json::array();
  for (const SweepRow& row : r.rows) {
    json knobs = json::object();
    json order = json::array();
    for (const auto& [key, value] : row.knobs) {
      knobs[key] = value;
      order.push_back(key);
    }
    json j = {{"warnings", row.warnings},
              {"index", row.index},
              {"knobs", knobs},
              {"knob_order", order},
              {"strategy", row.strategy},
              {"key", row.key},
              {"replica_devices", row.replica_devices},
              {"workers", row.workers},
              {"ps_tasks", row.ps_tasks},
              {"wall_s", row.wall_s}};
    if (!row.error.empty()) {
      j["error"] = row.error;
      rows.push_back(j);
      continue;
    }
    j["throughput_samples_per_s"] = row.throughput_samples_per_s;
    // No step wholly inside the measured window: no step time (null), and a warning says so.
    auto time = [](double s) { return s > 0 ? json(s) : json(); };
    j["step_time_s"] = {{"mean", time(row.step_time_mean_s)},
                        {"p50", time(row.step_time_p50_s)},
                        {"p95", time(row.step_time_p95_s)}};
    j["scaling_efficiency"] = row.scaling_efficiency ? json(*row.scaling_efficiency) : json();
    j["bound_by"] = {{"text", row.bound_by},
                     {"share", row.bound_by_share},
                     {"kind", row.bound_by_kind},
                     {"fraction", row.bound_by_fraction}};
    j["bottleneck"] = {{"resource", row.bottleneck},
                       {"kind", row.bottleneck_kind},
                       {"utilization", row.bottleneck_utilization}};
    j["ps_bytes"] = {{"max", row.ps_bytes_max}, {"mean", row.ps_bytes_mean}};
    j["gpu_memory_headroom_bytes"] =
        row.gpu_memory_headroom_bytes ? json(*row.gpu_memory_headroom_bytes) : json();
    j["step_breakdown"] = {{"compute", row.compute_share},
                           {"network", row.network_share},
                           {"waiting", row.waiting_share}};
    j["objective"] = sweep_objective_to_json(row.objective);
    rows.push_back(j);
  }
  json shard =
      r.shard_count == 1 ? json() : json{{"index", r.shard_index}, {"count", r.shard_count}};
  return {{"format", kFormat},
          {"version", kFormatVersion},
          {"sweep_id", r.sweep_id},
          {"scenario", r.scenario_name},
          {"scenario_file", r.scenario_file},
          {"scenario_hash", r.scenario_hash},
          {"vary", axes},
          {"strategy", r.default_strategy},
          {"seed", r.seed},
          {"steps", r.steps},
          {"shard", shard},
          {"points_total", r.points_total},
          {"objective_target", r.objective_target.empty() ? json() : json(r.objective_target)},
          {"provenance", r.provenance},
          {"rows", rows}};
}

namespace {

// `version`: the file's (1: rows without bound_by).
SweepRow row_from_json(const JsonCursor& j, int version) {
  SweepRow row;
  row.index = size_t(j.at("index").as_number_in(0, double(kMaxSweepPoints)));
  const JsonCursor knobs = j.at("knobs");
  const JsonCursor order = j.at("knob_order");
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string key = order.at(k).as_string();
    row.knobs.emplace_back(key, knobs.at(key).as_string());
  }
  row.strategy = j.at("strategy").as_string();
  row.key = j.at("key").as_string();
  row.replica_devices = int(j.at("replica_devices").as_number_in(0, 1e9));
  row.workers = int(j.at("workers").as_number_in(0, 1e9));
  row.ps_tasks = int(j.at("ps_tasks").as_number_in(0, 1e9));
  row.wall_s = j.at("wall_s").as_number_in(0, 1e300);
  const JsonCursor warnings = j.at("warnings");
  for (size_t i = 0; i < warnings.size(); ++i) row.warnings.push_back(warnings.at(i).as_string());
  if (j.has("error")) {
    row.error = j.at("error").as_string();
    return row;
  }
  row.throughput_samples_per_s = j.at("throughput_samples_per_s").as_number();
  const JsonCursor step = j.at("step_time_s");
  row.step_time_mean_s = time_at(step, "mean");
  row.step_time_p50_s = time_at(step, "p50");
  row.step_time_p95_s = time_at(step, "p95");
  if (!j.at("scaling_efficiency").value().is_null()) {
    row.scaling_efficiency = j.at("scaling_efficiency").as_number();
  }
  if (version >= 2) {
    const JsonCursor bound = j.at("bound_by");
    row.bound_by = bound.at("text").as_string();
    row.bound_by_share = bound.at("share").as_string();
    row.bound_by_kind = bound.at("kind").as_string();
    row.bound_by_fraction = bound.at("fraction").as_number_in(0, 1);
  }
  const JsonCursor b = j.at("bottleneck");
  row.bottleneck = b.at("resource").as_string();
  row.bottleneck_kind = b.at("kind").as_string();
  row.bottleneck_utilization = b.at("utilization").as_number();
  row.ps_bytes_max = j.at("ps_bytes").at("max").as_number();
  row.ps_bytes_mean = j.at("ps_bytes").at("mean").as_number();
  if (!j.at("gpu_memory_headroom_bytes").value().is_null()) {
    row.gpu_memory_headroom_bytes = j.at("gpu_memory_headroom_bytes").as_number();
  }
  const JsonCursor s = j.at("step_breakdown");
  row.compute_share = s.at("compute").as_number();
  row.network_share = s.at("network").as_number();
  row.waiting_share = s.at("waiting").as_number();
  row.objective = sweep_objective_from_json(j);  // absent before 2026-12-07: none
  return row;
}

}  // namespace

SweepResults sweep_results_from_json(const json& document, const std::string& file) {
  const JsonCursor root(document, file);
  root.expect_object();
  if (!root.has("format") || root.at("format").as_string() != kFormat) {
    root.fail(
        "not a sweep's results (expected \"format\": \"replisim-sweep\", from replisim "
        "sweep --json)");
  }
  const double version = root.at("version").as_number();
  if (version != 1 && version != kFormatVersion) {
    root.at("version").fail("a sweep of another version; this replisim reads versions 1 and 2");
  }
  SweepResults r;
  r.sweep_id = root.at("sweep_id").as_string();
  r.scenario_name = root.at("scenario").as_string();
  r.scenario_file = root.at("scenario_file").as_string();
  r.scenario_hash = root.at("scenario_hash").as_string();
  const JsonCursor vary = root.at("vary");
  for (size_t i = 0; i < vary.size(); ++i) {
    SweepAxis a{vary.at(i).at("key").as_string(), {}};
    const JsonCursor values = vary.at(i).at("values");
    for (size_t v = 0; v < values.size(); ++v) a.values.push_back(values.at(v).as_string());
    r.axes.push_back(a);
  }
  r.default_strategy = root.at("strategy").as_string();
  r.seed = uint64_t(root.at("seed").as_number_in(0, 1.8e19));
  r.steps = int(root.at("steps").as_number_in(0, 1e9));
  if (!root.at("shard").value().is_null()) {
    r.shard_count = int(root.at("shard").at("count").as_number_in(2, 100000));
    r.shard_index = int(root.at("shard").at("index").as_number_in(0, r.shard_count - 1));
  }
  r.points_total = size_t(root.at("points_total").as_number_in(0, double(kMaxSweepPoints)));
  if (root.has("objective_target") && !root.at("objective_target").value().is_null()) {
    r.objective_target = root.at("objective_target").as_string();
  }
  r.provenance = root.at("provenance").value();
  const JsonCursor rows = root.at("rows");
  for (size_t i = 0; i < rows.size(); ++i)
    r.rows.push_back(row_from_json(rows.at(i), int(version)));
  return r;
}

SweepResults read_sweep_results(const std::string& file) {
  return sweep_results_from_json(read_json_file(file), file);
}

namespace {

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.12g", v);
  return buffer;
}

std::string csv_optional(const std::optional<double>& v) {
  return v ? csv_number(*v) : "";
}

// A step time; empty when no step fell wholly inside the measured window.
std::string csv_time(double s) {
  return s > 0 ? csv_number(s) : "";
}

}  // namespace

void write_sweep_csv(const SweepResults& r, std::ostream& out) {
  std::vector<std::string> keys;
  for (const SweepAxis& a : r.axes) keys.push_back(a.key);
  const bool strategy_varied = std::find(keys.begin(), keys.end(), "strategy") != keys.end();
  out << "index";
  for (const std::string& k : keys) out << "," << csv_cell(k);
  if (!strategy_varied) out << ",strategy";
  out << ",replica_devices,workers,ps_tasks,throughput_samples_per_s,step_time_mean_s,"
         "step_time_p50_s,step_time_p95_s,scaling_efficiency,bound_by,bound_by_kind,"
         "bound_by_fraction,bottleneck,bottleneck_kind,"
         "bottleneck_utilization,ps_bytes_max,ps_bytes_mean,gpu_memory_headroom_bytes,"
         "compute_share,network_share,waiting_share,"
      << kSweepObjectiveCsvHeader << ",wall_s,warnings,error\n";
  for (const SweepRow& row : r.rows) {
    out << row.index;
    for (const auto& kv : row.knobs) out << "," << csv_cell(kv.second);
    if (!strategy_varied) out << "," << row.strategy;
    out << "," << row.replica_devices << "," << row.workers << "," << row.ps_tasks;
    if (row.error.empty()) {
      out << "," << csv_number(row.throughput_samples_per_s) << ","
          << csv_time(row.step_time_mean_s) << "," << csv_time(row.step_time_p50_s) << ","
          << csv_time(row.step_time_p95_s) << "," << csv_optional(row.scaling_efficiency) << ","
          << csv_cell(row.bound_by) << "," << csv_cell(row.bound_by_kind) << ","
          << (row.bound_by.empty() ? std::string() : csv_number(row.bound_by_fraction)) << ","
          << csv_cell(row.bottleneck) << "," << csv_cell(row.bottleneck_kind) << ","
          << csv_number(row.bottleneck_utilization) << "," << csv_number(row.ps_bytes_max) << ","
          << csv_number(row.ps_bytes_mean) << "," << csv_optional(row.gpu_memory_headroom_bytes)
          << "," << csv_number(row.compute_share) << "," << csv_number(row.network_share) << ","
          << csv_number(row.waiting_share) << sweep_objective_csv_cells(row.objective);
    } else {
      // The 17 figures' cells and the objective's, empty.
      out << std::string(17 + kSweepObjectiveCsvColumns, ',');
    }
    std::string warnings;
    for (const std::string& w : row.warnings) warnings += (warnings.empty() ? "" : " | ") + w;
    out << "," << csv_number(row.wall_s) << "," << csv_cell(warnings) << "," << csv_cell(row.error)
        << "\n";
  }
}

SweepResults merge_sweep_shards(const std::vector<SweepResults>& shards,
                                const std::vector<std::string>& files) {
  if (shards.empty()) throw InputError("", "", "merge needs the shards' JSON files");
  const SweepResults& first = shards.front();
  if (first.shard_count == 1) {
    throw InputError(files.front(), "/shard", "not a shard (sweep --shard I/N writes shards)");
  }
  std::vector<int> seen(size_t(first.shard_count), -1);
  SweepResults merged = first;
  merged.rows.clear();
  for (size_t i = 0; i < shards.size(); ++i) {
    const SweepResults& s = shards[i];
    if (s.sweep_id != first.sweep_id || s.shard_count != first.shard_count) {
      throw InputError(files[i], "/sweep_id",
                       "a shard of another sweep than " + files.front() +
                           " (scenario, --vary, strategy, seed, steps and N of --shard I/N must "
                           "be the same)");
    }
    if (seen[size_t(s.shard_index)] >= 0) {
      throw InputError(files[i], "/shard",
                       "shard " + std::to_string(s.shard_index) + "/" +
                           std::to_string(s.shard_count) + " is also in " +
                           files[size_t(seen[size_t(s.shard_index)])]);
    }
    seen[size_t(s.shard_index)] = int(i);
    for (size_t r = 0; r < s.rows.size(); ++r) {
      const size_t index = s.rows[r].index;
      if (index >= first.points_total || int(index % size_t(s.shard_count)) != s.shard_index) {
        throw InputError(files[i], "/rows/" + std::to_string(r) + "/index",
                         "point " + std::to_string(index) + " is not one of shard " +
                             std::to_string(s.shard_index) + "/" + std::to_string(s.shard_count) +
                             "'s points (of " + std::to_string(first.points_total) + ")");
      }
    }
    merged.rows.insert(merged.rows.end(), s.rows.begin(), s.rows.end());
  }
  for (size_t k = 0; k < seen.size(); ++k) {
    if (seen[k] < 0) {
      throw InputError("", "",
                       "shard " + std::to_string(k) + "/" + std::to_string(first.shard_count) +
                           " is missing: give every shard of the sweep");
    }
  }
  std::sort(merged.rows.begin(), merged.rows.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.index < b.index; });
  for (size_t i = 0; i < merged.rows.size(); ++i) {
    if (merged.rows[i].index != i) {
      const bool repeated = i > 0 && merged.rows[i].index == merged.rows[i - 1].index;
      throw InputError("", "",
                       "the shards " + std::string(repeated ? "repeat" : "lack") + " point " +
                           std::to_string(repeated ? merged.rows[i].index : i) +
                           ": merge the shards of one complete sweep");
    }
  }
  if (merged.rows.size() != first.points_total) {
    throw InputError("", "",
                     "the shards hold " + std::to_string(merged.rows.size()) + " of the sweep's " +
                         std::to_string(first.points_total) + " points");
  }
  merged.shard_index = 0;
  merged.shard_count = 1;
  compute_scaling_efficiency(merged.rows);
  return merged;
}

}  // namespace replisim::core
