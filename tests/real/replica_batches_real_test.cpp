// Per-replica batches (training.batch_per_replica as a list) run for real over loopback: each
// worker computes its own batch, and the trace counts the samples each step applies.
#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/real/real_support.h"
#include "tests/support/test_support.h"

namespace replisim::real::testing {
namespace {

// The FLOP the forward events of `client` computed in its first step.
double first_step_forward_flop(const core::Plan& plan, const core::Trace& t,
                               const std::string& client) {
  double flop = 0;
  for (const core::TraceEvent& e : t.events) {
    if (e.kind != EventKind::kCompute || !e.op || *e.op != OpKind::kForward || e.step != 0 ||
        t.str(e.client) != client) {
      continue;
    }
    for (const core::ClientGraph* graph : core::step_graphs(plan)) {
      if (plan.roles[size_t(graph->role)].name != client) continue;
      flop += graph->ops[size_t(e.op_index)].compute_flop;
    }
  }
  return flop;
}

TEST(ReplicaBatchesReal, EachWorkerComputesItsOwnBatch) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(2, {{"batch_per_replica", {2, 6}}, {"steps", 4}})),
                         "between_graph", {1});
  const RealRun run = run_real(plan);
  ASSERT_EQ(run.trace.meta.clients.size(), 2u);
  EXPECT_EQ(run.trace.meta.clients[0].samples_per_step, 2);
  EXPECT_EQ(run.trace.meta.clients[1].samples_per_step, 6);
  EXPECT_EQ(count(run.trace, EventKind::kStep), 2 * plan.steps);
  const double small = first_step_forward_flop(plan, run.trace, "worker0");
  const double large = first_step_forward_flop(plan, run.trace, "worker1");
  ASSERT_GT(small, 0);
  EXPECT_DOUBLE_EQ(large / small, 3.0);
  // Every update is one worker's step (async): the updates' samples are its batch.
  int updates = 0;
  for (const core::TraceEvent& e : run.trace.events) {
    if (e.kind != EventKind::kUpdate) continue;
    ++updates;
    EXPECT_EQ(e.samples, run.trace.str(e.client) == "worker0" ? 2 : 6);
  }
  EXPECT_EQ(updates, 2 * plan.steps);
}

// Synchronous, strict (R = T = 2, one token per worker and global step): each update applies
// both workers' gradients, 2 + 6 samples. (Under the "tf" variant the first update may average
// two of the small batch's gradients, 2 + 2: its initial R tokens let the fast worker in twice.)
TEST(ReplicaBatchesReal, ASyncUpdateCountsEveryWorkersBatch) {
  const core::Plan plan = core::compile_plan(
      test::parse(scenario(
          2, {{"batch_per_replica", {2, 6}}, {"steps", 4}, {"sync", {{"variant", "strict"}}}})),
      "between_graph", {1});
  const RealRun run = run_real(plan);
  int updates = 0;
  for (const core::TraceEvent& e : run.trace.events) {
    if (e.kind != EventKind::kUpdate) continue;
    ++updates;
    EXPECT_EQ(e.samples, 8) << "update at " << e.start_s << " global step " << e.global_step_after
                            << " of " << run.trace.str(e.client) << " step " << e.step;
  }
  EXPECT_EQ(updates, plan.steps);
}

TEST(ReplicaBatchesReal, AnInGraphClientSplitsItsBatchUnevenly) {
  const core::Plan plan = core::compile_plan(
      test::parse(scenario(2, {{"batch_per_replica", {2, 6}}, {"steps", 4}})), "in_graph", {1});
  const RealRun run = run_real(plan);
  ASSERT_EQ(run.trace.meta.clients.size(), 1u);
  EXPECT_EQ(run.trace.meta.clients[0].samples_per_step, 8);
  EXPECT_EQ(count(run.trace, EventKind::kUpdate), plan.steps);
  EXPECT_EQ(run.final.index.global_step, plan.steps);
}

}  // namespace
}  // namespace replisim::real::testing
