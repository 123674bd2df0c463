// cluster.topology "fat_tree" (issue 41): levels of switches above the racks parsed into the
// platform (racks, pods, their aggregation switches and uplinks from oversubscription ratios),
// its routes through each level, the platform's JSON, `plan`'s text, and every bad input named
// by its JSON path.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/hardware/platform.h"
#include "core/pipeline/run_pipeline.h"
#include "core/plan/plan_text.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// `machines` machines "m<i>" (10 Gbit/s NICs), workers on every GPU, a PS on m0, and
// cluster.topology {"kind": "fat_tree", "levels": `levels`}.
nlohmann::json fat_tree(int machines, const nlohmann::json& levels) {
  std::vector<nlohmann::json> list;
  for (int i = 0; i < machines; ++i) {
    list.push_back(test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(list, test::one_layer_model(1e6, "1 MFLOP"),
                                           {{"replicas", "m*/gpu0"}, {"ps", {"m0/cpu"}}});
  doc["cluster"].erase("switch");
  doc["cluster"]["topology"] = {{"kind", "fat_tree"}, {"levels", levels}};
  return doc;
}

// One level: {"down": down, "oversubscription": ratio}.
nlohmann::json level(int down, double ratio) {
  return {{"down", down}, {"oversubscription", ratio}};
}

// 2 machines per rack, 2 racks per pod (1:1), 2 pods per superpod (2:1 at level 1, 4:1 at 2).
const nlohmann::json kThreeLevels = nlohmann::json::array({level(2, 1), level(2, 2), level(2, 4)});

std::vector<std::string> route_names(const Platform& p, int a, int b) {
  std::vector<std::string> out;
  for (const Hop& hop : p.route(a, b)) out.push_back(p.channel_name(p.channel_of(hop)));
  return out;
}

TEST(FatTree, LevelsOfPodsWithUplinksFromTheirRatios) {
  // 16 machines: 8 racks, 4 pods, 2 superpods under the core.
  const Platform p = build_platform(parse_scenario(fat_tree(16, kThreeLevels), "s.json").cluster);
  ASSERT_EQ(p.racks.size(), 8u);
  ASSERT_EQ(p.pods.size(), 6u);
  EXPECT_EQ(p.pods[3].name, "pod3");
  EXPECT_EQ(p.pods[4].name, "superpod0");
  EXPECT_EQ(p.pods[5].level, 2);
  EXPECT_EQ(p.racks[5].parent, 2);  // rack5 in pod2
  EXPECT_EQ(p.pods[2].parent, 5);   // pod2 in superpod1
  EXPECT_EQ(p.pods[5].parent, -1);  // joins the core
  const double nic = 10e9 / 8;
  const auto bandwidth = [&p](int link) { return p.links[size_t(link)].bandwidth_bytes_per_s; };
  EXPECT_DOUBLE_EQ(bandwidth(p.racks[0].uplink), 2 * nic);
  EXPECT_DOUBLE_EQ(bandwidth(p.pods[0].uplink), 2 * 2 * nic / 2);
  EXPECT_DOUBLE_EQ(bandwidth(p.pods[4].uplink), 2 * 2 * nic / 4);
  EXPECT_EQ(p.links[size_t(p.pods[0].uplink)].name, "pod0/aggregation/uplink");
  EXPECT_EQ(p.links[size_t(p.pods[4].switch_link)].name, "superpod0/aggregation");
  // Default switches are non-blocking: twice their ports.
  EXPECT_DOUBLE_EQ(bandwidth(p.pods[0].switch_link), 2 * (4 * nic + 2 * nic));
  EXPECT_DOUBLE_EQ(bandwidth(p.switch_link), 2 * 2 * nic);
  EXPECT_FALSE(p.switch_can_bind(p.pods[0].switch_link));
  EXPECT_FALSE(p.switch_can_bind(p.switch_link));
  const int m0 = p.find_device("m0/gpu0"), m1 = p.find_device("m1/cpu"),
            m2 = p.find_device("m2/cpu"), m5 = p.find_device("m5/cpu"),
            m9 = p.find_device("m9/gpu0");
  EXPECT_EQ(route_names(p, m0, m1),
            (std::vector<std::string>{"m0/pcie/gpu0/up", "m0/nic/up", "rack0/tor", "m1/nic/down"}));
  EXPECT_EQ(
      route_names(p, m1, m2),
      (std::vector<std::string>{"m1/nic/up", "rack0/tor", "rack0/uplink/up", "pod0/aggregation",
                                "rack1/uplink/down", "rack1/tor", "m2/nic/down"}));
  EXPECT_EQ(
      route_names(p, m1, m5),
      (std::vector<std::string>{"m1/nic/up", "rack0/tor", "rack0/uplink/up", "pod0/aggregation",
                                "pod0/aggregation/uplink/up", "superpod0/aggregation",
                                "pod1/aggregation/uplink/down", "pod1/aggregation",
                                "rack2/uplink/down", "rack2/tor", "m5/nic/down"}));
  const std::vector<std::string> across = route_names(p, m1, m9);
  ASSERT_EQ(across.size(), 16u);
  EXPECT_EQ(across[5], "superpod0/aggregation");
  EXPECT_EQ(across[6], "superpod0/aggregation/uplink/up");
  EXPECT_EQ(across[7], "core");
  EXPECT_EQ(across[8], "superpod1/aggregation/uplink/down");
  EXPECT_EQ(across.back(), "m9/pcie/gpu0/down");
}

TEST(FatTree, OneLevelIsRacks) {
  nlohmann::json tree = fat_tree(6, nlohmann::json::array({level(3, 3)}));
  nlohmann::json racks = tree;
  racks["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 3}, {"oversubscription", 3}};
  const Platform a = build_platform(parse_scenario(tree, "s.json").cluster);
  const Platform b = build_platform(parse_scenario(racks, "s.json").cluster);
  EXPECT_TRUE(a.pods.empty());
  EXPECT_EQ(platform_to_json(a), platform_to_json(b));
}

TEST(FatTree, ThePlatformsJsonKeepsThePods) {
  const Platform p = build_platform(parse_scenario(fat_tree(16, kThreeLevels), "s.json").cluster);
  const nlohmann::json j = platform_to_json(p);
  const Platform read = platform_from_json(j, "t", "/platform");
  EXPECT_EQ(platform_to_json(read), j);
  const int a = read.find_device("m0/cpu"), b = read.find_device("m15/cpu");
  EXPECT_EQ(route_names(read, a, b), route_names(p, a, b));
  const auto error_path = [](const nlohmann::json& platform) {
    try {
      platform_from_json(platform, "t", "/platform");
    } catch (const InputError& e) {
      return e.json_path() + ": " + e.what();
    }
    return std::string("(no error)");
  };
  nlohmann::json bad = j;
  bad["pods"][0]["parent"] = 1;  // a pod of the same level
  EXPECT_NE(error_path(bad).find("/platform/pods/0/parent: "), std::string::npos)
      << error_path(bad);
  bad = j;
  bad["pods"][1]["uplink"] = p.racks[0].uplink;
  EXPECT_NE(error_path(bad).find("is already rack0's uplink"), std::string::npos)
      << error_path(bad);
  bad = j;
  bad["racks"][0].erase("parent");
  EXPECT_NE(error_path(bad).find("/platform/racks/0/parent: "), std::string::npos)
      << error_path(bad);
}

TEST(FatTree, PlanPrintsTheTopology) {
  nlohmann::json doc = fat_tree(16, kThreeLevels);
  const std::string text =
      format_plan(compile_plan(parse_scenario(doc, "s.json"), "between_graph", {}));
  EXPECT_NE(text.find("topology: fat tree of 3 level(s), 8 rack(s), 6 pod(s), core switch"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  pod0 (level 1): 2 rack(s) (rack0, rack1), aggregation 120 Gbit/s "
                      "(non-blocking), uplink 20 Gbit/s (2:1 oversubscribed)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  superpod1 (level 2): 2 pod(s) (pod2, pod3), aggregation"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(4:1 oversubscribed)"), std::string::npos) << text;
}

TEST(FatTree, AFaultOnAnAggregationUplinkIsThatLinksFault) {
  nlohmann::json doc = fat_tree(16, kThreeLevels);
  doc["faults"] = {
      {{"kind", "link"}, {"link", "pod1/aggregation/uplink"}, {"from", "1 s"}, {"factor", 0.5}}};
  const Plan plan = compile_plan(parse_scenario(doc, "s.json"), "between_graph", {});
  ASSERT_EQ(plan.faults.size(), 1u);
  EXPECT_EQ(plan.faults[0].link, plan.platform.pods[1].uplink);
  doc["faults"][0]["link"] = "pod4/aggregation";
  test::expect_scenario_error(doc, "/faults/0/link", "pod<i>/aggregation");
}

// Shaped real runs (--isolate netns) build racks behind one core bridge: a fat tree's pods are
// refused there, and a simulation or an unshaped run is not concerned.
TEST(FatTree, ShapedRealRunsRefuseAFatTree) {
  const LoadedScenario loaded{parse_scenario(fat_tree(16, kThreeLevels), "tree.json"), "", {}};
  const std::vector<Plan> plans = {compile_plan(loaded.scenario, "between_graph", {})};
  try {
    refuse_what_real_runs_cannot_do(loaded, true, plans);
    ADD_FAILURE() << "a fat tree was shaped";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/cluster/topology");
    EXPECT_NE(std::string(e.what()).find("not a fat tree's pods"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(refuse_what_real_runs_cannot_do(loaded, false, plans));
}

TEST(FatTree, BadTreesNameTheirPath) {
  nlohmann::json doc = fat_tree(16, kThreeLevels);
  doc["cluster"]["topology"].erase("levels");
  test::expect_scenario_error(doc, "/cluster/topology/levels", "required field missing");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array()), "/cluster/topology/levels",
                              "expected 1 to 8 levels");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array({level(0, 1)})),
                              "/cluster/topology/levels/0/down", "");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array({level(2, 1), level(-1, 1)})),
                              "/cluster/topology/levels/1/down", "");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array({level(2, 1), level(2, 0)})),
                              "/cluster/topology/levels/1/oversubscription", "");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array({level(2, -3)})),
                              "/cluster/topology/levels/0/oversubscription", "");
  test::expect_scenario_error(fat_tree(16, nlohmann::json::array({{{"down", 2}}})),
                              "/cluster/topology/levels/0", "give either \"oversubscription\"");
  test::expect_scenario_error(fat_tree(15, kThreeLevels), "/cluster/topology/levels/0/down",
                              "15 machines are not a multiple of 2");
  test::expect_scenario_error(fat_tree(12, kThreeLevels), "/cluster/topology/levels/2/down",
                              "the 3 groups of level 1 are not a multiple of 2");
  test::expect_scenario_error(
      fat_tree(16, nlohmann::json::array({{{"down", 2}, {"oversubscription", 1}, {"spine", 2}}})),
      "/cluster/topology/levels/0/spine", "unknown field");
  // Both kinds' keys in one topology.
  doc = fat_tree(16, kThreeLevels);
  doc["cluster"]["topology"]["machines_per_rack"] = 2;
  test::expect_scenario_error(doc, "/cluster/topology/machines_per_rack", "is a key of \"racks\"");
  doc["cluster"]["topology"] = {{"kind", "racks"},
                                {"machines_per_rack", 2},
                                {"oversubscription", 1},
                                {"levels", kThreeLevels}};
  test::expect_scenario_error(doc, "/cluster/topology/levels", "is a key of \"fat_tree\"");
  doc["cluster"]["topology"] = {{"kind", "fat_trees"}};
  test::expect_scenario_error(doc, "/cluster/topology/kind", "valid: star, racks, fat_tree");
  // The one-line error names the file.
  try {
    parse_scenario(fat_tree(15, kThreeLevels), "tree.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    const std::string line = e.what();
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_NE(line.find("tree.json"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace replisim::core
