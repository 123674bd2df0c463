// cluster.topology (issue 41): racks parsed into the platform (top-of-rack switches, uplinks from
// an oversubscription ratio or given, the core switch), its routes, PS placement over racks, the
// platform's JSON, and every bad input named by its JSON path.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/hardware/platform.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// `machines` machines "m<i>" (10 Gbit/s NICs; m0's is `m0_nic`), workers on every GPU, racks of
// `per_rack` with `topology` merged in.
nlohmann::json racks(int machines, int per_rack, const nlohmann::json& topology,
                     const nlohmann::json& ps = {"m0/cpu"}, const std::string& m0_nic = "10 Gbps") {
  std::vector<nlohmann::json> list;
  for (int i = 0; i < machines; ++i) {
    list.push_back(test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"},
                                 i == 0 ? m0_nic : "10 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(list, test::one_layer_model(1e6, "1 MFLOP"),
                                           {{"replicas", "m*/gpu0"}, {"ps", ps}});
  doc["cluster"].erase("switch");
  doc["cluster"]["topology"] = {{"kind", "racks"}, {"machines_per_rack", per_rack}};
  if (!topology.is_null()) doc["cluster"]["topology"].update(topology);
  return doc;
}

std::vector<std::string> route_names(const Platform& p, const std::vector<Hop>& hops) {
  std::vector<std::string> out;
  for (const Hop& hop : hops) out.push_back(p.channel_name(p.channel_of(hop)));
  return out;
}

TEST(Topology, RacksFromAnOversubscriptionRatio) {
  // Rack 0: m0 (40 Gbit/s) and m1..m3; rack 1: m4..m6 (a short last rack).
  const Platform p = build_platform(
      parse_scenario(racks(7, 4, {{"oversubscription", 2}}, {"m0/cpu"}, "40 Gbps"), "s.json")
          .cluster);
  ASSERT_EQ(p.racks.size(), 2u);
  EXPECT_EQ(p.racks[1].name, "rack1");
  EXPECT_EQ(p.machines[3].rack, 0);
  EXPECT_EQ(p.machines[4].rack, 1);
  EXPECT_DOUBLE_EQ(p.links[size_t(p.racks[0].uplink)].bandwidth_bytes_per_s, 70e9 / 8 / 2);
  EXPECT_DOUBLE_EQ(p.links[size_t(p.racks[1].uplink)].bandwidth_bytes_per_s, 30e9 / 8 / 2);
  // Defaults: non-blocking switches.
  EXPECT_DOUBLE_EQ(p.links[size_t(p.switch_link)].bandwidth_bytes_per_s, 2 * 100e9 / 8 / 2);
  EXPECT_EQ(p.links[size_t(p.switch_link)].name, "core");
  EXPECT_FALSE(p.switch_can_bind(p.switch_link));
  EXPECT_FALSE(p.switch_can_bind(p.racks[0].tor_link));
  const int m1 = p.find_device("m1/gpu0"), m2 = p.find_device("m2/cpu"),
            m5 = p.find_device("m5/gpu0");
  EXPECT_EQ(route_names(p, p.route(m1, m2)),
            (std::vector<std::string>{"m1/pcie/gpu0/up", "m1/nic/up", "rack0/tor", "m2/nic/down"}));
  EXPECT_EQ(route_names(p, p.route(m1, m5)),
            (std::vector<std::string>{"m1/pcie/gpu0/up", "m1/nic/up", "rack0/tor",
                                      "rack0/uplink/up", "core", "rack1/uplink/down", "rack1/tor",
                                      "m5/nic/down", "m5/pcie/gpu0/down"}));
  EXPECT_DOUBLE_EQ(p.route_bandwidth_bytes_per_s(m1, m5), 10e9 / 8);  // the NICs
  // The NICs' 10 us each way, both top-of-rack switches and the core (1 us each), the uplinks 0.
  EXPECT_NEAR(p.route_latency_s(m1, m5), 10e-6 + 10e-6 + 3e-6 + 2 * 5e-6, 1e-12);
}

TEST(Topology, GivenUplinksAndSwitches) {
  nlohmann::json doc = racks(4, 2,
                             {{"uplink", {{"bandwidth", "5 Gbps"}, {"latency", "2 us"}}},
                              {"tor", {{"bandwidth", "30 Gbps"}}}});
  doc["cluster"]["switch"] = {{"bandwidth", "8 Gbps"}};
  const Platform p = build_platform(parse_scenario(doc, "s.json").cluster);
  for (const PlatformRack& r : p.racks) {
    EXPECT_DOUBLE_EQ(p.links[size_t(r.uplink)].bandwidth_bytes_per_s, 5e9 / 8);
    EXPECT_DOUBLE_EQ(p.links[size_t(r.uplink)].latency_s, 2e-6);
    EXPECT_DOUBLE_EQ(p.links[size_t(r.tor_link)].bandwidth_bytes_per_s, 30e9 / 8);
    EXPECT_TRUE(p.switch_can_bind(r.tor_link));  // 30 < 2 x (20 + 5)
  }
  EXPECT_TRUE(p.switch_can_bind(p.switch_link));  // 8 < 2 x 10
}

TEST(Topology, TheDefaultIsOneSwitchAsBefore) {
  nlohmann::json doc = racks(3, 2, {});
  doc["cluster"]["topology"] = {{"kind", "star"}};
  const Platform p = build_platform(parse_scenario(doc, "s.json").cluster);
  EXPECT_TRUE(p.racks.empty());
  EXPECT_EQ(p.links[size_t(p.switch_link)].name, "switch");
  EXPECT_EQ(platform_to_json(p).count("racks"), 0u);
  EXPECT_EQ(platform_to_json(p)["machines"][0].count("rack"), 0u);
}

TEST(Topology, ThePlatformsJsonKeepsTheRacks) {
  const Platform p =
      build_platform(parse_scenario(racks(5, 2, {{"oversubscription", 4}}), "s.json").cluster);
  const Platform read = platform_from_json(platform_to_json(p), "t", "/platform");
  EXPECT_EQ(platform_to_json(read), platform_to_json(p));
  ASSERT_EQ(read.racks.size(), 3u);
  EXPECT_EQ(read.machines[4].rack, 2);
  const int a = read.find_device("m0/cpu"), b = read.find_device("m4/cpu");
  EXPECT_EQ(route_names(read, read.route(a, b)), route_names(p, p.route(a, b)));
  // A damaged trace names its path.
  nlohmann::json bad = platform_to_json(p);
  bad["machines"][1]["rack"] = 7;
  EXPECT_THROW(platform_from_json(bad, "t", "/platform"), InputError);
  bad = platform_to_json(p);
  bad["racks"][0]["uplink"] = bad["racks"][0]["tor_link"];
  try {
    platform_from_json(bad, "t", "/platform");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/platform/racks/0/uplink");
  }
  // A rack's links are its own: not the core, a NIC or another rack's.
  const auto error_path = [](const nlohmann::json& platform) {
    try {
      platform_from_json(platform, "t", "/platform");
    } catch (const InputError& e) {
      return e.json_path() + ": " + e.what();
    }
    return std::string("(no error)");
  };
  bad = platform_to_json(p);
  bad["racks"][0]["tor_link"] = p.switch_link;
  EXPECT_NE(error_path(bad).find("/platform/racks/0/tor_link: "), std::string::npos);
  EXPECT_NE(error_path(bad).find("is already the switch"), std::string::npos) << error_path(bad);
  bad = platform_to_json(p);
  bad["racks"][1]["uplink"] = p.machines[0].nic_links.front();
  EXPECT_NE(error_path(bad).find("/platform/racks/1/uplink: "), std::string::npos);
  EXPECT_NE(error_path(bad).find("is already m0's NIC"), std::string::npos) << error_path(bad);
  bad = platform_to_json(p);
  bad["racks"][2]["tor_link"] = p.racks[0].tor_link;
  EXPECT_NE(error_path(bad).find("/platform/racks/2/tor_link: "), std::string::npos);
  EXPECT_NE(error_path(bad).find("is already rack0's tor_link"), std::string::npos)
      << error_path(bad);
}

TEST(Topology, ParameterServersSpreadOverRacksOrInOne) {
  const auto ps_machines = [](const nlohmann::json& ps) {
    const Scenario s = parse_scenario(racks(8, 4, {{"oversubscription", 3}}, ps), "s.json");
    std::vector<std::string> out;
    for (const DeviceRef& d : s.training.ps) out.push_back(d.machine);
    return std::make_pair(out, s);
  };
  EXPECT_EQ(ps_machines({{"count", 3}, {"on", "workers"}, {"spread", "racks"}}).first,
            (std::vector<std::string>{"m0", "m4", "m1"}));
  EXPECT_EQ(ps_machines({{"count", 5}, {"on", "workers"}, {"spread", "one_rack"}}).first,
            (std::vector<std::string>{"m0", "m1", "m2", "m3", "m0"}));
  EXPECT_EQ(ps_machines({{"count", 2}, {"on", "workers"}}).first,
            (std::vector<std::string>{"m0", "m1"}));
  const auto [dedicated, s] = ps_machines({{"count", 3}, {"on", "dedicated"}, {"spread", "racks"}});
  EXPECT_EQ(s.cluster.find_machine("ps0")->rack, 0);
  EXPECT_EQ(s.cluster.find_machine("ps1")->rack, 1);
  EXPECT_EQ(s.cluster.find_machine("ps2")->rack, 0);
  const auto [one, s1] = ps_machines({{"count", 2}, {"on", "dedicated"}});
  EXPECT_EQ(s1.cluster.find_machine("ps1")->rack, 0);
  // Dedicated PS machines add to their rack's NICs, so to a ratio's uplink.
  const Platform p = build_platform(s.cluster);
  EXPECT_DOUBLE_EQ(p.links[size_t(p.racks[0].uplink)].bandwidth_bytes_per_s, 60e9 / 8 / 3);
}

TEST(Topology, BadTopologiesNameTheirPath) {
  test::expect_scenario_error(racks(4, 2, {{"kind", "mesh"}}), "/cluster/topology/kind",
                              "valid: star, racks");
  test::expect_scenario_error(racks(4, 2, {}), "/cluster/topology",
                              "give either \"oversubscription\"");
  test::expect_scenario_error(
      racks(4, 2, {{"oversubscription", 3}, {"uplink", {{"bandwidth", "1 Gbps"}}}}),
      "/cluster/topology", "not both");
  test::expect_scenario_error(racks(4, 0, {{"oversubscription", 3}}),
                              "/cluster/topology/machines_per_rack", "");
  test::expect_scenario_error(racks(4, 2, {{"oversubscription", 0}}),
                              "/cluster/topology/oversubscription", "");
  test::expect_scenario_error(racks(4, 2, {{"oversubscription", 3}, {"spine", 1}}),
                              "/cluster/topology/spine", "unknown field");
  test::expect_scenario_error(racks(4, 2, {{"uplink", {{"latency", "1 us"}}}}),
                              "/cluster/topology/uplink/bandwidth", "required");
  nlohmann::json star = racks(4, 2, {});
  star["cluster"]["topology"] = {{"kind", "star"}, {"machines_per_rack", 2}};
  test::expect_scenario_error(star, "/cluster/topology/machines_per_rack", "unknown field");
  star["cluster"].erase("topology");
  star["training"]["ps"] = {{"count", 2}, {"on", "workers"}, {"spread", "racks"}};
  test::expect_scenario_error(star, "/training/ps/spread", "the cluster has none");
  nlohmann::json spread =
      racks(4, 2, {{"oversubscription", 3}}, {{"count", 2}, {"on", "workers"}, {"spread", "rows"}});
  test::expect_scenario_error(spread, "/training/ps/spread", "expected \"racks\" or \"one_rack\"");
  nlohmann::json fault = racks(4, 2, {{"oversubscription", 3}});
  fault["faults"] = {
      {{"kind", "link"}, {"link", "rack2/uplink"}, {"from", "1 s"}, {"factor", 0.5}}};
  test::expect_scenario_error(fault, "/faults/0/link", "racks 0 to 1");
  fault["faults"][0]["link"] = "rack1/uplink";
  EXPECT_NO_THROW(parse_scenario(fault, "s.json"));
}

TEST(Topology, AFaultOnAnUplinkIsThatLinksFault) {
  nlohmann::json doc = racks(4, 2, {{"oversubscription", 3}});
  doc["faults"] = {{{"kind", "link"}, {"link", "rack1/uplink"}, {"from", "1 s"}, {"factor", 0.5}},
                   {{"kind", "link"}, {"link", "switch"}, {"from", "1 s"}, {"factor", 0.5}}};
  const Plan plan = compile_plan(parse_scenario(doc, "s.json"), "between_graph", {});
  ASSERT_EQ(plan.faults.size(), 2u);
  EXPECT_EQ(plan.faults[0].link, plan.platform.racks[1].uplink);
  EXPECT_EQ(plan.faults[0].description, "rack1/uplink at 0.5x");
  EXPECT_EQ(plan.faults[1].link, plan.platform.switch_link);
  EXPECT_EQ(plan.faults[1].description, "core at 0.5x");  // "switch" with racks is the core
}

}  // namespace
}  // namespace replisim::core
