// What binds, named (core/metrics/critical_path.h): the critical path of each measured step,
// from the trace alone, in cases whose answer is known from their construction.
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace_format.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// The share called `name` of the run's path, 0..1 (0 when absent).
double share_of(const core::CriticalPath& path, const std::string& name) {
  for (const core::PathShare& share : path.shares) {
    if (share.name == name) return share.seconds / path.seconds;
  }
  return 0;
}

bool warns_unsaturated(const core::RunMetrics& m) {
  for (const std::string& w : m.warnings) {
    if (w.rfind("no resource is saturated", 0) == 0) return true;
  }
  return false;
}

// Worker machine "w" (one 10 TFLOPS GPU) and PS machine "p" over 1 Gbit/s, one layer of
// `params` parameters and `flop` forward FLOP per sample: a pull and a push of 4P bytes per step.
nlohmann::json worker_and_ps(double params, const std::string& flop) {
  return test::scenario_json({test::machine("w", "500 GFLOPS", {"10 TFLOPS"}, "1 Gbps"),
                              test::machine("p", "500 GFLOPS", {}, "1 Gbps")},
                             test::one_layer_model(params, flop),
                             {{"replicas", {"w/gpu0"}},
                              {"ps", {"p/cpu"}},
                              {"costs", "none"},
                              {"jitter", 0},
                              {"steps", 20}},
                             "lv08");
}

// The report's "bound by" lines, from the metrics and from the trace written and read back.
void expect_same_from_saved_trace(const core::Trace& trace) {
  std::stringstream bytes;
  core::write_trace_binary(bytes, trace);
  const core::Trace read = core::read_trace_binary(bytes, "saved");
  const core::RunMetrics direct = core::compute_metrics(trace);
  const core::RunMetrics saved = core::compute_metrics(read);
  EXPECT_EQ(core::describe_path(saved.bound_by, 8, true),
            core::describe_path(direct.bound_by, 8, true));
  EXPECT_EQ(core::format_report({saved}, "t"), core::format_report({direct}, "t"));
}

TEST(CriticalPath, AlternatingPullAndPushNameTheLink) {
  // 25 M parameters (100 MB) each way at 1 Gbit/s, 0.3 ms of compute: the NIC directions are
  // each busy about half the time, yet every step is the link's.
  const core::Trace trace = test::simulate_trace(worker_and_ps(25e6, "30 kFLOP"), "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  std::printf("bound by: %s\n", core::describe_path(m.bound_by, 4, true).c_str());
  EXPECT_GE(share_of(m.bound_by, "p<->w network"), 0.95);
  EXPECT_GE(core::network_fraction(m.bound_by), 0.95);
  EXPECT_FALSE(warns_unsaturated(m));
  EXPECT_LT(m.bottleneck.utilization, 0.7);  // what the utilisation row alone showed
  // Pull and push both on the path, each bound by a NIC direction of its route.
  const core::PathShare& link = m.bound_by.shares.front();
  ASSERT_EQ(link.directions.size(), 2u);
  EXPECT_GT(link.directions[1].second, 0.3 * m.bound_by.seconds);
  EXPECT_NE(link.bounds.front().first.find("/nic/"), std::string::npos)
      << link.bounds.front().first;
  expect_same_from_saved_trace(trace);
}

TEST(CriticalPath, ComputeBoundNamesTheGpu) {
  // 1 M parameters (4 MB: 32 ms each way), 1 TFLOP per sample: 9.6 s of compute per step.
  const core::RunMetrics m = test::simulate(worker_and_ps(1e6, "1 TFLOP"), "between_graph");
  std::printf("bound by: %s\n", core::describe_path(m.bound_by, 4, true).c_str());
  EXPECT_EQ(m.bound_by.shares.front().name, "w/gpu0");
  EXPECT_GE(share_of(m.bound_by, "w/gpu0"), 0.95);
}

TEST(CriticalPath, AStreamCeilingNamesTheCeiling) {
  // The same link-bound step with a 20 MB/s per-stream ceiling far below the NIC's 125 MB/s.
  nlohmann::json doc = worker_and_ps(5e6, "30 kFLOP");
  doc["cluster"]["transport"] = {{"flow_rate_limit", "20 MBps"}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  const std::string text = core::describe_path(m.bound_by, 4, true);
  std::printf("bound by: %s\n", text.c_str());
  EXPECT_GE(share_of(m.bound_by, "p<->w network"), 0.95);
  EXPECT_EQ(m.bound_by.shares.front().bounds.front().first, "the 20 MB/s stream ceiling");
  EXPECT_NE(text.find("the 20 MB/s stream ceiling binds"), std::string::npos);
  EXPECT_FALSE(warns_unsaturated(m));
}

// The time a tensor waited for its stream, busy with the same sender's earlier tensors, is that
// queue's (with the earlier tensors' own bound), not the waiting tensor's: the first layer's
// small gradient, pushed last, waits behind three 20 MB gradients on the worker's one stream to
// the PS (and the last layer's pull behind three others), yet alone it would be "latency and
// per-message overhead" (0.4 kB against 50 us).
TEST(CriticalPath, ATensorQueuedBehindEarlierTensorsNamesTheQueue) {
  nlohmann::json model = {{"layers", nlohmann::json::array()}};
  for (const auto& [name, params] : std::vector<std::pair<std::string, double>>{
           {"small", 100}, {"big1", 5e6}, {"big2", 5e6}, {"big3", 5e6}}) {
    model["layers"].push_back({{"name", name},
                               {"params", params},
                               {"forward_flops_per_sample", "30 kFLOP"},
                               {"activation_bytes_per_sample", "4 kB"}});
  }
  nlohmann::json doc = test::scenario_json(
      {test::machine("w", "500 GFLOPS", {"10 TFLOPS"}, "1 Gbps"),
       test::machine("p", "500 GFLOPS", {}, "1 Gbps")},
      model,
      {{"replicas", {"w/gpu0"}},
       {"ps", {"p/cpu"}},
       {"costs", {{"input_samples_per_s", 0}, {"per_message_overhead", "50 us"}}},
       {"jitter", 0},
       {"steps", 12}},
      "lv08");
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  const std::string text = core::describe_path(m.bound_by, 4, true);
  std::printf("bound by: %s\n", text.c_str());
  ASSERT_FALSE(m.bound_by.shares.empty());
  const core::PathShare& link = m.bound_by.shares.front();
  EXPECT_EQ(link.name, "p<->w network");
  double queued_s = 0, overhead_s = 0;
  for (const auto& [bound, seconds] : link.bounds) {
    if (bound.rfind("queued behind earlier tensors on the same stream", 0) == 0) {
      queued_s += seconds;
      // What held the stream: the big tensors, at a NIC direction's rate.
      EXPECT_NE(bound.find("(their bound: "), std::string::npos) << bound;
      EXPECT_NE(bound.find("/nic/"), std::string::npos) << bound;
    }
    if (bound == "latency and per-message overhead") overhead_s += seconds;
  }
  // Three 20 MB tensors at 125 MB/s ahead of the last one: most of the step.
  EXPECT_GE(queued_s, 0.5 * m.bound_by.seconds);
  EXPECT_LT(overhead_s, 0.05 * m.bound_by.seconds);
  EXPECT_NE(text.find("queued behind earlier tensors on the same stream"), std::string::npos);
  expect_same_from_saved_trace(trace);
}

// The busiest resource far from saturated while a stream ceiling holds the steps: the report's row
// says so beside it (the NIC it names is about 16% busy).
TEST(CriticalPath, TheBusiestResourceRowSaysAStreamCeilingBinds) {
  nlohmann::json doc = worker_and_ps(5e6, "30 kFLOP");
  doc["cluster"]["transport"] = {{"flow_rate_limit", "20 MBps"}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  ASSERT_LT(m.bottleneck.utilization, 0.7);
  const std::string report = core::format_report({m}, "t");
  const size_t row = report.find("bottleneck (busiest resource)");
  ASSERT_NE(row, std::string::npos) << report;
  // The row and the lines it wraps onto (each entry after "; " starts one, indented).
  size_t end = report.find('\n', row);
  while (end != std::string::npos && end + 1 < report.size() && report[end + 1] == ' ') {
    end = report.find('\n', end + 1);
  }
  const std::string line = report.substr(row, end - row);
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find(m.bottleneck.name + " "), std::string::npos) << line;
  EXPECT_NE(line.find("the 20 MB/s stream ceiling binds (100% of the critical path)"),
            std::string::npos)
      << line;
  // A link-bound step says nothing more: its row names the binding NIC direction.
  const core::RunMetrics link = test::simulate(worker_and_ps(25e6, "30 kFLOP"), "between_graph");
  const std::string plain = core::format_report({link}, "t");
  EXPECT_EQ(plain.find(" binds ("), std::string::npos) << plain;
}

TEST(CriticalPath, ASyncStragglerHoldsTheFastWorkersSteps) {
  // R = T = 4, one worker at half speed: the fast workers wait for their tokens every step, and
  // the wait is the straggler's GPU computing, followed through the chief's sync op to the
  // accumulate that completed it.
  for (const core::SyncVariant variant : {core::SyncVariant::kStrict, core::SyncVariant::kTf}) {
    core::Scenario s = core::load_scenario(test::scenario_path("classroom/sync_straggler.json"));
    s.training.sync.replicas_to_aggregate = 4;
    s.training.sync.variant = variant;
    s.training.steps = 20;
    s.training.warmup_steps = 5;
    const core::Trace trace = test::run_plan(core::compile_plan(s, "between_graph", {}));
    const core::RunMetrics m = core::compute_metrics(trace);
    std::printf("%s: bound by %s\n", core::sync_variant_name(variant),
                core::describe_path(m.bound_by, 4, true).c_str());
    ASSERT_EQ(m.paths.size(), 4u);
    for (const core::CriticalPath& path : m.paths) {
      std::printf("  %s: %s\n", path.client.c_str(), core::describe_path(path, 4, true).c_str());
      // Every worker's step, fast or slow, is mostly the straggler's GPU.
      EXPECT_EQ(path.shares.front().name, "slow/gpu0") << path.client;
      EXPECT_GE(share_of(path, "slow/gpu0"), 0.6) << path.client;
      EXPECT_LT(share_of(path, "token queue"), 0.05) << path.client;
    }
    expect_same_from_saved_trace(trace);
  }
}

TEST(CriticalPath, APsProcessCeilingNamesTheCeiling) {
  // Sixteen single-GPU sync workers and their PS on one host, a 200 MB/s RPC ceiling per process
  // (tests/sim/process_costs_test.cpp has the plateau's closed form).
  nlohmann::json host = test::machine("h", "500 GFLOPS", {}, "10 Gbps", "0 us");
  host["gpus"] = {{"count", 16}, {"speed", "8 TFLOPS"}};
  host["pcie"] = {{"bandwidth", "16 GBps"}, {"latency", "0 us"}};
  nlohmann::json doc = test::scenario_json({host}, test::one_layer_model(5e6, "1 GFLOP"),
                                           {{"replicas", {"h/gpu*"}},
                                            {"ps", {"h/cpu"}},
                                            {"costs", "none"},
                                            {"jitter", 0},
                                            {"sync", "sync"},
                                            {"steps", 12}},
                                           "ideal", "100 Gbps");
  doc["cluster"]["transport"] = {{"between_processes", true}, {"process_rpc_ceiling", "200 MBps"}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  const std::string text = core::describe_path(m.bound_by, 4, true);
  std::printf("bound by: %s\n", text.c_str());
  EXPECT_GE(share_of(m.bound_by, "h local transfers"), 0.8);
  EXPECT_EQ(m.bound_by.shares.front().bounds.front().first, "ps0 RPC ceiling 200 MB/s");
  EXPECT_FALSE(warns_unsaturated(m));
}

TEST(CriticalPath, InGraphNamesTheClientsPart) {
  // The seed scenario with an input pipeline of 100 samples/s on the client (0.64 s per step):
  // the client's CPU, busy producing batches, holds the path; its other ops wait behind it.
  nlohmann::json doc = core::load_scenario_document(test::seed_scenario()).json;
  doc["training"]["costs"] = {{"input_samples_per_s", 100}};
  const core::RunMetrics m = test::simulate(doc, "in_graph");
  std::printf("bound by: %s\n", core::describe_path(m.bound_by, 6, true).c_str());
  ASSERT_EQ(m.paths.size(), 1u);
  EXPECT_EQ(m.paths.front().client, "client");
  EXPECT_EQ(m.bound_by.shares.front().name, "client input on pc1/cpu");
  EXPECT_GE(share_of(m.bound_by, "client input on pc1/cpu"), 0.5);
  // With a 0.1 GFLOPS client CPU instead, its sums of the towers' gradients show up.
  doc = core::load_scenario_document(test::seed_scenario()).json;
  doc["cluster"]["machines"][0]["cpu"]["speed"] = "0.1 GFLOPS";
  EXPECT_GE(share_of(test::simulate(doc, "in_graph").bound_by, "client aggregate on pc1/cpu"), 0.2);
  double shares = 0;
  for (const core::PathShare& share : m.bound_by.shares) shares += share.seconds;
  EXPECT_NEAR(shares, m.bound_by.seconds, 1e-6 * m.bound_by.seconds);
}

}  // namespace
}  // namespace replisim
