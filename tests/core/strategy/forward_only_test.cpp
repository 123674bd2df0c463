// Forward-only steps (training.forward_only, inference): the plans between-graph and in-graph
// compile (reads, forward, loss; no backward, gradient send, apply or global_step update), what
// the scenario and the plan refuse with them, and that a plan without the key is the same plan.
#include <gtest/gtest.h>

#include <set>

#include "core/base/error.h"
#include "core/strategy/plan_rules.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// Two workers (one of them with two towers on one machine), two PS shards, two layers.
nlohmann::json two_layer_doc(const nlohmann::json& training_extra) {
  return test::two_workers_three_towers(training_extra);
}

// Every op of every client graph, with the roles of the parameter servers.
struct ForwardPlanOps {
  std::multiset<OpKind> kinds;
  int recvs_on_ps = 0;  // a tensor sent to a PS: a gradient (or a token) in a training plan
  int reads = 0;
};

ForwardPlanOps forward_plan_ops(const Plan& plan) {
  const std::set<int> ps(plan.ps_roles.begin(), plan.ps_roles.end());
  ForwardPlanOps out;
  for (const ClientGraph* graph : step_graphs(plan)) {
    for (const Op& op : graph->ops) {
      out.kinds.insert(op.kind);
      if (op.kind == OpKind::kRecv && ps.count(op.role) > 0) ++out.recvs_on_ps;
      if (op.kind == OpKind::kReadVariable && ps.count(op.role) > 0) ++out.reads;
    }
  }
  return out;
}

TEST(ForwardOnly, PlansReadForwardAndLossOnly) {
  for (const char* strategy : {"between_graph", "in_graph"}) {
    SCOPED_TRACE(strategy);
    const Plan plan =
        compile_plan(test::parse(two_layer_doc({{"forward_only", true}})), strategy, {});
    EXPECT_TRUE(plan.forward_only);
    EXPECT_EQ(plan.sync, "async");
    check_plan_rules(plan, "test.json");
    const ForwardPlanOps ops = forward_plan_ops(plan);
    for (OpKind kind : {OpKind::kBackward, OpKind::kAggregate, OpKind::kApply,
                        OpKind::kGlobalStepIncrement, OpKind::kAccumulate, OpKind::kAllReduce}) {
      EXPECT_EQ(ops.kinds.count(kind), 0u) << op_kind_name(kind);
    }
    EXPECT_EQ(ops.recvs_on_ps, 0) << "no tensor goes to a parameter server";
    EXPECT_GT(ops.kinds.count(OpKind::kForward), 0u);
    EXPECT_GT(ops.kinds.count(OpKind::kLoss), 0u);
    // Every client reads both layers' variables from their PS each step (in-graph: every tower
    // reads the client's one read of each).
    EXPECT_EQ(ops.reads, 2 * (strategy == std::string("in_graph") ? 1 : 2));
    for (const ClientGraph& c : plan.clients) EXPECT_EQ(c.global_step_op, -1);
    for (const DeviceMemory& m : plan.memory) {
      EXPECT_EQ(m.gradients_bytes, 0) << plan.platform.devices[size_t(m.device)].name;
      EXPECT_EQ(m.optimizer_bytes, 0) << plan.platform.devices[size_t(m.device)].name;
    }
    // The flag survives the plan's JSON, and a training plan of the same scenario trains.
    const Plan back = plan_from_json(plan_to_json(plan), "plan.json");
    EXPECT_TRUE(back.forward_only);
    EXPECT_EQ(plan_hash(back), plan_hash(plan));
    const Plan training = compile_plan(test::parse(two_layer_doc({})), strategy, {});
    EXPECT_GT(forward_plan_ops(training).kinds.count(OpKind::kApply), 0u);
    EXPECT_GT(forward_plan_ops(training).recvs_on_ps, 0);
  }
}

// A regular plan is the plan it was: no "forward_only" in its JSON, and "forward_only": false
// compiles to the same plan (same hash) as no key at all.
TEST(ForwardOnly, ARegularPlanIsUnchanged) {
  for (const char* strategy : {"between_graph", "in_graph", "allreduce"}) {
    const Plan plain = compile_plan(test::parse(two_layer_doc({})), strategy, {});
    const Plan off =
        compile_plan(test::parse(two_layer_doc({{"forward_only", false}})), strategy, {});
    EXPECT_FALSE(plan_to_json(plain).contains("forward_only")) << strategy;
    EXPECT_EQ(plan_hash(plain), plan_hash(off)) << strategy;
  }
}

TEST(ForwardOnly, TheScenarioRefusesWhatNeedsGradientsOrUpdates) {
  const nlohmann::json on = {{"forward_only", true}};
  auto with = [&on](nlohmann::json extra) {
    extra.update(on);
    return two_layer_doc(extra);
  };
  test::expect_scenario_error(with({{"sync", "sync"}}), "/training/sync", "forward_only");
  test::expect_scenario_error(with({{"sync", "distributed_replicated"}}), "/training/sync",
                              "use \"async\"");
  test::expect_scenario_error(with({{"sync", {{"replicas_to_aggregate", 1}}}}), "/training/sync",
                              "synchronises gradients");
  test::expect_scenario_error(with({{"steps", "auto"}}), "/training/steps", "number of steps");
  test::expect_scenario_error(
      with({{"checkpoint", {{"every", "1 s"}, {"disk_bandwidth", "1 GBps"}}}}),
      "/training/checkpoint", "never change");
  test::expect_scenario_error(with({{"objective", test::synthetic_objective(0.7, "objective", 1)}}),
                              "/training/objective", "nothing trains");
  test::expect_scenario_error(two_layer_doc({{"forward_only", "yes"}}), "/training/forward_only",
                              "");
  // "async" is what forward-only steps are.
  EXPECT_TRUE(test::parse(with({{"sync", "async"}})).training.forward_only);
}

TEST(ForwardOnly, AllReduceRefusesItNamingTheKey) {
  const Scenario s = test::parse(two_layer_doc({{"forward_only", true}}));
  try {
    compile_plan(s, "allreduce", {});
    ADD_FAILURE() << "compiled";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/training/forward_only") << e.what();
    EXPECT_NE(std::string(e.what()).find("test.json"), std::string::npos) << e.what();
  }
}

// A plan file that says forward_only but holds a training op, or trains synchronously, is refused.
TEST(ForwardOnly, ThePlanCheckRefusesTrainingOps) {
  const Plan training = compile_plan(test::parse(two_layer_doc({})), "between_graph", {});
  nlohmann::json j = plan_to_json(training);
  j["forward_only"] = true;
  try {
    check_plan_rules(plan_from_json(j, "plan.json"), "plan.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("a forward-only plan has no"), std::string::npos) << e.what();
  }
  nlohmann::json sync = plan_to_json(
      compile_plan(test::parse(two_layer_doc({{"forward_only", true}})), "between_graph", {}));
  sync["sync"] = "distributed_replicated";
  try {
    validate_plan(plan_from_json(sync, "plan.json"), "plan.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/forward_only") << e.what();
  }
}

}  // namespace
}  // namespace replisim::core
