// Several NICs per machine (issue 41, "Networks as they are bought"): nic.count makes NIC links
// "<machine>/nic", "<machine>/nic1", ...; each connection between two machines takes one NIC of
// each end (core::Platform::nic_toward); the platform's file form, link faults, the switch's and
// uplinks' defaults, and shaped real runs' refusal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/pipeline/run_pipeline.h"
#include "core/plan/plan_text.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// Workers w0..w3 (a 10 TFLOPS GPU, a 10 Gbit/s NIC each), then machine "ps" with `ps_nics`
// 10 Gbit/s NICs, one PS on its CPU.
nlohmann::json ps_with_nics(int ps_nics) {
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < 4; ++i) {
    machines.push_back(
        test::machine("w" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
  }
  nlohmann::json ps = test::machine("ps", "1 TFLOPS", {}, "10 Gbps");
  ps["nic"]["count"] = ps_nics;
  machines.push_back(ps);
  nlohmann::json doc = test::scenario_json(machines, test::one_layer_model(1e6, "1 kFLOP"),
                                           {{"replicas", "w*/gpu0"}, {"ps", {"ps/cpu"}}});
  doc["cluster"].erase("switch");  // the default: non-blocking
  return doc;
}

std::vector<std::string> link_names(const Platform& p, const std::vector<int>& links) {
  std::vector<std::string> names;
  for (int l : links) names.push_back(p.links[size_t(l)].name);
  return names;
}

TEST(Nics, CountMakesNamedLinksAndOneIsTheDefault) {
  const Scenario s = test::parse(ps_with_nics(3));
  EXPECT_EQ(s.cluster.find_machine("ps")->nic_count, 3);
  EXPECT_EQ(s.cluster.find_machine("ps")->nic_count_json_path, "/cluster/machines/4/nic/count");
  EXPECT_EQ(s.cluster.find_machine("w0")->nic_count, 1);
  const Platform p = build_platform(s.cluster);
  EXPECT_EQ(link_names(p, p.machines[4].nic_links),
            (std::vector<std::string>{"ps/nic", "ps/nic1", "ps/nic2"}));
  EXPECT_EQ(link_names(p, p.machines[0].nic_links), std::vector<std::string>{"w0/nic"});
  for (int l : p.machines[4].nic_links) {
    EXPECT_DOUBLE_EQ(p.links[size_t(l)].bandwidth_bytes_per_s, 10e9 / 8);
    EXPECT_DOUBLE_EQ(p.links[size_t(l)].latency_s, 10e-6);
    EXPECT_TRUE(p.links[size_t(l)].split_duplex);
  }
  EXPECT_EQ(p.nic_links().size(), 4u + 3u);
  // The default switch is non-blocking over every NIC: 2 x (4 + 3) x 10 Gbit/s.
  EXPECT_DOUBLE_EQ(p.links[size_t(p.switch_link)].bandwidth_bytes_per_s, 2 * 7 * 10e9 / 8);
  EXPECT_FALSE(p.switch_can_bind(p.switch_link));
  // machine_defaults give it too; a machine's own count wins.
  nlohmann::json doc = ps_with_nics(1);
  doc["cluster"]["machine_defaults"] = {{"nic", {{"count", 2}}}};
  doc["cluster"]["machines"][4]["nic"].erase("count");
  doc["cluster"]["machines"][0]["nic"]["count"] = 4;
  const Scenario d = test::parse(doc);
  EXPECT_EQ(d.cluster.find_machine("w0")->nic_count, 4);
  EXPECT_EQ(d.cluster.find_machine("w1")->nic_count, 2);
  EXPECT_EQ(d.cluster.find_machine("w1")->nic_count_json_path,
            "/cluster/machine_defaults/nic/count");
}

TEST(Nics, BadCountsNameTheirPath) {
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(17), nlohmann::json(1.5),
                                    nlohmann::json("2"), nlohmann::json(-1)}) {
    nlohmann::json doc = ps_with_nics(1);
    doc["cluster"]["machines"][4]["nic"]["count"] = bad;
    test::expect_scenario_error(doc, "/cluster/machines/4/nic/count", "expected an integer");
  }
  nlohmann::json doc = ps_with_nics(1);
  doc["cluster"]["machines"][4]["nic"]["count"] = 17;
  test::expect_scenario_error(doc, "/cluster/machines/4/nic/count", "[1, 16], got number 17");
  // A default is checked even where no machine takes it.
  doc = ps_with_nics(2);
  doc["cluster"]["machine_defaults"] = {{"nic", {{"count", 0}}}};
  test::expect_scenario_error(doc, "/cluster/machine_defaults/nic/count", "[1, 16]");
  doc = ps_with_nics(2);
  doc["cluster"]["machines"][4]["nic"]["nics"] = 2;
  test::expect_scenario_error(doc, "/cluster/machines/4/nic/nics", "");
  // A dedicated PS's own machine takes a count too, checked the same way.
  doc = ps_with_nics(1);
  doc["training"]["ps"] = {
      {"count", 1},
      {"on", "dedicated"},
      {"machine",
       {{"cpu", {{"speed", "1 TFLOPS"}}},
        {"nic", {{"bandwidth", "25 Gbps"}, {"latency", "10 us"}, {"count", 20}}}}}};
  test::expect_scenario_error(doc, "/training/ps/machine/nic/count", "[1, 16]");
  doc["training"]["ps"]["machine"]["nic"]["count"] = 2;
  EXPECT_EQ(test::parse(doc).cluster.find_machine("ps0")->nic_count, 2);
}

// Machine m's NIC toward peer p: p's position among the other machines modulo m's NICs. The PS
// (machine 4, 2 NICs) serves w0 and w2 through "ps/nic", w1 and w3 through "ps/nic1"; each worker
// has one NIC. Every route between the PS and a worker crosses exactly that pair of NICs.
TEST(Nics, EachPeerTakesOneNicOfEachEnd) {
  const Platform p = build_platform(test::parse(ps_with_nics(2)).cluster);
  const std::vector<int>& ps_nics = p.machines[4].nic_links;
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(p.nic_index_toward(4, w), w % 2) << "w" << w;
    EXPECT_EQ(p.nic_toward(4, w), ps_nics[size_t(w % 2)]) << "w" << w;
    EXPECT_EQ(p.nic_index_toward(w, 4), 0);
    const int ps = p.find_device("ps/cpu");
    const int gpu = p.find_device("w" + std::to_string(w) + "/gpu0");
    const std::vector<Hop> pull = p.route(ps, gpu);
    ASSERT_GE(pull.size(), 3u);
    EXPECT_EQ(pull.front().link, ps_nics[size_t(w % 2)]);
    EXPECT_EQ(pull.front().direction, LinkDirection::kUp);
    const std::vector<Hop> push = p.route(gpu, ps);
    EXPECT_EQ(push.back().link, ps_nics[size_t(w % 2)]);
    EXPECT_EQ(push.back().direction, LinkDirection::kDown);
    EXPECT_EQ(p.channel_name(p.channel_of(push.back())),
              w % 2 == 0 ? "ps/nic/down" : "ps/nic1/down");
    // Inside a machine no NIC is crossed.
    EXPECT_TRUE(p.route(p.find_device("w" + std::to_string(w) + "/cpu"), gpu).size() == 1u);
  }
  // The position skips the machine itself: machine 1 of 3 NICs reaches 0, 2, 3, 4 through NICs
  // 0, 1, 2, 0.
  nlohmann::json doc = ps_with_nics(1);
  doc["cluster"]["machines"][1]["nic"]["count"] = 3;
  const Platform q = build_platform(test::parse(doc).cluster);
  std::vector<int> chosen;
  for (int peer : {0, 2, 3, 4}) chosen.push_back(q.nic_index_toward(1, peer));
  EXPECT_EQ(chosen, (std::vector<int>{0, 1, 2, 0}));
}

// A platform file (a trace's, a plan's) writes one NIC as before ("nic_link") and several as
// "nic_links"; both read back.
TEST(Nics, PlatformFilesKeepTheOneNicFormAndReadSeveral) {
  const Platform p = build_platform(test::parse(ps_with_nics(2)).cluster);
  const nlohmann::json j = platform_to_json(p);
  EXPECT_EQ(j["machines"][0]["nic_link"], p.machines[0].nic_links.front());
  EXPECT_FALSE(j["machines"][0].contains("nic_links"));
  EXPECT_EQ(j["machines"][4]["nic_links"], nlohmann::json(p.machines[4].nic_links));
  EXPECT_FALSE(j["machines"][4].contains("nic_link"));
  const Platform back = platform_from_json(j, "t.json", "/meta/platform");
  for (size_t m = 0; m < p.machines.size(); ++m) {
    EXPECT_EQ(back.machines[m].nic_links, p.machines[m].nic_links) << m;
  }
  EXPECT_EQ(platform_to_json(back), j);
  const auto error_of = [](const nlohmann::json& bad) -> std::string {
    try {
      platform_from_json(bad, "t.json", "/meta/platform");
    } catch (const InputError& e) {
      return e.json_path() + ": " + e.message();
    }
    return "accepted";
  };
  nlohmann::json both = j;
  both["machines"][4]["nic_link"] = p.machines[4].nic_links.front();
  EXPECT_NE(error_of(both).find("/meta/platform/machines/4: give \"nic_link\""), std::string::npos)
      << error_of(both);
  nlohmann::json shared = j;
  shared["machines"][4]["nic_links"][1] = p.machines[0].nic_links.front();
  EXPECT_NE(error_of(shared).find("/machines/4/nic_links/1: link"), std::string::npos)
      << error_of(shared);
  // A NIC of several that is also a device's PCIe link.
  int pcie = -1;
  for (const PlatformDevice& d : p.devices) pcie = d.pcie_link >= 0 ? d.pcie_link : pcie;
  ASSERT_GE(pcie, 0);
  nlohmann::json on_pcie = j;
  on_pcie["machines"][4]["nic_links"][1] = pcie;
  EXPECT_NE(
      error_of(on_pcie).find("pcie_link: link " + std::to_string(pcie) + " is already ps's NIC"),
      std::string::npos)
      << error_of(on_pcie);
  nlohmann::json the_switch = j;
  the_switch["machines"][4]["nic_links"][1] = p.switch_link;
  EXPECT_NE(error_of(the_switch).find("not a split link"), std::string::npos)
      << error_of(the_switch);
}

// `replisim plan` lists the machines of several NICs after the platform line (none: no line), and
// a plan file keeps them.
TEST(Nics, ThePlanTextAndFileKeepTheNics) {
  const Plan plan = compile_plan(test::parse(ps_with_nics(2)), "between_graph", {});
  const std::string text = format_plan(plan);
  EXPECT_NE(text.find("\nnics: ps 2 x 10 Gbit/s; the others one each (a connection between two "
                      "machines takes one NIC of each end)\n"),
            std::string::npos)
      << text;
  const Plan back = plan_from_json(plan_to_json(plan), "plan.json");
  EXPECT_EQ(back.platform.machines[4].nic_links, plan.platform.machines[4].nic_links);
  EXPECT_EQ(format_plan(back), text);
  const std::string one =
      format_plan(compile_plan(test::parse(ps_with_nics(1)), "between_graph", {}));
  EXPECT_EQ(one.find("nics:"), std::string::npos) << one;
}

TEST(Nics, LinkFaultsNameEachNic) {
  nlohmann::json doc = ps_with_nics(2);
  doc["faults"] = {
      {{"kind", "link"}, {"link", "ps/nic1"}, {"from", "1 s"}, {"until", "2 s"}, {"factor", 0.5}},
      {{"kind", "link"}, {"link", "ps/nic"}, {"from", "1 s"}, {"until", "2 s"}, {"factor", 0.5}}};
  const Plan plan = compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_EQ(plan.faults.size(), 2u);
  EXPECT_EQ(plan.faults[0].link, plan.platform.machines[4].nic_links[1]);
  EXPECT_EQ(plan.faults[1].link, plan.platform.machines[4].nic_links[0]);
  doc["faults"][0]["link"] = "ps/nic2";
  test::expect_scenario_error(doc, "/faults/0/link",
                              "machine \"ps\" has 2 NICs, \"ps/nic\" to \"ps/nic1\" (nic.count)");
  doc["faults"][0]["link"] = "w0/nic1";
  test::expect_scenario_error(doc, "/faults/0/link", "machine \"w0\" has one NIC, \"w0/nic\"");
  for (const char* bad : {"ps/nic01", "ps/nic0", "ps/nicx", "ps/nic-1", "nobody/nic1"}) {
    doc["faults"][0]["link"] = bad;
    test::expect_scenario_error(doc, "/faults/0/link", "expected a machine's NIC");
  }
}

// With racks, an uplink derived from its oversubscription counts every NIC of its rack.
TEST(Nics, ARacksUplinkCountsEveryNic) {
  nlohmann::json doc = ps_with_nics(2);
  doc["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 5}, {"oversubscription", 3}};
  const Platform p = build_platform(test::parse(doc).cluster);
  ASSERT_EQ(p.racks.size(), 1u);
  EXPECT_DOUBLE_EQ(p.links[size_t(p.racks[0].uplink)].bandwidth_bytes_per_s, 6 * 10e9 / 8 / 3);
  EXPECT_FALSE(p.switch_can_bind(p.racks[0].tor_link));
}

// Shaped real runs (--isolate netns) give each machine one shaped veth: several NICs are refused
// there in one line naming nic.count; a simulation or a loopback run is not concerned.
TEST(Nics, ShapedRealRunsRefuseSeveralNics) {
  const LoadedScenario loaded{parse_scenario(ps_with_nics(2), "nics.json"), "", {}};
  const std::vector<Plan> plans = {compile_plan(loaded.scenario, "between_graph", {})};
  try {
    refuse_what_real_runs_cannot_do(loaded, true, plans);
    ADD_FAILURE() << "several NICs were shaped";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "nics.json");
    EXPECT_EQ(e.json_path(), "/cluster/machines/4/nic/count");
    EXPECT_NE(e.message().find("--isolate netns: several NICs per machine are not emulated yet"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(refuse_what_real_runs_cannot_do(loaded, false, plans));
  const LoadedScenario one{parse_scenario(ps_with_nics(1), "one.json"), "", {}};
  EXPECT_NO_THROW(refuse_what_real_runs_cannot_do(
      one, true, {compile_plan(one.scenario, "between_graph", {})}));
}

}  // namespace
}  // namespace replisim::core
