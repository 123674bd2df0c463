// Cluster templates ("count", device patterns, PS templates) and scenario includes.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/scenario/scenario.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

nlohmann::json templated(const nlohmann::json& replicas, const nlohmann::json& ps) {
  nlohmann::json worker = test::machine("w", "1 TFLOPS", {"10 TFLOPS", "10 TFLOPS"}, "25 Gbps");
  worker["count"] = 64;
  return test::scenario_json({worker, test::machine("c", "2 TFLOPS", {}, "100 Gbps")},
                             test::one_layer_model(1e6, "1 GFLOP"),
                             {{"replicas", replicas}, {"ps", ps}, {"client", "c"}});
}

TEST(Glob, Matches) {
  EXPECT_TRUE(glob_match("w*/gpu*", "w12/gpu1"));
  EXPECT_TRUE(glob_match("conv*", "conv2_1/3x3"));
  EXPECT_TRUE(glob_match("w?/cpu", "w7/cpu"));
  EXPECT_FALSE(glob_match("w?/cpu", "w17/cpu"));
  EXPECT_FALSE(glob_match("fc*", "conv1"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "a-x-b-y-c"));
  EXPECT_FALSE(glob_match("a*b*c", "a-x-b-y-d"));
}

TEST(Templates, MachineCountAndDevicePatterns) {
  const Scenario s = parse_scenario(templated("w*/gpu*", {"c/cpu"}), "s.json");
  ASSERT_EQ(s.cluster.machines.size(), 65u);
  EXPECT_EQ(s.cluster.machines[0].name, "w0");
  EXPECT_EQ(s.cluster.machines[63].name, "w63");
  EXPECT_EQ(s.cluster.machines[63].gpus.size(), 2u);
  ASSERT_EQ(s.training.replicas.size(), 128u);
  EXPECT_EQ(s.training.replicas[0].str(), "w0/gpu0");
  EXPECT_EQ(s.training.replicas[1].str(), "w0/gpu1");
  EXPECT_EQ(s.training.replicas[127].str(), "w63/gpu1");
  // Lists mix patterns and devices.
  const Scenario t = parse_scenario(templated({"w1?/gpu0", "w2/gpu1"}, {"c/cpu"}), "s.json");
  EXPECT_EQ(t.training.replicas.size(), 11u);  // w10..w19 gpu0, then w2/gpu1
}

TEST(Templates, PatternErrorsNameThePattern) {
  test::expect_scenario_error(templated({"w*/gpu0", "x*/gpu*"}, {"c/cpu"}), "/training/replicas/1",
                              "pattern \"x*/gpu*\" matched no device");
  test::expect_scenario_error(templated({"w*/gpu0", "w3/gpu0"}, {"c/cpu"}), "/training/replicas/1",
                              "duplicate replica \"w3/gpu0\"");
  nlohmann::json doc = templated("w*/gpu*", {"c/cpu"});
  doc["cluster"]["machines"][0]["count"] = 0;
  test::expect_scenario_error(doc, "/cluster/machines/0/count", "integer");
  doc = templated("w*/gpu*", {"c/cpu"});
  doc["cluster"]["machines"][1]["name"] = "w5";  // collides with an expanded name
  test::expect_scenario_error(doc, "/cluster/machines/1/name", "duplicate machine name \"w5\"");
}

TEST(Templates, MultiTowerWorkers) {
  // One worker with a tower on each GPU of w0; then one worker per machine for w1..w63; then
  // w0's... no: every device at most once.
  const Scenario s = parse_scenario(
      templated({{{"towers", "w0/gpu*"}}, {{"towers", "w1?/gpu*"}, {"per", "machine"}}, "w2/gpu0"},
                {"c/cpu"}),
      "s.json");
  ASSERT_EQ(s.training.workers.size(), 1u + 10u + 1u);  // w0; w10..w19; w2/gpu0
  EXPECT_EQ(s.training.replicas.size(), 2u + 20u + 1u);
  EXPECT_EQ(s.training.workers[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(s.training.replicas[size_t(s.training.workers[1][1])].str(), "w10/gpu1");
  EXPECT_EQ(s.training.workers[11].size(), 1u);
  // data_steps_per_worker and sync count workers, not towers.
  nlohmann::json doc = templated({{{"towers", "w0/gpu*"}}, "w1/gpu0"}, {"c/cpu"});
  doc["training"]["data_steps_per_worker"] = {10, 20};
  EXPECT_EQ(parse_scenario(doc, "s.json").training.data_steps_per_worker.size(), 2u);
  doc["training"]["data_steps_per_worker"] = {10, 20, 30};
  test::expect_scenario_error(doc, "/training/data_steps_per_worker", "one entry per worker (2)");
  test::expect_scenario_error(templated({{{"towers", "w0/gpu*"}, {"per", "gpu"}}}, {"c/cpu"}),
                              "/training/replicas/0/per", "\"machine\"");
  test::expect_scenario_error(templated({{{"towers", "w0/gpu*"}}, "w0/gpu1"}, {"c/cpu"}),
                              "/training/replicas/1", "duplicate replica \"w0/gpu1\"");
  test::expect_scenario_error(templated({{{"towers", "x*/gpu*"}}}, {"c/cpu"}),
                              "/training/replicas/0/towers", "matched no device");
  test::expect_scenario_error(templated({{{"tower", "w0/gpu*"}}}, {"c/cpu"}),
                              "/training/replicas/0/tower", "unknown field");
}

TEST(Templates, DedicatedParameterServers) {
  const Scenario s =
      parse_scenario(templated("w*/gpu*", {{"count", 8}, {"on", "dedicated"}}), "s.json");
  ASSERT_EQ(s.training.ps.size(), 8u);
  EXPECT_EQ(s.training.ps[7].str(), "ps7/cpu");
  const MachineSpec* ps = s.cluster.find_machine("ps3");
  ASSERT_NE(ps, nullptr);
  // Default spec: the first replica's machine without its GPUs.
  EXPECT_TRUE(ps->gpus.empty());
  EXPECT_DOUBLE_EQ(ps->cpu_speed_flop_per_s, 1e12);
  EXPECT_DOUBLE_EQ(ps->nic.bandwidth_bytes_per_s, 25e9 / 8);
  // A given spec and name prefix.
  const Scenario g = parse_scenario(
      templated("w*/gpu*", {{"count", 2},
                            {"on", "dedicated"},
                            {"name", "param"},
                            {"machine",
                             {{"cpu", {{"speed", "3 TFLOPS"}}},
                              {"nic", {{"bandwidth", "100 Gbps"}, {"latency", "5 us"}}}}}}),
      "s.json");
  EXPECT_DOUBLE_EQ(g.cluster.find_machine("param1")->nic.bandwidth_bytes_per_s, 12.5e9);
  test::expect_scenario_error(
      templated("w*/gpu*", {{"count", 2}, {"on", "dedicated"}, {"name", "w"}}), "/training/ps/name",
      "duplicate machine name \"w0\"");
  test::expect_scenario_error(templated("w*/gpu*", {{"count", 2}, {"on", "cloud"}}),
                              "/training/ps/on", "dedicated");
}

TEST(Templates, ParameterServersOnWorkers) {
  const Scenario s = parse_scenario(
      templated({"w0/gpu0", "w0/gpu1", "w1/gpu0", "w2/gpu0"}, {{"count", 4}, {"on", "workers"}}),
      "s.json");
  ASSERT_EQ(s.training.ps.size(), 4u);
  EXPECT_EQ(s.training.ps[0].str(), "w0/cpu");
  EXPECT_EQ(s.training.ps[1].str(), "w1/cpu");
  EXPECT_EQ(s.training.ps[2].str(), "w2/cpu");
  EXPECT_EQ(s.training.ps[3].str(), "w0/cpu");  // wraps over the worker machines
}

TEST(Includes, MergeBeforeOwnFieldsAndNameTheirFile) {
  test::TempDir dir;
  nlohmann::json platform = templated("w*/gpu*", {"c/cpu"});
  platform.erase("training");
  platform.erase("model");
  platform["cluster"]["network_model"] = "lv08";
  dir.write("platform.json", platform.dump());
  const std::string top =
      dir.write("top.json",
                nlohmann::json({{"include", {"platform.json"}},
                                {"name", "uses-include"},
                                {"cluster", {{"network_model", "ideal"}}},
                                {"model", test::one_layer_model(1e6, "1 GFLOP")},
                                {"training", {{"batch_per_replica", 8}, {"replicas", "w1/gpu*"}}}})
                    .dump());
  const Scenario s = load_scenario(top);
  EXPECT_EQ(s.cluster.machines.size(), 65u);                 // from platform.json
  EXPECT_EQ(s.cluster.network_model, NetworkModel::kIdeal);  // overridden by top.json
  EXPECT_EQ(s.training.replicas.size(), 2u);
  // An error in an included part names the file it came from.
  platform["cluster"]["machines"][1]["nic"]["bandwidth"] = "fast";
  const std::string bad_platform = dir.write("platform.json", platform.dump());
  try {
    load_scenario(top);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad_platform) << e.what();
    EXPECT_EQ(e.json_path(), "/cluster/machines/1/nic/bandwidth");
  }
}

// Expects load_scenario(file) to fail in that file at `path` with a message containing `needle`.
void expect_load_error(const std::string& file, const std::string& path,
                       const std::string& needle) {
  try {
    load_scenario(file);
    ADD_FAILURE() << "expected an error at " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
  }
}

// RFC 7386: a null removes what an include set; an object merges into an object; an array
// replaces.
TEST(Includes, FollowJsonMergePatch) {
  test::TempDir dir;
  const nlohmann::json base = {
      {"name", "base"},
      {"cluster",
       {{"machines",
         {{{"name", "pc"},
           {"cpu", {{"speed", "1 TFLOPS"}}},
           {"gpus", {{{"speed", "10 TFLOPS"}}}},
           {"nic", {{"bandwidth", "10 Gbps"}, {"latency", "10 us"}}}}}},
        {"transport", {{"preset", "tf1_grpc"}}}}},
      {"model", test::one_layer_model(1e6, "1 GFLOP")},
      {"training", {{"batch_per_replica", 8}, {"replicas", "pc/gpu0"}, {"warmup_steps", 2}}}};
  dir.write("base.json", base.dump());
  const std::string top = dir.write(
      "top.json", nlohmann::json({{"include", "base.json"},
                                  {"cluster", {{"transport", nullptr}}},
                                  {"training", {{"warmup_steps", nullptr}, {"steps", 30}}}})
                      .dump());
  const Scenario s = load_scenario(top);
  const Scenario with = load_scenario(dir.file("base.json"));
  EXPECT_EQ(with.cluster.transport.preset, "tf1_grpc");
  EXPECT_EQ(s.cluster.transport.preset, "ideal");  // the null removed the inherited preset
  EXPECT_EQ(s.training.warmup_steps, 10);          // back to its default
  EXPECT_EQ(s.training.steps, 30);
  // A later include's null removes what an earlier one set.
  dir.write("no_warmup.json", R"({"training": {"warmup_steps": null}})");
  const std::string both = dir.write(
      "both.json", R"({"include": ["base.json", "no_warmup.json"], "training": {"steps": 30}})");
  EXPECT_EQ(load_scenario(both).training.warmup_steps, 10);
  // A null that removes nothing is a misspelt name, named with its file.
  expect_load_error(
      dir.write("typo.json", R"({"include": "base.json", "training": {"warmup_step": null}})"),
      "/training/warmup_step", "misspelt");
  // A required field removed is missing in the file that removed it.
  expect_load_error(
      dir.write("gone.json", R"({"include": "base.json", "training": {"replicas": null}})"),
      "/training/replicas", "required field missing");
}

// "gpus": {"count": N, ...} is N identical GPUs.
TEST(Templates, IdenticalGpusShorthand) {
  nlohmann::json doc = templated("w*/gpu*", {"c/cpu"});
  doc["cluster"]["machines"][0]["gpus"] = {
      {"count", 8}, {"speed", "15 TFLOPS"}, {"memory", "16 GiB"}};
  const Scenario s = parse_scenario(doc, "s.json");
  const MachineSpec* w = s.cluster.find_machine("w0");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->gpus.size(), 8u);
  EXPECT_DOUBLE_EQ(w->gpus[7].speed_flop_per_s, 15e12);
  EXPECT_DOUBLE_EQ(w->gpus[7].memory_bytes, 16.0 * (1 << 30));
  doc["cluster"]["machines"][0]["gpus"] = {{"count", 8}, {"speeds", "15 TFLOPS"}};
  test::expect_scenario_error(doc, "/cluster/machines/0/gpus/speeds", "speed");
  doc["cluster"]["machines"][0]["gpus"] = {{"count", -1}, {"speed", "15 TFLOPS"}};
  test::expect_scenario_error(doc, "/cluster/machines/0/gpus/count", "");
}

TEST(Includes, RepeatedIncludesAreBounded) {
  // Six tiny files including each other 20 times would mean 20^5 loads.
  test::TempDir dir;
  dir.write("x5.json", "{}");
  for (int i = 4; i >= 0; --i) {
    nlohmann::json include = nlohmann::json::array();
    for (int k = 0; k < 20; ++k) include.push_back("x" + std::to_string(i + 1) + ".json");
    dir.write("x" + std::to_string(i) + ".json", nlohmann::json({{"include", include}}).dump());
  }
  try {
    load_scenario_document(dir.file("x0.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("more than 256 files"), std::string::npos) << e.what();
  }
  dir.write("empty.json", R"({"include": [""]})");
  EXPECT_THROW(load_scenario_document(dir.file("empty.json")), InputError);
  dir.write("dir.json", R"({"include": ["."]})");
  try {
    load_scenario_document(dir.file("dir.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/include/0") << e.what();
  }
}

TEST(Includes, LaterErrorsNameTheFileTheFieldCameFrom) {
  test::TempDir dir;
  nlohmann::json base = templated("w*/gpu*", {"c/cpu"});
  base["training"]["placement"] = {{{"layers", "nothing*"}, {"device", "w0/gpu0"}}};
  const std::string tp =
      dir.write("tp.json", nlohmann::json({{"training", base["training"]}}).dump());
  base.erase("training");
  dir.write("base.json", base.dump());
  const std::string top = dir.write("top.json", R"({"include": ["base.json", "tp.json"]})");
  try {
    load_scenario(top);  // placement is checked while parsing, for either strategy
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), tp) << e.what();
    EXPECT_EQ(e.json_path(), "/training/placement");
  }
}

TEST(Includes, MissingFilesAndCyclesAreErrors) {
  test::TempDir dir;
  const std::string a = dir.write("a.json", R"({"include": ["b.json"], "name": "a"})");
  dir.write("b.json", R"({"include": "a.json"})");
  try {
    load_scenario(a);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("include cycle"), std::string::npos) << e.what();
    EXPECT_EQ(e.json_path(), "/include");
  }
  const std::string c = dir.write("c.json", R"({"include": ["nope.json"]})");
  try {
    load_scenario(c);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), c);
    EXPECT_EQ(e.json_path(), "/include/0");
    EXPECT_NE(e.message().find("not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replisim::core
