#include "sim/sim_platform.h"

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
  // calls the callback for every communication; both ends of a copy inside a machine are hosts
  // of that machine's zone, and every route between machines crosses a NIC.
  const double between_machines = simgrid::config::get_value<double>("network/bandwidth-factor");
  root->get_network_model()->set_bw_factor_cb(
      [between_machines](double, const sg4::Host* src, const sg4::Host* dst,
                         const std::vector<sg4::Link*>&, const std::unordered_set<sg4::NetZone*>&) {
        return src->get_englobing_zone() == dst->get_englobing_zone() ? 1.0 : between_machines;
      });
}

bool switch_can_bind(const core::Platform& platform) {
  double nic_total = 0;
  for (const core::PlatformMachine& m : platform.machines) {
    nic_total += platform.links[size_t(m.nic_link)].bandwidth_bytes_per_s;
  }
  return platform.links[size_t(platform.switch_link)].bandwidth_bytes_per_s < 2 * nic_total;
}

SimPlatform build_sim_platform(const core::Platform& platform, const std::vector<bool>& used,
                               bool keep_switch, const std::vector<ProcessEndpoint>& endpoints,
                               size_t process_count) {
  auto* root = sg4::create_star_zone("cluster");
  // A switch at least twice as fast as all NICs together can never be the bottleneck (every
  // flow also crosses a NIC, and LV08's reverse traffic adds 5%): it then stays out of the
  // routes, which changes no result but keeps it from tying every flow of the cluster into one
  // sharing problem, re-solved at each event.
  const bool shared_switch = keep_switch || switch_can_bind(platform);
  const core::PlatformLink& sw = platform.links[size_t(platform.switch_link)];
  const sg4::Link* switch_link =
      root->create_link("cluster/" + sw.name, sw.bandwidth_bytes_per_s)->seal();
  std::vector<sg4::Host*> hosts(platform.devices.size(), nullptr);
  std::vector<sg4::Host*> endpoint_hosts(endpoints.size(), nullptr);
  std::vector<sg4::SplitDuplexLink*> pcie_of_device(platform.devices.size(), nullptr);
  std::vector<sg4::Link*> rpc_of_process(process_count, nullptr);
  // LV08's reverse traffic makes each flow also use 5% of its rate on the links of its reverse
  // route, and a process's RPC link is in both (one link for both directions): its bandwidth is
  // raised by that 5% so that the streams get the ceiling itself (SimGrid 3.32's LV08 charges
  // the reverse route 0.05 of each flow, simgrid-notes.md section 5). Between machines LV08's
  // 0.97 bandwidth factor applies to it as to every link a TCP flow crosses.
  const bool crosstraffic = simgrid::config::get_value<bool>("network/crosstraffic");
  const double rpc_link_bytes_per_s =
      platform.transport.process_rpc_ceiling_bytes_per_s * (crosstraffic ? 1.05 : 1.0);
  for (const core::PlatformMachine& machine : platform.machines) {
    bool machine_used = false;
    for (int d : machine.devices) machine_used |= used[size_t(d)];
    if (!machine_used) continue;
    auto* zone = sg4::create_star_zone("machine:" + machine.name);
    zone->set_parent(root);
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
      hosts[size_t(d)] = host;
      if (loopback != nullptr && device.pcie_link < 0) {
        zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(loopback)}, false);
      }
      if (device.pcie_link < 0) {
        // The CPU sits on the host bus: no link between it and the NIC or the GPUs' PCIe.
        zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {}, true);
        continue;
      }
      const core::PlatformLink& pcie = platform.links[size_t(device.pcie_link)];
      sg4::SplitDuplexLink* link =
          zone->create_split_duplex_link(pcie.name, pcie.bandwidth_bytes_per_s);
      link->seal();
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, true);
      pcie_of_device[size_t(d)] = link;
      if (loopback != nullptr) {
        zone->add_route(
            host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
            {{link, sg4::LinkInRoute::Direction::UP}, {link, sg4::LinkInRoute::Direction::DOWN}},
            false);
      }
    }
    for (size_t e = 0; e < endpoints.size(); ++e) {
      const ProcessEndpoint& endpoint = endpoints[e];
      const core::PlatformDevice& device = platform.devices[size_t(endpoint.device)];
      if (&platform.machines[size_t(device.machine)] != &machine) continue;
      // Named by index: machine and role names may hold any character.
      sg4::Link*& rpc = rpc_of_process[size_t(endpoint.process)];
      if (rpc == nullptr) {
        rpc = zone->create_link("replisim:rpc." + std::to_string(endpoint.process),
                                rpc_link_bytes_per_s)
                  ->seal();
      }
      std::vector<sg4::LinkInRoute> route = {sg4::LinkInRoute(rpc)};
      if (pcie_of_device[size_t(endpoint.device)] != nullptr) {
        route.emplace_back(pcie_of_device[size_t(endpoint.device)],
                           sg4::LinkInRoute::Direction::UP);
      }
      endpoint_hosts[e] = zone->create_host("replisim:endpoint." + std::to_string(e), 1e9)->seal();
      zone->add_route(endpoint_hosts[e]->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    }
    auto* gateway = zone->create_router(machine.name + "/gateway");
    zone->seal();
    const core::PlatformLink& nic = platform.links[size_t(machine.nic_link)];
    sg4::SplitDuplexLink* nic_link =
        root->create_split_duplex_link(nic.name, nic.bandwidth_bytes_per_s);
    nic_link->seal();
    std::vector<sg4::LinkInRoute> route = {{nic_link, sg4::LinkInRoute::Direction::UP}};
    if (shared_switch) route.emplace_back(switch_link);
    root->add_route(zone->get_netpoint(), nullptr, gateway, nullptr, route, true);
  }
  sg4::Host* service = root->create_host("replisim:service", 1e9)->seal();
  root->seal();
  keep_tcp_factors_off_machine_links(root);
  for (size_t d = 0; d < hosts.size(); ++d) {
    REPLISIM_ASSERT(!used[d] || hosts[d] != nullptr, "used device without a host");
  }
  return {hosts, endpoint_hosts, service};
}

}  // namespace replisim::sim
