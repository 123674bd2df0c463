// Layer groups (granularity), model-parallel placement, optimizer state and per-device memory.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/layer_groups.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

Model ten_layers() {
  Model m;
  for (int i = 0; i < 10; ++i) {
    m.layers.push_back({"l" + std::to_string(i), 100.0 * (i + 1), 1e6, 1000, 0, {}});
  }
  return m;
}

TEST(LayerGroups, PerLayerByDefault) {
  const std::vector<LayerGroup> g = group_layers(ten_layers(), 0);
  ASSERT_EQ(g.size(), 10u);
  EXPECT_EQ(g[3].name, "l3");
  EXPECT_EQ(group_layers(ten_layers(), 50).size(), 10u);
}

TEST(LayerGroups, GroupsOfAboutEqualFlopKeepTotals) {
  const Model m = ten_layers();
  for (int n : {1, 2, 3, 5}) {
    const std::vector<LayerGroup> g = group_layers(m, n);
    EXPECT_EQ(g.size(), size_t(n)) << n;
    double flop = 0, params = 0;
    size_t layers = 0;
    for (const LayerGroup& group : g) {
      flop += group.forward_flop_per_sample;
      params += group.params;
      layers += group.layers.size();
    }
    EXPECT_DOUBLE_EQ(flop, m.forward_flop_per_sample());
    EXPECT_DOUBLE_EQ(params, m.total_params());
    EXPECT_EQ(layers, 10u);
  }
  const std::vector<LayerGroup> two = group_layers(m, 2);
  EXPECT_EQ(two[0].name, "l0..l4");
  EXPECT_EQ(two[1].name, "l5..l9");
  EXPECT_DOUBLE_EQ(two[0].stored_activation_bytes_per_sample, 5000);
}

TEST(LayerGroups, NeverSpanTwoDevices) {
  const std::vector<int> device = {0, 0, 0, 1, 1, 1, 1, 0, 0, 0};
  const std::vector<LayerGroup> g = group_layers(ten_layers(), 1, device);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[1].device, 1);
  EXPECT_EQ(g[1].layers.front(), 3);
}

nlohmann::json doc_with(const nlohmann::json& training_extra,
                        const std::string& memory = "16 GiB") {
  nlohmann::json pc1 = test::machine("pc1", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps");
  nlohmann::json pc2 = test::machine("pc2", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps");
  pc1["gpus"][0]["memory"] = memory;
  pc2["gpus"][0]["memory"] = memory;
  nlohmann::json training = {
      {"replicas", {"pc1/gpu0", "pc2/gpu0"}}, {"ps", {"pc1/cpu"}}, {"batch_per_replica", 8}};
  if (training_extra.is_object()) training.update(training_extra);  // {} is null in nlohmann
  nlohmann::json model = {{"layers",
                           {{{"name", "conv1"},
                             {"params", 1e6},
                             {"forward_flops_per_sample", "1 GFLOP"},
                             {"activation_bytes_per_sample", "1 MB"}},
                            {{"name", "conv2"},
                             {"params", 2e6},
                             {"forward_flops_per_sample", "1 GFLOP"},
                             {"activation_bytes_per_sample", "2 MB"}},
                            {{"name", "fc"},
                             {"params", 3e6},
                             {"forward_flops_per_sample", "6 MFLOP"},
                             {"activation_bytes_per_sample", "4 kB"}}}},
                          {"input_bytes_per_sample", "600 kB"}};
  return test::scenario_json({pc1, pc2}, model, training);
}

TEST(Granularity, GroupsOpsButKeepsPlacementAndBytes) {
  const Plan fine = compile_plan(test::parse(doc_with({})), "between_graph", {});
  const Plan coarse =
      compile_plan(test::parse(doc_with({{"granularity", 1}})), "between_graph", {});
  EXPECT_EQ(coarse.granularity, "1 group");
  EXPECT_LT(coarse.clients[0].ops.size(), fine.clients[0].ops.size());
  auto sent = [](const Plan& p) {
    double bytes = 0;
    for (const Op& op : p.clients[0].ops) bytes += op.kind == OpKind::kSend ? op.bytes : 0;
    return bytes;
  };
  EXPECT_DOUBLE_EQ(sent(coarse), sent(fine));  // same tensors, fewer messages
}

TEST(Memory, WeightsGradientsOptimizerAndActivations) {
  const Plan plan =
      compile_plan(test::parse(doc_with({{"optimizer", "adam"}})), "between_graph", {});
  const std::vector<MemoryCheck> checks = memory_checks(plan);
  ASSERT_EQ(checks.size(), 2u);  // the two GPUs (CPUs have no capacity given)
  const DeviceMemory& gpu = checks[0].need;
  EXPECT_DOUBLE_EQ(gpu.weights_bytes, 4 * 6e6);
  EXPECT_DOUBLE_EQ(gpu.gradients_bytes, 4 * 6e6);
  EXPECT_DOUBLE_EQ(gpu.optimizer_bytes, 0);  // optimizer slots live with the variables, on the PS
  EXPECT_DOUBLE_EQ(gpu.activations_bytes, 8 * (1e6 + 2e6 + 4e3 + 600e3));
  EXPECT_TRUE(checks[0].fits());
  // Adam keeps two slots per parameter next to each variable, on the PS (pc1/cpu).
  for (const DeviceMemory& m : plan.memory) {
    if (plan.platform.devices[size_t(m.device)].name == "pc1/cpu") {
      EXPECT_DOUBLE_EQ(m.optimizer_bytes, 2 * (4 * 6e6 + 8));
    }
  }
  const Plan tight = compile_plan(test::parse(doc_with({}, "40 MB")), "in_graph", {});
  EXPECT_FALSE(memory_checks(tight)[0].fits());
}

TEST(ModelParallel, StagesOnTheirDevices) {
  const nlohmann::json placement = {{{"layers", "conv*"}, {"device", "pc1/gpu0"}},
                                    {{"layers", "fc*"}, {"device", "pc2/gpu0"}}};
  const Plan plan = compile_plan(test::parse(doc_with({{"placement", placement}})), "in_graph", {});
  const int gpu1 = plan.platform.find_device("pc1/gpu0"),
            gpu2 = plan.platform.find_device("pc2/gpu0");
  int activations_across = 0;
  for (const Op& op : plan.clients[0].ops) {
    if (op.name == "forward/conv1" || op.name == "forward/conv2") {
      EXPECT_EQ(op.device, gpu1);
    }
    if (op.name == "forward/fc" || op.name == "backward/fc") {
      EXPECT_EQ(op.device, gpu2);
    }
    if (op.kind == OpKind::kSend && op.device == gpu1 &&
        plan.clients[0].ops[size_t(op.peer)].device == gpu2) {
      ++activations_across;
      EXPECT_DOUBLE_EQ(op.bytes, 8 * 2e6);  // conv2's output for the batch
    }
  }
  EXPECT_EQ(activations_across, 1);
  EXPECT_EQ(plan.clients[0].samples_per_step, 8);  // one model-parallel tower
  EXPECT_EQ(plan.roles[size_t(plan.role_index("stage1"))].device, gpu2);
  // Between-graph ignores it, and says so.
  const Plan between =
      compile_plan(test::parse(doc_with({{"placement", placement}})), "between_graph", {});
  ASSERT_EQ(between.notes.size(), 1u);
}

TEST(ModelParallel, RulesMustCoverEveryLayerAndMatchSomething) {
  const nlohmann::json partial = {{{"layers", "conv*"}, {"device", "pc1/gpu0"}}};
  try {
    compile_plan(test::parse(doc_with({{"placement", partial}})), "in_graph", {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("\"fc\" matches no placement rule"), std::string::npos) << e.what();
  }
  const nlohmann::json extra = {{{"layers", "*"}, {"device", "pc1/gpu0"}},
                                {{"layers", "fc*"}, {"device", "pc2/gpu0"}}};
  try {
    compile_plan(test::parse(doc_with({{"placement", extra}})), "in_graph", {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/training/placement/1/layers") << e.what();
  }
}

TEST(Optimizer, SetsApplyCostAndRejectsUnknown) {
  const Scenario s = test::parse(doc_with({{"optimizer", "momentum"}}));
  EXPECT_DOUBLE_EQ(s.training.costs.apply_flop_per_param, 4);
  EXPECT_EQ(s.training.optimizer.slots_per_param, 1);
  EXPECT_THROW(test::parse(doc_with({{"optimizer", "lamb"}})), InputError);
}

}  // namespace
}  // namespace replisim::core
