// Networks as they are bought (issue 41): racks behind top-of-rack switches with oversubscribed
// uplinks to a core switch. The SimGrid platform's routes are core::Platform::route's, and the
// simulated rates are the closed forms of the uplinks' fair shares.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/metrics/critical_path.h"
#include "core/strategy/strategy.h"
#include "sim/sim_platform.h"
#include "tests/sim/simgrid_routes.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// Two racks of `per_rack` machines ("m0".."m<2 per_rack - 1>", a 10 TFLOPS GPU and a 10 Gbit/s
// NIC each) with `topology` merged over {"kind": "racks", "machines_per_rack": per_rack}.
nlohmann::json racks_cluster(int machines, int per_rack, const nlohmann::json& topology,
                             const nlohmann::json& training) {
  std::vector<nlohmann::json> list;
  for (int i = 0; i < machines; ++i) {
    list.push_back(
        test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS", "10 TFLOPS"}, "10 Gbps"));
  }
  nlohmann::json doc =
      test::scenario_json(list, test::one_layer_model(1e6, "1 kFLOP"), training, "ideal");
  doc["cluster"].erase("switch");
  doc["cluster"]["topology"] = {{"kind", "racks"}, {"machines_per_rack", per_rack}};
  doc["cluster"]["topology"].update(topology);
  return doc;
}

TEST(Racks, SimGridRoutesAreThePlatformsRoutes) {
  // A blocking top-of-rack switch and core (they stay in SimGrid's routes), 3 racks of 2.
  nlohmann::json doc =
      racks_cluster(5, 2, {{"oversubscription", 2}, {"tor", {{"bandwidth", "15 Gbps"}}}},
                    {{"replicas", "m*/gpu0"}, {"ps", {"m0/cpu"}}});
  doc["cluster"]["switch"] = {{"bandwidth", "12 Gbps"}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  ASSERT_EQ(p.racks.size(), 3u);
  EXPECT_EQ(p.machines[4].rack, 2);
  for (const core::PlatformRack& r : p.racks) EXPECT_TRUE(p.switch_can_bind(r.tor_link));
  EXPECT_EQ(test::expect_simgrid_routes_are_the_platforms(p, "topology_test"), 15 * 14);
}

// The bound that held most of client `name`'s critical path (its "bounds" are the channels that
// bound its transfers' rates), or "" when the path names none.
std::string top_bound(const core::RunMetrics& m, const std::string& name) {
  for (const core::CriticalPath& path : m.paths) {
    if (path.client != name) continue;
    for (const core::PathShare& share : path.shares) {
      if (!share.bounds.empty()) return share.bounds.front().first;
    }
  }
  return "";
}

// 8 machines in 2 racks of 4, 10 Gbit/s NICs, uplinks oversubscribed 3:1; one PS on m0 (rack 0),
// whose NIC is 100 Gbit/s so that it never binds; workers on m1..m7, asynchronous, 100 MB of
// weights, no compute to speak of. Rack 1's uplink carries 40/3 Gbit/s each way, and its four
// workers, in lockstep (no jitter, same start), pull together and push together: each gets a
// quarter of it, so a step is 2 x (100 MB / (U / 4) + L) where L is the route's latency.
nlohmann::json one_ps_in_rack0(const std::string& network_model) {
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < 8; ++i) {
    machines.push_back(test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"},
                                     i == 0 ? "100 Gbps" : "10 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(
      machines, test::one_layer_model(25e6, "1 kFLOP"),
      {{"replicas", {"m1/gpu0", "m2/gpu0", "m3/gpu0", "m4/gpu0", "m5/gpu0", "m6/gpu0", "m7/gpu0"}},
       {"ps", {"m0/cpu"}},
       {"costs", "none"},
       {"jitter", 0},
       {"steps", 60}},
      network_model);
  doc["cluster"].erase("switch");
  doc["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 4}, {"oversubscription", 3}};
  return doc;
}

void expect_uplink_fair_share(const std::string& network_model, double tolerance) {
  const nlohmann::json doc = one_ps_in_rack0(network_model);
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  ASSERT_EQ(p.racks.size(), 2u);
  const double uplink = p.links[size_t(p.racks[1].uplink)].bandwidth_bytes_per_s;
  ASSERT_DOUBLE_EQ(uplink, 40e9 / 8 / 3);
  const bool lv08 = network_model == "lv08";
  // LV08: 0.97 of the bandwidth, the latency x 13.01 (simgrid-notes.md section 5).
  const double rate = uplink / 4 * (lv08 ? 0.97 : 1.0);
  const int ps = p.find_device("m0/cpu");
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  for (const char* worker : {"worker3", "worker4", "worker5", "worker6"}) {  // m4..m7: rack 1
    const int device = p.find_device("m" + std::to_string(worker[6] - '0' + 1) + "/gpu0");
    const double latency = p.route_latency_s(ps, device) * (lv08 ? 13.01 : 1.0);
    const double expected = 2 * (100e6 / rate + latency);
    const double got = test::client_step_time(m, worker);
    std::printf("%s: step %.4f s, closed form %.4f s (pull rate %.4g Gbit/s)\n", worker, got,
                expected, 100e6 / (got / 2) * 8 / 1e9);
    EXPECT_NEAR(got, expected, tolerance * expected) << worker;
    EXPECT_NE(top_bound(m, worker).find("rack1/uplink/"), std::string::npos)
        << worker << ": " << top_bound(m, worker);
  }
  // Rack 0's workers are bound by their own NICs, not by an uplink.
  EXPECT_NEAR(test::client_step_time(m, "worker0"), 2 * 100e6 / (10e9 / 8 * (lv08 ? 0.97 : 1)),
              tolerance * 0.16);
  EXPECT_EQ(m.bottleneck.name.rfind("rack1/uplink/", 0), 0u) << m.bottleneck.name;
  const std::string bound_by = core::describe_path(m.bound_by, 4, true);
  std::printf("bound by: %s\n", bound_by.c_str());
  EXPECT_NE(bound_by.find("rack1/uplink"), std::string::npos) << bound_by;
}

TEST(Racks, CrossRackPullsGetTheUplinksFairShareIdeal) {
  expect_uplink_fair_share("ideal", 0.02);
}

TEST(Racks, CrossRackPullsGetTheUplinksFairShareLv08) {
  expect_uplink_fair_share("lv08", 0.05);
}

// Two dedicated PSes (100 Gbit/s NICs), the weights partitioned over them, in rack 0 ("one_rack")
// or one per rack ("racks"); 8 workers in 2 racks of 4 with 10 Gbit/s NICs and uplinks of 40/3
// Gbit/s (3:1 over the workers' NICs). In one rack, a rack-1 worker pulls all 100 MB across its
// uplink at U/8 per shard: 100 MB / (U / 4) per direction. Spread, every worker pulls half across
// (at U/4, four workers per uplink direction) and half within its rack (at B - U/4 on its NIC):
// the half across takes 50 MB / (U / 4), half as long.
TEST(Racks, SpreadingTheParameterServersOverRacksHalvesTheCrossRackTime) {
  const auto run = [](const std::string& spread) {
    std::vector<nlohmann::json> machines;
    for (int i = 0; i < 8; ++i) {
      machines.push_back(
          test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
    }
    nlohmann::json doc =
        test::scenario_json(machines, test::one_layer_model(25e6, "1 kFLOP"),
                            {{"replicas", "m*/gpu0"},
                             {"ps",
                              {{"count", 2},
                               {"on", "dedicated"},
                               {"spread", spread},
                               {"machine",
                                {{"cpu", {{"speed", "1 TFLOPS"}}},
                                 {"nic", {{"bandwidth", "100 Gbps"}, {"latency", "10 us"}}}}}}},
                             {"variable_placement", "partitioned"},
                             {"costs", "none"},
                             {"jitter", 0},
                             {"steps", 40}},
                            "ideal");
    doc["cluster"].erase("switch");
    doc["cluster"]["topology"] = {{"kind", "racks"},
                                  {"machines_per_rack", 4},
                                  {"uplink", {{"bandwidth", std::to_string(40.0 / 3) + " Gbps"}}}};
    const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
    const core::Platform& p = plan.platform;
    EXPECT_EQ(p.machines[size_t(p.devices[size_t(p.find_device("ps0/cpu"))].machine)].rack, 0);
    EXPECT_EQ(p.machines[size_t(p.devices[size_t(p.find_device("ps1/cpu"))].machine)].rack,
              spread == "racks" ? 1 : 0);
    return test::simulate(doc, "between_graph");
  };
  const double uplink = 40e9 / 3 / 8;
  const core::RunMetrics one_rack = run("one_rack");
  const core::RunMetrics spread = run("racks");
  const double one_rack_expected = 2 * 100e6 / (uplink / 4);
  const double spread_expected = 2 * 50e6 / (uplink / 4);
  for (const char* worker : {"worker4", "worker5", "worker6", "worker7"}) {
    EXPECT_NEAR(test::client_step_time(one_rack, worker), one_rack_expected,
                0.02 * one_rack_expected)
        << worker;
    EXPECT_NEAR(test::client_step_time(spread, worker), spread_expected, 0.02 * spread_expected)
        << worker;
  }
  // Spread, rack 0's workers are rack 1's mirror image.
  EXPECT_NEAR(test::client_step_time(spread, "worker0"), spread_expected, 0.02 * spread_expected);
}

// A fault on an uplink degrades what crosses it (sim_faults.cpp finds the link by its name).
TEST(Racks, AnUplinkFaultSlowsTheCrossRackWorkers) {
  nlohmann::json doc = one_ps_in_rack0("ideal");
  const double healthy = test::client_step_time(test::simulate(doc, "between_graph"), "worker4");
  doc["faults"] = {{{"kind", "link"}, {"link", "rack1/uplink"}, {"from", "0 s"}, {"factor", 0.5}}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  EXPECT_NEAR(test::client_step_time(m, "worker4"), 2 * healthy, 0.03 * healthy);
  EXPECT_NEAR(test::client_step_time(m, "worker0"), 0.16, 0.02 * 0.16);  // rack 0: its NIC
}

}  // namespace
}  // namespace replisim
