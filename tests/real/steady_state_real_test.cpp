// training.steps "auto" in real runs (real/node/node_steady.cpp): the coordinator's rule stops a
// run online once the throughput is steady, in every mode, without leaving a worker waiting for a
// barrier or a token that never comes; the trace records the interval the rule held on and the
// report measures it as it measures a simulated one.
#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using core::EventKind;
using namespace testing;

struct Mode {
  const char* strategy;
  const char* sync;
};

// Runs `doc` for real and checks that the rule stopped it cleanly: converged, no stall, before
// max_steps, workers at barriers on one step count, a synchronous run at most a few updates past
// the rule's; and that the report measures it.
void check_stops_once_steady(const nlohmann::json& doc, const Mode& mode) {
  const core::Plan plan = core::compile_plan(test::parse(doc), mode.strategy, {1});
  ASSERT_GT(plan.steady_tolerance, 0);
  const RealRun run = real::testing::run_real(plan);
  const core::RunOutcome& outcome = run.trace.outcome;
  EXPECT_FALSE(outcome.stall.has_value()) << outcome.stall->cause;
  ASSERT_TRUE(outcome.steady_state.has_value());
  const core::SteadyStateRecord& steady = *outcome.steady_state;
  EXPECT_TRUE(steady.converged);
  EXPECT_LE(steady.half_width_fraction, plan.steady_tolerance);
  EXPECT_GT(steady.throughput_samples_per_s, 0);
  // It stopped before max_steps, every update reached global_step.
  const int updates = count(run.trace, EventKind::kUpdate);
  EXPECT_EQ(run.final.index.global_step, updates);
  EXPECT_GE(run.final.index.global_step, steady.stop_global_step);
  std::vector<int> steps;
  for (const core::TraceClient& client : run.trace.meta.clients) {
    steps.push_back(count(run.trace, EventKind::kStep, client.role));
    EXPECT_LT(steps.back(), plan.steps) << client.role;
  }
  if (std::string(mode.sync) == "distributed_replicated") {
    // Workers that meet at barriers end at the same step.
    for (int n : steps) EXPECT_EQ(n, steps.front());
  }
  if (std::string(mode.strategy) == "in_graph") {
    // The client hears of the rule a message after the step end that made it hold, in the step
    // after that one, which it ends: one update past the rule's (the simulator stops at it).
    EXPECT_GE(updates, steady.stop_global_step);
    EXPECT_LE(updates, steady.stop_global_step + 1);
  }
  if (std::string(mode.sync) == "sync") {
    // The chief's sync op stopped at a global step past every token a worker held: a few
    // updates after the one the rule held on, no more.
    EXPECT_LE(updates, steady.stop_global_step + 3);
  }
  // The report measures it (a synchronous window ends at the rule's update).
  const core::RunMetrics metrics = core::compute_metrics(run.trace);
  EXPECT_GT(metrics.throughput_samples_per_s, 0);
  ASSERT_TRUE(metrics.steady_state.has_value());
  EXPECT_TRUE(metrics.steady_state->converged);
}

// A loose tolerance: the protocol is under test, not the estimator, and steps of a few
// milliseconds on a loaded machine are not steady to 5% within 400 steps every time (a sync run
// in the suite reached +-5.5%).
TEST(RealSteadyState, EveryModeStopsOnceSteadyWithoutAStall) {
  for (const Mode mode :
       {Mode{"between_graph", "async"}, Mode{"between_graph", "sync"},
        Mode{"between_graph", "distributed_replicated"}, Mode{"in_graph", "async"}}) {
    SCOPED_TRACE(std::string(mode.strategy) + " " + mode.sync);
    const nlohmann::json doc = scenario(3, {{"sync", mode.sync},
                                            {"steps", "auto"},
                                            {"max_steps", 400},
                                            {"warmup_steps", 2},
                                            {"steady_tolerance", 0.25}});
    check_stops_once_steady(doc, mode);
  }
}

// SyncReplicas over several parameter servers, stopped at the earliest chance: global_step may
// read the limit on the chief before every PS's part of the step that made it is done (a breaker
// found the chief's sync op dropping that step, which failed a third of such runs). Repeated.
TEST(RealSteadyState, SynchronousTrainingOverThreeParameterServersStopsCleanly) {
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(run);
    const nlohmann::json doc = scenario(4, {{"sync", "sync"},
                                            {"steps", "auto"},
                                            {"max_steps", 400},
                                            {"warmup_steps", 2},
                                            {"ps", {"ps/cpu", "w1/cpu", "w2/cpu"}},
                                            {"steady_tolerance", 0.99}});
    check_stops_once_steady(doc, Mode{"between_graph", "sync"});
  }
}

// Faults keep their meaning online: no stop before the last fault window has ended, and a worker
// that dies no longer holds the window open (nor is asked where it stands).
TEST(RealSteadyState, AWorkerDeathAndASlowdownWindowKeepTheirMeaning) {
  nlohmann::json doc = scenario(3, {{"sync", "async"},
                                    {"steps", "auto"},
                                    {"max_steps", 2000},
                                    {"warmup_steps", 2},
                                    {"steady_tolerance", 0.25}});
  doc["faults"] = {{{"kind", "role"}, {"role", "worker2"}, {"at", "0.3 s"}},
                   {{"kind", "slowdown"},
                    {"device", "w0/gpu0"},
                    {"from", "0.2 s"},
                    {"until", "1.5 s"},
                    {"factor", 0.5}}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const RealRun run = real::testing::run_real(plan);
  const core::RunOutcome& outcome = run.trace.outcome;
  EXPECT_FALSE(outcome.stall.has_value());
  ASSERT_TRUE(outcome.steady_state.has_value());
  EXPECT_TRUE(outcome.steady_state->converged);
  EXPECT_GE(outcome.steady_state->stop_s, 1.5);
  const int alive = count(run.trace, EventKind::kStep, "worker0");
  EXPECT_LT(alive, plan.steps);
  EXPECT_LT(count(run.trace, EventKind::kStep, "worker2"), alive);
}

// A worker that dies leaves the others at a barrier: such a run stalls, whether or not the rule
// held on a step that ended as it died, and then its record says it did not converge (a breaker
// found "stopped at" beside "stall from" an instant earlier).
TEST(RealSteadyState, AStallAfterTheRuleHeldIsNoConvergence) {
  nlohmann::json doc = scenario(4, {{"sync", "distributed_replicated"},
                                    {"steps", "auto"},
                                    {"max_steps", 2000},
                                    {"warmup_steps", 2},
                                    {"steady_tolerance", 0.99}});
  doc["faults"] = {{{"kind", "role"}, {"role", "worker2"}, {"at", "0.3 s"}}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    const RealRun result = real::testing::run_real(plan);
    ASSERT_TRUE(result.trace.outcome.stall.has_value());
    ASSERT_TRUE(result.trace.outcome.steady_state.has_value());
    EXPECT_FALSE(result.trace.outcome.steady_state->converged);
  }
}

}  // namespace
}  // namespace replisim::real
