// Steady-state stopping in the simulation (training.steps "auto"): on a compute-bound, a
// PS-bound and a synchronous scenario the stopped run's throughput lies within 1% of a run ten
// times longer, and a fault window keeps the run going until it has ended.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "core/base/json_cursor.h"
#include "core/metrics/metrics.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::machine;

// `workers` workers on their own machines (GPUs at `gpu_speed`), one PS on a machine whose NIC
// is `ps_nic`; a 10 MB one-layer model; default jitter, so the steps vary.
nlohmann::json workers_doc(int workers, const std::string& gpu_speed, const std::string& ps_nic,
                           const nlohmann::json& training) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, ps_nic)};
  nlohmann::json replicas = nlohmann::json::array();
  for (int i = 0; i < workers; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {gpu_speed}, "100 Gbps"));
    replicas.push_back("w" + std::to_string(i) + "/gpu0");
  }
  nlohmann::json t = {{"replicas", replicas}, {"ps", {"p/cpu"}}, {"warmup_steps", 10}};
  t.update(training, true);
  return test::scenario_json(machines, test::one_layer_model(2.5e6, "4 GFLOP"), t);
}

// The steps the run took: the most any client ran (synchronous: global steps).
int64_t steps_taken(const core::Trace& trace, const core::RunMetrics& m) {
  if (m.synchronous) return m.steady_state->stop_global_step;
  std::map<uint32_t, int64_t> steps;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep) steps[e.client] = std::max(steps[e.client], e.step + 1);
  }
  int64_t most = 0;
  for (const auto& [client, n] : steps) most = std::max(most, n);
  return most;
}

// Runs `doc` with steps "auto", then with ten times the steps it took, and compares.
void expect_steady_within_one_percent(nlohmann::json doc, const std::string& what) {
  doc["training"]["steps"] = "auto";
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::RunMetrics automatic = core::compute_metrics(trace);
  ASSERT_TRUE(automatic.steady_state.has_value()) << what;
  ASSERT_TRUE(automatic.steady_state->converged)
      << what << ": +-" << 100 * automatic.steady_state->half_width_fraction << "% over "
      << automatic.steady_state->updates << " updates";
  EXPECT_LE(automatic.steady_state->half_width_fraction, 0.01) << what;
  // The report's figure is the estimate the rule stopped on.
  EXPECT_NEAR(automatic.throughput_samples_per_s, automatic.steady_state->throughput_samples_per_s,
              1e-6 * automatic.throughput_samples_per_s)
      << what;
  const int64_t taken = steps_taken(trace, automatic);
  EXPECT_LT(taken, 1000) << what << ": it stopped before max_steps";
  nlohmann::json longer = doc;
  longer["training"]["steps"] = 10 * taken;
  const core::RunMetrics reference = test::simulate(longer, "between_graph");
  EXPECT_FALSE(reference.steady_state.has_value());
  EXPECT_NEAR(automatic.throughput_samples_per_s, reference.throughput_samples_per_s,
              0.01 * reference.throughput_samples_per_s)
      << what << ": stopped after " << taken << " steps";
  for (const std::string& w : automatic.warnings) ADD_FAILURE() << what << ": " << w;
}

TEST(SteadyStateStop, ComputeBoundRunAgreesWithOneTenTimesLonger) {
  // 4 GFLOP x 32 samples at 2 TFLOPS: 64 ms of compute against 2 x 10 MB at 100 Gbps (1.6 ms).
  expect_steady_within_one_percent(workers_doc(4, "2 TFLOPS", "100 Gbps", nlohmann::json::object()),
                                   "compute-bound");
}

TEST(SteadyStateStop, PsBoundRunAgreesWithOneTenTimesLonger) {
#if !defined(NDEBUG) || defined(REPLISIM_SANITIZED)
  GTEST_SKIP() << "Release only (a ResNet-50 run of about 500 steps per worker)";
#endif
  // The classroom's PS bottleneck: 8 async workers pulling and pushing ResNet-50 through one PS
  // NIC. (A one-layer model whose pulls and pushes alternate is not steady within 1,000 steps: its
  // workers drift in and out of phase over tens of seconds, and the interval says so.)
  expect_steady_within_one_percent(
      core::read_json_file(test::scenario_path("classroom/ps_bottleneck.json")), "PS-bound");
}

TEST(SteadyStateStop, SynchronousRunAgreesWithOneTenTimesLonger) {
  // R = T = 4 with a straggler at half speed: the straggler paces each global step.
  nlohmann::json doc = workers_doc(4, "2 TFLOPS", "100 Gbps", {{"sync", "sync"}});
  doc["cluster"]["machines"][4]["gpus"][0]["speed"] = "1 TFLOPS";
  expect_steady_within_one_percent(doc, "synchronous");
}

TEST(SteadyStateStop, WaitsForTheLastFaultWindowAndStopsAtMaxSteps) {
  nlohmann::json doc = workers_doc(4, "2 TFLOPS", "100 Gbps", {{"steps", "auto"}});
  doc["faults"] = {{{"kind", "slowdown"},
                    {"device", "w1/gpu0"},
                    {"factor", 0.5},
                    {"from", "2 s"},
                    {"until", "8 s"}}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  ASSERT_TRUE(m.steady_state && m.steady_state->converged)
      << (m.steady_state ? m.steady_state->half_width_fraction : -1);
  EXPECT_GE(m.steady_state->stop_s, 8.0);
  EXPECT_NEAR(m.window_end_s, m.steady_state->stop_s, 1e-9);

  // A tolerance no run of 60 steps reaches: it runs them all and says so.
  doc["faults"] = nlohmann::json::array();
  doc["training"]["max_steps"] = 60;
  doc["training"]["steady_tolerance"] = 1e-6;
  const core::RunMetrics capped = test::simulate(doc, "between_graph");
  ASSERT_TRUE(capped.steady_state.has_value());
  EXPECT_FALSE(capped.steady_state->converged);
  EXPECT_GT(capped.steady_state->half_width_fraction, 1e-6);
  EXPECT_TRUE(std::any_of(capped.warnings.begin(), capped.warnings.end(), [](const std::string& w) {
    return w.find("not steady to +-0.0001% when the run ended") != std::string::npos &&
           w.find("training.max_steps (60)") != std::string::npos;
  }));
}

// A window a run's steps leave empty names the field that bounds them: training.max_steps under
// "auto" (a breaker's real run said /training/steps, which "auto" runs do not count).
TEST(SteadyStateStop, AnEmptyWindowNamesMaxSteps) {
  // A worker ten times slower has not warmed up when the other one has run its 4 steps.
  nlohmann::json doc = workers_doc(2, "10 TFLOPS", "100 Gbps",
                                   {{"steps", 4}, {"warmup_steps", 3}, {"jitter", "none"}});
  doc["cluster"]["machines"][2]["gpus"][0]["speed"] = "1 TFLOPS";
  core::Trace trace = test::simulate_trace(doc, "between_graph");
  for (const bool steps_auto : {false, true}) {
    if (steps_auto) trace.outcome.steady_state = core::SteadyStateRecord{};
    try {
      core::compute_metrics(trace);
      ADD_FAILURE() << "no error for an empty window";
    } catch (const core::MeasurementError& e) {
      // The scenario's field (the run pipeline names it in the scenario's file, or the flag).
      EXPECT_EQ(e.scenario_path(), steps_auto ? "/training/max_steps" : "/training/steps");
      EXPECT_NE(std::string(e.what()).find(steps_auto ? "raise training.max_steps"
                                                      : "raise training.steps"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace replisim
