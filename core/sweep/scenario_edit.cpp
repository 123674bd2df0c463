#include "core/sweep/scenario_edit.h"

#include <algorithm>
#include <cctype>
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

const ScenarioJson* machine_entry_list(const ScenarioJson& s) {
  const ScenarioJson* cluster = find_member(s, "cluster");
  const ScenarioJson* machines = cluster ? find_member(*cluster, "machines") : nullptr;
  return machines && machines->is_array() ? machines : nullptr;
}

std::string machine_name(const ScenarioJson& machine) {
  const ScenarioJson* name = find_member(machine, "name");
  return name && name->is_string() ? name->get<std::string>() : "";
}

// A template's copies ({"count": N}); nullopt for a single machine.
std::optional<int> template_count(const ScenarioJson& machine) {
  const ScenarioJson* count = find_member(machine, "count");
  if (!count) return std::nullopt;
  return count->is_number_integer() ? count->get<int>() : 0;
}

int gpus_of_machine(const ScenarioJson& machine) {
  const ScenarioJson* gpus = find_member(machine, "gpus");
  if (!gpus) return 0;
  if (gpus->is_object()) {  // {"count": 8, "speed": ...}: identical GPUs
    const ScenarioJson* n = find_member(*gpus, "count");
    return n && n->is_number_integer() ? n->get<int>() : 0;
  }
  return gpus->is_array() ? int(gpus->size()) : 0;
}

// The names a machine entry gives: a template's copies, or its one name.
std::vector<std::string> machine_copies(const ScenarioJson& machine) {
  const std::string name = machine_name(machine);
  const std::optional<int> count = template_count(machine);
  if (!count) return {name};
  std::vector<std::string> names;
  for (int i = 0; i < *count; ++i) names.push_back(name + std::to_string(i));
  return names;
}

// Every device of a machine of `entry` named `machine`: its CPU, then its GPUs.
std::vector<std::string> machine_devices(const ScenarioJson& entry, const std::string& machine) {
  std::vector<std::string> devices{machine + "/cpu"};
  for (int g = 0; g < gpus_of_machine(entry); ++g) {
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

// The pattern an entry spreads over machines with: a string device pattern, or a {"towers":
// pattern, "per": "machine"} entry's ("" for anything fixed).
std::string spread_pattern(const ScenarioJson& entry, bool* per_machine) {
  *per_machine = false;
  if (entry.is_string()) {
    const std::string text = entry.get<std::string>();
    return is_glob(machine_of_device(text)) ? text : "";
  }
  const ScenarioJson* towers = find_member(entry, "towers");
  const ScenarioJson* per = find_member(entry, "per");
  if (towers && towers->is_string() && per && per->is_string() &&
      per->get<std::string>() == "machine") {
    *per_machine = true;
    return towers->get<std::string>();
  }
  return "";
}

// The replicas one entry gives over `machines` (entry, name).
int replicas_of_entry(const ScenarioJson& entry,
                      const std::vector<std::pair<const ScenarioJson*, std::string>>& machines) {
  bool per_machine = false;
  const std::string pattern = spread_pattern(entry, &per_machine);
  if (pattern.empty()) return 1;  // a device, or a fixed worker's towers
  int replicas = 0;
  for (const auto& [m, name] : machines) {
    int here = 0;
    for (const std::string& d : machine_devices(*m, name)) here += glob_match(pattern, d);
    replicas += per_machine ? std::min(here, 1) : here;
  }
  return replicas;
}

std::vector<std::pair<const ScenarioJson*, std::string>> every_machine(const ScenarioJson& s) {
  std::vector<std::pair<const ScenarioJson*, std::string>> out;
  if (const ScenarioJson* machines = machine_entry_list(s)) {
    for (const ScenarioJson& m : *machines) {
      for (const std::string& name : machine_copies(m)) out.emplace_back(&m, name);
    }
  }
  return out;
}

ScenarioJson& training_object(ScenarioJson& s, const std::string& file) {
  if (!s.is_object() || !s.contains("training") || !s["training"].is_object()) {
    throw InputError(file, "/training", "the scenario has no training object");
  }
  return s["training"];
}

// The index of the one machine template the replicas' patterns spread over: every entry a
// pattern, every pattern matching copies of that template only. -1 when there is none.
int replicas_template(const ScenarioJson& s, const std::vector<ScenarioJson>& entries) {
  const ScenarioJson* machines = machine_entry_list(s);
  if (!machines) return -1;
  int found = -1;
  for (const ScenarioJson& e : entries) {
    bool per_machine = false;
    const std::string pattern = spread_pattern(e, &per_machine);
    if (pattern.empty()) return -1;
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

// More replicas for a list of fixed devices: copies of the fastest replica's machine.
void grow_replica_list(ScenarioJson& s, int more, const std::string& file) {
  ScenarioJson& replicas = s["training"]["replicas"];
  ScenarioJson& machines = s["cluster"]["machines"];
  const std::vector<ScenarioJson> entries = replica_entries(replicas);
  std::string fastest;
  int fastest_entry = -1;
  double fastest_speed = -2;
  for (const ScenarioJson& e : entries) {
    if (!e.is_string() || is_glob(e.get<std::string>())) continue;
    const std::string d = e.get<std::string>();
    for (size_t i = 0; i < machines.size(); ++i) {
      const std::vector<std::string> names = machine_copies(machines[i]);
      if (std::find(names.begin(), names.end(), machine_of_device(d)) == names.end()) continue;
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
                     "more replicas need a replica on a named machine to copy; here none is");
  }
  if (!replicas.is_array()) replicas = ScenarioJson::array({replicas});
  ScenarioJson& source = machines[size_t(fastest_entry)];
  if (const std::optional<int> count = template_count(source)) {  // a template named in the list
    for (int i = 0; i < more; ++i) {
      replicas.push_back(machine_name(source) + std::to_string(*count + i) + "/" +
                         device_in_machine(fastest));
    }
    source["count"] = *count + more;
    return;
  }
  const auto [prefix, number] = numbered_name(machine_name(source));
  const ScenarioJson copy = source;
  const std::vector<std::string> taken = scenario_machine_names(s);
  for (int i = 0, next = std::max(number, 1) + 1; i < more; ++next) {
    const std::string name = number < 0 ? machine_name(copy) + "_" + std::to_string(next)
                                        : prefix + std::to_string(next);
    if (std::find(taken.begin(), taken.end(), name) != taken.end()) continue;
    ScenarioJson added = copy;
    added["name"] = name;
    machines.push_back(added);
    replicas.push_back(name + "/" + device_in_machine(fastest));
    ++i;
  }
}

// Fewer replicas: entries dropped from the end (an entry standing for several replicas only when
// all of them are to go).
void shrink_replica_list(ScenarioJson& s, int fewer, const std::string& file) {
  ScenarioJson& replicas = s["training"]["replicas"];
  if (!replicas.is_array()) replicas = ScenarioJson::array({replicas});
  const auto machines = every_machine(s);
  while (fewer > 0) {
    const int last = replicas_of_entry(replicas.back(), machines);
    if (replicas.size() == 1 || last > fewer) {
      throw InputError(file, kReplicasJsonPath,
                       "cannot drop " + std::to_string(fewer) +
                           " replica(s) by whole entries: the last entry stands for " +
                           std::to_string(last) + "; edit the list in the file");
    }
    replicas.erase(replicas.size() - 1);
    fewer -= last;
  }
}

// A sync object's total_num_replicas follows the workers, its backups kept.
void follow_sync_total(ScenarioJson& t, int workers) {
  if (!t.contains("sync") || !t["sync"].is_object()) return;
  ScenarioJson& sync = t["sync"];
  const ScenarioJson* total_j = find_member(sync, "total_num_replicas");
  const ScenarioJson* aggregate_j = find_member(sync, "replicas_to_aggregate");
  const int total = total_j && total_j->is_number_integer() ? total_j->get<int>() : workers;
  const int aggregate =
      aggregate_j && aggregate_j->is_number_integer() ? aggregate_j->get<int>() : total;
  if (total_j) sync["total_num_replicas"] = workers;
  if (aggregate_j) sync["replicas_to_aggregate"] = std::max(1, workers - (total - aggregate));
}

}  // namespace

std::vector<std::string> scenario_machine_names(const ScenarioJson& s) {
  std::vector<std::string> names;
  for (const auto& [m, name] : every_machine(s)) names.push_back(name);
  return names;
}

int scenario_replica_count(const ScenarioJson& s) {
  const ScenarioJson* training = find_member(s, "training");
  const ScenarioJson* replicas = training ? find_member(*training, "replicas") : nullptr;
  if (!replicas) return 0;
  const auto machines = every_machine(s);
  int count = 0;
  for (const ScenarioJson& e : replica_entries(*replicas)) count += replicas_of_entry(e, machines);
  return count;
}

int scenario_replica_step(const ScenarioJson& s) {
  const ScenarioJson* training = find_member(s, "training");
  const ScenarioJson* replicas = training ? find_member(*training, "replicas") : nullptr;
  if (!replicas) return 1;
  const int index = replicas_template(s, replica_entries(*replicas));
  if (index < 0) return 1;
  ScenarioJson one = s;
  one["cluster"]["machines"][size_t(index)]["count"] = 1;
  return std::max(1, scenario_replica_count(one));
}

void set_scenario_replica_count(ScenarioJson& s, int count, const std::string& file) {
  if (count < 1 || count > limits::kMaxReplicas) {
    throw InputError(file, kReplicasJsonPath,
                     "replicas: from 1 to " + std::to_string(limits::kMaxReplicas) + ", not " +
                         std::to_string(count));
  }
  ScenarioJson& t = training_object(s, file);
  if (!t.contains("replicas")) throw InputError(file, kReplicasJsonPath, "missing");
  const int now = scenario_replica_count(s);
  if (count == now) return;
  const int index = replicas_template(s, replica_entries(t["replicas"]));
  if (index >= 0) {
    ScenarioJson& machine = s["cluster"]["machines"][size_t(index)];
    // Replicas grow with whole machines of the template: try the count that gives `count`.
    const auto replicas_with = [&](int n) {
      ScenarioJson& c = machine["count"];
      const ScenarioJson kept = c;
      c = n;
      const int r = scenario_replica_count(s);
      c = kept;
      return r;
    };
    const int per_machine = std::max(1, replicas_with(1));
    const int n = std::max(1, (count + per_machine - 1) / per_machine);
    if (replicas_with(n) != count) {
      const int below = n > 1 ? replicas_with(n - 1) : 0;
      throw InputError(file, kReplicasJsonPath,
                       "replicas=" + std::to_string(count) + ": each machine of template \"" +
                           machine_name(machine) + "\" holds " + std::to_string(per_machine) +
                           " replica(s), so whole machines give " +
                           (below > 0 ? std::to_string(below) + " or " : std::string()) +
                           std::to_string(replicas_with(n)) +
                           " (the sweep's machines= counts "
                           "machines)");
    }
    machine["count"] = n;
  } else if (count > now) {
    grow_replica_list(s, count - now, file);
  } else {
    shrink_replica_list(s, now - count, file);
  }
  follow_sync_total(t, scenario_replica_count(s));
}

}  // namespace replisim::core
