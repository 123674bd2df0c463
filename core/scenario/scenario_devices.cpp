// Parsing of where things run in "training": the replicas (devices or patterns, towers grouped
// into workers), the in-graph client, the parameter servers (devices, or a {"count", "on"}
// template that may add dedicated machines), where an in-graph client keeps its variables, and
// model-parallel placement rules.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/scenario/scenario_parse.h"

namespace replisim::core::scenario_detail {
namespace {

constexpr int kMaxPsCount = 100000;

DeviceRef resolve_device(const JsonCursor& c, const ClusterSpec& cluster);

// Every layer must match a rule (the first that matches places it) and every rule a layer.
void check_placement_covers(const JsonCursor& c, const std::vector<PlacementRule>& rules,
                            const Model& model) {
  std::vector<bool> used(rules.size(), false);
  for (const Layer& layer : model.layers) {
    size_t r = 0;
    while (r < rules.size() && !glob_match(rules[r].layers, layer.name)) ++r;
    if (r == rules.size()) c.fail("layer \"" + layer.name + "\" matches no placement rule");
    used[r] = true;
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (!used[r]) {
      c.at(r).at("layers").fail("\"" + rules[r].layers +
                                "\" matches no layer (or only layers an earlier rule placed)");
    }
  }
}

std::vector<PlacementRule> parse_placement(const JsonCursor& c, const ClusterSpec& cluster) {
  std::vector<PlacementRule> rules;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor rule = c.at(i);
    rule.check_keys({"layers", "device"});
    rules.push_back(
        {rule.at("layers").as_string(), resolve_device(rule.at("device"), cluster), rule.path()});
  }
  if (rules.empty()) c.fail("at least one rule is needed (or leave placement out)");
  return rules;
}

// Every device of the cluster, in machine order (CPU, then GPUs).
std::vector<DeviceRef> all_devices(const ClusterSpec& cluster) {
  std::vector<DeviceRef> out;
  for (const MachineSpec& m : cluster.machines) {
    out.push_back({m.name, DeviceKind::kCpu, 0});
    for (size_t g = 0; g < m.gpus.size(); ++g) out.push_back({m.name, DeviceKind::kGpu, int(g)});
  }
  return out;
}

// Resolves a device string against the cluster, failing at `c` when it does not exist.
DeviceRef resolve_device(const JsonCursor& c, const ClusterSpec& cluster) {
  const std::string text = c.as_string();
  DeviceRef ref;
  if (!parse_device_ref(text, &ref)) {
    c.fail(
        "expected a device \"<machine>/cpu\" or \"<machine>/gpu<i>\" (or a pattern such as "
        "\"w*/gpu*\"), got \"" +
        text + "\"");
  }
  const MachineSpec* machine = cluster.find_machine(ref.machine);
  if (machine == nullptr) {
    std::vector<std::string> names;
    for (const MachineSpec& m : cluster.machines) {
      names.push_back(m.name);
      if (names.size() == 8 && cluster.machines.size() > 8) {
        names.push_back("...");
        break;
      }
    }
    c.fail("no machine named \"" + ref.machine + "\" (machines: " + join_names(names) + ")");
  }
  if (ref.kind == DeviceKind::kGpu && ref.gpu_index >= int(machine->gpus.size())) {
    c.fail("machine \"" + ref.machine + "\" has " + std::to_string(machine->gpus.size()) +
           " GPU(s); there is no gpu" + std::to_string(ref.gpu_index));
  }
  return ref;
}

// A device, or every device a pattern matches (an error when it matches none).
std::vector<DeviceRef> resolve_device_or_pattern(const JsonCursor& c, const ClusterSpec& cluster) {
  const std::string text = c.as_string();
  if (!is_glob(text)) return {resolve_device(c, cluster)};
  std::vector<DeviceRef> matched;
  for (const DeviceRef& d : all_devices(cluster)) {
    if (glob_match(text, d.str())) matched.push_back(d);
  }
  if (matched.empty()) c.fail("pattern \"" + text + "\" matched no device");
  return matched;
}

// "replicas": one device or pattern, or a list of them, each a worker of its own (between-graph);
// or an entry {"towers": device(s) or pattern(s), "per": "worker" | "machine"}: one worker with a
// tower on every matched device ("worker", the default), or one such worker per machine
// ("machine"). No device may be listed twice.
void parse_replicas(const JsonCursor& c, const ClusterSpec& cluster, TrainingSpec& t) {
  std::vector<JsonCursor> entries;
  if (c.value().is_string() || c.value().is_object()) {
    entries.push_back(c);
  } else {
    for (size_t i = 0; i < c.size(); ++i) entries.push_back(c.at(i));
  }
  std::unordered_set<std::string> seen;
  auto add = [&](const JsonCursor& at, const DeviceRef& ref) {
    if (!seen.insert(ref.str()).second) {
      at.fail("duplicate replica \"" + ref.str() + "\" (listed or matched twice)");
    }
    t.replicas.push_back(ref);
    return int(t.replicas.size()) - 1;
  };
  for (const JsonCursor& entry : entries) {
    if (!entry.value().is_object()) {
      for (const DeviceRef& ref : resolve_device_or_pattern(entry, cluster)) {
        t.workers.push_back({add(entry, ref)});
      }
      continue;
    }
    entry.check_keys({"towers", "per"});
    const JsonCursor towers = entry.at("towers");
    std::vector<std::pair<JsonCursor, DeviceRef>> matched;
    if (towers.value().is_array()) {
      if (towers.size() == 0) towers.fail("expected at least one device or pattern");
      for (size_t i = 0; i < towers.size(); ++i) {
        for (const DeviceRef& ref : resolve_device_or_pattern(towers.at(i), cluster)) {
          matched.emplace_back(towers.at(i), ref);
        }
      }
    } else {
      for (const DeviceRef& ref : resolve_device_or_pattern(towers, cluster)) {
        matched.emplace_back(towers, ref);
      }
    }
    const std::string per = entry.has("per") ? entry.at("per").as_string() : "worker";
    if (per != "worker" && per != "machine") {
      entry.at("per").fail(
          "expected \"worker\" (one worker for all the towers) or \"machine\" "
          "(one worker per machine)");
    }
    std::vector<std::string> machines;  // per machine: in order of first appearance
    const size_t first_worker = t.workers.size();
    for (const auto& [at, ref] : matched) {
      size_t w = 0;
      if (per == "machine") {
        w = size_t(std::find(machines.begin(), machines.end(), ref.machine) - machines.begin());
        if (w == machines.size()) machines.push_back(ref.machine);
      }
      if (t.workers.size() <= first_worker + w) t.workers.emplace_back();
      t.workers[first_worker + w].push_back(add(at, ref));
    }
  }
  if (t.replicas.empty()) c.fail("at least one replica is needed");
}

// The replicas' machines, in order, once each.
std::vector<std::string> replica_machines(const std::vector<DeviceRef>& replicas) {
  std::vector<std::string> machines;
  std::unordered_set<std::string> seen;
  for (const DeviceRef& r : replicas) {
    if (seen.insert(r.machine).second) machines.push_back(r.machine);
  }
  return machines;
}

// The replicas' `machines` grouped by rack, the racks in order of their first replica (cluster
// topology "racks"): where a template's "spread" puts its PSes.
std::vector<std::vector<std::string>> machines_by_rack(const std::vector<std::string>& machines,
                                                       const ClusterSpec& cluster) {
  std::vector<std::vector<std::string>> by_rack;
  std::unordered_map<int, size_t> entry_of_rack;
  for (const std::string& name : machines) {
    const auto [it, added] =
        entry_of_rack.emplace(cluster.find_machine(name)->rack, by_rack.size());
    if (added) by_rack.emplace_back();
    by_rack[it->second].push_back(name);
  }
  return by_rack;
}

// Where PS i of a template with "spread" goes (`by_rack`: machines_by_rack): "one_rack", the
// machines of the first replica's rack in turn; "racks", one rack after another, each rack's
// machines in turn.
const std::string& spread_ps_machine(const std::string& spread, int i,
                                     const std::vector<std::vector<std::string>>& by_rack) {
  if (spread == "one_rack") return by_rack.front()[size_t(i) % by_rack.front().size()];
  const std::vector<std::string>& rack = by_rack[size_t(i) % by_rack.size()];
  return rack[(size_t(i) / by_rack.size()) % rack.size()];
}

// {"count": N, "on": "dedicated" | "workers", "name", "machine", "spread"}. "spread" (racks
// only): "one_rack" or "racks" (spread_ps_machine; dedicated machine i joins the first replica's
// rack, or rack i mod the racks). Without it PSes on workers take the replicas' machines in
// order, and dedicated ones join the first replica's rack.
std::vector<DeviceRef> parse_ps_template(const JsonCursor& c, ClusterSpec& cluster,
                                         const std::vector<DeviceRef>& replicas) {
  c.check_keys({"count", "on", "name", "machine", "spread"});
  const int count = int(c.at("count").as_int(1, kMaxPsCount));
  const std::string on = c.at("on").as_string();
  const bool racks = cluster.topology.has_racks();  // racks, or a fat tree's level 0
  std::string spread;
  if (c.has("spread")) {
    spread = c.at("spread").as_string();
    if (spread != "racks" && spread != "one_rack") {
      c.at("spread").fail("expected \"racks\" or \"one_rack\", got \"" + spread + "\"");
    }
    if (!racks) {
      c.at("spread").fail("spreads PSes over racks; the cluster has none (cluster.topology)");
    }
  }
  std::vector<DeviceRef> ps;
  if (on == "workers") {
    if (c.has("name") || c.has("machine")) {
      c.fail(
          "\"name\" and \"machine\" describe dedicated PS machines; not with \"on\": \"workers\"");
    }
    const std::vector<std::string> machines = replica_machines(replicas);
    const std::vector<std::vector<std::string>> by_rack =
        spread.empty() ? std::vector<std::vector<std::string>>{}
                       : machines_by_rack(machines, cluster);
    for (int i = 0; i < count; ++i) {
      const std::string& machine = spread.empty() ? machines[size_t(i) % machines.size()]
                                                  : spread_ps_machine(spread, i, by_rack);
      ps.push_back({machine, DeviceKind::kCpu, 0});
    }
    return ps;
  }
  if (on != "dedicated")
    c.at("on").fail("expected \"dedicated\" or \"workers\", got \"" + on + "\"");
  // Default dedicated machine: the CPU, NIC and PCIe of the first replica's machine, no GPU.
  MachineSpec spec = *cluster.find_machine(replicas.front().machine);
  spec.gpus.clear();
  spec.json_path = c.path();
  if (c.has("machine")) {
    spec = parse_machine_hardware(c.at("machine"), {"cpu", "gpus", "nic", "pcie"});
    spec.json_path = c.at("machine").path();
  }
  const std::string prefix = c.has("name") ? c.at("name").as_string() : "ps";
  if (!valid_name(prefix)) (c.has("name") ? c.at("name") : c).fail("invalid machine name prefix");
  const int first_rack = cluster.find_machine(replicas.front().machine)->rack;
  for (int i = 0; i < count; ++i) {
    spec.name = prefix + std::to_string(i);
    if (racks) spec.rack = spread == "racks" ? i % cluster.topology.rack_count : first_rack;
    add_machine(cluster, spec, c.has("name") ? c.at("name") : c);
    ps.push_back({spec.name, DeviceKind::kCpu, 0});
  }
  return ps;
}

std::vector<DeviceRef> parse_ps(const JsonCursor& c, ClusterSpec& cluster,
                                const std::vector<DeviceRef>& replicas) {
  if (c.value().is_object()) return parse_ps_template(c, cluster, replicas);
  std::vector<DeviceRef> ps;
  for (size_t i = 0; i < c.size(); ++i) ps.push_back(resolve_device(c.at(i), cluster));
  if (ps.empty()) c.fail("at least one parameter server is needed");
  return ps;
}

}  // namespace

void parse_where(const JsonCursor& c, ClusterSpec& cluster, const Model& model, TrainingSpec& t) {
  parse_replicas(c.at("replicas"), cluster, t);
  if (c.has("client")) {
    t.client = c.at("client").as_string();
    if (cluster.find_machine(t.client) == nullptr) {
      c.at("client").fail("no machine named \"" + t.client + "\" (the client is a machine name)");
    }
  } else {
    t.client = t.replicas.front().machine;
  }
  if (c.has("ps") && c.has("variables_on")) {
    c.at("variables_on").fail("give either \"ps\" or \"variables_on\", not both");
  }
  if (c.has("ps")) {
    t.ps = parse_ps(c.at("ps"), cluster, t.replicas);
  } else if (c.has("variables_on")) {
    // In-graph: where the client keeps the variables, "client" (its CPU) or a device.
    const JsonCursor on = c.at("variables_on");
    if (on.as_string().find_first_of("*?") != std::string::npos) {
      on.fail("expected \"client\" or one device such as \"pc1/gpu0\", not a pattern");
    }
    t.ps.push_back(on.as_string() == "client" ? DeviceRef{t.client, DeviceKind::kCpu, 0}
                                              : resolve_device(on, cluster));
  } else {
    t.ps.push_back(DeviceRef{t.client, DeviceKind::kCpu, 0});
  }
  if (c.has("placement")) {
    t.placement = parse_placement(c.at("placement"), cluster);
    check_placement_covers(c.at("placement"), t.placement, model);
  }
}

}  // namespace replisim::core::scenario_detail
