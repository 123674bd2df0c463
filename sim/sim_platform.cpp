#include "sim/sim_platform.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <xbt/config.hpp>

#include "core/base/error.h"

namespace sg4 = simgrid::s4u;

namespace replisim::sim {
namespace {

// A bandwidth no transfer reaches (1 PB/s, the scenarios' largest).
constexpr double kUnboundedBytesPerS = 1e15;

}  // namespace

void configure_network_model(core::NetworkModel model) {
  if (model == core::NetworkModel::kIdeal) {
    // Textbook bytes / bandwidth + latency (simgrid-notes.md section 5, measured table).
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");
  }
  // kLv08 is SimGrid's default: nothing to change.
}

double network_latency_factor() {
  return simgrid::config::get_value<double>("network/latency-factor");
}

void keep_tcp_factors_off_machine_links(sg4::NetZone* root) {
  // The configured factor (LV08: 0.97; CM02: 1), read before the callback replaces it. SimGrid
  // calls the callback for every communication; build_sim_platform() tags each host with its
  // machine (Host::set_data), and every route between machines crosses a NIC.
  const double between_machines = simgrid::config::get_value<double>("network/bandwidth-factor");
  root->get_network_model()->set_bw_factor_cb(
      [between_machines](double, const sg4::Host* src, const sg4::Host* dst,
                         const std::vector<sg4::Link*>&, const std::unordered_set<sg4::NetZone*>&) {
        return src->get_data<void>() == dst->get_data<void>() ? 1.0 : between_machines;
      });
}

bool switch_can_bind(const core::Platform& platform) {
  return platform.switch_can_bind(platform.switch_link);
}

namespace {

// A shared link (a switch) in `zone`, named "cluster/<name>" (sim_faults.cpp finds it so).
const sg4::Link* create_switch(sg4::NetZone* zone, const core::PlatformLink& link) {
  return zone->create_link("cluster/" + link.name, link.bandwidth_bytes_per_s)->seal();
}

using Direction = sg4::LinkInRoute::Direction;

// `route` walked the other way: reversed, each split-duplex link in its other direction.
std::vector<sg4::LinkInRoute> reversed(const std::vector<sg4::LinkInRoute>& route) {
  std::vector<sg4::LinkInRoute> out;
  for (auto it = route.rbegin(); it != route.rend(); ++it) {
    const Direction d = it->get_direction();
    out.emplace_back(it->get_link(), d == Direction::UP     ? Direction::DOWN
                                     : d == Direction::DOWN ? Direction::UP
                                                            : d);
  }
  return out;
}

// The zone a machine's hosts and NIC join: the root with one switch; with racks the machine's
// rack's zone, and the switch a NIC route ends at (null: none). Each rack's zone (created on first
// use) sits in its parent's zone, the root or in a fat tree its pod's (created on first use the
// same way, up to the root), with its route there: its uplink up, then the parent's switch when
// it can bind. One star zone per switch group: set-up stays linear in machines.
struct RackZones {
  std::vector<sg4::NetZone*> zones;
  std::vector<const sg4::Link*> switches;  // per rack: its top-of-rack switch, or null
  std::vector<sg4::NetZone*> pod_zones;
  std::vector<const sg4::Link*> pod_switches;  // per pod: its aggregation switch, or null
  std::vector<sg4::NetZone*> gateway_zones;    // per pod: the zone of its gateway alone

  // A group's star zone in `parent` (whose switch is `parent_switch`, null: none): its switch
  // (kept in *kept when it can bind), a gateway, and the route from the parent's side: `uplink`
  // up, then the parent's switch.
  sg4::NetZone* make_group_zone(const core::Platform& platform, const std::string& kind,
                                const std::string& name, int switch_link, int uplink_link,
                                sg4::NetZone* parent, const sg4::Link* parent_switch,
                                bool keep_switches, const sg4::Link** kept) {
    sg4::NetZone* zone = sg4::create_star_zone(kind + ":" + name);
    zone->set_parent(parent);
    const sg4::Link* own = create_switch(zone, platform.links[size_t(switch_link)]);
    *kept = keep_switches || platform.switch_can_bind(switch_link) ? own : nullptr;
    // A rack's gateway has no route of its own in the rack's zone (a star zone gives it an empty
    // one): a host's route to it is the host's own, up to the top-of-rack switch. A pod's gateway
    // is in a zone of its own inside the pod's, with an empty route: SimGrid 3.32 finds the way
    // from a host to a gateway through their lowest common zone, and takes a gateway directly in
    // an ancestor of the host's zone for a member of that zone (NetZoneImpl's common-ancestor
    // search stops one level short), which drops the links below it; one zone lower, the search
    // lands on the pod's zone, the host's child zone and the gateway's.
    sg4::NetZone* gateway_zone = zone;
    const bool is_rack = kind == "rack";
    if (!is_rack) {
      gateway_zone = sg4::create_star_zone(kind + "-gateway:" + name);
      gateway_zone->set_parent(zone);
      gateway_zones.push_back(gateway_zone);
    }
    auto* gateway = gateway_zone->create_router(name + "/gateway");
    if (gateway_zone != zone) {
      zone->add_route(gateway_zone->get_netpoint(), nullptr, gateway, nullptr, {}, true);
    }
    const core::PlatformLink& up = platform.links[size_t(uplink_link)];
    sg4::SplitDuplexLink* uplink =
        parent->create_split_duplex_link(up.name, up.bandwidth_bytes_per_s);
    uplink->seal();
    std::vector<sg4::LinkInRoute> route = {{uplink, Direction::UP}};
    if (parent_switch != nullptr) route.emplace_back(parent_switch);
    parent->add_route(zone->get_netpoint(), nullptr, gateway, nullptr, route, true);
    return zone;
  }

  void size_for(const core::Platform& platform) {
    if (!zones.empty()) return;
    zones.assign(platform.racks.size(), nullptr);
    switches.assign(platform.racks.size(), nullptr);
    pod_zones.assign(platform.pods.size(), nullptr);
    pod_switches.assign(platform.pods.size(), nullptr);
  }

  // The zone of pod `pod` (its parents' first), or the root and its switch for -1.
  sg4::NetZone* pod_zone_of(const core::Platform& platform, int pod, sg4::NetZone* root,
                            const sg4::Link* core, bool keep_switches,
                            const sg4::Link** pod_switch) {
    if (pod < 0) {
      *pod_switch = core;
      return root;
    }
    if (pod_zones[size_t(pod)] == nullptr) {
      const core::PlatformPod& g = platform.pods[size_t(pod)];
      const sg4::Link* parent_switch = nullptr;
      sg4::NetZone* parent =
          pod_zone_of(platform, g.parent, root, core, keep_switches, &parent_switch);
      pod_zones[size_t(pod)] =
          make_group_zone(platform, "pod", g.name, g.switch_link, g.uplink, parent, parent_switch,
                          keep_switches, &pod_switches[size_t(pod)]);
    }
    *pod_switch = pod_switches[size_t(pod)];
    return pod_zones[size_t(pod)];
  }

  sg4::NetZone* zone_of(const core::Platform& platform, int rack, sg4::NetZone* root,
                        const sg4::Link* core, bool keep_switches) {
    size_for(platform);
    sg4::NetZone*& zone = zones[size_t(rack)];
    if (zone != nullptr) return zone;
    const core::PlatformRack& r = platform.racks[size_t(rack)];
    const sg4::Link* parent_switch = nullptr;
    sg4::NetZone* parent =
        pod_zone_of(platform, r.parent, root, core, keep_switches, &parent_switch);
    zone = make_group_zone(platform, "rack", r.name, r.tor_link, r.uplink, parent, parent_switch,
                           keep_switches, &switches[size_t(rack)]);
    return zone;
  }

  // Seals the racks' zones, then the pods' level by level (children before parents).
  void seal() {
    for (sg4::NetZone* gateway : gateway_zones) gateway->seal();
    for (sg4::NetZone* rack : zones) {
      if (rack != nullptr) rack->seal();
    }
    for (sg4::NetZone* pod : pod_zones) {
      if (pod != nullptr) pod->seal();
    }
  }
};

// One host of a machine and its route out to the host bus, where the CPU and the NIC are: a
// CPU's is empty, a GPU's its PCIe link up, a process endpoint's its RPC link (and its GPU's PCIe
// link up); and which of the machine's NICs takes it out of the machine.
struct MachineHost {
  sg4::Host* host = nullptr;
  std::vector<sg4::LinkInRoute> inside;
  int nic = 0;
};

// Routes between the hosts of one machine, as bypass routes of the zone they are in: a's way out
// to the host bus, then b's way in, each link once (what a star zone of the machine alone gives;
// the zone's own star routes all cross the NIC).
// Only members that leave through NIC 0: the others are endpoints of connections to other
// machines alone (ProcessEndpoint).
void add_routes_inside(sg4::NetZone* zone, const std::vector<MachineHost>& members) {
  for (const MachineHost& a : members) {
    for (const MachineHost& b : members) {
      if (a.host == b.host || a.nic != 0 || b.nic != 0) continue;
      std::vector<sg4::LinkInRoute> route = a.inside;
      for (const sg4::LinkInRoute& link : reversed(b.inside)) {
        const bool seen = std::any_of(route.begin(), route.end(), [&](const sg4::LinkInRoute& l) {
          return l.get_link() == link.get_link() && l.get_direction() == link.get_direction();
        });
        if (!seen) route.push_back(link);
      }
      REPLISIM_ASSERT(!route.empty(), "two hosts of a machine without a link between them");
      zone->add_bypass_route(a.host->get_netpoint(), b.host->get_netpoint(), nullptr, nullptr,
                             route);
    }
  }
}

}  // namespace

SimPlatform build_sim_platform(const core::Platform& platform, const std::vector<bool>& used,
                               bool keep_switch, const std::vector<ProcessEndpoint>& endpoints,
                               size_t process_count) {
  auto* root = sg4::create_star_zone("cluster");
  // A switch that cannot bind (core::Platform::switch_can_bind) stays out of the routes, which
  // changes no result but keeps it from tying every flow of the cluster into one sharing
  // problem, re-solved at each event. `keep_switch` keeps every switch (a fault changes one).
  const sg4::Link* switch_link = create_switch(root, platform.links[size_t(platform.switch_link)]);
  if (!keep_switch && !switch_can_bind(platform)) switch_link = nullptr;
  RackZones racks;
  std::vector<sg4::Host*> hosts(platform.devices.size(), nullptr);
  std::vector<sg4::Host*> endpoint_hosts(endpoints.size(), nullptr);
  std::vector<sg4::SplitDuplexLink*> pcie_of_device(platform.devices.size(), nullptr);
  std::vector<sg4::Link*> rpc_of_process(process_count, nullptr);
  std::vector<std::vector<size_t>> endpoints_of_machine(platform.machines.size());
  for (size_t e = 0; e < endpoints.size(); ++e) {
    endpoints_of_machine[size_t(platform.devices[size_t(endpoints[e].device)].machine)].push_back(
        e);
  }
  // LV08's reverse traffic makes each flow also use 5% of its rate on the links of its reverse
  // route, and a process's RPC link is in both (one link for both directions): its bandwidth is
  // raised by that 5% so that the streams get the ceiling itself (SimGrid 3.32's LV08 charges
  // the reverse route 0.05 of each flow, simgrid-notes.md section 5). Between machines LV08's
  // 0.97 bandwidth factor applies to it as to every link a TCP flow crosses.
  const bool crosstraffic = simgrid::config::get_value<bool>("network/crosstraffic");
  const double rpc_link_bytes_per_s =
      platform.transport.process_rpc_ceiling_bytes_per_s * (crosstraffic ? 1.05 : 1.0);
  for (size_t m = 0; m < platform.machines.size(); ++m) {
    const core::PlatformMachine& machine = platform.machines[m];
    bool machine_used = false;
    for (int d : machine.devices) machine_used |= used[size_t(d)];
    if (!machine_used) continue;
    // The zone of the machine's hosts and NIC (no zone per machine: SimGrid 3.32 finds a host
    // by name by walking every zone, so that a zone per machine made set-up quadratic), and the
    // switch its NIC route ends at.
    sg4::NetZone* zone = root;
    const sg4::Link* nic_switch = switch_link;
    if (machine.rack >= 0) {
      zone = racks.zone_of(platform, machine.rack, root, switch_link, keep_switch);
      nic_switch = racks.switches[size_t(machine.rack)];
    }
    // Which machine a host is on, for keep_tcp_factors_off_machine_links(): its index + 1.
    void* const machine_tag = reinterpret_cast<void*>(uintptr_t(m) + 1);
    std::vector<MachineHost> members;
    // Two processes on one device talk over loopback (core::Transport::between_processes):
    // SimGrid needs a route from a host to itself, core::Platform::transfer_route's. On a CPU a
    // fat pipe that never binds (the loopback's stream ceiling is each communication's rate
    // bound, sim_network.cpp); on a GPU its PCIe link up and down.
    const sg4::Link* loopback = nullptr;
    if (platform.transport.between_processes) {
      loopback = zone->create_link("replisim:loopback." + machine.name, kUnboundedBytesPerS)
                     ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                     ->seal();
    }
    for (int d : machine.devices) {
      const core::PlatformDevice& device = platform.devices[size_t(d)];
      sg4::Host* host = zone->create_host(device.name, device.speed_flop_per_s)
                            ->set_core_count(device.cores)
                            ->seal();
      host->set_data(machine_tag);
      hosts[size_t(d)] = host;
      if (device.pcie_link < 0) {
        // The CPU sits on the host bus: no link between it and the NIC or the GPUs' PCIe.
        if (loopback != nullptr) {
          zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                          {sg4::LinkInRoute(loopback)}, false);
        }
        members.push_back({host, {}});
        continue;
      }
      const core::PlatformLink& pcie = platform.links[size_t(device.pcie_link)];
      sg4::SplitDuplexLink* link =
          zone->create_split_duplex_link(pcie.name, pcie.bandwidth_bytes_per_s);
      link->seal();
      pcie_of_device[size_t(d)] = link;
      // A GPU to itself: its PCIe link up and down (through host memory).
      zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                      {{link, Direction::UP}, {link, Direction::DOWN}}, false);
      members.push_back({host, {{link, Direction::UP}}});
    }
    for (size_t e : endpoints_of_machine[m]) {
      const ProcessEndpoint& endpoint = endpoints[e];
      // Named by index: machine and role names may hold any character.
      std::vector<sg4::LinkInRoute> inside;
      if (endpoint.process >= 0) {
        sg4::Link*& rpc = rpc_of_process[size_t(endpoint.process)];
        if (rpc == nullptr) {
          rpc = zone->create_link("replisim:rpc." + std::to_string(endpoint.process),
                                  rpc_link_bytes_per_s)
                    ->seal();
        }
        inside.emplace_back(rpc);
      }
      if (pcie_of_device[size_t(endpoint.device)] != nullptr) {
        inside.emplace_back(pcie_of_device[size_t(endpoint.device)], Direction::UP);
      }
      endpoint_hosts[e] = zone->create_host("replisim:endpoint." + std::to_string(e), 1e9)->seal();
      endpoint_hosts[e]->set_data(machine_tag);
      members.push_back({endpoint_hosts[e], inside, endpoint.nic});
    }
    std::vector<sg4::SplitDuplexLink*> nics;
    for (int l : machine.nic_links) {
      const core::PlatformLink& nic = platform.links[size_t(l)];
      nics.push_back(zone->create_split_duplex_link(nic.name, nic.bandwidth_bytes_per_s));
      nics.back()->seal();
    }
    for (const MachineHost& member : members) {
      std::vector<sg4::LinkInRoute> route = member.inside;
      route.emplace_back(nics[size_t(member.nic)], Direction::UP);
      if (nic_switch != nullptr) route.emplace_back(nic_switch);
      zone->add_route(member.host->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    }
    add_routes_inside(zone, members);
  }
  racks.seal();
  sg4::Host* service = root->create_host("replisim:service", 1e9)->seal();
  root->seal();
  keep_tcp_factors_off_machine_links(root);
  for (size_t d = 0; d < hosts.size(); ++d) {
    REPLISIM_ASSERT(!used[d] || hosts[d] != nullptr, "used device without a host");
  }
  return {hosts, endpoint_hosts, service};
}

}  // namespace replisim::sim
