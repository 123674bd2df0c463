#include "core/metrics/metrics.h"

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// A hand-written trace of two async workers (4 steps, 1 warm-up) whose metrics are known.
class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json doc = test::scenario_json(
        {test::machine("w", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps"),
         test::machine("p", "100 GFLOPS", {}, "10 Gbps")},
        test::one_layer_model(1000, "1 MFLOP"),
        {{"replicas", {"w/gpu0", "w/gpu1"}}, {"ps", {"p/cpu"}}, {"steps", 4}, {"warmup_steps", 1}});
    trace_.meta = trace_meta_from_plan(compile_plan(test::parse(doc), "between_graph", {}));
    w0_ = trace_.intern("worker0");
    w1_ = trace_.intern("worker1");
    // worker0 steps [k, k+1]; worker1 steps [k+0.5, k+1.5]; an update at each step end.
    int64_t global_step = 0;
    std::vector<std::tuple<double, uint32_t, int>> ends;
    for (int k = 0; k < 4; ++k) {
      ends.emplace_back(k + 1.0, w0_, k);
      ends.emplace_back(k + 1.5, w1_, k);
    }
    std::sort(ends.begin(), ends.end());
    std::map<uint32_t, int64_t> read = {{w0_, 0}, {w1_, 0}};
    for (const auto& [end, who, k] : ends) {
      step(who, k, end - 1.0, end);
      TraceEvent u;
      u.kind = EventKind::kUpdate;
      u.actor = u.client = who;
      u.step = k;
      u.start_s = u.end_s = end;
      u.samples = 32;
      u.global_step_read = read[who];
      u.global_step_after = ++global_step;
      read[who] = global_step;  // the next step starts now and reads this value
      trace_.events.push_back(u);
    }
  }

  void step(uint32_t who, int k, double start, double end) {
    TraceEvent e;
    e.kind = EventKind::kStep;
    e.actor = e.client = who;
    e.step = k;
    e.start_s = start;
    e.end_s = end;
    trace_.events.push_back(e);
  }

  TraceEvent op(EventKind kind, uint32_t actor, const std::string& device, int64_t step,
                double start, double end) {
    TraceEvent e;
    e.kind = kind;
    e.actor = actor;
    e.client = w0_;
    e.device = trace_.intern(device);
    e.step = step;
    e.start_s = start;
    e.end_s = end;
    return e;
  }

  Trace trace_;
  uint32_t w0_ = 0, w1_ = 0;
};

TEST_F(MetricsTest, WindowThroughputIntervalAndStaleness) {
  const RunMetrics m = compute_metrics(trace_);
  // Latest warm-up end: worker1 at 1.5; earliest last step end: worker0 at 4.
  EXPECT_DOUBLE_EQ(m.window_start_s, 1.5);
  EXPECT_DOUBLE_EQ(m.window_end_s, 4.0);
  EXPECT_EQ(m.updates_in_window, 5);  // 2, 2.5, 3, 3.5, 4
  EXPECT_DOUBLE_EQ(m.throughput_samples_per_s, 5 * 32 / 2.5);
  EXPECT_DOUBLE_EQ(m.update_interval_s, 0.5);
  EXPECT_DOUBLE_EQ(m.staleness_mean, 1.0);  // the other worker updated once in between
  EXPECT_DOUBLE_EQ(m.staleness_max, 1.0);
  EXPECT_DOUBLE_EQ(m.step_time_s.mean, 1.0);
  ASSERT_EQ(m.clients.size(), 2u);
  EXPECT_EQ(m.clients[0].measured_steps, 2);  // [2,3], [3,4]
  EXPECT_EQ(m.clients[1].measured_steps, 2);  // [1.5,2.5], [2.5,3.5]
  EXPECT_EQ(m.bytes_per_ps.size(), 1u);
  EXPECT_DOUBLE_EQ(m.bytes_per_ps[0], 8 + 4000);
}

TEST_F(MetricsTest, UtilisationOfDevicesAndLinkDirections) {
  trace_.events.push_back(op(EventKind::kCompute, w0_, "w/gpu0", 2, 2.0, 2.5));
  TraceEvent t = op(EventKind::kTransfer, w0_, "w/gpu0", 3, 3.0, 3.5);
  t.peer = trace_.intern("p/cpu");
  t.peer_actor = trace_.intern("ps0");
  t.bytes = 0.625e9;
  trace_.events.push_back(t);
  TraceEvent half = t;  // half of it falls before the window
  half.start_s = 1.0;
  half.end_s = 2.0;
  half.bytes = 1e9;
  trace_.events.push_back(half);
  const RunMetrics m = compute_metrics(trace_);
  auto find = [](const std::vector<ResourceUse>& uses, const std::string& name) {
    for (const ResourceUse& u : uses) {
      if (u.name == name) return u.utilization;
    }
    ADD_FAILURE() << name;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(find(m.devices, "w/gpu0"), 0.5 / 2.5);
  EXPECT_DOUBLE_EQ(find(m.links, "w/nic/up"), (0.625e9 + 0.5e9) / (1.25e9 * 2.5));
  EXPECT_DOUBLE_EQ(find(m.links, "p/nic/down"), (0.625e9 + 0.5e9) / (1.25e9 * 2.5));
  EXPECT_DOUBLE_EQ(find(m.links, "w/nic/down"), 0.0);
  EXPECT_EQ(m.bottleneck.name, "w/nic/up");
}

TEST_F(MetricsTest, WaitBreakdownOfAWorker) {
  // In worker0's step 2 ([2, 3]): own compute 0.5 s, own transfer 0.25 s, PS apply 0.15 s.
  trace_.events.push_back(op(EventKind::kCompute, w0_, "w/gpu0", 2, 2.0, 2.5));
  TraceEvent t = op(EventKind::kTransfer, w0_, "w/gpu0", 2, 2.5, 2.75);
  t.peer = trace_.intern("p/cpu");
  t.peer_actor = trace_.intern("ps0");
  trace_.events.push_back(t);
  trace_.events.push_back(op(EventKind::kCompute, trace_.intern("ps0"), "p/cpu", 2, 2.75, 2.9));
  const RunMetrics m = compute_metrics(trace_);
  ASSERT_EQ(m.waits.size(), 1u);
  const WaitBreakdown& w = m.waits[0];
  EXPECT_EQ(w.role, "worker0");
  // Over worker0's two measured steps (2 s in all).
  EXPECT_NEAR(w.compute, 0.5 / 2, 1e-12);
  EXPECT_NEAR(w.network, 0.25 / 2, 1e-12);
  EXPECT_NEAR(w.ps, 0.15 / 2, 1e-12);
  EXPECT_NEAR(w.other, 1.1 / 2, 1e-12);
}

// An op event whose step has no step event (a damaged trace) counts in no step's waits, and its
// step number sizes nothing.
TEST_F(MetricsTest, AnOpOfAStepWithoutAStepEventCountsInNoWaits) {
  trace_.events.push_back(op(EventKind::kCompute, w0_, "w/gpu0", 2, 2.0, 2.5));
  Trace damaged = trace_;
  damaged.events.push_back(op(EventKind::kCompute, w0_, "w/gpu0", int64_t(1) << 40, 2.5, 2.75));
  const RunMetrics expected = compute_metrics(trace_);
  const RunMetrics m = compute_metrics(damaged);
  ASSERT_EQ(m.waits.size(), 1u);
  ASSERT_EQ(expected.waits.size(), 1u);
  EXPECT_EQ(m.waits[0].compute, expected.waits[0].compute);
  EXPECT_EQ(m.waits[0].other, expected.waits[0].other);
}

// A step number far beyond the client's step events (a corrupt or hostile trace) is refused
// before it sizes any table.
TEST_F(MetricsTest, AStepBeyondItsClientsStepEventsIsRefused) {
  Trace t = trace_;
  TraceEvent far = t.events.front();
  far.kind = EventKind::kStep;
  far.client = far.actor = w0_;
  far.step = int64_t(1) << 40;
  t.events.push_back(far);
  try {
    compute_metrics(t, "t.rstrace");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("step 1099511627776 of worker0 comes with only"), std::string::npos)
        << e.what();
  }
}

TEST_F(MetricsTest, IncompleteTracesAreInputErrors) {
  Trace empty;
  empty.meta = trace_.meta;
  EXPECT_THROW(compute_metrics(empty), InputError);
  Trace no_meta;
  EXPECT_THROW(compute_metrics(no_meta), InputError);
}

// Long cells (faults, job failures) continue below their row in their own column, so two runs
// side by side stay readable; each entry of a list starts a line, and nothing is cut.
TEST(ReportTable, LongCellsContinueBelowTheirRowInTheirColumn) {
  auto run = [](const std::string& strategy, int faults) {
    RunMetrics r;
    r.strategy = strategy;
    for (int i = 0; i < faults; ++i) {
      FaultRecord f;
      f.target = "worker" + std::to_string(i);
      f.description = f.target + " dies";
      f.start_s = f.end_s = 1.5 + i;
      f.throughput_before_samples_per_s = 1000;
      f.throughput_after_samples_per_s = 750;
      r.faults.push_back(f);
    }
    RecoveryRecord k;
    k.cause = "ps0 dies";
    k.fault_s = 3;
    k.workers_lost = {"worker1", "worker2"};  // "; " inside parentheses: not an entry's end
    r.recoveries.push_back(k);
    ClientMetrics c;
    c.name = "worker0";
    c.measured_steps = 4;
    c.step_rate_per_s = 9.5;
    r.clients.push_back(c);
    return r;
  };
  const std::string report = format_report({run("in_graph", 1), run("between_graph", 3)}, "t");
  std::istringstream lines(report);
  std::string line, faults_block, job_block;
  std::string* block = nullptr;
  size_t widest = 0, in_graph_column = std::string::npos;
  while (std::getline(lines, line)) {
    if (line.find("between_graph") != std::string::npos) in_graph_column = line.find("in_graph");
    if (line.rfind("faults", 0) == 0) block = &faults_block;
    if (line.rfind("job failures", 0) == 0) block = &job_block;
    if (!line.empty() && line[0] != ' ' && line.rfind("faults", 0) != 0 &&
        line.rfind("job failures", 0) != 0) {
      block = nullptr;
    }
    if (block) *block += line + "\n";
    if (line.rfind("bound by (", 0) != 0 && line.rfind("note", 0) != 0) {
      widest = std::max(widest, line.size());
    }
  }
  ASSERT_NE(in_graph_column, std::string::npos) << report;
  // Three faults, one per line, in the second column; the first column's one fault on the first.
  EXPECT_EQ(std::count(faults_block.begin(), faults_block.end(), '\n'), 3) << report;
  EXPECT_NE(faults_block.find("worker2 dies at 3.500 s [samples/s before 1000.0, after 750.0]"),
            std::string::npos)
      << report;
  // The job failure is one entry wrapped at spaces, its parenthesis kept on its lines.
  EXPECT_GE(std::count(job_block.begin(), job_block.end(), '\n'), 2) << report;
  EXPECT_NE(job_block.find("(every\n"), std::string::npos) << report;
  EXPECT_NE(job_block.find("  other client back after -3.000 s; worker1, worker2 died before"),
            std::string::npos)
      << report;
  EXPECT_LE(widest, 2 * 64 + 40u) << report;
  EXPECT_NE(report.find("worker0 9.50"), std::string::npos) << report;
  EXPECT_NE(report.find("staleness mean / max (global steps)"), std::string::npos) << report;
}

}  // namespace
}  // namespace replisim::core
