// The scenario edits the viewer's knobs and the sweep's share (core/sweep/scenario_edit.h): the
// replicas as the parser counts them, templates resized by whole machines, lists by copies of
// the fastest machine, and the sweep's replicas knob writing what the edit writes.
#include <filesystem>
#include <optional>

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

// A scenario of `machines` training on `replicas` (the seed's model and PS).
ScenarioJson with_replicas(const ScenarioJson& machines, const ScenarioJson& replicas) {
  ScenarioJson doc = merged(test::seed_scenario());
  doc["cluster"]["machines"] = machines;
  doc["training"]["replicas"] = replicas;
  doc["training"]["client"] = "m0";
  doc["training"]["ps"] = ScenarioJson::array({"m0/cpu"});
  return doc;
}

ScenarioJson machine(const std::string& name, int gpus, std::optional<double> count = {}) {
  ScenarioJson m = {{"name", name},
                    {"cpu", {{"speed", "50 GFLOPS"}}},
                    {"nic", {{"bandwidth", "10 Gbps"}, {"latency", "10 us"}}}};
  m["gpus"] = ScenarioJson::array();
  for (int g = 0; g < gpus; ++g) m["gpus"].push_back({{"speed", "10 TFLOPS"}});
  if (count) m["count"] = *count;
  return m;
}

// Replica lists of every shape the parser takes count as it counts them, and an edit either
// makes exactly the count asked (as the parser counts it) or is refused leaving the document
// as it was.
TEST(ScenarioEdit, EveryShapeOfListCountsAsTheParserAndAnEditIsExactOrNothing) {
  const ScenarioJson m0 = machine("m0", 0);
  const std::vector<ScenarioJson> docs = {
      // A device pattern on one named machine: 4 replicas, none of them copyable.
      with_replicas({m0, machine("w0", 4)}, "w0/gpu*"),
      with_replicas({m0, machine("w0", 4), machine("w1", 1)}, {"w0/gpu*", "w1/gpu0"}),
      // Towers listed per machine over a template: a worker per machine.
      with_replicas({m0, machine("w", 2, 3)},
                    {{{"towers", {"w*/gpu0", "w*/gpu1"}}, {"per", "machine"}}}),
      // A pattern over a template and a device of the same template.
      with_replicas({m0, machine("server", 2, 2)}, {"server*/gpu0", "server0/gpu1"}),
      // A count written 4.0, which the parser reads as 4.
      with_replicas({m0, machine("w", 4, 4.0)}, "w*/gpu*"),
      // A pattern that stops growing: w0..w9 only.
      with_replicas({m0, machine("w", 4, 12)}, "w?/gpu*"),
      // Named machines, one of them numbered 0.
      with_replicas({machine("m0", 1), machine("pc0", 1)}, {"m0/gpu0", "pc0/gpu0"}),
  };
  for (size_t d = 0; d < docs.size(); ++d) {
    const ScenarioJson& doc = docs[d];
    const int now = core::scenario_replica_count(doc);
    ASSERT_EQ(now, parsed_workers(doc)) << d << ": " << doc["training"]["replicas"];
    for (int count : {1, now - 1, now + 1, 2 * now, 44}) {
      if (count < 1) continue;
      ScenarioJson edited = doc;
      try {
        core::set_scenario_replica_count(edited, count, "s.json");
      } catch (const core::InputError& e) {
        EXPECT_EQ(edited, doc) << d << " " << count << ": refused, yet changed";
        EXPECT_EQ(std::string(e.what()).find("s.json: /"), 0u) << e.what();
        continue;
      }
      EXPECT_EQ(parsed_workers(edited), count) << d << ": " << edited["training"]["replicas"];
    }
  }
  // pc0's copy is pc1 (its GPU the fastest).
  ScenarioJson named = docs.back();
  named["cluster"]["machines"][1]["gpus"][0]["speed"] = "20 TFLOPS";
  core::set_scenario_replica_count(named, 3, "s.json");
  EXPECT_EQ(named["training"]["replicas"].back(), "pc1/gpu0");
  // Where whole machines cannot give the count, the message names distinct neighbours.
  const std::string why = refusal(docs[5], 44);
  EXPECT_NE(why.find("whole machines give 40 (the sweep's machines="), std::string::npos) << why;
  EXPECT_EQ(why.find("40 or 40"), std::string::npos) << why;
}

TEST(ScenarioEdit, ASyncObjectWithoutItsTotalKeepsNoBackups) {
  ScenarioJson doc = merged(test::seed_scenario());
  doc["training"]["sync"] = {{"replicas_to_aggregate", 2}};  // T = the 2 workers: no backups
  core::set_scenario_replica_count(doc, 4, "s.json");
  EXPECT_EQ(doc["training"]["sync"]["replicas_to_aggregate"], 4);
  doc["training"]["sync"] = {{"replicas_to_aggregate", 2.0}, {"total_num_replicas", 4}};
  core::set_scenario_replica_count(doc, 3, "s.json");
  EXPECT_EQ(doc["training"]["sync"]["replicas_to_aggregate"], 1);  // its 2 backups kept
  EXPECT_EQ(doc["training"]["sync"]["total_num_replicas"], 3);
}

TEST(ScenarioEdit, DocumentsItCannotReadAreRefusedInOneLineAtOnce) {
  // Two billion machines: counted as none (the parser refuses such a cluster), not expanded.
  const ScenarioJson huge =
      with_replicas({machine("m0", 0), machine("w", 4, 2147483647.0)}, "w*/gpu*");
  EXPECT_EQ(core::scenario_replica_count(huge), 0);
  EXPECT_NE(refusal(huge, 2).find("s.json: /training/replicas: the replicas match no device"),
            std::string::npos);
  ScenarioJson oops = merged(test::seed_scenario());
  oops["cluster"] = "oops";
  EXPECT_NE(refusal(oops, 3).find("s.json: /cluster/machines: the replicas' machines are not in "
                                  "this file"),
            std::string::npos);
  ScenarioJson included = merged(test::seed_scenario());
  included.erase("cluster");
  included["include"] = "cluster.json";
  const ScenarioJson before = included;
  EXPECT_NE(refusal(included, 3).find("/cluster/machines"), std::string::npos);
  EXPECT_EQ(included, before);
}

}  // namespace
}  // namespace replisim
