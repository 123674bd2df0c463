// Per-replica batches (training.batch_per_replica as a list, field report F17: workers of
// different batch sizes): each strategy's ops compute their own replica's batch, a step counts the
// samples it applies, the plan carries the list (and a list of equal counts is the count), and
// what the scenario and the plan refuse.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/plan/plan.h"
#include "core/strategy/plan_rules.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

constexpr double kForwardFlop = 2e6;  // per sample, each of the two layers

// Three replicas: w0/gpu0 alone, then one worker with two towers on w1 (between-graph), or three
// towers (in-graph), or three ranks (all-reduce); two PS shards, two layers.
nlohmann::json three_replicas(const nlohmann::json& batches,
                              const nlohmann::json& training_extra = nullptr) {
  nlohmann::json t = {{"batch_per_replica", batches}};
  if (!training_extra.is_null()) t.update(training_extra);
  return test::two_workers_three_towers(t);
}

// The FLOP of the forward ops of `graph` on `device`.
double forward_flop_on(const Plan& plan, const ClientGraph& graph, const std::string& device) {
  const int d = plan.platform.find_device(device);
  double flop = 0;
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::kForward && op.device == d) flop += op.compute_flop;
  }
  return flop;
}

TEST(ReplicaBatches, EachTowerComputesItsReplicasBatch) {
  const Scenario s = test::parse(three_replicas({16, 32, 64}));
  ASSERT_EQ(s.training.replica_batches, (std::vector<int>{16, 32, 64}));
  EXPECT_EQ(s.training.batch_per_replica, 16);

  const Plan between = compile_plan(s, "between_graph", {1});
  ASSERT_EQ(between.clients.size(), 2u);
  EXPECT_EQ(between.clients[0].samples_per_step, 16);
  EXPECT_EQ(between.clients[1].samples_per_step, 32 + 64);
  EXPECT_DOUBLE_EQ(forward_flop_on(between, between.clients[0], "w0/gpu0"), 2 * kForwardFlop * 16);
  EXPECT_DOUBLE_EQ(forward_flop_on(between, between.clients[1], "w1/gpu0"), 2 * kForwardFlop * 32);
  EXPECT_DOUBLE_EQ(forward_flop_on(between, between.clients[1], "w1/gpu1"), 2 * kForwardFlop * 64);
  EXPECT_EQ(between.replica_batches, (std::vector<int>{16, 32, 64}));

  const Plan in_graph = compile_plan(s, "in_graph", {1});
  ASSERT_EQ(in_graph.clients.size(), 1u);
  EXPECT_EQ(in_graph.clients[0].samples_per_step, 16 + 32 + 64);
  EXPECT_DOUBLE_EQ(forward_flop_on(in_graph, in_graph.clients[0], "w0/gpu0"),
                   2 * kForwardFlop * 16);
  EXPECT_DOUBLE_EQ(forward_flop_on(in_graph, in_graph.clients[0], "w1/gpu1"),
                   2 * kForwardFlop * 64);

  const Plan allreduce = compile_plan(s, "allreduce", {1});
  ASSERT_EQ(allreduce.clients.size(), 3u);
  const std::vector<std::string> devices = {"w0/gpu0", "w1/gpu0", "w1/gpu1"};
  for (size_t r = 0; r < 3; ++r) {
    // One update applies every rank's gradients: every rank's batch.
    EXPECT_EQ(allreduce.clients[r].samples_per_step, 16 + 32 + 64);
    EXPECT_DOUBLE_EQ(forward_flop_on(allreduce, allreduce.clients[r], devices[r]),
                     2 * kForwardFlop * allreduce.batch_of_replica(r));
  }
}

TEST(ReplicaBatches, SyncStepsApplyTheWorkersBatches) {
  const Plan plan = compile_plan(test::parse(three_replicas({16, 32, 64}, {{"sync", "sync"}})),
                                 "between_graph", {1});
  // R = T = 2 workers: one global step applies both workers' gradients.
  EXPECT_EQ(plan.sync_replicas.chief_graph.samples_per_step, 16 + 32 + 64);
}

TEST(ReplicaBatches, AListOfEqualBatchesIsTheSamePlanAsTheNumber) {
  const Plan listed = compile_plan(test::parse(three_replicas({32, 32, 32})), "between_graph", {1});
  const Plan number = compile_plan(test::parse(three_replicas(32)), "between_graph", {1});
  EXPECT_TRUE(listed.replica_batches.empty());
  EXPECT_EQ(plan_hash(listed), plan_hash(number));
}

TEST(ReplicaBatches, ThePlansJsonKeepsTheList) {
  for (const char* strategy : {"between_graph", "in_graph", "allreduce"}) {
    const Plan plan = compile_plan(test::parse(three_replicas({16, 32, 64})), strategy, {1});
    const nlohmann::json j = plan_to_json(plan);
    EXPECT_EQ(j["replica_batches"], nlohmann::json({16, 32, 64})) << strategy;
    const Plan back = plan_from_json(j, "plan.json");
    EXPECT_EQ(back.replica_batches, plan.replica_batches) << strategy;
    EXPECT_EQ(plan_hash(back), plan_hash(plan)) << strategy;
  }
  // Without the list the key is absent (older plans' hashes hold).
  const Plan plain = compile_plan(test::parse(three_replicas(32)), "between_graph", {1});
  EXPECT_FALSE(plan_to_json(plain).contains("replica_batches"));
}

TEST(ReplicaBatches, ABadPlanListIsOneLineAtItsPath) {
  const Plan plan = compile_plan(test::parse(three_replicas({16, 32, 64})), "allreduce", {1});
  nlohmann::json j = plan_to_json(plan);
  j["replica_batches"][0] = 17;  // not batch_per_replica
  try {
    plan_from_json(j, "plan.json");
    ADD_FAILURE() << "a first entry other than batch_per_replica was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/replica_batches"), std::string::npos) << e.what();
  }
  j = plan_to_json(plan);
  j["replica_batches"] = {16, 32};  // three ranks
  try {
    plan_from_json(j, "plan.json");
    ADD_FAILURE() << "two batches for three ranks were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("replica_batches"), std::string::npos) << e.what();
  }
  // Outside all-reduce the list is the clients' towers': a list the clients do not take is refused.
  for (const char* strategy : {"between_graph", "in_graph"}) {
    const Plan other = compile_plan(test::parse(three_replicas({16, 32, 64})), strategy, {1});
    for (const nlohmann::json& wrong : {nlohmann::json({16, 32}), nlohmann::json({16, 32, 64, 8}),
                                        nlohmann::json({16, 32, 32})}) {
      j = plan_to_json(other);
      j["replica_batches"] = wrong;
      try {
        plan_from_json(j, "plan.json");
        ADD_FAILURE() << strategy << ": " << wrong.dump() << " was accepted";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("plan.json: /replica_batches: expected at least one "
                                             "entry per client"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(ReplicaBatches, TheScenarioRefusesWhatItCannotMean) {
  test::expect_scenario_error(three_replicas({16, 32}), "/training/batch_per_replica",
                              "expected one batch per replica (3, in training.replicas order), "
                              "got 2");
  test::expect_scenario_error(three_replicas({16, 0, 64}), "/training/batch_per_replica/1", "");
  test::expect_scenario_error(three_replicas(nlohmann::json::array()),
                              "/training/batch_per_replica", "got 0");
  test::expect_scenario_error(
      three_replicas({16, 32, 64}, {{"objective", test::synthetic_objective(0.9, "objective", 1)}}),
      "/training/batch_per_replica", "objective.batch");
  // An in-graph model-parallel placement is one tower: one batch.
  const Scenario placed = test::parse(
      three_replicas({16, 32, 64}, {{"placement", {{{"layers", "*"}, {"device", "w0/gpu0"}}}}}));
  try {
    compile_plan(placed, "in_graph", {1});
    ADD_FAILURE() << "per-replica batches beside a model-parallel placement were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/training/batch_per_replica"), std::string::npos)
        << e.what();
  }
  // Between-graph ignores the placement: the list applies.
  EXPECT_EQ(compile_plan(placed, "between_graph", {1}).clients[1].samples_per_step, 96);
}

}  // namespace
}  // namespace replisim::core
