// Workers launched at different times (training.start_times; field reports F14, F16) in the
// simulator: each client's first step starts where the plan's session barrier says (the chief at
// its launch, a worker launched before it at its first poll for the chief's model), and a restart
// launches the workers with the same spacing, each polling again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// `forward_flop`: per sample (steps of about 0.2 ms at 2 MFLOP, 0.2 s at 2 GFLOP).
nlohmann::json late_chief(const nlohmann::json& extra = nullptr,
                          const std::string& forward_flop = "2 MFLOP") {
  nlohmann::json t = {
      {"replicas", {"w0/gpu0", "w1/gpu0", "w2/gpu0"}},
      {"ps", {"ps/cpu"}},
      {"client", "ps"},
      {"steps", 6},
      {"warmup_steps", 1},
      {"start_times", {"10 s", "0 s", "25 s"}},
      {"recovery",
       {{"detect_timeout", "1 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "4 s"}}}};
  if (!extra.is_null()) t.update(extra);
  return test::scenario_json({test::machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                              test::machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                              test::machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                              test::machine("w2", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
                             test::one_layer_model(1000, forward_flop), t);
}

// When `client`'s first step event starts.
double first_step_s(const core::Trace& trace, const std::string& client) {
  const std::vector<const core::TraceEvent*> steps =
      test::events_of(trace, core::EventKind::kStep, client);
  return steps.empty() ? -1 : steps.front()->start_s;
}

TEST(StartTimesSim, EachWorkerStartsAtTheSessionBarriersTime) {
  for (const char* sync : {"async", "sync"}) {
    const core::Trace trace = test::simulate_trace(late_chief({{"sync", sync}}), "between_graph");
    EXPECT_NEAR(first_step_s(trace, "worker0"), 10, 1e-9) << sync;
    EXPECT_NEAR(first_step_s(trace, "worker1"), 12, 1e-9) << sync;  // polls at 0, 4, 8, 12 s
    EXPECT_NEAR(first_step_s(trace, "worker2"), 25, 1e-9) << sync;
  }
  const core::Trace ranks = test::simulate_trace(late_chief(), "allreduce");
  for (const char* rank : {"worker0", "worker1", "worker2"}) {
    EXPECT_NEAR(first_step_s(ranks, rank), 25, 1e-9) << rank;  // hvd.init() waits for the last
  }
}

// Synchronous training while workers are still to come: the chief's tokens let it make global
// steps alone, so the window opens at the first update once every worker trains (worker2, at 25
// s), not at the warm-up's update: the throughput is the whole job's.
TEST(StartTimesSim, TheSyncWindowOpensOnceEveryWorkerTrains) {
  const core::Trace trace = test::simulate_trace(
      late_chief({{"sync", "sync"}, {"steps", 200}}, "2 GFLOP"), "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  EXPECT_GE(m.window_start_s, 25);
  EXPECT_LT(m.window_start_s, 26);
}

// A restart launches the chief first and every other worker with its first start's spacing after
// the chief (none for one launched with or before it), each polling for the restored model: with
// recovery_wait 1 s, worker1 (launched with the chief at 20 s) is back within 1 s of the chief,
// and worker3 (launched 6 s after it) 6 s later.
TEST(StartTimesSim, ARestartKeepsTheSpacingAfterTheChief) {
  nlohmann::json doc = late_chief(
      {{"start_times", {"20 s", "20 s", "26 s"}},
       {"steps", 400},
       {"checkpoint", {{"every", "2 s"}, {"disk_bandwidth", "1 GBps"}}},
       {"recovery",
        {{"detect_timeout", "1 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "1 s"}}}},
      "2 GFLOP");
  doc["faults"] = {{{"kind", "role"}, {"role", "ps0"}, {"at", "30 s"}}};
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  ASSERT_EQ(trace.outcome.restarts.size(), 1u);
  const double back_s = trace.outcome.restarts.front().restart_s;
  // Each client's first step starting after the restart.
  auto first_after = [&](const std::string& client) {
    for (const core::TraceEvent* e : test::events_of(trace, core::EventKind::kStep, client)) {
      if (e->start_s >= back_s) return e->start_s;
    }
    return -1.0;
  };
  const double chief = first_after("worker0");
  ASSERT_GT(chief, back_s);
  EXPECT_GE(first_after("worker1"), chief - 1e-9);
  EXPECT_LE(first_after("worker1"), chief + 1 + 1e-9);
  EXPECT_GE(first_after("worker2"), back_s + 6 - 1e-9);
  EXPECT_LE(first_after("worker2"), std::max(chief, back_s + 6) + 1 + 1e-9);
}

// F14/F16: scenarios/field/f14_session_barrier.json. The workers are up before the chief; each
// starts training at its first 30 s poll after the chief's launch, not when the chief is ready.
TEST(StartTimesSim, F14WorkersWaitForTheirPollNotForTheChief) {
  std::ifstream in(test::scenario_path("field/f14_session_barrier.json"));
  const nlohmann::json doc = nlohmann::json::parse(in);
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const core::Trace trace = test::run_plan(plan);
  const double ready_s = plan.clients.front().start_offset_s;
  for (const core::ClientGraph& g : plan.clients) {
    const std::string& name = plan.roles[size_t(g.role)].name;
    const double first = first_step_s(trace, name);
    EXPECT_NEAR(first, g.start_offset_s, 1e-6) << name;
    if (g.launch_offset_s < ready_s) {
      EXPECT_GT(first, ready_s) << name << " waited past the chief's launch";
      std::printf("%s: launched at %.1f s, chief ready at %.1f s, first step at %.1f s\n",
                  name.c_str(), g.launch_offset_s, ready_s, first);
    }
  }
}

}  // namespace
}  // namespace replisim
