// The check that SimGrid's routes of a built platform are the platform's own (core::Platform::
// route), link for link and in order, for every pair of devices: the racks' and the fat trees'
// tests (topology_test.cpp, fat_tree_test.cpp) build their zones with it.
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
// route to be p.route's. Returns the pairs compared (devices x (devices - 1)).
inline int expect_simgrid_routes_are_the_platforms(const core::Platform& p,
                                                   const std::string& engine_name) {
  namespace sg4 = simgrid::s4u;
  sg4::Engine engine(engine_name);
  sim::configure_network_model(p.network_model);
  const sim::SimPlatform built =
      sim::build_sim_platform(p, std::vector<bool>(p.devices.size(), true));
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
      built.hosts[a]->route_to(built.hosts[b], links, &latency_s);
      std::vector<std::string> got;
      for (const sg4::Link* l : links) got.push_back(l->get_name());
      EXPECT_EQ(got, expected) << p.devices[a].name << " -> " << p.devices[b].name;
      ++compared;
    }
  }
  return compared;
}

}  // namespace replisim::test
