// Plan invariants split as the strategies' registry says (core/strategy/plan_rules.h):
// validate_plan holds what every backend relies on; a parameter server, async clients that
// increment global_step and the sync modes are each strategy's own rules. A plan of a strategy
// this replisim does not know — here a ring of workers without parameter servers, the shape a
// third strategy's plans take — passes and runs on the simulator as the ops it holds.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/plan_rules.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using core::OpKind;

core::Plan seed_plan(const std::string& strategy) {
  return core::compile_plan(core::load_scenario(test::seed_scenario()), strategy, {});
}

// The InputError's text of `check` on `plan` ("" when it accepts the plan).
template <typename Check>
std::string refusal(Check check, const core::Plan& plan) {
  try {
    check(plan, "p.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

std::string validated(const core::Plan& plan) {
  return refusal(core::validate_plan, plan);
}
std::string ruled(const core::Plan& plan) {
  return refusal(core::check_plan_rules, plan);
}

core::Op op(const std::string& name, OpKind kind, int device, int role, std::vector<int> inputs) {
  core::Op o;
  o.name = name;
  o.kind = kind;
  o.device = device;
  o.role = role;
  o.inputs = std::move(inputs);
  return o;
}

// The seed's workers in a ring, no parameter server, no variables: each step a worker reads its
// batch, computes, and sends 4 MB to the next worker.
core::Plan ring_plan() {
  core::Plan plan = seed_plan("between_graph");
  plan.strategy = "ring_demo";
  plan.ps_roles.clear();
  plan.variables.clear();
  plan.memory.clear();
  plan.checkpoints = {};
  std::vector<int> devices;
  std::vector<int> roles;
  for (const core::ClientGraph& g : plan.clients) {
    roles.push_back(g.role);
    devices.push_back(plan.roles[size_t(g.role)].device);
  }
  const size_t n = plan.clients.size();
  for (size_t c = 0; c < n; ++c) {
    core::ClientGraph& g = plan.clients[c];
    const int device = devices[c];
    const core::Op input = g.ops[size_t(g.input_op)];
    const int input_device = input.device;
    g.ops.clear();
    g.ops.push_back(op("input", OpKind::kInput, input_device, roles[c], {}));
    g.ops[0].compute_flop = input.compute_flop;
    int last = 0;
    if (input_device != device) {
      g.ops.push_back(op("input/send", OpKind::kSend, input_device, roles[c], {0}));
      g.ops.push_back(op("input/recv", OpKind::kRecv, device, roles[c], {1}));
      g.ops[1].peer = 2;
      g.ops[2].peer = 1;
      g.ops[1].bytes = g.ops[2].bytes = 1e6;
      last = 2;
    }
    g.ops.push_back(op("forward", OpKind::kForward, device, roles[c], {last}));
    g.ops.back().compute_flop = 1e10;
    const int forward = int(g.ops.size()) - 1;
    const size_t next = (c + 1) % n;
    g.ops.push_back(op("ring/send", OpKind::kSend, device, roles[c], {forward}));
    g.ops.push_back(op("ring/recv", OpKind::kRecv, devices[next], roles[next], {forward + 1}));
    g.ops[size_t(forward + 1)].peer = forward + 2;
    g.ops[size_t(forward + 2)].peer = forward + 1;
    g.ops[size_t(forward + 1)].bytes = g.ops[size_t(forward + 2)].bytes = 4e6;
    g.input_op = 0;
    g.global_step_op = -1;
  }
  return plan;
}

TEST(PlanRules, APlanWithoutParameterServersOfAnUnknownStrategyRunsAsItsOps) {
  const core::Plan plan = ring_plan();
  ASSERT_GE(plan.clients.size(), 2u);
  EXPECT_EQ(validated(plan), "");
  EXPECT_EQ(ruled(plan), "");
  const core::Trace trace = test::run_plan(plan);
  for (const core::ClientGraph& g : plan.clients) {
    const std::string worker = plan.roles[size_t(g.role)].name;
    EXPECT_EQ(test::events_of(trace, core::EventKind::kStep, worker).size(), size_t(plan.steps))
        << worker;
  }
  EXPECT_GE(test::events_of(trace, core::EventKind::kTransfer).size(),
            plan.clients.size() * size_t(plan.steps));
}

TEST(PlanRules, AParameterServerIsTheParameterServerStrategiesRule) {
  for (const std::string strategy : {"in_graph", "between_graph"}) {
    core::Plan plan = ring_plan();
    plan.strategy = strategy;
    if (strategy == "in_graph") plan.clients.resize(1);
    EXPECT_EQ(validated(plan), "") << strategy;
    const std::string why = ruled(plan);
    EXPECT_NE(
        why.find("p.json: /ps_roles: a plan of strategy " + strategy + " needs a parameter server"),
        std::string::npos)
        << why;
  }
}

TEST(PlanRules, AsyncClientsOfTheParameterServerStrategiesIncrementGlobalStep) {
  core::Plan plan = seed_plan("between_graph");
  ASSERT_EQ(plan.sync, "async");
  ASSERT_GE(plan.clients.size(), 2u);
  EXPECT_EQ(ruled(plan), "");
  plan.clients[1].global_step_op = -1;
  EXPECT_EQ(validated(plan), "");
  EXPECT_NE(ruled(plan).find("/clients/1/global_step_op: a client of strategy between_graph"),
            std::string::npos)
      << ruled(plan);
  // Naming an op that is no increment is every plan's error.
  plan.clients[1].global_step_op = plan.clients[1].input_op;
  EXPECT_NE(validated(plan).find("/clients/1/global_step_op: does not name a global step"),
            std::string::npos)
      << validated(plan);
}

TEST(PlanRules, InGraphHasNoSyncReplicas) {
  core::Plan plan = seed_plan("in_graph");
  EXPECT_EQ(ruled(plan), "");
  plan.sync = core::kDistributedReplicated;  // one client: no barrier to disagree on
  EXPECT_EQ(validated(plan), "");
  EXPECT_NE(ruled(plan).find("/sync: strategy in_graph has no sync \"distributed_replicated\""),
            std::string::npos)
      << ruled(plan);
}

TEST(PlanRules, DistributedReplicatedWorkersOfBetweenGraphPassBarriers) {
  core::Plan plan = seed_plan("between_graph");
  plan.sync = core::kDistributedReplicated;  // an async plan relabelled: no barrier anywhere
  EXPECT_EQ(validated(plan), "");
  EXPECT_NE(ruled(plan).find("/clients/0/ops: a worker of sync \"distributed_replicated\" "
                             "passes a barrier each step"),
            std::string::npos)
      << ruled(plan);
}

// A token queue that hands out no token stalls every worker after its first step: refused in the
// plan, not found as a stall at run time.
TEST(PlanRules, ASyncPlansTokensAreTheVariants) {
  core::Plan plan =
      core::compile_plan(core::load_scenario(test::scenario_path("classroom/sync_straggler.json")),
                         "between_graph", {});
  ASSERT_EQ(plan.sync, "sync");
  core::Plan tf = plan;
  tf.sync_replicas.variant = "tf";
  tf.sync_replicas.initial_tokens = tf.sync_replicas.replicas_to_aggregate;
  tf.sync_replicas.tokens_per_step = 0;
  EXPECT_NE(validated(tf).find("/sync_replicas/tokens_per_step: the tf variant enqueues at least"),
            std::string::npos)
      << validated(tf);
  tf.sync_replicas.tokens_per_step = 4;
  EXPECT_EQ(validated(tf), "");
  core::Plan strict = plan;
  strict.sync_replicas.variant = "strict";
  strict.sync_replicas.tokens_per_step = 2;
  EXPECT_NE(validated(strict).find("the strict variant hands out no tokens"), std::string::npos)
      << validated(strict);
}

TEST(PlanRules, SynchronousReplicasNeedAParameterServerForTheirQueues) {
  core::Plan plan =
      core::compile_plan(core::load_scenario(test::scenario_path("classroom/sync_straggler.json")),
                         "between_graph", {});
  ASSERT_EQ(plan.sync, "sync");
  EXPECT_EQ(validated(plan), "");
  plan.ps_roles.clear();
  EXPECT_NE(validated(plan).find("/ps_roles: synchronous replicas need a parameter server"),
            std::string::npos)
      << validated(plan);
}

}  // namespace
}  // namespace replisim
