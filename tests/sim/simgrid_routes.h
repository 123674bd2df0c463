// The check that SimGrid's routes of a built platform are the platform's own (core::Platform::
// route), link for link and in order, for every pair of devices: the racks', the fat trees' and
// several NICs' tests (topology_test.cpp, fat_tree_test.cpp, nics_test.cpp) build their zones with
// it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/hardware/platform.h"
#include "sim/sim_platform.h"

namespace replisim::test {

// The name SimGrid gives a hop's link: a shared link (a switch) "cluster/<name>"; a split-duplex
// link's direction "<name>_UP" or "<name>_DOWN" (sim/sim_platform.cpp).
inline std::string simgrid_link_name(const core::Platform& p, const core::Hop& hop) {
  const core::PlatformLink& link = p.links[size_t(hop.link)];
  if (!link.split_duplex) return "cluster/" + link.name;
  return link.name + (hop.direction == core::LinkDirection::kDown ? "_DOWN" : "_UP");
}

// Builds `p` in a SimGrid engine named `engine_name` and expects every device pair's SimGrid
// route to be p.route's. Returns the pairs compared (devices x (devices - 1)). On a machine of
// several NICs a device reaches another machine through NIC k >= 1 from an endpoint of its own
// (sim::ProcessEndpoint with no process, as sim/sim_network.cpp makes them): the check builds one
// per device and such NIC and takes it for the pairs whose route goes through that NIC.
inline int expect_simgrid_routes_are_the_platforms(const core::Platform& p,
                                                   const std::string& engine_name) {
  namespace sg4 = simgrid::s4u;
  sg4::Engine engine(engine_name);
  sim::configure_network_model(p.network_model);
  std::vector<sim::ProcessEndpoint> endpoints;
  std::vector<std::vector<int>> endpoint_of(p.devices.size());  // per device, per NIC (0: none)
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const size_t nics = p.machines[size_t(p.devices[d].machine)].nic_links.size();
    endpoint_of[d].assign(nics, -1);
    for (size_t k = 1; k < nics; ++k) {
      endpoint_of[d][k] = int(endpoints.size());
      endpoints.push_back({-1, int(d), int(k)});
    }
  }
  const sim::SimPlatform built =
      sim::build_sim_platform(p, std::vector<bool>(p.devices.size(), true), false, endpoints);
  // Device `d`'s host toward device `peer`: its endpoint through the NIC its route takes.
  const auto host_of = [&](size_t d, size_t peer) {
    const int machine = p.devices[d].machine, other = p.devices[peer].machine;
    const int nic = machine == other ? 0 : p.nic_index_toward(machine, other);
    return nic == 0 ? built.hosts[d] : built.endpoint_hosts[size_t(endpoint_of[d][size_t(nic)])];
  };
  int compared = 0;
  for (size_t a = 0; a < p.devices.size(); ++a) {
    for (size_t b = 0; b < p.devices.size(); ++b) {
      if (a == b) continue;
      std::vector<std::string> expected;
      for (const core::Hop& hop : p.route(int(a), int(b))) {
        expected.push_back(simgrid_link_name(p, hop));
      }
      std::vector<sg4::Link*> links;
      double latency_s = 0;
      host_of(a, b)->route_to(host_of(b, a), links, &latency_s);
      std::vector<std::string> got;
      for (const sg4::Link* l : links) got.push_back(l->get_name());
      EXPECT_EQ(got, expected) << p.devices[a].name << " -> " << p.devices[b].name;
      ++compared;
    }
  }
  return compared;
}

}  // namespace replisim::test
