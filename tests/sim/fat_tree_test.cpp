// Fat trees (issue 41): SimGrid's nested star zones route as core::Platform::route does, and a
// 1,024-machine tree's simulated rates are the closed forms of the link that binds them: the
// parameter server's NIC when it is the bottleneck, an oversubscribed pod uplink's fair share
// when that is.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/metrics/critical_path.h"
#include "core/strategy/strategy.h"
#include "sim/sim_platform.h"
#include "tests/sim/simgrid_routes.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// Release only: a Debug or sanitizer build takes minutes over 1,024 machines.
#ifndef SKIP_UNLESS_RELEASE
#if !defined(NDEBUG) || defined(REPLISIM_SANITIZED)
#define SKIP_UNLESS_RELEASE() GTEST_SKIP() << "Release only (many simulations)"
#else
#define SKIP_UNLESS_RELEASE() static_cast<void>(0)
#endif
#endif

nlohmann::json level(int down, double ratio) {
  return {{"down", down}, {"oversubscription", ratio}};
}

TEST(FatTree, SimGridRoutesAreThePlatformsRoutes) {
  // 16 machines, 3 levels (8 racks, 4 pods, 2 superpods), every switch blocking (given
  // bandwidths below their ports' total) so that all of them stay in SimGrid's routes.
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < 16; ++i) {
    machines.push_back(
        test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(machines, test::one_layer_model(1e6, "1 kFLOP"),
                                           {{"replicas", "m*/gpu0"}, {"ps", {"m0/cpu"}}});
  nlohmann::json levels = nlohmann::json::array({level(2, 1), level(2, 2), level(2, 4)});
  for (nlohmann::json& l : levels) l["switch"] = {{"bandwidth", "15 Gbps"}};
  doc["cluster"]["switch"] = {{"bandwidth", "12 Gbps"}};
  doc["cluster"]["topology"] = {{"kind", "fat_tree"}, {"levels", levels}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  ASSERT_EQ(p.pods.size(), 6u);
  for (const core::PlatformPod& pod : p.pods) EXPECT_TRUE(p.switch_can_bind(pod.switch_link));
  EXPECT_TRUE(p.switch_can_bind(p.switch_link));
  EXPECT_EQ(test::expect_simgrid_routes_are_the_platforms(p, "fat_tree_test"), 32 * 31);
}

// The bounds on client `name`'s critical path (what bounded its transfers' rates), largest first
// per share, joined by ", "; "" when the path names none.
std::string bounds_of(const core::RunMetrics& m, const std::string& name) {
  std::string out;
  for (const core::CriticalPath& path : m.paths) {
    if (path.client != name) continue;
    for (const core::PathShare& share : path.shares) {
      for (const auto& bound : share.bounds) out += (out.empty() ? "" : ", ") + bound.first;
    }
  }
  return out;
}

constexpr int kMachines = 1024;
constexpr double kWeightsBytes = 1e6;  // 250,000 float32 parameters

// 1,024 machines "m<i>" (a 10 TFLOPS GPU, a 10 Gbit/s NIC each) in a fat tree of 64 racks of 16
// (1:1 uplinks) and 4 pods of 16 racks (`pod_ratio`:1 uplinks), a worker on every GPU,
// asynchronous, in lockstep (no jitter, no costs), and one dedicated PS (joining rack0, in pod0)
// with a `ps_nic` NIC holding 1 MB of weights; `steps` steps each, the first a warm-up.
nlohmann::json thousand_machines(double pod_ratio, const std::string& ps_nic, int steps) {
  nlohmann::json worker = test::machine("m", "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps");
  worker["count"] = kMachines;
  nlohmann::json doc = test::scenario_json(
      {worker}, test::one_layer_model(kWeightsBytes / 4, "1 kFLOP"),
      {{"replicas", "m*/gpu0"},
       {"ps",
        {{"count", 1},
         {"on", "dedicated"},
         {"machine",
          // Applies of 1,024 workers' gradients take microseconds, not a share of the step.
          {{"cpu", {{"speed", "1000 TFLOPS"}}},
           {"nic", {{"bandwidth", ps_nic}, {"latency", "10 us"}}}}}}},
       {"costs", "none"},
       {"jitter", 0},
       {"steps", steps},
       {"warmup_steps", 1}},
      "ideal");
  doc["cluster"].erase("switch");
  doc["cluster"]["topology"] = {
      {"kind", "fat_tree"},
      {"levels", nlohmann::json::array({level(16, 1), level(16, pod_ratio)})}};
  return doc;
}

// The PS's route latency to `worker_device` (each of a step's pull and push pays it once).
double latency_to(const core::Platform& p, const std::string& worker_device) {
  return p.route_latency_s(p.find_device("ps0/cpu"), p.find_device(worker_device));
}

// The seconds a step of a worker on `worker_device` takes when its pull and its push each move
// the weights at `rate` bytes/s, plus the route's latency each way.
double step_closed_form(const core::Platform& p, const std::string& worker_device, double rate) {
  return 2 * (kWeightsBytes / rate + latency_to(p, worker_device));
}

// PS-bound: the PS's 100 Gbit/s NIC is the narrowest link every pull crosses, and the 1,024
// workers pull at once: each gets 1/1,024 of it, so the PS's NIC moves its closed form B.
TEST(FatTree, APsBoundThousandMachinePullsAtItsNicsClosedForm) {
  SKIP_UNLESS_RELEASE();
  const nlohmann::json doc = thousand_machines(1, "100 Gbps", 4);
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  ASSERT_EQ(p.racks.size(), 64u);
  ASSERT_EQ(p.pods.size(), 4u);
  ASSERT_EQ(p.machines.size(), size_t(kMachines) + 1);
  const double nic = 100e9 / 8;
  const auto start = std::chrono::steady_clock::now();
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const char* worker : {"worker1", "worker500", "worker1023"}) {
    const std::string device = "m" + std::string(worker + 6) + "/gpu0";
    const double expected = step_closed_form(p, device, nic / kMachines);
    const double got = test::client_step_time(m, worker);
    // What the PS's NIC moved while this worker pulled: 1,024 pulls of the weights.
    const double pull_rate = kMachines * kWeightsBytes / (got / 2 - latency_to(p, device));
    std::printf("%s: step %.5f s, closed form %.5f s; PS NIC pull rate %.4g Gbit/s (NIC %.4g)\n",
                worker, got, expected, pull_rate * 8 / 1e9, nic * 8 / 1e9);
    EXPECT_NEAR(got, expected, 0.02 * expected) << worker;
    EXPECT_NEAR(pull_rate, nic, 0.02 * nic) << worker;
    EXPECT_EQ(bounds_of(m, worker).rfind("ps0/nic/", 0), 0u) << bounds_of(m, worker);
  }
  std::printf("1,024 machines x 4 steps: %.2f s wall (compile excluded)\n", wall_s);
}

// Pods' uplinks 4:1 oversubscribed, the PS (a 1.6 Tbit/s NIC, so that the PS is not the
// bottleneck) in pod0: the 768 workers of pods 1 to 3 pull through pod0's uplink, whose
// bandwidth U is (its racks' uplinks) / 4, each at U / 768 — less than the PS NIC's share (1.6
// Tbit/s / 1,024) and than rack0's uplink's and their own pods' uplinks' shares.
TEST(FatTree, CrossPodPullsGetTheAggregationUplinksFairShare) {
  SKIP_UNLESS_RELEASE();
  // Pod 0's workers, bound by the PS's NIC alone, step about 2.8 times as fast and close the
  // measured window: 16 steps leave the others at least 3 whole steps in it.
  const nlohmann::json doc = thousand_machines(4, "1600 Gbps", 16);
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  ASSERT_EQ(p.pods.size(), 4u);
  const double uplink = p.links[size_t(p.pods[0].uplink)].bandwidth_bytes_per_s;
  // rack0: 16 workers' NICs and the PS's; the other 15 racks 16 NICs each; all over 4.
  ASSERT_DOUBLE_EQ(uplink, (16 * 10e9 + 1600e9 + 15 * 16 * 10e9) / 8 / 4);
  const int cross_pod = 3 * kMachines / 4;
  const double rate = uplink / cross_pod;
  ASSERT_LT(rate, 1600e9 / 8 / (kMachines + 0.0));  // the PS NIC's share is larger
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  for (const char* worker : {"worker256", "worker700", "worker1023"}) {  // pods 1 to 3
    const std::string device = "m" + std::string(worker + 6) + "/gpu0";
    const double expected = step_closed_form(p, device, rate);
    const double got = test::client_step_time(m, worker);
    const double pull_rate = kWeightsBytes / (got / 2 - latency_to(p, device));
    std::printf("%s: step %.5f s, closed form %.5f s; pull rate %.4g Gbit/s (U / 768 = %.4g)\n",
                worker, got, expected, pull_rate * 8 / 1e9, rate * 8 / 1e9);
    EXPECT_NEAR(got, expected, 0.02 * expected) << worker;
    EXPECT_NEAR(pull_rate, rate, 0.02 * rate) << worker;
    // Its pulls' bound (the push's may be named after the PS's NIC: each transfer's bound is the
    // link of least equal share, Network::binding_cap, not the max-min solution).
    EXPECT_NE(bounds_of(m, worker).find("pod0/aggregation/uplink/up"), std::string::npos)
        << worker << ": " << bounds_of(m, worker);
  }
  const std::string bound_by = core::describe_path(m.bound_by, 4, true);
  std::printf("bound by: %s\nbusiest: %s\n", bound_by.c_str(), m.bottleneck.name.c_str());
  EXPECT_NE(bound_by.find("pod0/aggregation/uplink"), std::string::npos) << bound_by;
}

}  // namespace
}  // namespace replisim
