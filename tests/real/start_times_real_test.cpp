// Workers launched at different times (training.start_times) run for real over loopback: a worker
// launched before the chief polls for the chief's model every recovery_wait, and its first step
// starts at its first poll after the chief's launch.
#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/real/real_support.h"
#include "tests/support/test_support.h"

namespace replisim::real::testing {
namespace {

TEST(StartTimesReal, AWorkerLaunchedBeforeTheChiefStartsAtItsPoll) {
  const core::Plan plan = core::compile_plan(
      test::parse(scenario(
          2,
          {{"start_times", {"0.5 s", "0 s"}},
           {"steps", 4},
           {"recovery",
            {{"detect_timeout", "1 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "0.3 s"}}}})),
      "between_graph", {1});
  ASSERT_DOUBLE_EQ(plan.clients[1].start_offset_s, 0.6);  // polls at 0, 0.3, 0.6 s
  const RealRun run = run_real(plan);
  double first[2] = {-1, -1};
  for (const core::TraceEvent& e : run.trace.events) {
    if (e.kind != EventKind::kStep) continue;
    const int c = run.trace.str(e.client) == "worker0" ? 0 : 1;
    if (first[c] < 0) first[c] = e.start_s;
  }
  EXPECT_GE(first[0], 0.5);
  EXPECT_GE(first[1], 0.6);
  EXPECT_LT(first[1], 0.6 + 0.5) << "a poll, not a hang";
  EXPECT_EQ(count(run.trace, EventKind::kStep), 2 * plan.steps);
}

}  // namespace
}  // namespace replisim::real::testing
