// Faults: a dead async worker costs its share; synchronous training stalls without backups (and
// says why), goes on with them, and stops when the chief dies; a slowdown window slows one
// device's steps. Link faults and restarts: recovery_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"
#include "tests/support/test_support.h"

namespace replisim::fault_test {
namespace {

using test::machine;

constexpr double kBatch = 32;
constexpr double kStepS = 3 * 1e9 * kBatch / 2e12;  // compute of one step at 2 TFLOPS: 48 ms

// Four identical workers (compute-bound), one PS machine; 100 steps, about 5 s.
nlohmann::json four_workers(const nlohmann::json& sync, const nlohmann::json& faults) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  for (int i = 0; i < 4; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(machines, test::one_layer_model(1e6, "1 GFLOP"),
                                           {{"replicas", "w*/gpu0"},
                                            {"ps", {"p/cpu"}},
                                            {"steps", 100},
                                            {"warmup_steps", 10},
                                            {"batch_per_replica", kBatch},
                                            {"costs", "none"},
                                            {"sync", sync}});
  doc["faults"] = faults;
  return doc;
}

// Samples applied per second over (from, to], from the trace's updates.
double rate(const core::Trace& trace, double from, double to) {
  double samples = 0;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kUpdate && e.end_s > from && e.end_s <= to) samples += e.samples;
  }
  return samples / (to - from);
}

TEST(Faults, AsyncWorkerDeathCostsItsShare) {
  const double death_s = 2.5;
  const core::Trace trace = test::simulate_trace(
      four_workers("async", {{{"kind", "role"}, {"role", "worker2"}, {"at", "2.5 s"}}}),
      "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].target, "worker2");
  EXPECT_DOUBLE_EQ(m.faults[0].start_s, death_s);
  EXPECT_GT(m.faults[0].lost_work_s, 0);
  EXPECT_LT(m.faults[0].lost_work_s, 2 * kStepS);
  const double before = rate(trace, m.window_start_s, death_s);
  const double after = rate(trace, death_s + 2 * kStepS, m.window_end_s);
  EXPECT_NEAR(after, 0.75 * before, 0.05 * 0.75 * before);
  // The report's own before and after (from the death on, its step's tail included).
  EXPECT_NEAR(m.faults[0].throughput_before_samples_per_s, before, 1e-9 * before);
  EXPECT_NEAR(m.faults[0].throughput_after_samples_per_s, 0.75 * before, 0.06 * 0.75 * before);
  // The others finish their steps; the dead one stops.
  int worker2_steps = 0;
  for (const core::TraceEvent& e : trace.events) {
    worker2_steps += e.kind == core::EventKind::kStep && trace.str(e.client) == "worker2";
  }
  EXPECT_LT(worker2_steps, 100);
  EXPECT_GT(m.window_end_s, death_s + 1);
}

TEST(Faults, SyncWithoutBackupsStallsAndSaysWhy) {
  const core::RunMetrics m =
      test::simulate(four_workers({{"variant", "strict"}},
                                  {{{"kind", "role"}, {"role", "worker2"}, {"at", "2.5 s"}}}),
                     "between_graph");
  ASSERT_TRUE(m.stalled);
  EXPECT_NE(m.stall_cause.find("live workers (3) < replicas_to_aggregate (4)"), std::string::npos)
      << m.stall_cause;
  EXPECT_LE(m.stall_start_s, 2.5);
  EXPECT_GT(m.stall_start_s, 2.5 - 2 * kStepS);
  EXPECT_LT(m.stall_global_step, 100);
}

TEST(Faults, SyncWithABackupGoesOn) {
  const core::RunMetrics m =
      test::simulate(four_workers({{"replicas_to_aggregate", 3}, {"variant", "strict"}},
                                  {{{"kind", "role"}, {"role", "worker2"}, {"at", "2.5 s"}}}),
                     "between_graph");
  EXPECT_FALSE(m.stalled);
  EXPECT_GT(m.window_end_s, 2.5 + 1);
}

TEST(Faults, TfTokensStallWhenTheDeadWorkerHeldOne) {
  // TF's shared queue, R = T = 4: a worker dies mid-step, after it took its token for the
  // current global step; the three live workers give three gradients, then find no token for
  // the fourth: global_step stops (had it died waiting for a token, the others would have taken
  // the spare one and gone on at a lower rate).
  const core::RunMetrics m = test::simulate(
      four_workers("sync", {{{"kind", "role"}, {"role", "worker2"}, {"at", "2.5 s"}}}),
      "between_graph");
  ASSERT_TRUE(m.stalled);
  EXPECT_NE(m.stall_cause.find("3 of 3 live workers wait for a token"), std::string::npos)
      << m.stall_cause;
  EXPECT_GT(m.stall_start_s, 2.5 - 2 * kStepS);
}

TEST(Faults, TheChiefsDeathStopsSyncTraining) {
  const core::RunMetrics m =
      test::simulate(four_workers({{"replicas_to_aggregate", 3}},
                                  {{{"kind", "machine"}, {"machine", "w0"}, {"at", "2.5 s"}}}),
                     "between_graph");
  ASSERT_TRUE(m.stalled);
  EXPECT_NE(m.stall_cause.find("the chief (worker0) died"), std::string::npos) << m.stall_cause;
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].description, "machine w0 dies");
}

TEST(Faults, ASlowdownWindowSlowsThatDevicesSteps) {
  const core::Trace trace = test::simulate_trace(four_workers("async", {{{"kind", "slowdown"},
                                                                         {"device", "w1/gpu0"},
                                                                         {"from", "1 s"},
                                                                         {"until", "3 s"},
                                                                         {"factor", 0.5}}}),
                                                 "between_graph");
  double inside = 0, outside = 0;
  int n_inside = 0, n_outside = 0;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind != core::EventKind::kCompute || trace.str(e.device) != "w1/gpu0") continue;
    if (e.start_s >= 1 && e.end_s <= 3) inside += e.end_s - e.start_s, ++n_inside;
    if (e.end_s < 1 || e.start_s > 3) outside += e.end_s - e.start_s, ++n_outside;
  }
  ASSERT_GT(n_inside, 5);
  ASSERT_GT(n_outside, 5);
  EXPECT_NEAR(inside / n_inside, 2 * outside / n_outside, 0.1 * outside / n_outside);
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].target, "w1/gpu0");
  EXPECT_DOUBLE_EQ(m.faults[0].end_s, 3);
}

TEST(Faults, AStalledStepDoesNotScaleTheNextStartsJitter) {
  // w1's NIC is cut for 3 s: the step caught in it lasts about 3 s. The next starts within the
  // step jitter (2%) of a typical step, not of the stalled one (up to 60 ms).
  const core::Trace trace = test::simulate_trace(four_workers("async", {{{"kind", "link"},
                                                                         {"link", "w1/nic"},
                                                                         {"from", "1 s"},
                                                                         {"until", "4 s"},
                                                                         {"factor", 0}}}),
                                                 "between_graph");
  std::vector<const core::TraceEvent*> steps;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep && trace.str(e.client) == "worker1") steps.push_back(&e);
  }
  std::sort(steps.begin(), steps.end(), [](const core::TraceEvent* a, const core::TraceEvent* b) {
    return a->start_s < b->start_s;
  });
  int stalled = 0;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    const double duration_s = steps[i]->end_s - steps[i]->start_s;
    if (duration_s > 2) ++stalled;
    EXPECT_LE(steps[i + 1]->start_s - steps[i]->end_s, 0.02 * 2 * kStepS + 1e-9)
        << "after step " << steps[i]->step << " of " << duration_s << " s";
  }
  EXPECT_EQ(stalled, 1);
}

TEST(Faults, BadFaultsAreInputErrors) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"kind", "role"}, {"role", "ps1"}, {"at", "1 s"}}, "/faults/0/role"},
      {{{"kind", "role"}, {"role", "worker9"}, {"at", "1 s"}}, "/faults/0/role"},
      {{{"kind", "role"}, {"role", "worker01"}, {"at", "1 s"}}, "/faults/0/role"},
      {{{"kind", "role"}, {"role", "tower4"}, {"at", "1 s"}}, "/faults/0/role"},
      {{{"kind", "role"}, {"role", "chief"}, {"at", "1 s"}}, "/faults/0/role"},
      {{{"kind", "role"}, {"role", "worker1"}, {"at", 1}}, "/faults/0/at"},
      {{{"kind", "machine"}, {"machine", "q"}, {"at", "1 s"}}, "/faults/0/machine"},
      {{{"kind", "cable"}, {"at", "1 s"}}, "/faults/0/kind"},
      {{{"kind", "link"}, {"link", "w1/pcie"}, {"from", "1 s"}, {"factor", 0.5}}, "/faults/0/link"},
      {{{"kind", "link"}, {"link", "p/nic"}, {"from", "1 s"}, {"factor", -0.1}},
       "/faults/0/factor"},
      {{{"kind", "link"}, {"link", "p/nic"}, {"from", "1 s"}, {"factor", 0}}, "/faults/0"},
      {{{"kind", "link"}, {"link", "p/nic"}, {"from", "1 s"}, {"factor", 1e-300}},
       "/faults/0/factor"},
      {{{"kind", "slowdown"}, {"device", "w1/gpu0"}, {"from", "1 s"}, {"factor", 0}},
       "/faults/0/factor"},
      {{{"kind", "slowdown"}, {"device", "w1/gpu3"}, {"from", "1 s"}, {"factor", 0.5}},
       "/faults/0/device"},
      {{{"kind", "slowdown"},
        {"device", "w1/gpu0"},
        {"from", "1 s"},
        {"until", "1 s"},
        {"factor", 0.5}},
       "/faults/0/until"},
      {{{"kind", "slowdown"}, {"device", "w1/gpu0"}, {"from", "1 s"}, {"factor", 2}},
       "/faults/0/factor"},
  };
  for (const auto& [fault, path] : cases) {
    try {
      test::parse(four_workers("async", nlohmann::json::array({fault})));
      ADD_FAILURE() << fault.dump();
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.json_path(), path) << e.what();
    }
  }
}

}  // namespace
}  // namespace replisim::fault_test
