// Forward-only steps (training.forward_only) in the simulator: the PS NIC's fair share in closed
// form, and field report F04's shape (forward-only steps over 1 GbE flatten after 2 workers).
//
// Closed form (network_model "ideal", costs "none", jitter 0): N async workers, each on its own
// machine, pull a model of B bytes from one PS each step; every NIC has bandwidth W. The N pulls
// share the PS NIC's up direction, W / N each, and nothing else is sent, so a worker's step is
//   N B / W + L + F b / speed,
// its steps/s the inverse, and the total samples/s b W / B once the pulls dominate.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/metrics/report.h"
#include "core/metrics/validation.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

constexpr double kParams = 4e6;  // 16 MB of variables: 128 ms a pull at 1 Gbps
constexpr double kForwardFlop = 1e6;
constexpr int kBatch = 32;

nlohmann::json workers_pulling(int workers) {
  std::vector<nlohmann::json> machines = {test::machine("p", "500 GFLOPS", {}, "1 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) {
    machines.push_back(test::machine("w" + std::to_string(w), "1 TFLOPS", {}, "1 Gbps"));
    replicas.push_back("w" + std::to_string(w) + "/cpu");
  }
  return test::scenario_json(machines, test::one_layer_model(kParams, "1 MFLOP"),
                             {{"replicas", replicas},
                              {"ps", {"p/cpu"}},
                              {"client", "p"},
                              {"batch_per_replica", kBatch},
                              {"steps", 12},
                              {"warmup_steps", 2},
                              {"costs", "none"},
                              {"jitter", 0},
                              {"forward_only", true}},
                             "ideal", "1 TBps");
}

TEST(ForwardOnlySim, StepsPerWorkerAreThePsNicsFairShare) {
  for (int n : {1, 2, 4, 8}) {
    const nlohmann::json doc = workers_pulling(n);
    const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
    const core::Platform& p = plan.platform;
    const int ps = p.find_device("p/cpu"), w0 = p.find_device("w0/cpu");
    const double bandwidth = p.route_bandwidth_bytes_per_s(ps, w0);
    const double bytes = 4 * kParams;
    const double step_s = n * bytes / bandwidth + p.route_latency_s(ps, w0) +
                          kForwardFlop * kBatch / p.devices[size_t(w0)].speed_flop_per_s;
    const core::Trace trace = test::run_plan(plan);
    EXPECT_TRUE(test::events_of(trace, core::EventKind::kUpdate).empty());
    const core::RunMetrics m = core::compute_metrics(trace);
    ASSERT_EQ(m.clients.size(), size_t(n));
    for (const core::ClientMetrics& c : m.clients) {
      EXPECT_NEAR(c.step_rate_per_s, 1 / step_s, 0.02 / step_s) << n << " workers, " << c.name;
    }
    const double total = n * kBatch / step_s;
    EXPECT_NEAR(m.throughput_samples_per_s, total, 0.02 * total) << n << " workers";
    std::printf("%d worker(s): %.3f steps/s per worker (closed form %.3f), %.1f samples/s\n", n,
                m.clients[0].step_rate_per_s, 1 / step_s, m.throughput_samples_per_s);
    // No update happened: the report says so instead of printing zeros.
    EXPECT_TRUE(m.forward_only);
    EXPECT_EQ(m.updates_in_window, 0);
    const std::string report = core::format_report({m}, "forward only");
    EXPECT_NE(report.find(core::kNoUpdatesText), std::string::npos) << report;
    EXPECT_EQ(report.find("0.00 / 0"), std::string::npos) << report;
    EXPECT_EQ(core::summary_json({m}, nlohmann::json::object())["runs"][0]["forward_only"], true);
  }
}

// The same run's link utilisation: the PS NIC's up direction carries every byte, its down none.
TEST(ForwardOnlySim, NothingGoesBackToTheParameterServer) {
  const core::RunMetrics m = test::simulate(workers_pulling(4), "between_graph");
  double up = -1, down = -1;
  for (const core::ResourceUse& link : m.links) {
    if (link.name == "p/nic/up") up = link.utilization;
    if (link.name == "p/nic/down") down = link.utilization;
  }
  EXPECT_GT(up, 0.97);
  EXPECT_LT(down, 0.01);
}

// validate's comparison of two forward-only runs of one plan: the update metrics and the push
// and apply phases say why they are empty, in the text and the JSON.
TEST(ForwardOnlySim, ValidationSaysNoUpdates) {
  const core::Plan plan = core::compile_plan(test::parse(workers_pulling(2)), "between_graph", {});
  const core::Trace a = test::run_plan(plan), b = test::run_plan(plan);
  const core::Validation v = core::validate_runs({&a}, {&b}, 0.08);
  int absent = 0;
  for (const core::Compared& c : v.metrics) absent += c.absent == core::kNoUpdatesText;
  for (const core::PhaseComparison& p : v.phases) {
    const bool update_phase = p.phase == core::Phase::kPush || p.phase == core::Phase::kApply;
    EXPECT_EQ(p.time_per_step_s.absent.empty(), !update_phase) << core::phase_name(p.phase);
  }
  EXPECT_EQ(absent, 2);  // the global update interval and the staleness
  EXPECT_TRUE(v.within_tolerance);
  const std::string text = core::format_validation(v);
  std::istringstream lines(text);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    const bool update_row = line.rfind("push ", 0) == 0 || line.rfind("apply ", 0) == 0 ||
                            line.rfind("global update interval", 0) == 0 ||
                            line.rfind("staleness", 0) == 0;
    if (update_row) rows += line.find(core::kNoUpdatesText) != std::string::npos;
  }
  EXPECT_EQ(rows, 4) << text;
  EXPECT_EQ(core::validation_to_json(v)["metrics"][3]["absent"], core::kNoUpdatesText);
}

// F04: scenarios/field/f04_forward_only_1gbe.json with its first 1, 2, 4 and 8 workers. One worker
// computes while the PS NIC idles; from 2 workers on the NIC is full and the total is its closed
// form, b x 0.97 W / B (LV08 carries 0.97 of a link's bandwidth between machines).
TEST(ForwardOnlySim, F04FlattensAfterTwoWorkersOver1GbE) {
  std::ifstream in(test::scenario_path("field/f04_forward_only_1gbe.json"));
  const nlohmann::json base = nlohmann::json::parse(in);
  const core::Scenario full = test::parse(base);
  const double bytes = full.model.total_params() * full.model.bytes_per_param;
  const double ceiling = full.training.batch_per_replica * 0.97 * 125e6 / bytes;
  std::map<int, double> total;
  for (int n : {1, 2, 4, 8}) {
    nlohmann::json doc = base;
    doc["training"]["replicas"] = nlohmann::json::array();
    for (int w = 0; w < n; ++w)
      doc["training"]["replicas"].push_back("w" + std::to_string(w) + "/gpu0");
    const core::RunMetrics m = test::simulate(doc, "between_graph");
    total[n] = m.throughput_samples_per_s;
    std::printf(
        "F04 %d worker(s): %.1f images/s (PS NIC closed form %.1f), busiest link %s %.0f%%\n", n,
        total[n], ceiling, m.links.front().name.c_str(), 100 * m.links.front().utilization);
  }
  EXPECT_LT(total[1], 0.85 * ceiling);  // one worker leaves the NIC idle while it computes
  EXPECT_GT(total[2], 1.2 * total[1]);  // a second one fills it
  for (int n : {2, 4, 8}) EXPECT_NEAR(total[n], ceiling, 0.05 * ceiling) << n << " workers";
  EXPECT_LT(total[8], 1.05 * total[2]);  // and four times as many add nothing
}

}  // namespace
}  // namespace replisim
