// Closed-form checks (network_model "ideal", costs "none", jitter 0): one worker and one PS on
// separate machines, one layer of P parameters, F forward FLOP per sample, batch b. With route
// bandwidth B (minimum over hops) and latency L (sum over hops):
//   step time = 2 (4P / B + L) + 3 F b / speed
// (pull the weights, forward + backward = 3 F b, push the gradients).
#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

struct ClosedFormCase {
  std::string name;
  std::string replica;  // "w/cpu" or "w/gpu0"
  std::string worker_nic;
  std::string ps_nic;
  double params;
  double forward_flop;
  int batch;
};

// Names the case in test listings (gtest would otherwise print the struct's bytes).
void PrintTo(const ClosedFormCase& c, std::ostream* os) {
  *os << c.name;
}

class ClosedForm : public ::testing::TestWithParam<ClosedFormCase> {};

TEST_P(ClosedForm, StepTimeMatches) {
  const ClosedFormCase c = GetParam();
  const nlohmann::json doc =
      test::scenario_json({test::machine("w", "2 TFLOPS", {"8 TFLOPS"}, c.worker_nic, "20 us"),
                           test::machine("p", "500 GFLOPS", {}, c.ps_nic, "30 us")},
                          test::one_layer_model(c.params, std::to_string(c.forward_flop) + " FLOP"),
                          {{"replicas", {c.replica}},
                           {"ps", {"p/cpu"}},
                           {"batch_per_replica", c.batch},
                           {"costs", "none"},
                           {"jitter", 0}},
                          "ideal", "100 Gbps");
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  const int worker = p.find_device(c.replica), ps = p.find_device("p/cpu");
  const double bandwidth = p.route_bandwidth_bytes_per_s(ps, worker);
  const double latency = p.route_latency_s(ps, worker);
  ASSERT_DOUBLE_EQ(bandwidth, p.route_bandwidth_bytes_per_s(worker, ps));
  const double speed = p.devices[size_t(worker)].speed_flop_per_s;
  const double expected =
      2 * (4 * c.params / bandwidth + latency) + 3 * c.forward_flop * c.batch / speed;
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  EXPECT_NEAR(m.step_time_s.mean, expected, 0.01 * expected);
  EXPECT_NEAR(m.step_time_s.p95, expected, 0.01 * expected);
  EXPECT_DOUBLE_EQ(m.staleness_mean, 0);  // one worker: nothing happens between read and apply
  EXPECT_NEAR(m.throughput_samples_per_s, c.batch / expected, 0.01 * c.batch / expected);
}

// LV08 (SimGrid's default TCP model): bandwidth x 0.97 and latency x 13.01; the latency is
// charged once per burst on a connection, so with one tensor each way the same form holds.
TEST(ClosedFormLv08, StepTimeMatches) {
  const double params = 2e6, forward_flop = 2e9, batch = 16;
  const nlohmann::json doc =
      test::scenario_json({test::machine("w", "2 TFLOPS", {}, "10 Gbps", "20 us"),
                           test::machine("p", "500 GFLOPS", {}, "10 Gbps", "30 us")},
                          test::one_layer_model(params, "2 GFLOP"),
                          {{"replicas", {"w/cpu"}},
                           {"ps", {"p/cpu"}},
                           {"batch_per_replica", batch},
                           {"costs", "none"},
                           {"jitter", 0}},
                          "lv08", "1 TBps");
  const double bandwidth = 0.97 * 1.25e9, latency = 13.01 * (20e-6 + 1e-6 + 30e-6);
  const double expected = 2 * (4 * params / bandwidth + latency) + 3 * forward_flop * batch / 2e12;
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  EXPECT_NEAR(m.step_time_s.mean, expected, 0.01 * expected);
}

// A PCIe copy inside a machine is not TCP: under LV08 too it takes the link's own bandwidth and
// latency (neither 0.97 nor 13.01). The worker on w/gpu0 pulls from and pushes to a PS on its
// own machine's CPU; a large layer checks the bandwidth, a small one the latency.
TEST(ClosedFormLv08, APcieCopyPaysNoTcpFactors) {
  for (const double params : {25e6, 1e3}) {
    const nlohmann::json doc =
        test::scenario_json({test::machine("w", "2 TFLOPS", {"8 TFLOPS"}, "10 Gbps")},
                            test::one_layer_model(params, "1 MFLOP"),
                            {{"replicas", {"w/gpu0"}},
                             {"ps", {"w/cpu"}},
                             {"batch_per_replica", 4},
                             {"costs", "none"},
                             {"jitter", 0}},
                            "lv08");
    const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
    const core::Platform& p = plan.platform;
    const int gpu = p.find_device("w/gpu0"), cpu = p.find_device("w/cpu");
    const double bandwidth = p.route_bandwidth_bytes_per_s(cpu, gpu);
    const double latency = p.route_latency_s(cpu, gpu);
    const double expected = 2 * (4 * params / bandwidth + latency) + 3 * 1e6 * 4 / 8e12;
    const core::RunMetrics m = test::simulate(doc, "between_graph");
    EXPECT_NEAR(m.step_time_s.mean, expected, 0.005 * expected) << params << " parameters";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ClosedForm,
    ::testing::Values(
        // CPU replica: worker NIC (1 Gbps) is the narrowest hop; compute and network similar.
        ClosedFormCase{"CpuReplicaWorkerNicNarrowest", "w/cpu", "1 Gbps", "10 Gbps", 1e6, 1e9, 8},
        // GPU replica: the route adds the PCIe hop's latency; the PS NIC is the narrowest.
        ClosedFormCase{"GpuReplicaPsNicNarrowest", "w/gpu0", "25 Gbps", "5 Gbps", 5e6, 4e9, 32},
        // Network-dominated: a big layer, little compute.
        ClosedFormCase{"NetworkDominated", "w/gpu0", "10 Gbps", "10 Gbps", 25e6, 1e8, 4}),
    [](const ::testing::TestParamInfo<ClosedFormCase>& info) { return info.param.name; });

}  // namespace
}  // namespace replisim
