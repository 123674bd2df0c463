// Forward-only steps (training.forward_only) run for real over loopback: every step pulls the
// variables and runs the forward pass and the loss, nothing is applied, and `replisim run`'s report
// says "no updates (forward only)" where a training run prints its update figures.
#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "tests/real/real_support.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::real::testing {
namespace {

// Compute and transfer events of one op kind.
int op_events(const core::Trace& t, OpKind kind) {
  int n = 0;
  for (const core::TraceEvent& e : t.events) n += e.op && *e.op == kind;
  return n;
}

TEST(ForwardOnlyReal, StepsPullAndComputeButApplyNothing) {
  for (const char* strategy : {"between_graph", "in_graph"}) {
    SCOPED_TRACE(strategy);
    const core::Plan plan = core::compile_plan(
        test::parse(scenario(2, {{"forward_only", true}, {"steps", 5}})), strategy, {1});
    ASSERT_TRUE(plan.forward_only);
    const RealRun run = run_real(plan);
    EXPECT_TRUE(run.trace.meta.forward_only);
    const int clients = int(plan.clients.size());
    EXPECT_EQ(count(run.trace, EventKind::kStep), clients * plan.steps);
    EXPECT_EQ(count(run.trace, EventKind::kUpdate), 0);
    EXPECT_EQ(op_events(run.trace, OpKind::kApply), 0);
    EXPECT_EQ(op_events(run.trace, OpKind::kBackward), 0);
    EXPECT_EQ(op_events(run.trace, OpKind::kGlobalStepIncrement), 0);
    EXPECT_GT(op_events(run.trace, OpKind::kForward), 0);
    // Tensors leave the parameter server every step (the pulls); none goes to it.
    int from_ps = 0, to_ps = 0;
    for (const core::TraceEvent& e : run.trace.events) {
      if (e.kind != EventKind::kTransfer) continue;
      from_ps += run.trace.str(e.actor) == "ps0";
      to_ps += e.peer_actor != core::kNoString && run.trace.str(e.peer_actor) == "ps0";
    }
    EXPECT_GE(from_ps, plan.steps) << "a pull per step at least";
    EXPECT_EQ(to_ps, 0);
    // Nothing was applied: the run ends where it began, at global_step 0.
    EXPECT_EQ(run.final.index.global_step, 0);
  }
}

// `replisim run` of a forward-only scenario: the report's update rows say why they are empty.
TEST(ForwardOnlyReal, RunsReportSaysNoUpdates) {
  test::TempDir dir;
  const std::string file =
      dir.write("forward_only.json", scenario(1, {{"forward_only", true}, {"steps", 6}}).dump());
  const test::BinaryResult r = test::run_replisim({"run", file}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("global update interval (ms)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(core::kNoUpdatesText), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.00 / 0"), std::string::npos) << r.out;  // staleness as zeros
}

}  // namespace
}  // namespace replisim::real::testing
