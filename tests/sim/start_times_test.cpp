// Workers launched at different times (training.start_times; field reports F14, F16) in the
// simulator: each client's first step starts where the plan's session barrier says (the chief at
// its launch, a worker launched before it at its first poll for the chief's model), and a restart
// launches the workers with the same spacing, each polling again.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

nlohmann::json late_chief(const nlohmann::json& extra = nullptr) {
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
                             test::one_layer_model(1000, "2 MFLOP"), t);
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
