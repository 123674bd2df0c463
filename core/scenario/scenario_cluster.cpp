// Parsing of "cluster": machines (and "count" templates), the switch and the network model.
#include <algorithm>
#include <optional>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/scenario/scenario_parse.h"

namespace replisim::core::scenario_detail {
namespace {

// cluster.transport: {"preset", and any field to override} (docs/scenario-format.md).
Transport parse_transport(const JsonCursor& c) {
  c.check_keys({"preset", "flow_rate_limit", "per_message_overhead", "copy_bandwidth",
                "header_overhead", "chunk_size", "connections_per_peer", "between_processes",
                "loopback_bandwidth", "loopback_latency", "process_rpc_ceiling"});
  Transport t;
  if (c.has("preset")) {
    const std::string name = c.at("preset").as_string();
    const std::vector<std::string> names = transport_preset_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      c.at("preset").fail("unknown transport preset \"" + name + "\"; valid: " + join_names(names));
    }
    t = transport_preset(name);
  }
  // 0 (none), or a bandwidth links may have.
  auto bandwidth = [&](const char* key, double* out) {
    if (!c.has(key)) return;
    *out = c.at(key).as_quantity_in(Dimension::kBandwidth, 0, limits::kMaxBandwidthBytesPerS);
    if (*out > 0 && *out < limits::kMinBandwidthBytesPerS) {
      c.at(key).fail("must be 0 (none) or at least " +
                     format_quantity(limits::kMinBandwidthBytesPerS, Dimension::kBandwidth));
    }
  };
  bandwidth("flow_rate_limit", &t.flow_rate_limit_bytes_per_s);
  bandwidth("copy_bandwidth", &t.copy_bandwidth_bytes_per_s);
  bandwidth("loopback_bandwidth", &t.loopback_bandwidth_bytes_per_s);
  bandwidth("process_rpc_ceiling", &t.process_rpc_ceiling_bytes_per_s);
  if (c.has("loopback_latency")) {
    t.loopback_latency_s = c.at("loopback_latency").as_quantity_in(Dimension::kTime, 0, 10);
  }
  // Costs between processes given here mean the transport charges between processes, unless
  // the scenario says it does not (then they would do nothing: an error).
  if (c.has("between_processes")) {
    t.between_processes = c.at("between_processes").as_bool();
    for (const char* key : {"loopback_bandwidth", "loopback_latency", "process_rpc_ceiling"}) {
      if (!t.between_processes && c.has(key)) {
        c.at(key).fail("applies only between processes, and between_processes is false");
      }
    }
  } else if (c.has("loopback_bandwidth") || c.has("loopback_latency") ||
             c.has("process_rpc_ceiling")) {
    t.between_processes = true;
  }
  if (c.has("per_message_overhead")) {
    t.per_message_overhead_s = c.at("per_message_overhead").as_quantity_in(Dimension::kTime, 0, 10);
  }
  if (c.has("header_overhead")) {
    t.header_overhead_fraction = c.at("header_overhead").as_number_in(0, 10);
  }
  if (c.has("chunk_size")) {
    t.chunk_bytes = c.at("chunk_size").as_quantity_in(Dimension::kBytes, 0, 1e15);
  }
  if (c.has("connections_per_peer")) {
    t.connections_per_peer = int(c.at("connections_per_peer").as_int(1, 64));
  }
  return t;
}

constexpr double kDefaultSwitchLatencyS = 1e-6;
constexpr int kMaxMachineCount = 100000;

// A link object {"bandwidth", "latency"}. A field missing from the object takes its value from
// `defaults` when given (bandwidth <= 0 there means "required"), else it is required.
LinkSpec parse_link(const JsonCursor& c, const LinkSpec* defaults) {
  c.check_keys({"bandwidth", "latency"});
  LinkSpec link;
  if (c.has("bandwidth") || defaults == nullptr || defaults->bandwidth_bytes_per_s <= 0) {
    link.bandwidth_bytes_per_s =
        c.at("bandwidth")
            .as_quantity_in(Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
                            limits::kMaxBandwidthBytesPerS);
  } else {
    link.bandwidth_bytes_per_s = defaults->bandwidth_bytes_per_s;
  }
  if (c.has("latency") || defaults == nullptr) {
    link.latency_s = c.at("latency").as_quantity_in(Dimension::kTime, 0, limits::kMaxLatencyS);
  } else {
    link.latency_s = defaults->latency_s;
  }
  return link;
}

double speed(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kFlopRate, limits::kMinSpeedFlopPerS,
                          limits::kMaxSpeedFlopPerS);
}

// One gpus[] entry; `defaults` (machine_defaults.gpu, or null) gives what it leaves out.
// Identical GPUs on one machine, at most: a DGX-class machine has 8 or 16.
constexpr int64_t kMaxGpusPerMachine = 1024;

// One GPU: {"speed", "memory"}; `count_key`: the shorthand {"count", "speed", ...} for identical
// GPUs, whose "count" the caller reads.
GpuSpec parse_gpu(const JsonCursor& g, const JsonCursor* defaults, bool count_key = false) {
  if (count_key) {
    g.check_keys({"count", "speed", "memory"});
  } else {
    g.check_keys({"speed", "memory"});
  }
  const auto member = [&](const char* key) {
    if (!g.has(key) && defaults != nullptr && defaults->has(key)) return defaults->at(key);
    return g.at(key);
  };
  GpuSpec gpu;
  gpu.speed_flop_per_s = speed(member("speed"));
  if (g.has("memory") || (defaults != nullptr && defaults->has("memory"))) {
    const JsonCursor memory = member("memory");
    gpu.memory_bytes = memory.as_quantity_in(Dimension::kBytes, 1, limits::kMaxGpuMemoryBytes);
    gpu.memory_json_path = memory.path();
  }
  return gpu;
}

// Expands one "machines" entry: a machine, or {"name": P, "count": N, ...} = P0 ... P(N-1).
// `defaults`: cluster.machine_defaults, or null. `devices`: the cluster's devices so far, to which
// this entry's are added (refused past limits::kMaxDevices before they are made).
std::vector<MachineSpec> parse_machine_entry(const JsonCursor& c, const JsonCursor* defaults,
                                             double& devices) {
  MachineSpec m =
      parse_machine_hardware(c, {"name", "count", "cpu", "gpus", "nic", "pcie"}, defaults);
  m.json_path = c.path();
  const std::string name = c.at("name").as_string();
  if (!valid_name(name)) {
    c.at("name").fail(
        "a machine name must be non-empty, at most 1024 bytes, without '/', '*', '?', "
        "spaces or control characters");
  }
  const int count = c.has("count") ? int(c.at("count").as_int(1, kMaxMachineCount)) : 1;
  devices += double(count) * (1 + double(m.gpus.size()));
  if (devices > limits::kMaxDevices) {
    (c.has("count") ? c.at("count") : c)
        .fail("the cluster would have " + std::to_string(int64_t(devices)) +
              " devices (CPUs and GPUs) by this entry; at most " +
              std::to_string(int64_t(limits::kMaxDevices)) + " are simulated");
  }
  if (!c.has("count")) {
    m.name = name;
    return {m};
  }
  std::vector<MachineSpec> out(size_t(count), m);
  for (int i = 0; i < count; ++i) out[size_t(i)].name = name + std::to_string(i);
  return out;
}

}  // namespace

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > limits::kMaxNameBytes) return false;
  return name.find_first_of("/*? ") == std::string::npos && !has_control_character(name);
}

MachineSpec parse_machine_hardware(const JsonCursor& c,
                                   const std::vector<std::string>& allowed_keys,
                                   const JsonCursor* defaults) {
  c.check_keys(allowed_keys);
  // object.key of the machine, else of the defaults; neither: the machine's (missing) member, so
  // that the error names the machine.
  const auto member = [&](const char* object, const char* key) {
    if (c.has(object) && c.at(object).has(key)) return c.at(object).at(key);
    if (defaults != nullptr && defaults->has(object) && defaults->at(object).has(key)) {
      return defaults->at(object).at(key);
    }
    return c.at(object).at(key);
  };
  const auto given = [&](const char* object, const char* key) {
    return (c.has(object) && c.at(object).has(key)) ||
           (defaults != nullptr && defaults->has(object) && defaults->at(object).has(key));
  };
  MachineSpec m;
  if (c.has("cpu")) c.at("cpu").check_keys({"speed", "cores"});
  m.cpu_speed_flop_per_s = speed(member("cpu", "speed"));
  if (given("cpu", "cores")) {
    m.cpu_cores = int(member("cpu", "cores").as_int(1, limits::kMaxCpuCores));
  }
  if (c.has("gpus")) {
    const JsonCursor gpus = c.at("gpus");
    std::optional<JsonCursor> gpu_defaults;
    if (defaults != nullptr && defaults->has("gpu")) gpu_defaults = defaults->at("gpu");
    const JsonCursor* gpu_default = gpu_defaults ? &*gpu_defaults : nullptr;
    if (gpus.value().is_object()) {  // {"count": 8, "speed": ...}: identical GPUs
      const GpuSpec gpu = parse_gpu(gpus, gpu_default, true);
      m.gpus.assign(size_t(gpus.at("count").as_int(0, kMaxGpusPerMachine)), gpu);
    } else {
      gpus.expect_array();
      for (size_t i = 0; i < gpus.size(); ++i) m.gpus.push_back(parse_gpu(gpus.at(i), gpu_default));
    }
  }
  if (c.has("nic")) c.at("nic").check_keys({"bandwidth", "latency", "count"});
  if (given("nic", "count")) {
    const JsonCursor count = member("nic", "count");
    m.nic_count = int(count.as_int(1, limits::kMaxNicsPerMachine));
    m.nic_count_json_path = count.path();
  }
  m.nic.bandwidth_bytes_per_s =
      member("nic", "bandwidth")
          .as_quantity_in(Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
                          limits::kMaxBandwidthBytesPerS);
  m.nic.latency_s =
      member("nic", "latency").as_quantity_in(Dimension::kTime, 0, limits::kMaxLatencyS);
  LinkSpec pcie_defaults{kDefaultPcieBandwidthBytesPerS, kDefaultPcieLatencyS};
  if (defaults != nullptr && defaults->has("pcie")) {
    pcie_defaults = parse_link(defaults->at("pcie"), &pcie_defaults);
  }
  m.pcie = c.has("pcie") ? parse_link(c.at("pcie"), &pcie_defaults) : pcie_defaults;
  return m;
}

void add_machine(ClusterSpec& cluster, MachineSpec machine, const JsonCursor& where) {
  const double nic_bytes_per_s = machine.nic.bandwidth_bytes_per_s * machine.nic_count;
  const std::string name = machine.name;
  if (!cluster.add_machine(std::move(machine))) {
    where.fail("duplicate machine name \"" + name + "\"");
  }
  if (cluster.switch_is_default) {
    // Non-blocking: every port at full duplex (up and down of each NIC).
    cluster.switch_link.bandwidth_bytes_per_s += 2 * nic_bytes_per_s;
  }
}

// A switch `key` of `c` ({"bandwidth", "latency"}, each optional): its bandwidth stays as it is
// (the caller's non-blocking default, *is_default true) unless given; latency 1 us unless given.
void parse_switch(const JsonCursor& c, const char* key, LinkSpec* link, bool* is_default) {
  link->latency_s = kDefaultSwitchLatencyS;
  *is_default = true;
  if (!c.has(key)) return;
  const JsonCursor sw = c.at(key);
  sw.check_keys({"bandwidth", "latency"});
  if (sw.has("bandwidth")) {
    link->bandwidth_bytes_per_s =
        sw.at("bandwidth")
            .as_quantity_in(Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
                            limits::kMaxBandwidthBytesPerS);
    *is_default = false;
  }
  if (sw.has("latency")) {
    link->latency_s = sw.at("latency").as_quantity_in(Dimension::kTime, 0, limits::kMaxLatencyS);
  }
}

// An uplink given as {"oversubscription": r} or {"uplink": link} (exactly one) in `c`: the ratio
// into *oversubscription (the uplink is derived later), or the link into *uplink.
void parse_uplink(const JsonCursor& c, double* oversubscription, LinkSpec* uplink) {
  if (c.has("oversubscription") == c.has("uplink")) {
    c.fail("give either \"oversubscription\" (a ratio such as 3) or \"uplink\" (a link), not " +
           std::string(c.has("uplink") ? "both" : "neither"));
  }
  if (c.has("oversubscription")) {
    *oversubscription =
        c.at("oversubscription").as_number_in(kMinOversubscription, kMaxOversubscription);
    uplink->latency_s = 0;
  } else {
    const LinkSpec no_latency{0, 0};  // bandwidth required, latency 0 unless given
    *uplink = parse_link(c.at("uplink"), &no_latency);
  }
}

// Levels a fat tree may have: three (edge, aggregation, core in Al-Fares et al. 2008) to a few
// more; beyond 8 a scenario is more likely wrong than a data centre.
constexpr size_t kMaxFatTreeLevels = 8;

// cluster.topology "fat_tree": {"kind", "levels": [{"down", "oversubscription" | "uplink",
// "switch"}, ...]}. Level 0 fills the racks' fields (TopologySpec), the others upper_levels.
void parse_fat_tree(const JsonCursor& c, TopologySpec& t) {
  for (const char* key : {"machines_per_rack", "oversubscription", "uplink", "tor"}) {
    if (c.has(key)) {
      c.at(key).fail(
          std::string("is a key of \"racks\"; a fat tree gives it per level in "
                      "\"levels\" (level 0's \"down\" is the machines per rack)"));
    }
  }
  c.check_keys({"kind", "levels"});
  t.kind = TopologySpec::Kind::kFatTree;
  const JsonCursor levels = c.at("levels");
  levels.expect_array();
  if (levels.size() == 0 || levels.size() > kMaxFatTreeLevels) {
    levels.fail("expected 1 to " + std::to_string(kMaxFatTreeLevels) +
                " levels ({\"down\": 16, \"oversubscription\": 1} each), got " +
                std::to_string(levels.size()));
  }
  for (size_t k = 0; k < levels.size(); ++k) {
    const JsonCursor level = levels.at(k);
    level.check_keys({"down", "oversubscription", "uplink", "switch"});
    const int down = int(level.at("down").as_int(1, kMaxMachineCount));
    if (k == 0) {
      t.machines_per_rack = down;
      parse_uplink(level, &t.oversubscription, &t.uplink);
      parse_switch(level, "switch", &t.tor, &t.tor_is_default);
      continue;
    }
    FatTreeLevelSpec spec;
    spec.down = down;
    parse_uplink(level, &spec.oversubscription, &spec.uplink);
    parse_switch(level, "switch", &spec.switch_link, &spec.switch_is_default);
    t.upper_levels.push_back(spec);
  }
}

// cluster.topology: {"kind": "star"}, {"kind": "racks", "machines_per_rack": N,
// "oversubscription": r | "uplink": link, "tor": {"bandwidth", "latency"}} or {"kind":
// "fat_tree", "levels": [...]} (parse_fat_tree).
TopologySpec parse_topology(const JsonCursor& c) {
  TopologySpec t;
  const std::string kind = c.at("kind").as_string();
  if (kind == "star") {
    c.check_keys({"kind"});
    return t;
  }
  if (kind == "fat_tree") {
    parse_fat_tree(c, t);
    return t;
  }
  if (kind != "racks") {
    c.at("kind").fail("unknown topology \"" + kind + "\"; valid: star, racks, fat_tree");
  }
  if (c.has("levels")) {
    c.at("levels").fail("is a key of \"fat_tree\"; racks give \"machines_per_rack\"");
  }
  c.check_keys({"kind", "machines_per_rack", "oversubscription", "uplink", "tor"});
  t.kind = TopologySpec::Kind::kRacks;
  t.machines_per_rack = int(c.at("machines_per_rack").as_int(1, kMaxMachineCount));
  parse_uplink(c, &t.oversubscription, &t.uplink);
  parse_switch(c, "tor", &t.tor, &t.tor_is_default);
  return t;
}

// A fat tree's groups per level: level 0's racks hold `machines_per_rack` machines each, level
// k's groups `down` groups of level k - 1; each count must divide the one below it exactly (a
// regular tree), else the error names the level's "down".
void count_fat_tree_groups(const JsonCursor& topology, size_t machine_count, TopologySpec& t) {
  const JsonCursor levels = topology.at("levels");
  if (machine_count % size_t(t.machines_per_rack) != 0) {
    levels.at(size_t(0)).at("down").fail(
        "the cluster's " + std::to_string(machine_count) + " machines are not a multiple of " +
        std::to_string(t.machines_per_rack) + " (a fat tree's levels are full)");
  }
  size_t below = machine_count / size_t(t.machines_per_rack);
  t.rack_count = int(below);
  for (size_t k = 0; k < t.upper_levels.size(); ++k) {
    FatTreeLevelSpec& level = t.upper_levels[k];
    if (below % size_t(level.down) != 0) {
      levels.at(k + 1).at("down").fail("the " + std::to_string(below) + " groups of level " +
                                       std::to_string(k) + " are not a multiple of " +
                                       std::to_string(level.down) +
                                       " (a fat tree's levels are full)");
    }
    below /= size_t(level.down);
    level.group_count = int(below);
  }
}

ClusterSpec parse_cluster(const JsonCursor& c) {
  c.check_keys(
      {"machines", "machine_defaults", "switch", "network_model", "transport", "topology"});
  ClusterSpec cluster;
  parse_switch(c, "switch", &cluster.switch_link, &cluster.switch_is_default);
  const JsonCursor machines = c.at("machines");
  if (machines.size() == 0) machines.fail("at least one machine is needed");
  std::optional<JsonCursor> defaults;
  if (c.has("machine_defaults")) {
    defaults = c.at("machine_defaults");
    defaults->check_keys({"cpu", "gpu", "nic", "pcie"});
    if (defaults->has("cpu")) defaults->at("cpu").check_keys({"speed", "cores"});
    if (defaults->has("gpu")) defaults->at("gpu").check_keys({"speed", "memory"});
    // Every default is checked, used or not: a shared calibration is valid for every scenario or
    // none.
    const auto check = [&defaults](const char* object, const char* key, Dimension dimension,
                                   double lo, double hi) {
      if (defaults->has(object) && defaults->at(object).has(key)) {
        defaults->at(object).at(key).as_quantity_in(dimension, lo, hi);
      }
    };
    check("cpu", "speed", Dimension::kFlopRate, limits::kMinSpeedFlopPerS,
          limits::kMaxSpeedFlopPerS);
    check("gpu", "speed", Dimension::kFlopRate, limits::kMinSpeedFlopPerS,
          limits::kMaxSpeedFlopPerS);
    check("gpu", "memory", Dimension::kBytes, 1, limits::kMaxGpuMemoryBytes);
    check("nic", "bandwidth", Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
          limits::kMaxBandwidthBytesPerS);
    check("nic", "latency", Dimension::kTime, 0, limits::kMaxLatencyS);
    if (defaults->has("cpu") && defaults->at("cpu").has("cores")) {
      defaults->at("cpu").at("cores").as_int(1, limits::kMaxCpuCores);
    }
    if (defaults->has("nic")) {
      defaults->at("nic").check_keys({"bandwidth", "latency", "count"});
      if (defaults->at("nic").has("count")) {
        defaults->at("nic").at("count").as_int(1, limits::kMaxNicsPerMachine);
      }
    }
  }
  double devices = 0;
  for (size_t i = 0; i < machines.size(); ++i) {
    for (MachineSpec& m :
         parse_machine_entry(machines.at(i), defaults ? &*defaults : nullptr, devices)) {
      add_machine(cluster, std::move(m), machines.at(i).at("name"));
    }
  }
  if (c.has("network_model")) {
    const std::string model = c.at("network_model").as_string();
    if (model == "lv08") {
      cluster.network_model = NetworkModel::kLv08;
    } else if (model == "ideal") {
      cluster.network_model = NetworkModel::kIdeal;
    } else {
      c.at("network_model").fail("unknown network model \"" + model + "\"; valid: lv08, ideal");
    }
  }
  if (c.has("transport")) cluster.transport = parse_transport(c.at("transport"));
  if (c.has("topology")) cluster.topology = parse_topology(c.at("topology"));
  if (cluster.topology.kind == TopologySpec::Kind::kFatTree) {
    count_fat_tree_groups(c.at("topology"), cluster.machines.size(), cluster.topology);
  }
  if (cluster.topology.has_racks()) {
    const int per_rack = cluster.topology.machines_per_rack;
    for (size_t i = 0; i < cluster.machines.size(); ++i) {
      cluster.machines[i].rack = int(i) / per_rack;
    }
    cluster.topology.rack_count = (int(cluster.machines.size()) + per_rack - 1) / per_rack;
  }
  return cluster;
}

}  // namespace replisim::core::scenario_detail
