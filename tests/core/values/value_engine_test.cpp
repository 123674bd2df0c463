// The value engine (core/values/value_engine.h): the proportional slices, the plan's objective
// through plan JSON, which plans compute it, and each gradient taken at the values its worker
// read (an interleaving of three asynchronous workers replayed by hand).
#include <gtest/gtest.h>

#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "core/values/value_engine.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

nlohmann::json engine_objective() {
  return {{"data",
           {{"set", "synthetic"},
            {"samples", 600},
            {"test_samples", 200},
            {"features", 12},
            {"classes", 3},
            {"seed", 5}}},
          {"model", "softmax"},
          {"learning_rate", 0.5},
          {"staleness_aware", true},
          {"batch", 8},
          {"evaluate_every", 2},
          {"target", {{"accuracy", 0.6}}},
          {"timing", "scenario"},
          {"seed", 9}};
}

nlohmann::json engine_scenario(int workers, const std::string& sync = "async") {
  std::vector<nlohmann::json> machines;
  nlohmann::json replicas = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) {
    machines.push_back(
        test::machine("m" + std::to_string(w), "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps"));
    replicas.push_back("m" + std::to_string(w) + "/gpu0");
  }
  return test::scenario_json(machines, {{"preset", "resnet50"}},
                             {{"replicas", replicas},
                              {"ps", {"m0/cpu"}},
                              {"sync", sync},
                              {"objective", engine_objective()}});
}

Plan engine_plan(int workers, const std::string& strategy = "between_graph",
                 const std::string& sync = "async") {
  return compile_plan(test::parse(engine_scenario(workers, sync)), strategy, {});
}

std::string objective_note(const Plan& plan) {
  for (const std::string& n : plan.notes) {
    if (n.find("training.objective") != std::string::npos) return n;
  }
  return "";
}

TEST(ValueEngineSlices, ProportionalToBytesAndPartitioningTheParameters) {
  std::vector<Variable> variables(4);
  variables[0].bytes = 8;  // global_step: no slice
  variables[1].bytes = 100;
  variables[2].bytes = 300;
  variables[3].bytes = 600;
  const std::vector<ValueSlice> s = proportional_slices(variables, 10);
  EXPECT_EQ(s[0].size, 0u);
  EXPECT_EQ(s[1].offset, 0u);
  EXPECT_EQ(s[1].size, 1u);  // floor(10 x 100 / 1000)
  EXPECT_EQ(s[2].offset, 1u);
  EXPECT_EQ(s[2].size, 3u);  // floor(10 x 400 / 1000) - 1
  EXPECT_EQ(s[3].offset, 4u);
  EXPECT_EQ(s[3].size, 6u);  // to the end
}

TEST(ValueEngineSlices, EveryParameterOfAResnetPlanBelongsToOneVariable) {
  const Plan plan = engine_plan(2);
  ValueEngine engine(plan);
  size_t next = 0;
  for (const ValueSlice& s : engine.slices()) {
    if (s.size == 0) continue;
    EXPECT_EQ(s.offset, next);
    next = s.offset + s.size;
  }
  EXPECT_EQ(next, engine.model().parameter_count());
}

TEST(ValueEnginePlan, TheObjectiveRoundTripsThroughPlanJsonAndItsAbsenceWritesNothing) {
  const Plan plan = engine_plan(2);
  ASSERT_TRUE(plan.objective.enabled);
  const nlohmann::json j = plan_to_json(plan);
  ASSERT_TRUE(j.contains("objective"));
  const Plan back = plan_from_json(j, "p.json");
  EXPECT_TRUE(back.objective.enabled);
  EXPECT_EQ(back.objective.learning_rate, 0.5);
  EXPECT_EQ(back.objective.train_samples, 600);
  EXPECT_TRUE(back.objective.staleness_aware);
  EXPECT_EQ(back.objective.timing, "scenario");
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_EQ(plan_hash(back), plan_hash(plan));

  nlohmann::json doc = engine_scenario(2);
  doc["training"].erase("objective");
  const Plan without = compile_plan(test::parse(doc), "between_graph", {});
  EXPECT_FALSE(plan_to_json(without).contains("objective"));
  EXPECT_EQ(objective_note(without), "");
}

// Every strategy's plan computes the objective in the simulator, and its note says so.
TEST(ValueEnginePlan, EveryStrategysPlanComputesItAndSaysSo) {
  for (const Plan& plan :
       {engine_plan(2), engine_plan(2, "between_graph", "sync"), engine_plan(2, "in_graph")}) {
    EXPECT_TRUE(objective_computed_by_simulator(plan)) << plan.strategy << " " << plan.sync;
    EXPECT_NE(objective_note(plan).find("computes the proxy's SGD"), std::string::npos)
        << objective_note(plan);
  }
}

// A slice op names only its slice's first variable: the members are the variables of the same
// ps up to the next named one. ResNet-50 in one layer group (granularity 1) on two PSes: two
// slices, each the variables of one ps, and every variable but global_step in exactly one.
TEST(ValueEngineSlices, ASliceOpStandsForEveryVariableOfItsSlice) {
  nlohmann::json doc = engine_scenario(2);
  doc["cluster"]["machines"].push_back(test::machine("p1", "400 GFLOPS", {}, "10 Gbps"));
  doc["training"]["ps"] = {"m0/cpu", "p1/cpu"};
  doc["training"]["granularity"] = 1;
  const Plan plan = compile_plan(test::parse(doc), "between_graph", {});
  const std::vector<std::vector<int>> members = slice_members(plan);
  std::vector<int> owner(plan.variables.size(), -1);
  int slices = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    slices += !members[k].empty();
    for (int w : members[k]) {
      EXPECT_EQ(owner[size_t(w)], -1) << "variable " << w << " in two slices";
      owner[size_t(w)] = int(k);
      EXPECT_EQ(plan.variables[size_t(w)].ps, plan.variables[k].ps);
    }
  }
  EXPECT_EQ(slices, 2);
  for (size_t w = 1; w < owner.size(); ++w) EXPECT_GE(owner[w], 0) << "variable " << w;
}

// The ops of client c's graph of `kind`, in graph order.
std::vector<int> ops_of(const Plan& plan, int c, OpKind kind) {
  std::vector<int> out;
  const std::vector<Op>& ops = plan.clients[size_t(c)].ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == kind) out.push_back(int(i));
  }
  return out;
}

// Three workers read the initial values, then apply one after the other (staleness 0, 1, 2):
// each gradient must be the one at the initial values on its own worker's first batch, and the
// staleness-aware rates lr, lr, lr / 2 (Zhang et al. 2016: divisor max(staleness, 1)).
TEST(ValueEngineAsync, EachGradientIsTakenAtTheValuesItsWorkerRead) {
  const Plan plan = engine_plan(3);
  ValueEngine engine(plan);
  engine.record_applies(true);
  const std::vector<float> initial = engine.values();
  for (int c = 0; c < 3; ++c) {
    for (int op : ops_of(plan, c, OpKind::kReadVariable)) engine.op_completed(c, op, {0, 0, 0});
  }
  std::vector<float> expected = initial;
  const ObjectiveModel& model = engine.model();
  const size_t samples = engine.data().train.samples();
  int64_t global_step = 0;
  for (int c = 0; c < 3; ++c) {
    const OpMoment at{0, global_step, 0};
    for (int op : ops_of(plan, c, OpKind::kBackward)) engine.op_completed(c, op, at);
    EXPECT_EQ(engine.gradients_computed(c), 1);
    for (int op : ops_of(plan, c, OpKind::kApply)) engine.op_completed(c, op, at);
    engine.op_completed(c, ops_of(plan, c, OpKind::kGlobalStepIncrement).front(), at);
    EXPECT_EQ(engine.updated(global_step + 1).has_value(), (global_step + 1) % 2 == 0);
    // By hand: the gradient at the initial values on the worker's first batch.
    BatchIterator batches(engine.data().train,
                          shard_indices(samples, 3, c, ValueEngine::shard_seed(9)), 8,
                          ValueEngine::batch_seed(9, c));
    const std::vector<float> g = model.loss_and_gradient(initial, batches.next()).gradient;
    sgd_apply(expected, g, staleness_aware_learning_rate(0.5, global_step));
    ++global_step;
  }
  EXPECT_EQ(engine.values(), expected);  // bitwise
  ASSERT_FALSE(engine.applied().empty());
  for (const AppliedUpdate& u : engine.applied()) {
    EXPECT_EQ(u.staleness, u.client);  // worker c applied after c others
    EXPECT_EQ(u.learning_rate, 0.5 / double(std::max(u.client, 1)));
  }
  // And not the plain sequential result (the test could fail): SGD from the updated values.
  std::vector<float> sequential = initial;
  for (int c = 0; c < 3; ++c) {
    BatchIterator batches(engine.data().train,
                          shard_indices(samples, 3, c, ValueEngine::shard_seed(9)), 8,
                          ValueEngine::batch_seed(9, c));
    sgd_apply(sequential, model.loss_and_gradient(sequential, batches.next()).gradient,
              staleness_aware_learning_rate(0.5, c));
  }
  EXPECT_NE(engine.values(), sequential);
}

}  // namespace
}  // namespace replisim::core
