// build_platform: the input format's cluster turned into the platform that plans, traces and
// backends share (core/hardware/platform.h), which knows nothing of scenarios.
#include <algorithm>

#include "core/base/error.h"
#include "core/scenario/scenario.h"

namespace replisim::core {
namespace {

// A fat tree's levels above the racks (TopologySpec::upper_levels), after the racks' links: per
// level, groups of `down` groups of the level below (racks, then pods) under an aggregation
// switch, whose uplink is given or its children's uplinks' total / the ratio; its switch's
// default is non-blocking (twice its ports' total). Returns the last level's uplink total (what
// the core switch joins).
double add_pods(const TopologySpec& topology, Platform& p) {
  // The level below: its groups (racks, then pods of the level before) by index.
  std::vector<int> below(p.racks.size());
  for (size_t r = 0; r < below.size(); ++r) below[r] = int(r);
  bool below_are_racks = true;
  double uplink_total = 0;
  for (size_t k = 0; k < topology.upper_levels.size(); ++k) {
    const FatTreeLevelSpec& level = topology.upper_levels[k];
    std::vector<int> groups;
    uplink_total = 0;
    for (size_t first = 0, g = 0; first < below.size(); first += size_t(level.down), ++g) {
      PlatformPod pod;
      pod.level = int(k) + 1;
      pod.name = fat_tree_group_name(pod.level, int(g));
      const int index = int(p.pods.size());
      double children_bytes_per_s = 0;
      for (size_t c = first; c < std::min(below.size(), first + size_t(level.down)); ++c) {
        int& parent =
            below_are_racks ? p.racks[size_t(below[c])].parent : p.pods[size_t(below[c])].parent;
        parent = index;
        const int uplink =
            below_are_racks ? p.racks[size_t(below[c])].uplink : p.pods[size_t(below[c])].uplink;
        children_bytes_per_s += p.links[size_t(uplink)].bandwidth_bytes_per_s;
      }
      const double uplink_bytes_per_s = level.oversubscription > 0
                                            ? children_bytes_per_s / level.oversubscription
                                            : level.uplink.bandwidth_bytes_per_s;
      uplink_total += uplink_bytes_per_s;
      const double switch_bytes_per_s = level.switch_is_default
                                            ? 2 * (children_bytes_per_s + uplink_bytes_per_s)
                                            : level.switch_link.bandwidth_bytes_per_s;
      pod.switch_link = int(p.links.size());
      p.links.push_back(
          {pod.name + "/aggregation", switch_bytes_per_s, level.switch_link.latency_s, false});
      pod.uplink = int(p.links.size());
      p.links.push_back(
          {pod.name + "/aggregation/uplink", uplink_bytes_per_s, level.uplink.latency_s, true});
      groups.push_back(index);
      p.pods.push_back(std::move(pod));
    }
    below = std::move(groups);
    below_are_racks = false;
  }
  return uplink_total;
}

// The racks of cluster.topology "racks" (TopologySpec), or a fat tree's level 0 and its pods
// (add_pods): a top-of-rack switch and an uplink per rack, after every machine's links; the
// switch becomes the core switch.
void add_racks(const ClusterSpec& cluster, Platform& p) {
  const TopologySpec& topology = cluster.topology;
  int rack_count = 0;
  for (const PlatformMachine& m : p.machines) {
    REPLISIM_ASSERT(m.rack >= 0, "a machine without a rack in a racks topology");
    rack_count = std::max(rack_count, m.rack + 1);
  }
  std::vector<double> nic_total(size_t(rack_count), 0.0);
  for (const PlatformMachine& m : p.machines) {
    for (int nic : m.nic_links)
      nic_total[size_t(m.rack)] += p.links[size_t(nic)].bandwidth_bytes_per_s;
  }
  double uplink_total = 0;
  for (int r = 0; r < rack_count; ++r) {
    PlatformRack rack;
    rack.name = "rack" + std::to_string(r);
    const double uplink_bytes_per_s = topology.oversubscription > 0
                                          ? nic_total[size_t(r)] / topology.oversubscription
                                          : topology.uplink.bandwidth_bytes_per_s;
    uplink_total += uplink_bytes_per_s;
    // Default: non-blocking, every port at full duplex (as the one switch's default).
    const double tor_bytes_per_s = topology.tor_is_default
                                       ? 2 * (nic_total[size_t(r)] + uplink_bytes_per_s)
                                       : topology.tor.bandwidth_bytes_per_s;
    rack.tor_link = int(p.links.size());
    p.links.push_back({rack.name + "/tor", tor_bytes_per_s, topology.tor.latency_s, false});
    rack.uplink = int(p.links.size());
    p.links.push_back({rack.name + "/uplink", uplink_bytes_per_s, topology.uplink.latency_s, true});
    p.racks.push_back(std::move(rack));
  }
  if (!topology.upper_levels.empty()) uplink_total = add_pods(topology, p);
  PlatformLink& core = p.links[size_t(p.switch_link)];
  core.name = "core";
  if (cluster.switch_is_default) core.bandwidth_bytes_per_s = 2 * uplink_total;
}

}  // namespace

Platform build_platform(const ClusterSpec& cluster) {
  Platform p;
  p.network_model = cluster.network_model;
  p.transport = cluster.transport;
  p.links.push_back(
      {"switch", cluster.switch_link.bandwidth_bytes_per_s, cluster.switch_link.latency_s, false});
  p.switch_link = 0;
  for (const MachineSpec& m : cluster.machines) {
    PlatformMachine machine;
    machine.name = m.name;
    const int machine_index = int(p.machines.size());
    // NIC 0 keeps the name of a machine's one NIC: "<name>/nic", then "<name>/nic1", ...
    for (int k = 0; k < m.nic_count; ++k) {
      machine.nic_links.push_back(int(p.links.size()));
      p.links.push_back({m.name + "/nic" + (k == 0 ? std::string() : std::to_string(k)),
                         m.nic.bandwidth_bytes_per_s, m.nic.latency_s, true});
    }
    machine.devices.push_back(int(p.devices.size()));
    p.devices.push_back({m.name + "/cpu", machine_index, DeviceKind::kCpu, m.cpu_speed_flop_per_s,
                         m.cpu_cores, -1});
    for (size_t g = 0; g < m.gpus.size(); ++g) {
      const std::string gpu_name = "gpu" + std::to_string(g);
      const int pcie = int(p.links.size());
      p.links.push_back(
          {m.name + "/pcie/" + gpu_name, m.pcie.bandwidth_bytes_per_s, m.pcie.latency_s, true});
      machine.devices.push_back(int(p.devices.size()));
      p.devices.push_back({m.name + "/" + gpu_name, machine_index, DeviceKind::kGpu,
                           m.gpus[g].speed_flop_per_s, 1, pcie, m.gpus[g].memory_bytes});
    }
    machine.rack = m.rack;
    p.machines.push_back(std::move(machine));
  }
  if (cluster.topology.has_racks()) add_racks(cluster, p);
  return p;
}

}  // namespace replisim::core
