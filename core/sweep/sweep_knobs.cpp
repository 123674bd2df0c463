#include "core/sweep/sweep_knobs.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/plan/kinds.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "core/sweep/scenario_edit.h"
#include "core/sweep/sweep_knobs_detail.h"

namespace replisim::core {
namespace {

using nlohmann::json;

std::string flag_of(const std::string& key) {
  return "--vary " + key;
}

int parse_count(const std::string& key, const std::string& value, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || n < lo || n > hi) {
    throw InputError("", flag_of(key),
                     "expected a count from " + std::to_string(lo) + " to " + std::to_string(hi) +
                         ", got \"" + value + "\"");
  }
  return int(n);
}

// A count: N, a factor of the scenario's own `current` ("x2", rounded to the nearest integer) or
// an increment ("+1").
int relative_count(const std::string& key, const std::string& value, int current, int lo, int hi) {
  double factor = 0;
  if (parse_sweep_factor(flag_of(key), value, &factor)) {
    const double n = std::round(current * factor);
    if (n < lo || n > hi) {
      throw InputError("", flag_of(key),
                       value + " of " + std::to_string(current) + " is outside " +
                           std::to_string(lo) + ".." + std::to_string(hi));
    }
    return int(n);
  }
  if (!value.empty() && value[0] == '+') {
    const int n = current + parse_count(key, value.substr(1), 1, hi);
    if (n > hi)
      throw InputError("", flag_of(key), value + " makes more than " + std::to_string(hi));
    return n;
  }
  return parse_count(key, value, lo, hi);
}

void require_one_of(const std::string& key, const std::string& value,
                    const std::vector<std::string>& valid) {
  for (const std::string& v : valid) {
    if (v == value) return;
  }
  throw InputError("", flag_of(key),
                   "unknown value \"" + value + "\"; valid: " + join_names(valid));
}

// A quantity as scenarios write it, exactly (17 significant digits) in the base unit's symbol.
std::string quantity_text(double value, Dimension dimension) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g %s", value,
                dimension == Dimension::kBandwidth ? "Bps" : "FLOPS");
  return buffer;
}

// The fields a bandwidth or speed knob changes, as (holder object, member): each may be absent
// from the scenario (machine_defaults, a dedicated PS's own machine).
struct Field {
  json* holder;
  std::string member;
  std::string path;
};

// Sets every field to `value`, or multiplies each by `value`'s factor ("x2"). Checks the value's
// unit first, so a bad value names the flag rather than a field of the point.
void set_quantities(const std::string& key, std::vector<Field> fields, const std::string& value,
                    Dimension dimension, const KnobContext& ctx) {
  double factor = 0;
  const bool scaled = parse_sweep_factor(flag_of(key), value, &factor);
  if (!scaled) {
    double parsed = 0;
    try {
      parsed = parse_quantity(value, dimension);
    } catch (const UnitError& e) {
      throw InputError("", flag_of(key), "\"" + value + "\": " + e.what());
    }
    if (!(parsed > 0)) throw InputError("", flag_of(key), "\"" + value + "\" must be above 0");
  }
  for (Field& f : fields) {
    json& target = (*f.holder)[f.member];
    if (!scaled) {
      target = value;
      continue;
    }
    double current = 0;
    try {
      current = parse_quantity(target.is_string() ? target.get<std::string>() : "", dimension);
    } catch (const UnitError& e) {
      throw InputError(ctx.file, f.path, std::string("cannot scale this value: ") + e.what());
    }
    target = quantity_text(current * factor, dimension);
  }
}

json* member(json& object, const std::string& name) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

json& training(json& s, const KnobContext& ctx) {
  json* t = member(s, "training");
  if (t == nullptr || !t->is_object()) throw InputError(ctx.file, "/training", "missing");
  return *t;
}

// The machine-like objects whose hardware a knob changes: every machine, machine_defaults, and a
// dedicated PS's machine, with their JSON paths.
std::vector<std::pair<json*, std::string>> hardware_holders(json& s) {
  std::vector<std::pair<json*, std::string>> out;
  if (json* cluster = member(s, "cluster")) {
    if (json* machines = member(*cluster, "machines"); machines && machines->is_array()) {
      for (size_t i = 0; i < machines->size(); ++i) {
        out.emplace_back(&(*machines)[i], "/cluster/machines/" + std::to_string(i));
      }
    }
    if (json* defaults = member(*cluster, "machine_defaults")) {
      out.emplace_back(defaults, "/cluster/machine_defaults");
    }
  }
  if (json* t = member(s, "training")) {
    if (json* ps = member(*t, "ps"); ps && ps->is_object()) {
      if (json* machine = member(*ps, "machine")) out.emplace_back(machine, "/training/ps/machine");
    }
  }
  return out;
}

void apply_nic_bandwidth(json& s, const std::string& value, const KnobContext& ctx) {
  std::vector<Field> fields;
  for (auto& [holder, path] : hardware_holders(s)) {
    json* nic = member(*holder, "nic");
    if (nic != nullptr && member(*nic, "bandwidth") != nullptr) {
      fields.push_back({nic, "bandwidth", path + "/nic/bandwidth"});
    }
  }
  if (fields.empty()) throw InputError(ctx.file, "/cluster/machines", "no NIC bandwidth to vary");
  set_quantities("nic_bandwidth", fields, value, Dimension::kBandwidth, ctx);
}

// nic.count of every machine-like object that has a NIC (machines, machine_defaults, a dedicated
// PS's machine): a count, or a factor ("x2") or an increment ("+1") of each one's own count.
void apply_nics_per_machine(json& s, const std::string& value, const KnobContext& ctx) {
  const std::string key = "nics_per_machine";
  bool changed = false;
  for (auto& [holder, path] : hardware_holders(s)) {
    json* nic = member(*holder, "nic");
    if (nic == nullptr || !nic->is_object()) continue;
    const json* count = member(*nic, "count");
    const int current = count != nullptr && count->is_number_integer() ? count->get<int>() : 1;
    (*nic)["count"] = relative_count(key, value, current, 1, limits::kMaxNicsPerMachine);
    changed = true;
  }
  if (!changed) {
    throw InputError(ctx.file, "/cluster/machines",
                     "nics_per_machine needs a machine with a \"nic\"; this scenario has none");
  }
}

void apply_gpu_speed(json& s, const std::string& value, const KnobContext& ctx) {
  std::vector<Field> fields;
  for (auto& [holder, path] : hardware_holders(s)) {
    if (json* gpus = member(*holder, "gpus"); gpus && gpus->is_object()) {
      if (member(*gpus, "speed") != nullptr)
        fields.push_back({gpus, "speed", path + "/gpus/speed"});
    }
    if (json* gpus = member(*holder, "gpus"); gpus && gpus->is_array()) {
      for (size_t g = 0; g < gpus->size(); ++g) {
        if (member((*gpus)[g], "speed") != nullptr) {
          fields.push_back({&(*gpus)[g], "speed", path + "/gpus/" + std::to_string(g) + "/speed"});
        }
      }
    }
    json* gpu = member(*holder, "gpu");  // machine_defaults.gpu
    if (gpu != nullptr && member(*gpu, "speed") != nullptr) {
      fields.push_back({gpu, "speed", path + "/gpu/speed"});
    }
  }
  if (fields.empty()) {
    throw InputError(ctx.file, "/cluster/machines",
                     "gpu_speed needs GPUs with a speed; this scenario has none");
  }
  set_quantities("gpu_speed", fields, value, Dimension::kFlopRate, ctx);
}

void apply_switch_bandwidth(json& s, const std::string& value, const KnobContext& ctx) {
  json& cluster = s["cluster"];
  double factor = 0;
  if (parse_sweep_factor(flag_of("switch_bandwidth"), value, &factor) &&
      (member(cluster, "switch") == nullptr || member(cluster["switch"], "bandwidth") == nullptr)) {
    throw InputError(ctx.file, "/cluster/switch/bandwidth",
                     "switch_bandwidth=" + value +
                         " multiplies the switch's bandwidth, but the scenario gives none (its "
                         "switch is non-blocking); give /cluster/switch/bandwidth or vary it in "
                         "units (\"100 Gbps\")");
  }
  if (member(cluster, "switch") == nullptr) cluster["switch"] = json::object();
  set_quantities("switch_bandwidth",
                 {{&cluster["switch"], "bandwidth", "/cluster/switch/bandwidth"}}, value,
                 Dimension::kBandwidth, ctx);
}

// cluster.topology of a racks scenario (or, `fat_tree_too`, of a fat tree, whose level 0 is its
// racks); throws naming the knob when the cluster has one switch, or is a fat tree that gives the
// racks' keys per level.
json& racks_topology(json& s, const std::string& key, const KnobContext& ctx,
                     bool fat_tree_too = false) {
  json* topology = member(s["cluster"], "topology");
  const std::string kind =
      topology != nullptr && topology->is_object() ? topology->value("kind", "") : "";
  if (kind == "fat_tree" && fat_tree_too) return *topology;
  if (kind == "fat_tree") {
    throw InputError(ctx.file, "/cluster/topology",
                     key +
                         " varies a racks topology's key, and this cluster is a fat tree, which "
                         "gives it per level (/cluster/topology/levels/<k>): edit the levels");
  }
  if (kind != "racks") {
    throw InputError(ctx.file, "/cluster/topology",
                     key +
                         " varies racks, and this cluster has one switch: give "
                         "/cluster/topology {\"kind\": \"racks\", \"machines_per_rack\": N, "
                         "\"oversubscription\": r}");
  }
  return *topology;
}

// `ratio` checked against the oversubscription range; `how` says where it came from (the value
// given, or the factor applied to the scenario's ratio) in the error.
double checked_ratio(const std::string& key, double ratio, const std::string& how) {
  if (!(ratio >= kMinOversubscription && ratio <= kMaxOversubscription)) {
    throw InputError(
        "", flag_of(key),
        how + " makes an oversubscription of " +
            (std::isfinite(ratio) ? dump_json(json(ratio)) : std::string("no number")) +
            ", outside " + dump_json(json(kMinOversubscription)) + ".." +
            dump_json(json(kMaxOversubscription)));
  }
  return ratio;
}

// A ratio or a factor of the scenario's own ("x2").
double parse_ratio(const std::string& key, const std::string& value, double current) {
  double factor = 0;
  if (parse_sweep_factor(flag_of(key), value, &factor)) {
    return checked_ratio(key, current * factor,
                         value + " of the scenario's ratio " + dump_json(json(current)));
  }
  char* end = nullptr;
  const double ratio = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(ratio)) {
    throw InputError("", flag_of(key),
                     "expected a ratio such as 3 or a factor x2, got \"" + value + "\"");
  }
  return checked_ratio(key, ratio, value);
}

// The oversubscription ratio r (uplink = a rack's NIC total / r); it replaces a given uplink.
void apply_oversubscription(json& s, const std::string& value, const KnobContext& ctx) {
  json& topology = racks_topology(s, "oversubscription", ctx);
  const json* current = member(topology, "oversubscription");
  if (current == nullptr && value.rfind('x', 0) == 0) {
    throw InputError(ctx.file, "/cluster/topology/oversubscription",
                     "oversubscription=" + value +
                         " multiplies the ratio, but the scenario gives an uplink instead; vary "
                         "it as a ratio (3) or vary uplink_bandwidth");
  }
  const double ratio =
      parse_ratio("oversubscription", value,
                  current != nullptr && current->is_number() ? current->get<double>() : 1.0);
  topology.erase("uplink");
  topology["oversubscription"] = ratio;
}

// Every rack's uplink: a bandwidth, or a factor (with an oversubscription ratio, the ratio
// divided by it).
void apply_uplink_bandwidth(json& s, const std::string& value, const KnobContext& ctx) {
  json& topology = racks_topology(s, "uplink_bandwidth", ctx);
  double factor = 0;
  json* ratio = member(topology, "oversubscription");
  if (ratio != nullptr && parse_sweep_factor(flag_of("uplink_bandwidth"), value, &factor)) {
    // Uplinks `factor` times as fast: the ratio divided by it.
    const double now = ratio->is_number() ? ratio->get<double>() : 1.0;
    *ratio = checked_ratio("uplink_bandwidth", now / factor,
                           value + " (uplinks " + value + " as fast: the scenario's ratio " +
                               dump_json(json(now)) + " / " + dump_json(json(factor)) + ")");
    return;
  }
  if (ratio != nullptr) {
    topology.erase("oversubscription");
    topology["uplink"] = json::object();
  }
  set_quantities("uplink_bandwidth",
                 {{&topology["uplink"], "bandwidth", "/cluster/topology/uplink/bandwidth"}}, value,
                 Dimension::kBandwidth, ctx);
}

void apply_machines_per_rack(json& s, const std::string& value, const KnobContext& ctx) {
  json& topology = racks_topology(s, "machines_per_rack", ctx);
  json& count = topology["machines_per_rack"];
  count = relative_count("machines_per_rack", value,
                         count.is_number_integer() ? count.get<int>() : 1, 1, 100000);
}

void apply_ps_spread(json& s, const std::string& value, const KnobContext& ctx) {
  require_one_of("ps_spread", value, {"racks", "one_rack"});
  racks_topology(s, "ps_spread", ctx, true);
  json* ps = member(training(s, ctx), "ps");
  if (ps == nullptr || !ps->is_object()) {
    throw InputError(ctx.file, "/training/ps",
                     "ps_spread places the PS template's tasks; here /training/ps is " +
                         std::string(ps == nullptr ? "left out (the client's CPU)" : "a list"));
  }
  (*ps)["spread"] = value;
}

// The machine part of each replica entry ("w*" of "w*/gpu*"); throws when an entry is a fixed
// device (no template to resize).
std::vector<std::string> replica_machine_patterns(const json& replicas, const KnobContext& ctx) {
  const std::string need =
      "machines can be varied only when /training/replicas is a pattern over a machine template "
      "(\"w*/gpu*\" with the machine {\"name\": \"w\", \"count\": N}) or {\"towers\": \"w*/gpu*\", "
      "\"per\": \"machine\"}";
  std::vector<const json*> entries;
  if (replicas.is_array()) {
    for (const json& e : replicas) entries.push_back(&e);
  } else {
    entries.push_back(&replicas);
  }
  std::vector<std::string> patterns;
  for (const json* e : entries) {
    std::string text;
    if (e->is_string()) {
      text = e->get<std::string>();
    } else if (e->is_object() && e->contains("towers") && (*e)["towers"].is_string() &&
               e->value("per", "") == "machine") {
      text = (*e)["towers"].get<std::string>();
    }
    const std::string machine = text.substr(0, text.find('/'));
    if (!is_glob(machine)) {
      throw InputError(ctx.file, "/training/replicas",
                       need + "; here an entry names " + (text.empty() ? "fixed devices" : text));
    }
    patterns.push_back(machine);
  }
  return patterns;
}

size_t machines_template_of(json& s, const KnobContext& ctx) {
  json& t = training(s, ctx);
  if (member(t, "replicas") == nullptr) throw InputError(ctx.file, "/training/replicas", "missing");
  const std::vector<std::string> patterns = replica_machine_patterns(t["replicas"], ctx);
  json* machines = member(s["cluster"], "machines");
  std::vector<size_t> matched;
  for (size_t i = 0; machines != nullptr && machines->is_array() && i < machines->size(); ++i) {
    const json& m = (*machines)[i];
    if (!m.is_object() || !m.contains("count") || !m.contains("name") || !m["name"].is_string()) {
      continue;
    }
    for (const std::string& p : patterns) {
      if (glob_match(p, m["name"].get<std::string>() + "0")) {
        matched.push_back(i);
        break;
      }
    }
  }
  if (matched.size() != 1) {
    throw InputError(ctx.file, "/cluster/machines",
                     matched.empty()
                         ? "machines can be varied only when the replicas' machines are one "
                           "machine template ({\"name\": \"w\", \"count\": N}); none matches "
                           "/training/replicas"
                         : "machines: several machine templates match /training/replicas; "
                           "the sweep cannot tell which to resize");
  }
  return matched.front();
}

void apply_machines(json& s, const std::string& value, const KnobContext& ctx) {
  const size_t index = machines_template_of(s, ctx);
  json& count = s["cluster"]["machines"][index]["count"];
  count = relative_count("machines", value, count.is_number_integer() ? count.get<int>() : 1, 1,
                         limits::kMaxReplicas);
}

// The replicas as every tool counts them (scenario_edit.h): the viewer's knob and this one make
// the same scenario of a file.
void apply_replicas(json& s, const std::string& value, const KnobContext& ctx) {
  ScenarioJson edited = s;
  const int now = scenario_replica_count(edited);
  if (now == 0) throw InputError(ctx.file, "/training/replicas", "missing");
  const int wanted = relative_count("replicas", value, now, 1, limits::kMaxReplicas);
  // Per-replica batches name each replica: a new count has no batches to take.
  json* batches = member(training(s, ctx), "batch_per_replica");
  if (wanted != now && batches != nullptr && batches->is_array()) {
    throw InputError(ctx.file, "/training/batch_per_replica",
                     "lists a batch for each of the " + std::to_string(now) +
                         " replicas, so their count cannot become " + std::to_string(wanted) +
                         " (give one batch for every replica, or list " + std::to_string(wanted) +
                         ")");
  }
  set_scenario_replica_count(edited, wanted, ctx.file);
  s = json(edited);
}

void apply_ps(json& s, const std::string& value, const KnobContext& ctx) {
  json& t = training(s, ctx);
  json* ps = member(t, "ps");
  if (ps == nullptr || !ps->is_object() || !ps->contains("count")) {
    throw InputError(ctx.file, "/training/ps",
                     "ps can be varied only when /training/ps is a template {\"count\": N, "
                     "\"on\": \"dedicated\" | \"workers\"}; here it is " +
                         std::string(ps == nullptr ? "left out (the client's CPU)" : "a list"));
  }
  json& count = (*ps)["count"];
  count = relative_count("ps", value, count.is_number_integer() ? count.get<int>() : 1, 1, 1000000);
}

void apply_backups(json& s, const std::string& value, const KnobContext& ctx) {
  const int backups = parse_count("backups", value, 0, limits::kMaxCpuCores);
  const Strategy* strategy = find_strategy(ctx.strategy);
  if (strategy != nullptr && !strategy->sync_replicas) {
    if (backups == 0) return;
    throw InputError(
        "", "--vary backups",
        "backups=" + value +
            " applies to between-graph training (SyncReplicasOptimizer); this "
            "point is " +
            ctx.strategy +
            (strategy->one_client ? " (synchronous by construction, one client)" : ""));
  }
  if (ctx.point != nullptr) {
    auto it = ctx.point->find("sync");
    if (it != ctx.point->end() && (it->second == "async" || it->second == kDistributedReplicated)) {
      if (backups == 0) return;
      throw InputError("", "--vary backups",
                       "backups=" + value +
                           " needs synchronous training (SyncReplicasOptimizer), and this point "
                           "has sync=" +
                           it->second);
    }
  }
  // A scenario in distributed_replicated mode has no backup workers (every worker meets every
  // barrier): backups would silently switch it to SyncReplicasOptimizer.
  if (json* t = member(s, "training"); t != nullptr && t->contains("sync") &&
                                       (*t)["sync"] == kDistributedReplicated &&
                                       (ctx.point == nullptr || !ctx.point->count("sync"))) {
    if (backups == 0) return;
    throw InputError("", "--vary backups",
                     "backups=" + value +
                         " needs synchronous training (SyncReplicasOptimizer), and the scenario "
                         "has sync \"distributed_replicated\" (vary sync=sync with it)");
  }
  // The workers this point has (replicas may have changed them).
  const Scenario parsed = parse_scenario(s, ctx.file);
  const int workers = int(parsed.training.workers.size());
  if (backups >= workers) {
    throw InputError("", "--vary backups",
                     "backups=" + value + " leaves no replica to aggregate: the point has " +
                         std::to_string(workers) + " worker(s)");
  }
  json& t = training(s, ctx);
  json sync = json::object();
  if (json* old = member(t, "sync"); old && old->is_object() && old->contains("variant")) {
    sync["variant"] = (*old)["variant"];
  }
  sync["replicas_to_aggregate"] = workers - backups;
  sync["total_num_replicas"] = workers;
  t["sync"] = sync;
}

void apply_sync(json& s, const std::string& value, const KnobContext& ctx) {
  require_one_of("sync", value, {"async", "sync", kDistributedReplicated});
  json& t = training(s, ctx);
  json* old = member(t, "sync");
  if (value == "sync" && old != nullptr && old->is_object()) return;  // keeps R, T and variant
  t["sync"] = value;
}

void set_training_field(json& s, const std::string& field, const json& value,
                        const KnobContext& ctx) {
  training(s, ctx)[field] = value;
}

std::vector<SweepKnob> make_knobs() {
  std::vector<SweepKnob> knobs;
  knobs.push_back({"replicas",
                   "replicas (workers; a pattern's template grows by whole machines, a list by "
                   "copies of its fastest machine): 1,2,4, 1..64x2, x2 or +1",
                   apply_replicas});
  knobs.push_back(
      {"machines",
       "machines of the replicas' machine template (its count): 1,2,4, 1..64x2, x2 or +1",
       apply_machines});
  knobs.push_back({"ps",
                   "parameter server tasks of the PS template (training.ps.count): 1,2,4, x2 or +1",
                   apply_ps});
  knobs.push_back({"nic_bandwidth",
                   "every NIC's bandwidth (machines, machine_defaults, dedicated PS): \"10 Gbps\" "
                   "or a factor x2",
                   apply_nic_bandwidth});
  knobs.push_back({"nics_per_machine",
                   "NICs per machine, each connection on one of them (every nic.count: machines, "
                   "machine_defaults, dedicated PS): 1,2,4, x2 or +1",
                   apply_nics_per_machine});
  knobs.push_back({"switch_bandwidth", "the switch's bandwidth: \"100 Gbps\" or a factor x2",
                   apply_switch_bandwidth});
  knobs.push_back({"oversubscription",
                   "racks: every uplink's oversubscription ratio (uplink = the rack's NICs / r): "
                   "1,3,4 or a factor x2",
                   apply_oversubscription});
  knobs.push_back({"uplink_bandwidth",
                   "racks: every uplink's bandwidth: \"40 Gbps\" or a factor x2 (of a ratio: "
                   "the ratio / 2)",
                   apply_uplink_bandwidth});
  knobs.push_back(
      {"machines_per_rack", "racks: machines per rack: 4,8,16, x2 or +1", apply_machines_per_rack});
  knobs.push_back(
      {"ps_spread", "racks: the PS template's tasks over racks or in one rack", apply_ps_spread});
  knobs.push_back(
      {"gpu_speed", "every GPU's speed: \"15 TFLOPS\" or a factor x2", apply_gpu_speed});
  knobs.push_back({"batch_per_replica", "training.batch_per_replica",
                   [](json& s, const std::string& v, const KnobContext& ctx) {
                     set_training_field(s, "batch_per_replica",
                                        parse_count("batch_per_replica", v, 1, limits::kMaxBatch),
                                        ctx);
                   }});
  knobs.push_back({"strategy",
                   "in_graph, between_graph or allreduce (the compiler; default between_graph)",
                   {}});
  knobs.push_back(
      {"sync",
       "async, sync (TF's SyncReplicasOptimizer, R = T = workers) or distributed_replicated "
       "(tf_cnn_benchmarks' barriers)",
       apply_sync});
  knobs.push_back({"backups",
                   "backup workers of synchronous training: T = workers, R = workers - backups",
                   apply_backups, 1});
  knobs.push_back(
      {"variable_placement", "round_robin, greedy_by_bytes or partitioned",
       [](json& s, const std::string& v, const KnobContext& ctx) {
         require_one_of("variable_placement", v, {"round_robin", "greedy_by_bytes", "partitioned"});
         set_training_field(s, "variable_placement", v, ctx);
       }});
  knobs.push_back({"transport",
                   "the transport preset (cluster.transport becomes {\"preset\": VALUE}): ideal, "
                   "tcp, tf1_grpc",
                   [](json& s, const std::string& v, const KnobContext&) {
                     s["cluster"]["transport"] = json{{"preset", v}};
                   }});
  knobs.push_back(
      {"network_model", "lv08 or ideal", [](json& s, const std::string& v, const KnobContext&) {
         require_one_of("network_model", v, {"lv08", "ideal"});
         s["cluster"]["network_model"] = v;
       }});
  sweep_detail::add_allreduce_knobs(knobs);
  return knobs;
}

}  // namespace

bool parse_sweep_factor(const std::string& flag, const std::string& value, double* factor) {
  if (value.empty() || (value[0] != 'x' && value[0] != 'X')) return false;
  char* end = nullptr;
  const double f = std::strtod(value.c_str() + 1, &end);
  if (value.size() == 1 || *end != '\0' || !std::isfinite(f) || f <= 0 || f > 1e6) {
    throw InputError("", flag,
                     "\"" + value +
                         "\": a factor is x followed by a number above 0 and at most 1000000 "
                         "(x2, x0.5)");
  }
  *factor = f;
  return true;
}

const std::vector<SweepKnob>& sweep_knobs() {
  static const std::vector<SweepKnob> knobs = make_knobs();
  return knobs;
}

std::vector<std::string> sweep_knob_keys() {
  std::vector<std::string> keys;
  for (const SweepKnob& k : sweep_knobs()) keys.push_back(k.key);
  return keys;
}

const SweepKnob& find_sweep_knob(const std::string& key) {
  for (const SweepKnob& k : sweep_knobs()) {
    if (k.key == key) return k;
  }
  const std::string near = nearest_name(key, sweep_knob_keys());
  throw InputError("", "--vary",
                   "unknown key \"" + key + "\"" +
                       (near.empty() ? "" : "; did you mean " + near + "?") +
                       " (keys: " + join_names(sweep_knob_keys()) + ")");
}

size_t replicas_machine_template(nlohmann::json& scenario, const std::string& file) {
  KnobContext ctx;
  ctx.file = file;
  return machines_template_of(scenario, ctx);
}

}  // namespace replisim::core
