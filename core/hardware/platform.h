// The simulated hardware as plain data: machines, devices (CPU, GPUs), links (NICs, PCIe, the
// switch, racks' top-of-rack switches and uplinks, a fat tree's pods) and the route between any
// two devices. Shared
// by the plan, both backends and metrics.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware/device.h"
#include "core/hardware/transport.h"

namespace replisim::core {

struct PlatformDevice {
  std::string name;  // "<machine>/cpu" or "<machine>/gpu<i>"
  int machine = -1;  // index into Platform::machines
  DeviceKind kind = DeviceKind::kCpu;
  double speed_flop_per_s = 0;  // one core's (a GPU: the device's)
  int cores = 1;                // ops it runs at once (CPUs: cpu.cores; GPUs: 1, one stream)
  int pcie_link = -1;       // GPUs: index of the PCIe link to the host; CPUs: -1 (on the host bus)
  double memory_bytes = 0;  // GPUs: capacity when given in the scenario; 0 = unknown
};

// A link. Split-duplex links (NICs, PCIe, rack uplinks) have independent "up" and "down"
// directions of `bandwidth_bytes_per_s` each; a switch (the cluster's, a rack's top-of-rack one)
// is one shared link for every flow crossing it.
struct PlatformLink {
  // "<machine>/nic" (a machine's first NIC; its others "<machine>/nic1", "<machine>/nic2", ...),
  // "<machine>/pcie/gpu<i>", "switch" (one switch), "core" (racks' core switch), "<rack>/tor",
  // "<rack>/uplink"
  std::string name;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  bool split_duplex = true;
};

// NICs of one machine: servers ship with 1 to 8 ports (a DGX H100 has 8 ConnectX-7 compute ports
// plus 2 storage ports); 16 leaves room above that.
inline constexpr int kMaxNicsPerMachine = 16;

struct PlatformMachine {
  std::string name;
  // Its NICs' links, in order (at least one): "<name>/nic", then "<name>/nic1", ... All join the
  // same switch (its rack's top-of-rack switch with racks).
  std::vector<int> nic_links;
  std::vector<int> devices;  // the CPU first, then GPUs in index order
  int rack = -1;             // index into Platform::racks; -1 when the cluster has one switch
};

// A rack (scenario cluster.topology "racks", or a fat tree's level 0): its machines' NICs meet
// at a top-of-rack switch, one shared link; its uplink, split duplex ("up" toward the core),
// joins the core switch (Platform::switch_link), or in a fat tree its pod's aggregation switch.
// The two-tier leaf-spine layout of a data centre with one core switch.
struct PlatformRack {
  std::string name;  // "rack<i>"
  int tor_link = -1;
  int uplink = -1;
  int parent = -1;  // index into Platform::pods (a fat tree); -1: its uplink joins the core
};

// A switch group above the racks (cluster.topology "fat_tree", levels 1, 2, ...): its children's
// uplinks (racks' or lower pods') meet at its aggregation switch, one shared link; its uplink,
// split duplex, joins its parent pod's aggregation switch or the core. Links:
// "<name>/aggregation" and "<name>/aggregation/uplink" (channels ".../uplink/up" and "/down").
// One fat link per group stands for a folded Clos's parallel spine links: under perfect ECMP
// balance and max-min fair sharing they offer the same capacity (Leiserson's fat tree, 1985).
struct PlatformPod {
  std::string name;  // fat_tree_group_name(level, i)
  int level = 1;     // 1: pods of racks, 2: pods of pods, ...
  int switch_link = -1;
  int uplink = -1;
  int parent = -1;  // index into Platform::pods (the level above); -1: its uplink joins the core
};

// The name of group `index` of fat-tree level `level` (>= 0): "rack<i>" at level 0, "pod<i>" at
// 1, "superpod<i>" at 2, "level<k>pod<i>" above.
std::string fat_tree_group_name(int level, int index);

enum class LinkDirection { kUp, kDown, kShared };

// One hop of a route: a link crossed in one direction. "Up" is away from a device toward the
// switch (GPU -> host for PCIe, machine -> switch for a NIC).
struct Hop {
  int link = -1;
  LinkDirection direction = LinkDirection::kShared;
};

struct Platform {
  std::vector<PlatformMachine> machines;
  std::vector<PlatformDevice> devices;
  std::vector<PlatformLink> links;
  // The one switch every flow between machines crosses; with racks, the core switch that flows
  // between racks cross.
  int switch_link = -1;
  std::vector<PlatformRack> racks;  // empty: one switch (a star)
  std::vector<PlatformPod> pods;    // a fat tree's levels above the racks, level by level
  NetworkModel network_model = NetworkModel::kLv08;
  Transport transport;  // between machines

  // Index of the device called `name`, or -1.
  int find_device(const std::string& name) const;
  int find_device(const DeviceRef& ref) const { return find_device(ref.str()); }
  int cpu_of_machine(int machine) const { return machines[size_t(machine)].devices.front(); }

  // Which of machine `machine`'s NICs (an index into its nic_links) its connections to machine
  // `peer` (!= machine) take: the peer's position among the other machines (its index, less one
  // past `machine`) modulo the NIC count. Every connection between two machines takes one NIC of
  // each end, as one TCP flow (a gRPC channel, an NCCL ring's hop) takes one interface: a pair of
  // machines never exceeds one NIC, while a machine that serves many peers (a PS) spreads them
  // over all of its NICs, peers next to each other on different NICs. One NIC: 0.
  int nic_index_toward(int machine, int peer) const;
  // Its link: machines[machine].nic_links[nic_index_toward(machine, peer)].
  int nic_toward(int machine, int peer) const;
  // Every machine's NIC links, machine by machine.
  std::vector<int> nic_links() const;

  // Links crossed from `src` to `dst` (device indices, src != dst): the source's PCIe up (GPU),
  // then, between machines, the source NIC up (nic_toward the destination's machine), the switch
  // and the destination NIC down (nic_toward the source's machine), then the
  // destination's PCIe down (GPU). With racks the switch is the rack's top-of-rack switch within
  // a rack; between racks the source's top-of-rack switch, its uplink up, the core switch, the
  // destination rack's uplink down and its top-of-rack switch. In a fat tree the route climbs
  // (each group's switch, then its uplink up) to the lowest group both ends share (its switch
  // once; none: the core) and climbs down the same way (uplink down, switch). Same device: empty.
  std::vector<Hop> route(int src, int dst) const;
  // The switch groups above machine `machine`, lowest first, as (switch link, uplink) pairs: its
  // rack, then the rack's pods up to the last level. Empty with one switch.
  std::vector<std::pair<int, int>> groups_above(int machine) const;
  // The links a tensor from `src` to `dst` crosses: route(src, dst), and on one GPU (two
  // processes there, Transport::between_processes) its PCIe link up and down, through host
  // memory where the processes exchange it.
  std::vector<Hop> transfer_route(int src, int dst) const;
  // Sum of hop latencies and minimum hop bandwidth of route(src, dst) (the closed forms' L and B).
  double route_latency_s(int src, int dst) const;
  double route_bandwidth_bytes_per_s(int src, int dst) const;

  // Whether shared link `link` (a switch) can ever limit a flow: false when its bandwidth is at
  // least twice the total of the split-duplex links that feed it (every NIC, or with racks a
  // rack's NICs and uplink, the core's uplinks; a pod's aggregation switch: its children's
  // uplinks and its own): every flow crossing it comes in through one of
  // them, and twice leaves room for LV08's 5% reverse traffic. The SimGrid backend then leaves
  // it out of the routes (a non-blocking switch changes no result, and would tie every flow of
  // the cluster into one sharing problem).
  bool switch_can_bind(int link) const;
  // The pod whose aggregation switch is link `link`, or -1.
  int pod_of_switch(int link) const;
  // The rack of machine `machine`'s name, or "" with one switch.
  std::string rack_name_of(int machine) const;

  // Directed link resources ("channels") used by utilisation metrics: split-duplex link i has
  // channels 2i (up) and 2i+1 (down); a shared link has channel 2i only.
  int channel_of(const Hop& hop) const;
  int channel_count() const { return int(links.size()) * 2; }
  bool channel_exists(int channel) const;
  // "<machine>/nic/up", "<machine>/nic1/down", "<machine>/pcie/gpu0/down", "switch".
  std::string channel_name(int channel) const;
  double channel_bandwidth_bytes_per_s(int channel) const;
};

nlohmann::json platform_to_json(const Platform& platform);
// Throws InputError naming `file` and the JSON path on a malformed platform.
Platform platform_from_json(const nlohmann::json& j, const std::string& file,
                            const std::string& path);

}  // namespace replisim::core
