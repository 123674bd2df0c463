#include "core/sweep/scenario_edit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/base/units.h"
#include "core/scenario/scenario.h"

namespace replisim::core {

namespace {

const char* const kReplicasJsonPath = "/training/replicas";

const ScenarioJson* find_member(const ScenarioJson& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// An integer as the parser reads one (4 or 4.0), from 0 to `max`; nullopt for anything else.
std::optional<int64_t> whole_number(const ScenarioJson* j, double max) {
  if (j == nullptr || !j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  if (!(v >= 0) || v > max || v != std::floor(v)) return std::nullopt;
  return int64_t(v);
}

const ScenarioJson* machine_entry_list(const ScenarioJson& s) {
  const ScenarioJson* cluster = find_member(s, "cluster");
  const ScenarioJson* machines = cluster ? find_member(*cluster, "machines") : nullptr;
  return machines && machines->is_array() ? machines : nullptr;
}

std::string machine_name(const ScenarioJson& machine) {
  const ScenarioJson* name = find_member(machine, "name");
  return name && name->is_string() ? name->get<std::string>() : "";
}

// A template's copies ({"count": N}); nullopt for a single machine; 0 for a count the parser
// would refuse.
std::optional<int64_t> template_count(const ScenarioJson& machine) {
  const ScenarioJson* count = find_member(machine, "count");
  if (!count) return std::nullopt;
  return whole_number(count, limits::kMaxDevices).value_or(0);
}

int64_t gpus_of_machine(const ScenarioJson& machine) {
  const ScenarioJson* gpus = find_member(machine, "gpus");
  if (!gpus) return 0;
  if (gpus->is_object()) {  // {"count": 8, "speed": ...}: identical GPUs
    return whole_number(find_member(*gpus, "count"), limits::kMaxDevices).value_or(0);
  }
  return gpus->is_array() ? int64_t(gpus->size()) : 0;
}

// Every machine (its entry, its name), templates expanded; empty when the cluster would hold more
// devices than the parser allows (limits::kMaxDevices: it refuses such a file).
std::vector<std::pair<const ScenarioJson*, std::string>> every_machine(const ScenarioJson& s) {
  std::vector<std::pair<const ScenarioJson*, std::string>> out;
  const ScenarioJson* machines = machine_entry_list(s);
  if (!machines) return out;
  double devices = 0;
  for (const ScenarioJson& m : *machines) {
    const int64_t copies = template_count(m).value_or(1);
    devices += double(copies) * double(1 + gpus_of_machine(m));
    if (devices > limits::kMaxDevices) return {};
  }
  for (const ScenarioJson& m : *machines) {
    const std::string name = machine_name(m);
    if (const std::optional<int64_t> count = template_count(m)) {
      for (int64_t i = 0; i < *count; ++i) out.emplace_back(&m, name + std::to_string(i));
    } else {
      out.emplace_back(&m, name);
    }
  }
  return out;
}

// Every device of a machine of `entry` named `machine`: its CPU, then its GPUs.
std::vector<std::string> machine_devices(const ScenarioJson& entry, const std::string& machine) {
  std::vector<std::string> devices{machine + "/cpu"};
  for (int64_t g = 0; g < gpus_of_machine(entry); ++g) {
    devices.push_back(machine + "/gpu" + std::to_string(g));
  }
  return devices;
}

std::string machine_of_device(const std::string& device) {
  return device.substr(0, device.find('/'));
}

std::string device_in_machine(const std::string& device) {
  const size_t slash = device.find('/');
  return slash == std::string::npos ? "" : device.substr(slash + 1);
}

// The replica list's entries (a single entry may stand for the list).
std::vector<ScenarioJson> replica_entries(const ScenarioJson& replicas) {
  if (replicas.is_array()) return {replicas.begin(), replicas.end()};
  return {replicas};
}

// How an entry makes workers (scenario_devices.cpp's parse_replicas): `patterns` (devices or
// globs) each a worker per matched device (`per_machine` false), or one worker per machine with
// a match (a {"towers": ..., "per": "machine"} entry). Empty `patterns`: one worker (a fixed
// {"towers": ...} entry, or something the parser refuses).
struct Spread {
  std::vector<std::string> patterns;
  bool per_machine = false;
};

Spread spread_of(const ScenarioJson& entry) {
  Spread spread;
  if (entry.is_string()) {
    spread.patterns.push_back(entry.get<std::string>());
    return spread;
  }
  const ScenarioJson* towers = find_member(entry, "towers");
  const ScenarioJson* per = find_member(entry, "per");
  if (!towers || !per || !per->is_string() || per->get<std::string>() != "machine") return spread;
  spread.per_machine = true;
  for (const ScenarioJson& t : replica_entries(*towers)) {
    if (t.is_string()) spread.patterns.push_back(t.get<std::string>());
  }
  return spread;
}

// The workers one entry makes over `machines`.
int64_t replicas_of_entry(
    const ScenarioJson& entry,
    const std::vector<std::pair<const ScenarioJson*, std::string>>& machines) {
  const Spread spread = spread_of(entry);
  if (spread.patterns.empty()) return 1;
  if (!spread.per_machine && spread.patterns.size() == 1 && !is_glob(spread.patterns[0])) {
    return 1;  // one device
  }
  int64_t replicas = 0;
  for (const auto& [m, name] : machines) {
    int64_t here = 0;
    for (const std::string& d : machine_devices(*m, name)) {
      for (const std::string& p : spread.patterns) here += glob_match(p, d);
    }
    replicas += spread.per_machine ? std::min<int64_t>(here, 1) : here;
  }
  return replicas;
}

int64_t replica_count_of(const ScenarioJson& s) {
  const ScenarioJson* training = find_member(s, "training");
  const ScenarioJson* replicas = training ? find_member(*training, "replicas") : nullptr;
  if (!replicas) return 0;
  const auto machines = every_machine(s);
  if (machines.empty()) return 0;
  int64_t count = 0;
  for (const ScenarioJson& e : replica_entries(*replicas)) count += replicas_of_entry(e, machines);
  return count;
}

// The index of the one machine template the replicas spread over: every entry a spread whose
// patterns name machines by a glob, every pattern matching copies of that template only. -1 when
// there is none.
int replicas_template(const ScenarioJson& s, const std::vector<ScenarioJson>& entries) {
  const ScenarioJson* machines = machine_entry_list(s);
  if (!machines) return -1;
  int found = -1;
  for (const ScenarioJson& e : entries) {
    const Spread spread = spread_of(e);
    if (spread.patterns.empty()) return -1;
    for (const std::string& pattern : spread.patterns) {
      if (!is_glob(machine_of_device(pattern))) return -1;
      for (size_t i = 0; i < machines->size(); ++i) {
        const ScenarioJson& m = (*machines)[i];
        bool matches = false;
        // A template matches when its first copy does (the pattern names its copies by number).
        const std::string probe = template_count(m) ? machine_name(m) + "0" : machine_name(m);
        for (const std::string& d : machine_devices(m, probe)) matches |= glob_match(pattern, d);
        if (!matches) continue;
        if (!template_count(m) || (found >= 0 && found != int(i))) return -1;
        found = int(i);
      }
    }
  }
  return found;
}

double gpu_speed_in(const ScenarioJson& machine, size_t gpu) {
  const ScenarioJson* gpus = find_member(machine, "gpus");
  if (!gpus) return -1;
  const ScenarioJson* g = gpus->is_object()                        ? gpus
                          : gpus->is_array() && gpu < gpus->size() ? &(*gpus)[gpu]
                                                                   : nullptr;
  const ScenarioJson* speed = g ? find_member(*g, "speed") : nullptr;
  if (!speed) return -1;
  try {
    return parse_quantity(nlohmann::json(*speed), Dimension::kFlopRate);
  } catch (const std::exception&) {
    return -1;  // an unreadable speed: not the fastest (the scenario's check names it)
  }
}

// "pc2" -> {"pc", 2}; "fast" -> {"fast", -1}.
std::pair<std::string, int> numbered_name(const std::string& name) {
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits == name.size() || digits == 0 || name.size() - digits > 6) return {name, -1};
  return {name.substr(0, digits), std::stoi(name.substr(digits))};
}

// More replicas for a list: copies of the machine of the fastest replica named as a device.
void grow_replica_list(ScenarioJson& s, int64_t more, const std::string& file) {
  ScenarioJson& replicas = s["training"]["replicas"];
  ScenarioJson& machines = s["cluster"]["machines"];
  std::string fastest;
  int fastest_entry = -1;
  double fastest_speed = -2;
  for (const ScenarioJson& e : replica_entries(replicas)) {
    if (!e.is_string() || is_glob(e.get<std::string>())) continue;
    const std::string d = e.get<std::string>();
    for (size_t i = 0; i < machines.size(); ++i) {
      const std::string name = machine_name(machines[i]);
      const std::string machine = machine_of_device(d);
      const std::optional<int64_t> count = template_count(machines[i]);
      // A named machine, or a copy of a template ("w3" of {"name": "w", "count": 4}).
      const bool copy_of =
          count && machine.size() > name.size() && machine.compare(0, name.size(), name) == 0 &&
          machine.find_first_not_of("0123456789", name.size()) == std::string::npos &&
          machine.size() - name.size() < 9 && std::stoll(machine.substr(name.size())) < *count;
      if (!(count ? copy_of : name == machine)) continue;
      const std::string part = device_in_machine(d);
      const double speed = part.rfind("gpu", 0) == 0 && part.size() > 3 && part.size() < 9 &&
                                   part.find_first_not_of("0123456789", 3) == std::string::npos
                               ? gpu_speed_in(machines[i], std::stoul(part.substr(3)))
                               : -1;
      if (speed > fastest_speed) fastest_speed = speed, fastest = d, fastest_entry = int(i);
    }
  }
  if (fastest_entry < 0) {
    throw InputError(file, kReplicasJsonPath,
                     "more replicas copy the machine of a replica listed as a device of a named "
                     "machine (\"pc1/gpu0\"); this list has none: edit it in the file");
  }
  if (!replicas.is_array()) replicas = ScenarioJson::array({replicas});
  ScenarioJson& source = machines[size_t(fastest_entry)];
  if (const std::optional<int64_t> count = template_count(source)) {  // more copies of it
    for (int64_t i = 0; i < more; ++i) {
      replicas.push_back(machine_name(source) + std::to_string(*count + i) + "/" +
                         device_in_machine(fastest));
    }
    source["count"] = *count + more;
    return;
  }
  const ScenarioJson copy = source;
  const auto [prefix, number] = numbered_name(machine_name(copy));
  std::vector<std::string> taken = scenario_machine_names(s);
  for (int64_t i = 0, next = number >= 0 ? number + 1 : 2; i < more; ++next) {
    const std::string name = number < 0 ? machine_name(copy) + "_" + std::to_string(next)
                                        : prefix + std::to_string(next);
    if (std::find(taken.begin(), taken.end(), name) != taken.end()) continue;
    ScenarioJson added = copy;
    added["name"] = name;
    machines.push_back(added);
    taken.push_back(name);
    replicas.push_back(name + "/" + device_in_machine(fastest));
    ++i;
  }
}

// Fewer replicas: entries dropped from the end (an entry standing for several replicas only when
// all of them are to go).
void shrink_replica_list(ScenarioJson& s, int64_t fewer, const std::string& file) {
  ScenarioJson& replicas = s["training"]["replicas"];
  if (!replicas.is_array()) replicas = ScenarioJson::array({replicas});
  const auto machines = every_machine(s);
  while (fewer > 0) {
    const int64_t last = replicas.empty() ? 0 : replicas_of_entry(replicas.back(), machines);
    if (replicas.size() <= 1 || last > fewer) {
      throw InputError(file, kReplicasJsonPath,
                       "cannot drop " + std::to_string(fewer) +
                           " replica(s) by whole entries of the list (its last stands for " +
                           std::to_string(last) + "): edit it in the file");
    }
    replicas.erase(replicas.size() - 1);
    fewer -= last;
  }
}

// A sync object's total_num_replicas follows the workers (`before` -> `after`), its backups kept:
// T - R of the object, T being the workers before when the object leaves it out.
void follow_sync_total(ScenarioJson& t, int64_t before, int64_t after) {
  if (!t.contains("sync") || !t["sync"].is_object()) return;
  ScenarioJson& sync = t["sync"];
  const ScenarioJson* total_j = find_member(sync, "total_num_replicas");
  const ScenarioJson* aggregate_j = find_member(sync, "replicas_to_aggregate");
  const int64_t total = whole_number(total_j, limits::kMaxReplicas).value_or(before);
  const int64_t aggregate = whole_number(aggregate_j, limits::kMaxReplicas).value_or(total);
  const int64_t backups = std::max<int64_t>(0, total - aggregate);
  if (total_j) sync["total_num_replicas"] = after;
  if (aggregate_j) sync["replicas_to_aggregate"] = std::max<int64_t>(1, after - backups);
}

// The template count that gives `count` replicas, or InputError naming the nearest counts whole
// machines give. Resizes `machine` (a template of `s`).
void resize_template(ScenarioJson& s, ScenarioJson& machine, int64_t count,
                     const std::string& file) {
  ScenarioJson& c = machine["count"];
  const auto replicas_with = [&](int64_t n) {
    c = n;
    return replica_count_of(s);
  };
  const int64_t per_machine = std::max<int64_t>(1, replicas_with(1));
  const int64_t guess = std::max<int64_t>(1, (count + per_machine - 1) / per_machine);
  int64_t below = 0, above = 0;
  // Patterns such as "w?/gpu*" stop growing with the count: the nearest counts around the guess.
  for (int64_t n = std::max<int64_t>(1, guess - 2); n <= guess + 2; ++n) {
    const int64_t r = replicas_with(n);
    if (r == count) return;  // c holds n
    if (r < count) below = std::max(below, r);
    if (r > count && (above == 0 || r < above)) above = r;
  }
  std::string nearest;
  if (below > 0) nearest = std::to_string(below);
  if (above > 0) nearest += (nearest.empty() ? "" : " or ") + std::to_string(above);
  throw InputError(file, kReplicasJsonPath,
                   "replicas=" + std::to_string(count) + ": each machine of template \"" +
                       machine_name(machine) + "\" holds " + std::to_string(per_machine) +
                       " replica(s), so whole machines give " +
                       (nearest.empty() ? std::string("other counts") : nearest) +
                       " (the sweep's machines= counts machines)");
}

}  // namespace

std::vector<std::string> scenario_machine_names(const ScenarioJson& s) {
  std::vector<std::string> names;
  for (const auto& [m, name] : every_machine(s)) names.push_back(name);
  return names;
}

int scenario_replica_count(const ScenarioJson& s) {
  return int(std::min<int64_t>(replica_count_of(s), limits::kMaxReplicas + int64_t(1)));
}

int scenario_replica_step(const ScenarioJson& s) {
  const ScenarioJson* training = find_member(s, "training");
  const ScenarioJson* replicas = training ? find_member(*training, "replicas") : nullptr;
  if (!replicas) return 1;
  const int index = replicas_template(s, replica_entries(*replicas));
  if (index < 0) return 1;
  ScenarioJson one = s;
  one["cluster"]["machines"][size_t(index)]["count"] = 1;
  return int(std::clamp<int64_t>(replica_count_of(one), 1, limits::kMaxReplicas));
}

void set_scenario_replica_count(ScenarioJson& s, int count, const std::string& file) {
  if (count < 1 || count > limits::kMaxReplicas) {
    throw InputError(file, kReplicasJsonPath,
                     "replicas: from 1 to " + std::to_string(limits::kMaxReplicas) + ", not " +
                         std::to_string(count));
  }
  const ScenarioJson* training = find_member(s, "training");
  if (!training || !find_member(*training, "replicas")) {
    throw InputError(file, kReplicasJsonPath, "missing");
  }
  if (!machine_entry_list(s)) {
    throw InputError(file, "/cluster/machines",
                     "the replicas' machines are not in this file (an include gives them?): "
                     "change the replicas where the machines are");
  }
  const int64_t now = replica_count_of(s);
  if (now == 0) {
    throw InputError(file, kReplicasJsonPath,
                     "the replicas match no device of /cluster/machines (or the cluster is "
                     "beyond replisim's limits): fix the scenario first");
  }
  if (count == now) return;
  // Edited on a copy: a refused edit leaves the document as it was.
  ScenarioJson edited = s;
  try {
    const int index = replicas_template(edited, replica_entries(edited["training"]["replicas"]));
    if (index >= 0) {
      resize_template(edited, edited["cluster"]["machines"][size_t(index)], count, file);
    } else if (count > now) {
      grow_replica_list(edited, count - now, file);
    } else {
      shrink_replica_list(edited, now - count, file);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, kReplicasJsonPath,
                     std::string("cannot change the replicas: ") + e.what());
  }
  const int64_t made = replica_count_of(edited);
  if (made != count) {  // a pattern that also matches the copies made (a list mixing both)
    throw InputError(file, kReplicasJsonPath,
                     "changing this list to " + std::to_string(count) + " replicas makes " +
                         std::to_string(made) +
                         " (its patterns match the machines added): edit "
                         "it in the file");
  }
  follow_sync_total(edited["training"], now, count);
  s = std::move(edited);
}

}  // namespace replisim::core
