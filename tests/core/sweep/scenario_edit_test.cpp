// The scenario edits the viewer's knobs and the sweep's share (core/sweep/scenario_edit.h): the
// replicas as the parser counts them, templates resized by whole machines, lists by copies of
// the fastest machine, and the sweep's replicas knob writing what the edit writes.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "core/sweep/scenario_edit.h"
#include "core/sweep/sweep_knobs.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using core::ScenarioJson;

ScenarioJson merged(const std::string& file) {
  return ScenarioJson(core::load_scenario_document(file).json);
}

int parsed_workers(const ScenarioJson& doc) {
  return int(core::parse_scenario(nlohmann::json(doc), "s.json").training.workers.size());
}

std::string refusal(ScenarioJson doc, int count) {
  try {
    core::set_scenario_replica_count(doc, count, "s.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioEdit, ReplicasAreTheParsersWorkersInEveryBundledScenario) {
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::scenario_path(""))) {
    if (entry.path().extension() != ".json") continue;
    const std::string file = entry.path().string();
    ScenarioJson doc;
    try {
      doc = merged(file);
      parsed_workers(doc);
    } catch (const core::InputError&) {
      continue;  // a fragment for includes, or a scenario of another kind of file
    }
    EXPECT_EQ(core::scenario_replica_count(doc), parsed_workers(doc)) << file;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(ScenarioEdit, ATemplateOfFourGpuMachinesGrowsByWholeMachines) {
  ScenarioJson doc = merged(test::scenario_path("planning/resnet50_16gpu_10gbe.json"));
  ASSERT_EQ(core::scenario_replica_count(doc), 16);
  EXPECT_EQ(core::scenario_replica_step(doc), 4);
  core::set_scenario_replica_count(doc, 24, "s.json");
  EXPECT_EQ(doc["cluster"]["machines"][0]["count"], 6);
  EXPECT_EQ(parsed_workers(doc), 24);
  core::set_scenario_replica_count(doc, 4, "s.json");
  EXPECT_EQ(doc["cluster"]["machines"][0]["count"], 1);
  const std::string why = refusal(doc, 33);
  EXPECT_NE(why.find("s.json: /training/replicas: replicas=33: each machine of template "
                     "\"server\" holds 4 replica(s), so whole machines give 32 or 36"),
            std::string::npos)
      << why;
  EXPECT_NE(refusal(doc, 0).find("from 1 to"), std::string::npos);
}

TEST(ScenarioEdit, AListGrowsByCopiesOfTheFastestMachineAndShrinksFromItsEnd) {
  ScenarioJson doc = merged(test::seed_scenario());
  ASSERT_EQ(core::scenario_replica_count(doc), 2);
  EXPECT_EQ(core::scenario_replica_step(doc), 1);
  core::set_scenario_replica_count(doc, 4, "s.json");
  EXPECT_EQ(parsed_workers(doc), 4);
  EXPECT_EQ(doc["training"]["replicas"].back(), "pc4/gpu0");
  core::set_scenario_replica_count(doc, 1, "s.json");
  EXPECT_EQ(parsed_workers(doc), 1);
}

TEST(ScenarioEdit, ASyncObjectsTotalFollowsWithItsBackupsKept) {
  ScenarioJson doc = merged(test::scenario_path("planning/resnet50_16gpu_10gbe.json"));
  doc["training"]["sync"] = {{"replicas_to_aggregate", 15}, {"total_num_replicas", 16}};
  core::set_scenario_replica_count(doc, 8, "s.json");
  EXPECT_EQ(doc["training"]["sync"]["total_num_replicas"], 8);
  EXPECT_EQ(doc["training"]["sync"]["replicas_to_aggregate"], 7);
  EXPECT_NO_THROW(parsed_workers(doc));
}

TEST(ScenarioEdit, TheSweepsReplicasKnobWritesWhatTheEditWrites) {
  const ScenarioJson base = merged(test::scenario_path("planning/resnet50_16gpu_10gbe.json"));
  for (const std::string value : {"8", "x2", "+4"}) {
    nlohmann::json swept = nlohmann::json(base);
    core::KnobContext ctx{"s.json", nullptr, "between_graph"};
    core::find_sweep_knob("replicas").apply(swept, value, ctx);
    ScenarioJson edited = base;
    const int target = value == "8" ? 8 : value == "x2" ? 32 : 20;
    core::set_scenario_replica_count(edited, target, "s.json");
    EXPECT_EQ(swept, nlohmann::json(edited)) << value;
    EXPECT_EQ(parsed_workers(ScenarioJson(swept)), target) << value;
  }
  // machines= counts the template's machines, as replicas= did before.
  nlohmann::json swept = nlohmann::json(base);
  core::find_sweep_knob("machines").apply(swept, "8", {"s.json", nullptr, "between_graph"});
  EXPECT_EQ(swept["cluster"]["machines"][0]["count"], 8);
}

}  // namespace
}  // namespace replisim
