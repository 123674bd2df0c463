// The viewer's wait tracks are the report's wait breakdown drawn (core::wait_stretches): over the
// measured steps, a role's stretches of each cause add up to the breakdown's share of it (the
// network's share also holds the role's own transfers, which are no wait).
#include <map>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

void expect_stretches_add_up_to_the_breakdown(const core::Trace& trace) {
  const core::RunMetrics metrics = core::compute_metrics(trace);
  const std::vector<core::WaitStretch> stretches = core::wait_stretches(trace);
  ASSERT_FALSE(stretches.empty());
  ASSERT_FALSE(metrics.waits.empty());
  // The measured steps of every client: those wholly inside the window.
  std::map<uint32_t, std::vector<std::pair<double, double>>> measured;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep && e.start_s >= metrics.window_start_s - 1e-12 &&
        e.end_s <= metrics.window_end_s + 1e-12) {
      measured[e.client].emplace_back(e.start_s, e.end_s);
    }
  }
  for (const core::WaitBreakdown& w : metrics.waits) {
    const uint32_t role = trace.find(w.role);
    // The role's client: the one whose step events its compute belongs to.
    uint32_t client = core::kNoString;
    for (const core::TraceEvent& e : trace.events) {
      if (e.kind == core::EventKind::kCompute && e.actor == role) {
        client = e.client;
        break;
      }
    }
    ASSERT_NE(client, core::kNoString) << w.role;
    double total = 0;
    for (const auto& [from, until] : measured[client]) total += until - from;
    std::map<core::WaitCause, double> seconds;
    for (const core::WaitStretch& s : stretches) {
      if (s.role != role) continue;
      for (const auto& [from, until] : measured[client]) {
        seconds[s.cause] += std::max(0.0, std::min(s.end_s, until) - std::max(s.start_s, from));
      }
    }
    const double tolerance = 1e-6;
    EXPECT_NEAR(seconds[core::WaitCause::kClient] / total, w.client, tolerance) << w.role;
    EXPECT_NEAR(seconds[core::WaitCause::kPeers] / total, w.peers, tolerance) << w.role;
    EXPECT_NEAR(seconds[core::WaitCause::kParameterServer] / total, w.ps, tolerance) << w.role;
    EXPECT_NEAR(seconds[core::WaitCause::kToken] / total, w.token, tolerance) << w.role;
    EXPECT_NEAR(seconds[core::WaitCause::kOther] / total, w.other, tolerance) << w.role;
    EXPECT_LE(seconds[core::WaitCause::kNetwork] / total, w.network + tolerance) << w.role;
  }
}

TEST(WaitStretches, AddUpToTheReportsBreakdownInGraph) {
  expect_stretches_add_up_to_the_breakdown(
      test::simulate_trace(core::read_json_file(test::seed_scenario()), "in_graph"));
}

TEST(WaitStretches, AddUpToTheReportsBreakdownWithSyncTokens) {
  nlohmann::json doc = core::read_json_file(test::scenario_path("classroom/sync_straggler.json"));
  doc["training"]["steps"] = 30;
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  expect_stretches_add_up_to_the_breakdown(trace);
  bool token = false;
  for (const core::WaitStretch& s : core::wait_stretches(trace)) {
    token |= s.cause == core::WaitCause::kToken;
  }
  EXPECT_TRUE(token) << "synchronous workers wait for their token";
}

// A synchronous worker's wait for its token is "token" under every transport: the token's own
// trip back (its transfer and, under a transport that copies between processes, its
// serialisation and deserialisation) ends the wait and does not turn it into "other".
TEST(WaitStretches, ATokenWaitIsATokenUnderEveryTransport) {
  // Two workers, one at half speed, R = T = 2: the fast one waits about half of each step.
  std::vector<nlohmann::json> machines = {test::machine("p", "1 TFLOPS", {}, "100 Gbps")};
  machines.push_back(test::machine("fast", "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps"));
  machines.push_back(test::machine("slow", "1 TFLOPS", {"1 TFLOPS"}, "100 Gbps"));
  nlohmann::json doc =
      test::scenario_json(machines, test::one_layer_model(1e6, "1 GFLOP"),
                          {{"replicas", {"fast/gpu0", "slow/gpu0"}},
                           {"ps", {"p/cpu"}},
                           {"steps", 20},
                           {"costs", "none"},
                           {"sync", {{"replicas_to_aggregate", 2}, {"variant", "strict"}}}});
  for (const char* preset : {"ideal", "tcp", "tf1_grpc"}) {
    doc["cluster"]["transport"] = {{"preset", preset}};
    const core::Trace trace = test::simulate_trace(doc, "between_graph");
    const core::RunMetrics m = core::compute_metrics(trace);
    const core::WaitBreakdown* fast = nullptr;
    for (const core::WaitBreakdown& w : m.waits) {
      if (w.role == "worker0") fast = &w;
    }
    ASSERT_NE(fast, nullptr) << preset;
    EXPECT_GT(fast->token, 0.3) << preset;
    EXPECT_LT(fast->other, 0.05) << preset;
    expect_stretches_add_up_to_the_breakdown(trace);
  }
}

// A restart runs steps again: each run of a step has its waits (the viewer draws both).
TEST(WaitStretches, EachRunOfAStepARestartRanAgainHasItsWaits) {
  const core::Trace trace = test::simulate_trace(
      core::read_json_file(test::scenario_path("classroom/ps_failure.json")), "between_graph");
  const std::vector<core::WaitStretch> stretches = core::wait_stretches(trace);
  std::map<std::pair<uint32_t, int64_t>, std::vector<const core::TraceEvent*>> runs;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep) runs[{e.client, e.step}].push_back(&e);
  }
  int repeated = 0;
  for (const auto& [key, step_runs] : runs) {
    if (step_runs.size() < 2) continue;
    ++repeated;
    for (const core::TraceEvent* run : step_runs) {
      bool waits = false;
      for (const core::WaitStretch& w : stretches) {
        waits |= w.role == run->actor && w.end_s > run->start_s && w.start_s < run->end_s;
      }
      EXPECT_TRUE(waits) << trace.str(run->actor) << " step " << run->step << " at "
                         << run->start_s;
    }
  }
  EXPECT_GT(repeated, 0) << "the restart ran no step again";
}

// A damaged file's step number sizes nothing: no waits (the metrics refuse such a trace).
TEST(WaitStretches, AStepNumberWithGapsGivesNone) {
  core::Trace trace = test::simulate_trace(core::read_json_file(test::seed_scenario()), "in_graph");
  ASSERT_FALSE(core::wait_stretches(trace).empty());
  for (core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep) {
      e.step = (int64_t(1) << 24) - 1;
      break;
    }
  }
  EXPECT_TRUE(core::wait_stretches(trace).empty());
}

}  // namespace
}  // namespace replisim
