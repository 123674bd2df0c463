#include "core/plan/plan.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

nlohmann::json two_machine_doc() {
  nlohmann::json model = {{"layers",
                           {{{"name", "a"},
                             {"params", 1000},
                             {"forward_flops_per_sample", "1 MFLOP"},
                             {"activation_bytes_per_sample", "400 B"}},
                            {{"name", "b"},
                             {"params", 2000},
                             {"forward_flops_per_sample", "2 MFLOP"},
                             {"activation_bytes_per_sample", "40 B"}}}},
                          {"input_bytes_per_sample", "1 kB"}};
  return test::scenario_json(
      {test::machine("w", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps"),
       test::machine("p", "100 GFLOPS", {}, "10 Gbps")},
      model, {{"replicas", {"w/gpu0", "w/gpu1"}}, {"ps", {"p/cpu"}}, {"client", "w"}});
}

int count(const ClientGraph& g, OpKind kind) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind;
  return n;
}

TEST(Plan, BetweenGraphInsertsTransfersAtDeviceBoundaries) {
  const Plan plan = compile_plan(test::parse(two_machine_doc()), "between_graph", {});
  ASSERT_EQ(plan.clients.size(), 2u);
  const ClientGraph& g = plan.clients[0];
  // Pull of each layer variable, push of each gradient, the input batch CPU -> GPU.
  EXPECT_EQ(count(g, OpKind::kSend), 2 * 2 + 1);
  EXPECT_EQ(count(g, OpKind::kRecv), count(g, OpKind::kSend));
  EXPECT_EQ(count(g, OpKind::kApply), 2);
  EXPECT_TRUE(plan.roles[size_t(plan.clients[0].role)].chief);
  EXPECT_FALSE(plan.roles[size_t(plan.clients[1].role)].chief);
  for (const Op& op : g.ops) {
    for (int in : op.inputs) {
      const Op& producer = g.ops[size_t(in)];
      if (op.kind != OpKind::kRecv) {
        EXPECT_EQ(producer.device, op.device) << op.name;
      }
    }
    if (op.kind == OpKind::kSend) {
      const Op& recv = g.ops[size_t(op.peer)];
      EXPECT_EQ(recv.peer, &op - g.ops.data());
      // Between machines a send pays the per-message overhead; inside one it does not.
      const bool between = plan.platform.devices[size_t(op.device)].machine !=
                           plan.platform.devices[size_t(recv.device)].machine;
      EXPECT_EQ(op.overhead_s > 0, between) << op.name;
    }
    if (op.name == "send/read/a") {
      EXPECT_DOUBLE_EQ(op.bytes, 4000);  // 1000 fp32 parameters
    }
    if (op.name == "send/input") {
      EXPECT_DOUBLE_EQ(op.bytes, 32 * 1000.0);
    }
    if (op.name == "forward/b") {
      EXPECT_DOUBLE_EQ(op.compute_flop, 32 * 2e6);
    }
    if (op.name == "backward/b") {
      EXPECT_DOUBLE_EQ(op.compute_flop, 2 * 32 * 2e6);
    }
  }
}

TEST(Plan, InGraphRunsInputLossAndAggregationOnTheClient) {
  const Plan plan = compile_plan(test::parse(two_machine_doc()), "in_graph", {});
  ASSERT_EQ(plan.clients.size(), 1u);
  const ClientGraph& g = plan.clients[0];
  const int client_cpu = plan.platform.find_device("w/cpu");
  EXPECT_EQ(g.samples_per_step, 64);
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::kInput || op.kind == OpKind::kSplit || op.kind == OpKind::kLoss ||
        op.kind == OpKind::kAggregate) {
      EXPECT_EQ(op.device, client_cpu) << op.name;
    }
    if (op.kind == OpKind::kLoss) {
      // Gathers the logits of both towers.
      EXPECT_EQ(op.inputs.size(), 2u);
      for (int in : op.inputs) EXPECT_EQ(g.ops[size_t(in)].kind, OpKind::kRecv);
    }
    if (op.kind == OpKind::kAggregate) {
      EXPECT_EQ(op.inputs.size(), 2u) << op.name;
    }
  }
  EXPECT_EQ(count(g, OpKind::kForward), 4);  // 2 layers x 2 towers
  EXPECT_EQ(count(g, OpKind::kApply), 2);
  EXPECT_EQ(count(g, OpKind::kGlobalStepIncrement), 1);
}

TEST(Plan, JsonRoundTrip) {
  for (const std::string strategy : {"in_graph", "between_graph"}) {
    const Plan plan = compile_plan(test::parse(two_machine_doc()), strategy, {7});
    const nlohmann::json j = plan_to_json(plan);
    const Plan back = plan_from_json(j, "plan.json");
    EXPECT_EQ(plan_to_json(back), j);
    EXPECT_EQ(plan_hash(back), plan_hash(plan));
    EXPECT_EQ(back.seed, 7u);
  }
}

// An all-reduce plan read back from its file keeps each kAllReduce op's bytes (its gradient's):
// a real run's nodes reduce buffers of that size.
TEST(Plan, AllReduceOpsKeepTheirBytesThroughTheFile) {
  const Plan plan = compile_plan(test::parse(two_machine_doc()), "allreduce", {7});
  const nlohmann::json j = plan_to_json(plan);
  const Plan back = plan_from_json(j, "plan.json");
  EXPECT_EQ(plan_to_json(back), j);
  int reduces = 0;
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    for (size_t k = 0; k < plan.clients[c].ops.size(); ++k) {
      const Op& op = plan.clients[c].ops[k];
      if (op.kind != OpKind::kAllReduce) continue;
      ++reduces;
      EXPECT_GT(op.bytes, 0) << op.name;
      EXPECT_EQ(back.clients[c].ops[k].bytes, op.bytes) << op.name;
    }
  }
  EXPECT_GT(reduces, 0);
}

TEST(Plan, CheckpointsRecoveryAndJobFaultsRoundTrip) {
  nlohmann::json doc = two_machine_doc();
  doc["training"]["checkpoint"] = {{"every", "10 s"}, {"disk_bandwidth", "100 MBps"}};
  doc["training"]["summaries"] = {{"every_steps", 5}, {"bytes", "1 MB"}};
  doc["training"]["recovery"] = {{"detect_timeout", "2 s"}, {"restart_delay", "3 s"}};
  doc["faults"] = {
      {{"kind", "role"}, {"role", "ps0"}, {"at", "5 s"}},
      {{"kind", "role"}, {"role", "tower1"}, {"at", "6 s"}},
      {{"kind", "link"}, {"link", "p/nic"}, {"from", "1 s"}, {"until", "2 s"}, {"factor", 0}}};
  for (const std::string strategy : {"in_graph", "between_graph"}) {
    const Plan plan = compile_plan(test::parse(doc), strategy, {});
    double variable_bytes = 0;
    for (const Variable& v : plan.variables) variable_bytes += v.bytes;
    EXPECT_DOUBLE_EQ(plan.checkpoints.bytes, variable_bytes);  // sgd: no optimizer slots
    EXPECT_DOUBLE_EQ(plan.checkpoints.every_s, 10);
    EXPECT_EQ(plan.checkpoints.summary_every_steps, 5);
    EXPECT_DOUBLE_EQ(plan.checkpoints.summary_disk_bandwidth_bytes_per_s, 100e6);
    EXPECT_TRUE(plan.recovery.enabled);
    EXPECT_DOUBLE_EQ(plan.recovery.recovery_wait_s, 30);  // TF's recovery_wait_secs
    // ps0 fails the job in both; tower1 exists in in_graph only (noted in between_graph).
    ASSERT_EQ(plan.faults.size(), strategy == "in_graph" ? 3u : 2u) << strategy;
    EXPECT_EQ(plan.faults[0].kind, PlanFaultKind::kJob);
    EXPECT_EQ(plan.roles[size_t(plan.faults[0].roles.at(0))].name, "ps0");
    EXPECT_EQ(plan.faults.back().description, "p/nic cut");
    const nlohmann::json j = plan_to_json(plan);
    const Plan back = plan_from_json(j, "plan.json");
    EXPECT_EQ(plan_to_json(back), j);
  }
}

TEST(Plan, VariablesOnPutsTheInGraphVariablesOnADevice) {
  nlohmann::json doc = two_machine_doc();
  doc["training"].erase("ps");
  doc["training"]["variables_on"] = "w/gpu0";
  const Plan plan = compile_plan(test::parse(doc), "in_graph", {});
  ASSERT_EQ(plan.ps_roles.size(), 1u);
  EXPECT_EQ(plan.platform.devices[size_t(plan.roles[size_t(plan.ps_roles[0])].device)].name,
            "w/gpu0");
  doc["training"]["variables_on"] = "client";
  const Plan on_client = compile_plan(test::parse(doc), "in_graph", {});
  EXPECT_EQ(
      on_client.platform.devices[size_t(on_client.roles[size_t(on_client.ps_roles[0])].device)]
          .name,
      "w/cpu");
}

TEST(Plan, SyncReplicasRoundTripAndShape) {
  nlohmann::json doc = two_machine_doc();
  doc["training"]["sync"] = {{"replicas_to_aggregate", 1}};
  const Plan plan = compile_plan(test::parse(doc), "between_graph", {3});
  EXPECT_EQ(plan.sync, "sync");
  EXPECT_EQ(plan.sync_replicas.variant, "tf");
  EXPECT_EQ(plan.sync_replicas.initial_tokens, 1);   // R, as get_init_tokens_op
  EXPECT_EQ(plan.sync_replicas.tokens_per_step, 2);  // max(T, R)
  for (const ClientGraph& worker : plan.clients) {
    EXPECT_EQ(worker.global_step_op, -1);
    EXPECT_EQ(count(worker, OpKind::kApply), 0);
    EXPECT_EQ(count(worker, OpKind::kAccumulate), 2);  // one per layer
    EXPECT_EQ(count(worker, OpKind::kTokenDequeue), 1);
    EXPECT_EQ(worker.ops.back().kind, OpKind::kLocalStep);
  }
  const ClientGraph& chief = plan.sync_replicas.chief_graph;
  EXPECT_EQ(count(chief, OpKind::kTakeGradient), 2);
  EXPECT_EQ(count(chief, OpKind::kApply), 2);
  EXPECT_EQ(count(chief, OpKind::kTokenEnqueue), 1);
  EXPECT_EQ(chief.samples_per_step, 32);  // R x batch
  EXPECT_EQ(plan.roles[size_t(chief.role)].kind, RoleKind::kSyncQueueRunner);
  const nlohmann::json j = plan_to_json(plan);
  const Plan back = plan_from_json(j, "plan.json");
  EXPECT_EQ(plan_to_json(back), j);
  // A sync op in an async plan, and a sync plan without its settings, are rejected.
  nlohmann::json bad = j;
  bad["sync"] = "async";
  EXPECT_THROW(plan_from_json(bad, "p.json"), InputError);
  bad = j;
  bad.erase("sync_replicas");
  EXPECT_THROW(plan_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["sync_replicas"]["total_num_replicas"] = 5;
  try {
    plan_from_json(bad, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/sync_replicas/total_num_replicas") << e.what();
  }
}

TEST(Plan, EverySliceOfAGradientIsSentOnItsOwn) {
  // Four PS shards on one device and every layer cut into partitions: a tower's backward op
  // outputs one gradient per slice, and each must travel in full (not once per producer).
  nlohmann::json doc = two_machine_doc();
  doc["training"]["ps"] = {"p/cpu", "p/cpu", "p/cpu", "p/cpu"};
  doc["training"]["variable_placement"] = "partitioned";
  doc["training"]["partition_min_bytes"] = "0 B";
  double variable_bytes = 0;
  const Plan in_graph = compile_plan(test::parse(doc), "in_graph", {});
  for (size_t v = 1; v < in_graph.variables.size(); ++v)
    variable_bytes += in_graph.variables[v].bytes;
  for (const std::string strategy : {"in_graph", "between_graph"}) {
    const Plan plan = compile_plan(test::parse(doc), strategy, {});
    const ClientGraph& graph = plan.clients.front();
    const int tower = plan.platform.find_device("w/gpu0");
    double gradient_bytes = 0;
    for (const Op& op : graph.ops) {
      if (op.kind == OpKind::kSend && op.device == tower &&
          graph.ops[size_t(op.inputs[0])].kind == OpKind::kBackward &&
          graph.ops[size_t(op.peer)].device != tower) {
        gradient_bytes += op.bytes;
      }
    }
    // in_graph: to the client for the sum; between_graph: to the PS; both the whole model.
    EXPECT_NEAR(gradient_bytes, variable_bytes, 1e-6 * variable_bytes) << strategy;
  }
}

TEST(Plan, StaggerIsSeededAndChiefStartsFirst) {
  const Scenario s = test::parse(two_machine_doc());
  const Plan a = compile_plan(s, "between_graph", {1});
  const Plan b = compile_plan(s, "between_graph", {1});
  const Plan c = compile_plan(s, "between_graph", {2});
  EXPECT_EQ(a.clients[0].start_offset_s, 0);
  EXPECT_GT(a.clients[1].start_offset_s, 0);
  // "auto" stagger: within one estimated round of steps.
  EXPECT_EQ(s.training.jitter.startup_stagger_s, kAutoStagger);
  EXPECT_LE(a.clients[1].start_offset_s, estimated_round_time_s(a));
  EXPECT_EQ(a.clients[1].start_offset_s, b.clients[1].start_offset_s);
  EXPECT_NE(a.clients[1].start_offset_s, c.clients[1].start_offset_s);
}

// Each forward and backward op names its layer group's per-sample GEMMs: the forward list is the
// group's layers' products, the backward one each layer's input and weight gradients (twice the
// forward FLOP, the 2x rule the plan's backward FLOP follows), and they go through the plan's file.
TEST(Plan, ForwardAndBackwardOpsNameTheirLayersGemms) {
  nlohmann::json doc = two_machine_doc();
  doc["model"] = {{"preset", "mlp"}, {"widths", {784, 512, 10}}};
  doc["training"]["batch_per_replica"] = 32;
  const Plan plan = compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_EQ(plan.gemm_lists.size(), 4u);  // two layers, a forward and a backward list each
  int forward = 0, backward = 0;
  for (const ClientGraph& graph : plan.clients) {
    for (const Op& op : graph.ops) {
      if (op.kind != OpKind::kForward && op.kind != OpKind::kBackward) {
        EXPECT_EQ(op.gemms, -1) << op.name;
        continue;
      }
      ASSERT_GE(op.gemms, 0) << op.name;
      const std::vector<PlanGemm>& list = plan.gemm_lists[size_t(op.gemms)];
      double flop = 0;
      for (const PlanGemm& g : list) flop += g.flop();
      // Per sample: the op's FLOP over its tower's batch.
      EXPECT_DOUBLE_EQ(flop * plan.batch_per_replica, op.compute_flop) << op.name;
      (op.kind == OpKind::kForward ? forward : backward) += 1;
    }
  }
  EXPECT_GT(forward, 0);
  EXPECT_EQ(backward, forward);
  const std::vector<PlanGemm>& fc1 = plan.gemm_lists[0];
  ASSERT_EQ(fc1.size(), 1u);
  EXPECT_EQ(fc1[0].m, 1);
  EXPECT_EQ(fc1[0].n, 512);
  EXPECT_EQ(fc1[0].k, 784);
  const std::vector<PlanGemm>& fc1_back = plan.gemm_lists[1];
  ASSERT_EQ(fc1_back.size(), 2u);
  EXPECT_EQ(fc1_back[0].batch_dim, 'm');  // dX = dY W^T: 1 x 784 from 512
  EXPECT_EQ(fc1_back[0].n, 784);
  EXPECT_EQ(fc1_back[1].batch_dim, 'k');  // dW = X^T dY: 784 x 512, summed over the batch
  EXPECT_EQ(fc1_back[1].m, 784);
  EXPECT_EQ(fc1_back[1].k, 1);
  const nlohmann::json j = plan_to_json(plan);
  const Plan back = plan_from_json(j, "plan.json");
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_EQ(back.gemm_lists.size(), plan.gemm_lists.size());
  // A model given layer by layer (its layers' totals) has none.
  EXPECT_TRUE(compile_plan(test::parse(two_machine_doc()), "between_graph", {}).gemm_lists.empty());
}

TEST(Plan, BadGemmsAreRejectedWithAPath) {
  nlohmann::json doc = two_machine_doc();
  doc["model"] = {{"preset", "mlp"}, {"widths", {64, 10}}};
  const nlohmann::json good = plan_to_json(compile_plan(test::parse(doc), "between_graph", {}));
  const auto expect_path = [](const nlohmann::json& j, const std::string& path) {
    try {
      plan_from_json(j, "p.json");
      ADD_FAILURE() << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.json_path(), path) << e.what();
    }
  };
  nlohmann::json j = good;
  j["gemm_lists"][0][0]["n"] = 0;
  expect_path(j, "/gemm_lists/0/0/n");
  j = good;
  j["gemm_lists"][1][1]["batch_dim"] = "n";
  expect_path(j, "/gemm_lists/1/1/batch_dim");
  j = good;
  j["gemm_lists"][0][0]["m"] = 1e12;  // beyond a BLAS int
  expect_path(j, "/gemm_lists/0/0/m");
  for (size_t k = 0; k < j["clients"][0]["ops"].size(); ++k) {
    nlohmann::json& op = j["clients"][0]["ops"][k];
    if (op.contains("gemms")) {
      j = good;
      j["clients"][0]["ops"][k]["gemms"] = 2;  // two lists only
      expect_path(j, "/clients/0/ops/" + std::to_string(k) + "/gemms");
      break;
    }
  }
  j = good;
  j["gemm_lists"][0] = nlohmann::json::array();
  expect_path(j, "/gemm_lists/0");
  j = good;
  j.erase("gemm_lists");  // its ops still name lists
  for (size_t k = 0; k < j["clients"][0]["ops"].size(); ++k) {
    if (j["clients"][0]["ops"][k].contains("gemms")) {
      expect_path(j, "/clients/0/ops/" + std::to_string(k) + "/gemms");
      break;
    }
  }
  j = good;
  j["clients"][0]["ops"][0]["gemms"] = 0;  // not a forward or backward op
  ASSERT_NE(j["clients"][0]["ops"][0]["kind"], "forward");
  expect_path(j, "/clients/0/ops/0/gemms");
}

TEST(Plan, CorruptPlansAreRejectedWithAPath) {
  const Plan plan = compile_plan(test::parse(two_machine_doc()), "between_graph", {});
  nlohmann::json j = plan_to_json(plan);
  j["clients"][0]["ops"][3]["inputs"] = {5};  // a later op
  try {
    plan_from_json(j, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/clients/0/ops/3/inputs/0") << e.what();
  }
  j = plan_to_json(plan);
  for (auto& op : j["clients"][0]["ops"]) {
    if (op["kind"] == "send") {
      op["bytes"] = 1.0;  // no longer matches its recv
      break;
    }
  }
  EXPECT_THROW(plan_from_json(j, "p.json"), InputError);
  j = plan_to_json(plan);
  j["format_version"] = 99;
  EXPECT_THROW(plan_from_json(j, "p.json"), InputError);
  j = plan_to_json(plan);
  j["clients"][0]["ops"][0]["device"] = 999;
  EXPECT_THROW(plan_from_json(j, "p.json"), InputError);
  // A strategy's name as the registry spells names (a trace would record it): refused at once,
  // not at the run's end when its trace cannot be read back.
  for (const char* name : {"Between_Graph", "in graph", "", "x\ny"}) {
    j = plan_to_json(plan);
    j["strategy"] = name;
    try {
      plan_from_json(j, "p.json");
      FAIL() << name;
    } catch (const InputError& e) {
      EXPECT_EQ(e.json_path(), "/strategy") << e.what();
    }
  }
  j = plan_to_json(plan);
  j["strategy"] = "ring_allreduce";  // unknown here, but a name: the plan's other checks decide
  EXPECT_NO_THROW(plan_from_json(j, "p.json"));
}

TEST(Plan, RoutesFollowThePlatformLayout) {
  const Plan plan = compile_plan(test::parse(two_machine_doc()), "between_graph", {});
  const Platform& p = plan.platform;
  const int gpu = p.find_device("w/gpu0"), gpu1 = p.find_device("w/gpu1");
  const int cpu = p.find_device("w/cpu"), ps = p.find_device("p/cpu");
  auto names = [&](int a, int b) {
    std::string out;
    for (const Hop& h : p.route(a, b)) out += p.channel_name(p.channel_of(h)) + " ";
    return out;
  };
  EXPECT_EQ(names(gpu, ps), "w/pcie/gpu0/up w/nic/up switch p/nic/down ");
  EXPECT_EQ(names(ps, gpu), "p/nic/up switch w/nic/down w/pcie/gpu0/down ");
  EXPECT_EQ(names(gpu, cpu), "w/pcie/gpu0/up ");
  EXPECT_EQ(names(gpu, gpu1), "w/pcie/gpu0/up w/pcie/gpu1/down ");
  EXPECT_EQ(names(cpu, cpu), "");
  EXPECT_NEAR(p.route_latency_s(cpu, ps), 10e-6 + 1e-6 + 10e-6, 1e-15);
  EXPECT_DOUBLE_EQ(p.route_bandwidth_bytes_per_s(cpu, ps), 1.25e9);
}

}  // namespace
}  // namespace replisim::core
