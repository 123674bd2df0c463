// The seed's claims as assertions: in-graph runs at the pace of its slowest tower; async
// between-graph workers keep their own pace; the update interval is the loop time divided by
// the number of workers; a parameter server's NIC caps throughput; more remote towers load the
// in-graph client.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::machine;

// Towers at 1x (2 TFLOPS) and 0.5x (1 TFLOPS) on their own machines; ample network.
nlohmann::json towers_doc(const std::vector<std::string>& gpu_speeds, double jitter = -1) {
  std::vector<nlohmann::json> machines = {machine("c", "1 TFLOPS", {}, "100 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t i = 0; i < gpu_speeds.size(); ++i) {
    machines.push_back(machine("m" + std::to_string(i), "1 TFLOPS", {gpu_speeds[i]}, "100 Gbps"));
    replicas.push_back("m" + std::to_string(i) + "/gpu0");
  }
  nlohmann::json training = {{"replicas", replicas},
                             {"client", "c"},
                             {"ps", {"c/cpu"}},
                             {"steps", 30},
                             {"warmup_steps", 5}};
  if (jitter == 0) training["jitter"] = 0;
  return test::scenario_json(machines, test::one_layer_model(1e6, "1 GFLOP"), training, "ideal");
}

constexpr double kBatch = 32;
constexpr double kSlowComputeS = 3 * 1e9 * kBatch / 1e12;  // forward + backward at 1 TFLOPS

TEST(InGraph, SlowestTowerSetsThePace) {
  const core::RunMetrics two = test::simulate(towers_doc({"2 TFLOPS", "1 TFLOPS"}, 0), "in_graph");
  EXPECT_GE(two.step_time_s.mean, kSlowComputeS);
  const core::RunMetrics three =
      test::simulate(towers_doc({"2 TFLOPS", "1 TFLOPS", "2 TFLOPS"}, 0), "in_graph");
  const double rate_two = two.clients.front().step_rate_per_s;
  const double rate_three = three.clients.front().step_rate_per_s;
  // Adding a fast tower cannot raise the global step rate above the slowest tower's.
  EXPECT_LE(rate_three, 1.0 / kSlowComputeS);
  EXPECT_LE(rate_three, rate_two * (1 + 1e-9));
  // The fast tower waits for its slower peer.
  double fast_tower_peers = 0;
  for (const core::WaitBreakdown& w : two.waits) {
    if (w.role == "tower0") fast_tower_peers = w.peers;
  }
  EXPECT_GT(fast_tower_peers, 0.3);
}

// The report states the input pipeline's cost when it takes more than a tenth of a step, and not
// otherwise.
TEST(InGraph, ASlowInputPipelineIsNoted) {
  auto input_note = [](const core::RunMetrics& m) {
    for (const std::string& n : m.notes) {
      if (n.rfind("input pipeline on ", 0) == 0) return n;
    }
    return std::string();
  };
  nlohmann::json doc = towers_doc({"2 TFLOPS", "2 TFLOPS"}, 0);
  // 64 samples a step at 1,000 samples/s: 64 ms of input on the client's CPU per step.
  doc["training"]["costs"] = {{"input_samples_per_s", 1000}};
  const std::string note = input_note(test::simulate(doc, "in_graph"));
  EXPECT_NE(note.find("input pipeline on c/cpu: 64"), std::string::npos) << note;
  EXPECT_NE(note.find("set training.costs to change it"), std::string::npos) << note;
  doc["training"]["costs"] = {{"input_samples_per_s", 1e9}};
  EXPECT_EQ(input_note(test::simulate(doc, "in_graph")), "");
}

TEST(BetweenGraph, AsyncWorkersKeepTheirOwnPace) {
  const core::RunMetrics both =
      test::simulate(towers_doc({"2 TFLOPS", "1 TFLOPS"}), "between_graph");
  const core::RunMetrics fast_alone = test::simulate(towers_doc({"2 TFLOPS"}), "between_graph");
  nlohmann::json slow_doc = towers_doc({"2 TFLOPS", "1 TFLOPS"});
  slow_doc["training"]["replicas"] = {"m1/gpu0"};
  const core::RunMetrics slow_alone = test::simulate(slow_doc, "between_graph");
  const double fast = 1 / test::client_step_time(both, "worker0");
  const double slow = 1 / test::client_step_time(both, "worker1");
  const double fast_standalone = 1 / test::client_step_time(fast_alone, "worker0");
  const double slow_standalone = 1 / test::client_step_time(slow_alone, "worker0");
  EXPECT_NEAR(fast, fast_standalone, 0.03 * fast_standalone);
  EXPECT_NEAR(slow, slow_standalone, 0.03 * slow_standalone);
  EXPECT_NEAR(fast / slow, 2.0, 0.1);  // each at its own speed: the fast one is not held back
}

class AsyncUpdateInterval : public ::testing::TestWithParam<int> {};

TEST_P(AsyncUpdateInterval, IsLoopTimeOverWorkers) {
  const int n = GetParam();
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "100 Gbps"));
    replicas.push_back("w" + std::to_string(i) + "/gpu0");
  }
  const nlohmann::json doc = test::scenario_json(
      machines, test::one_layer_model(1e6, "1 GFLOP"),
      {{"replicas", replicas},
       {"ps", {"p/cpu"}},
       {"steps", 60},
       {"warmup_steps", 10},
       // A fast input pipeline keeps the GPUs, not the workers' CPUs, the busiest devices.
       {"costs", {{"input_samples_per_s", 1e6}}}},
      "lv08");
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  double rate_sum = 0;
  for (const core::ClientMetrics& c : m.clients) rate_sum += 1 / c.mean_step_time_s;
  EXPECT_NEAR(m.update_interval_s, 1 / rate_sum, 0.05 / rate_sum);
  if (n == 1) {
    EXPECT_EQ(m.staleness_mean, 0);
  } else {
    EXPECT_NEAR(m.staleness_mean, n - 1, 0.1 * (n - 1));
  }
  // The network is not the bottleneck here: the GPUs are.
  EXPECT_NE(m.bottleneck.name.find("/gpu0"), std::string::npos) << m.bottleneck.name;
}

INSTANTIATE_TEST_SUITE_P(Workers, AsyncUpdateInterval, ::testing::Values(1, 2, 4, 8));

TEST(BetweenGraph, ParameterServerNicCapsThroughput) {
  // 8 workers, one PS on its own machine behind a 1 Gbps NIC. Pulls share the
  // PS NIC's up direction and pushes its down direction: a closed queueing network whose
  // mean-value analysis gives N / (N + 1) = 89% of the bound for 8 workers. The ideal network
  // model is used: LV08's reverse ACK traffic (5% per flow) takes a further share of each
  // direction when both are busy, which is LV08's prediction, not the sharing behaviour tested.
  std::vector<nlohmann::json> machines = {machine("ps", "1 TFLOPS", {}, "1 Gbps", "25 us")};
  nlohmann::json replicas = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
    replicas.push_back("w" + std::to_string(i) + "/gpu0");
  }
  // ResNet-50: 54 tensors of unequal sizes per pull and per push. They travel over one
  // connection per worker, so each worker takes one fair share of the PS NIC; with one share per
  // tensor, a worker that has just started would take most of it and the workers would fall into
  // lockstep (about half the bound).
  const nlohmann::json doc = test::scenario_json(
      machines, {{"preset", "resnet50"}},
      {{"replicas", replicas}, {"ps", {"ps/cpu"}}, {"steps", 60}, {"warmup_steps", 10}}, "ideal",
      "100 Gbps");
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  // Batch x NIC bandwidth per direction / parameter bytes.
  const double bound = kBatch * 1.25e8 / (4 * 25.557e6);
  EXPECT_GE(m.throughput_samples_per_s, 0.8 * bound);
  EXPECT_LE(m.throughput_samples_per_s, bound);
  EXPECT_TRUE(m.bottleneck.name == "ps/nic/up" || m.bottleneck.name == "ps/nic/down")
      << m.bottleneck.name;
}

TEST(InGraph, MoreRemoteTowersLoadTheClient) {
  double previous = 0;
  for (int towers : {1, 2, 4, 8}) {
    std::vector<nlohmann::json> machines = {machine("client", "200 GFLOPS", {}, "10 Gbps")};
    nlohmann::json replicas = nlohmann::json::array();
    for (int i = 0; i < towers; ++i) {
      machines.push_back(machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
      replicas.push_back("m" + std::to_string(i) + "/gpu0");
    }
    const nlohmann::json doc = test::scenario_json(machines, {{"preset", "resnet50"}},
                                                   {{"replicas", replicas},
                                                    {"client", "client"},
                                                    {"ps", {"client/cpu"}},
                                                    {"steps", 12},
                                                    {"warmup_steps", 2}},
                                                   "lv08", "400 Gbps");
    const core::RunMetrics m = test::simulate(doc, "in_graph");
    EXPECT_EQ(m.bottleneck.name.rfind("client/", 0), 0u) << towers << ": " << m.bottleneck.name;
    if (towers > 1) {
      EXPECT_GT(m.bottleneck.utilization, previous) << towers;
    }
    previous = m.bottleneck.utilization;
  }
}

}  // namespace
}  // namespace replisim
