// Several NICs per machine (issue 41, "Networks as they are bought"): SimGrid's routes go through
// the NIC core::Platform::nic_toward chooses for each pair of machines, a parameter server of two
// NICs serves its workers twice as fast as one where its NIC binds, one pair of machines never
// gets more than one NIC, and both network engines give the same figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/metrics/critical_path.h"
#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"
#include "tests/sim/simgrid_routes.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

constexpr double kNicBytesPerS = 10e9 / 8;  // 10 Gbit/s
constexpr double kVariableBytes = 100e6;    // 25 M float parameters

// `workers` machines w0.. (a 10 TFLOPS GPU, one 10 Gbit/s NIC each, or `worker_nics`), then
// machine "ps" with `ps_nics` 10 Gbit/s NICs holding the one PS; asynchronous, 100 MB of
// variables, no compute or costs to speak of, no jitter: the workers pull together and push
// together, so a step is a pull and a push at the PS NIC's fair share.
nlohmann::json ps_serving(int workers, int ps_nics, const std::string& network_model,
                          int worker_nics = 1) {
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < workers; ++i) {
    nlohmann::json w = test::machine("w" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps");
    w["nic"]["count"] = worker_nics;
    machines.push_back(w);
  }
  nlohmann::json ps = test::machine("ps", "1 TFLOPS", {}, "10 Gbps");
  ps["nic"]["count"] = ps_nics;
  machines.push_back(ps);
  nlohmann::json doc = test::scenario_json(machines, test::one_layer_model(25e6, "1 kFLOP"),
                                           {{"replicas", "w*/gpu0"},
                                            {"ps", {"ps/cpu"}},
                                            {"costs", "none"},
                                            {"jitter", 0},
                                            {"steps", 20}},
                                           network_model);
  doc["cluster"].erase("switch");  // non-blocking
  return doc;
}

// What bound the variable pulls (PS to `worker_device`, 1 MB or more) of a trace: each distinct
// bound (core::TraceEvent::bound), in order of first appearance.
std::vector<std::string> pull_bounds(const core::Trace& trace, const std::string& worker_device) {
  const uint32_t ps = trace.find("ps/cpu"), worker = trace.find(worker_device);
  std::vector<std::string> bounds;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind != core::EventKind::kTransfer || e.device != ps || e.peer != worker ||
        e.bytes < 1e6 || e.bound == core::kNoString) {
      continue;
    }
    const std::string& bound = trace.str(e.bound);
    if (std::find(bounds.begin(), bounds.end(), bound) == bounds.end()) bounds.push_back(bound);
  }
  return bounds;
}

// Mean rate (bytes/s) of the variable pulls (PS to `worker_device`, 1 MB or more) of a trace.
double pull_rate(const core::Trace& trace, const std::string& worker_device) {
  const uint32_t ps = trace.find("ps/cpu"), worker = trace.find(worker_device);
  double bytes = 0, seconds = 0;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind != core::EventKind::kTransfer || e.device != ps || e.peer != worker ||
        e.bytes < 1e6) {
      continue;
    }
    bytes += e.bytes;
    seconds += e.end_s - e.start_s;
  }
  return seconds > 0 ? bytes / seconds : 0;
}

TEST(Nics, SimGridRoutesAreThePlatformsRoutes) {
  // Machines of 1, 2 and 3 NICs with GPUs behind PCIe, in racks of 2 with blocking switches
  // (they stay in SimGrid's routes), then on one switch.
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < 5; ++i) {
    nlohmann::json m =
        test::machine("m" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS", "10 TFLOPS"}, "10 Gbps");
    m["nic"]["count"] = 1 + i % 3;
    machines.push_back(m);
  }
  nlohmann::json doc = test::scenario_json(machines, test::one_layer_model(1e6, "1 kFLOP"),
                                           {{"replicas", "m*/gpu0"}, {"ps", {"m0/cpu"}}});
  doc["cluster"]["switch"] = {{"bandwidth", "12 Gbps"}};
  doc["cluster"]["topology"] = {{"kind", "racks"},
                                {"machines_per_rack", 2},
                                {"oversubscription", 2},
                                {"tor", {{"bandwidth", "15 Gbps"}}}};
  const core::Plan racks = core::compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_EQ(racks.platform.machines[2].nic_links.size(), 3u);
  EXPECT_EQ(test::expect_simgrid_routes_are_the_platforms(racks.platform, "nics_test"), 15 * 14);
}

TEST(Nics, SimGridRoutesAreThePlatformsRoutesOnOneSwitch) {
  nlohmann::json doc = ps_serving(4, 2, "ideal", 2);
  doc["cluster"]["switch"] = {{"bandwidth", "30 Gbps"}};  // blocking: in the routes
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_TRUE(plan.platform.switch_can_bind(plan.platform.switch_link));
  EXPECT_EQ(test::expect_simgrid_routes_are_the_platforms(plan.platform, "nics_test"), 9 * 8);
}

// One PS machine of 2 NICs serving 4 workers of one NIC each, its NIC binding: w0 and w2 pull
// through "ps/nic", w1 and w3 through "ps/nic1", each at half a NIC instead of a quarter. Under
// the ideal model a step is 2 x (100 MB / (B / k) + L) with k the workers per PS NIC; the pull
// rate doubles against one NIC.
TEST(Nics, TwoPsNicsDoubleThePullRateWhereThePsNicBinds) {
  const nlohmann::json one = ps_serving(4, 1, "ideal");
  const nlohmann::json two = ps_serving(4, 2, "ideal");
  const core::Plan plan = core::compile_plan(test::parse(two), "between_graph", {});
  const core::Platform& p = plan.platform;
  const core::Trace trace_one = test::simulate_trace(one, "between_graph");
  const core::Trace trace_two = test::simulate_trace(two, "between_graph");
  const core::RunMetrics m_one = core::compute_metrics(trace_one);
  const core::RunMetrics m_two = core::compute_metrics(trace_two);
  for (int w = 0; w < 4; ++w) {
    const std::string worker = "worker" + std::to_string(w);
    const std::string device = "w" + std::to_string(w) + "/gpu0";
    const double latency = p.route_latency_s(p.find_device("ps/cpu"), p.find_device(device));
    const double step_one = test::client_step_time(m_one, worker);
    const double step_two = test::client_step_time(m_two, worker);
    const double rate_one = pull_rate(trace_one, device), rate_two = pull_rate(trace_two, device);
    std::printf("%s: step %.4f s with one PS NIC, %.4f s with two; pull rate %.4g -> %.4g Gbit/s\n",
                worker.c_str(), step_one, step_two, rate_one * 8 / 1e9, rate_two * 8 / 1e9);
    EXPECT_NEAR(step_one, 2 * (kVariableBytes / (kNicBytesPerS / 4) + latency), 0.02 * step_one)
        << worker;
    EXPECT_NEAR(step_two, 2 * (kVariableBytes / (kNicBytesPerS / 2) + latency), 0.02 * step_two)
        << worker;
    EXPECT_NEAR(rate_one, kNicBytesPerS / 4, 0.02 * kNicBytesPerS / 4) << worker;
    EXPECT_NEAR(rate_two / rate_one, 2.0, 0.04) << worker;
    // What bound its pulls: the PS NIC its connection takes.
    EXPECT_EQ(pull_bounds(trace_two, device),
              std::vector<std::string>{w % 2 == 0 ? "ps/nic/up" : "ps/nic1/up"})
        << worker;
    EXPECT_EQ(pull_bounds(trace_one, device), std::vector<std::string>{"ps/nic/up"}) << worker;
  }
  EXPECT_NEAR(m_two.throughput_samples_per_s / m_one.throughput_samples_per_s, 2.0, 0.04);
  // The busiest resource is a PS NIC's direction, both equally busy.
  EXPECT_EQ(m_two.bottleneck.name.rfind("ps/nic", 0), 0u) << m_two.bottleneck.name;
  const std::string bound_by = core::describe_path(m_two.bound_by, 4, true);
  std::printf("bound by: %s\n", bound_by.c_str());
  EXPECT_NE(bound_by.find("ps/nic/up"), std::string::npos) << bound_by;
  EXPECT_NE(bound_by.find("ps/nic1/up"), std::string::npos) << bound_by;
  int busy_nics = 0;
  for (const core::ResourceUse& r : m_two.links) {
    if (r.name == "ps/nic/up" || r.name == "ps/nic1/up") {
      EXPECT_NEAR(r.utilization, m_two.bottleneck.utilization, 0.02) << r.name;
      ++busy_nics;
    }
  }
  EXPECT_EQ(busy_nics, 2);
}

// With a process's RPC ceiling (cluster.transport), each connection starts at its process's
// endpoint on the device, and through NIC k >= 1 at an endpoint of that process and NIC: the RPC
// link and then NIC k. A ceiling far above the NICs changes nothing: the PS's two NICs still serve
// two workers each, at half a NIC.
TEST(Nics, AProcessRpcCeilingKeepsEachConnectionOnItsNic) {
  nlohmann::json doc = ps_serving(4, 2, "ideal");
  doc["cluster"]["transport"] = {{"preset", "ideal"}, {"process_rpc_ceiling", "100 Gbps"}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_GT(plan.platform.transport.process_rpc_ceiling_bytes_per_s, 0);
  const core::Platform& p = plan.platform;
  const core::Trace trace = test::run_plan(plan);
  const core::RunMetrics m = core::compute_metrics(trace);
  for (int w = 0; w < 4; ++w) {
    const std::string device = "w" + std::to_string(w) + "/gpu0";
    const double latency = p.route_latency_s(p.find_device("ps/cpu"), p.find_device(device));
    const double expected = 2 * (kVariableBytes / (kNicBytesPerS / 2) + latency);
    const double step = test::client_step_time(m, "worker" + std::to_string(w));
    EXPECT_NEAR(step, expected, 0.02 * expected) << device;
    EXPECT_EQ(pull_bounds(trace, device),
              std::vector<std::string>{w % 2 == 0 ? "ps/nic/up" : "ps/nic1/up"})
        << device;
  }
}

// One worker and one PS, two NICs at each end: a pair of machines takes one NIC of each, so the
// worker pulls at one NIC's rate, as with one NIC each: 2 x (100 MB / B + L).
TEST(Nics, OnePairOfMachinesNeverExceedsOneNic) {
  const nlohmann::json two = ps_serving(1, 2, "ideal", 2);
  const core::Plan plan = core::compile_plan(test::parse(two), "between_graph", {});
  const core::Platform& p = plan.platform;
  const double latency = p.route_latency_s(p.find_device("ps/cpu"), p.find_device("w0/gpu0"));
  const core::Trace trace = test::simulate_trace(two, "between_graph");
  const double step = test::client_step_time(core::compute_metrics(trace), "worker0");
  const double one_nic =
      test::client_step_time(test::simulate(ps_serving(1, 1, "ideal"), "between_graph"), "worker0");
  std::printf("one worker: step %.4f s with two NICs each, %.4f s with one\n", step, one_nic);
  EXPECT_NEAR(step, 2 * (kVariableBytes / kNicBytesPerS + latency), 0.02 * step);
  EXPECT_NEAR(step, one_nic, 1e-9 + 1e-6 * one_nic);
  EXPECT_LE(pull_rate(trace, "w0/gpu0"), kNicBytesPerS * (1 + 1e-6));
}

// The `auto` engine's exact sharing model carries flows of machines of several NICs (each NIC a
// group of its own) and predicts what SimGrid's solver does: throughput, step time and the
// bottleneck within 0.5%, under both network models, with the workers' start-up stagger (flows
// start and end at different times).
TEST(Nics, BothNetworkEnginesPredictTheSame) {
  for (const char* model : {"ideal", "lv08"}) {
    nlohmann::json doc = ps_serving(6, 2, model);
    doc["training"].erase("jitter");
    doc["cluster"]["machines"][1]["nic"]["count"] = 3;  // a worker of 3 NICs, one taken
    const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
    core::RunMetrics by[2];
    sim::SharingStats sharing[2];
    for (int e = 0; e < 2; ++e) {
      sim::SimBackend backend;
      core::RunOptions options;
      options.settings = {{"network_engine", e == 0 ? "simgrid" : "auto"}};
      by[e] = core::compute_metrics(core::run_to_trace(backend, plan, options));
      sharing[e] = backend.last_sharing_stats();
    }
    const auto close = [](double x, double y) { return std::abs(x - y) <= 0.005 * std::abs(x); };
    EXPECT_TRUE(close(by[0].throughput_samples_per_s, by[1].throughput_samples_per_s))
        << model << ": " << by[0].throughput_samples_per_s << " vs "
        << by[1].throughput_samples_per_s;
    EXPECT_TRUE(close(by[0].step_time_s.p50, by[1].step_time_s.p50))
        << model << ": " << by[0].step_time_s.p50 << " vs " << by[1].step_time_s.p50;
    EXPECT_EQ(by[0].bottleneck.name, by[1].bottleneck.name) << model;
    EXPECT_TRUE(close(by[0].bottleneck.utilization, by[1].bottleneck.utilization)) << model;
    EXPECT_EQ(by[0].bottleneck.name.rfind("ps/nic", 0), 0u) << by[0].bottleneck.name;
    // SimGrid's engine used no model; the auto engine's model ended flows itself.
    EXPECT_EQ(sharing[0].flows, 0) << model;
    EXPECT_GT(sharing[1].model_flows, 0) << model;
    std::printf("%s: %ld flows, %ld ended by the model, %ld hand-backs\n", model,
                long(sharing[1].flows), long(sharing[1].model_flows), long(sharing[1].hand_backs));
  }
}

// A fault on the PS's second NIC slows the workers whose connections take it (w1, w3), not the
// others (sim_faults.cpp finds "ps/nic1_UP" and "_DOWN" by name).
TEST(Nics, AFaultOnOneNicSlowsOnlyThePeersItCarries) {
  nlohmann::json doc = ps_serving(4, 2, "ideal");
  const core::RunMetrics healthy = test::simulate(doc, "between_graph");
  doc["faults"] = {{{"kind", "link"}, {"link", "ps/nic1"}, {"from", "0 s"}, {"factor", 0.5}}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  for (const char* worker : {"worker1", "worker3"}) {
    const double before = test::client_step_time(healthy, worker);
    EXPECT_NEAR(test::client_step_time(m, worker), 2 * before, 0.03 * before) << worker;
  }
  for (const char* worker : {"worker0", "worker2"}) {
    const double before = test::client_step_time(healthy, worker);
    EXPECT_NEAR(test::client_step_time(m, worker), before, 0.02 * before) << worker;
  }
}

}  // namespace
}  // namespace replisim
