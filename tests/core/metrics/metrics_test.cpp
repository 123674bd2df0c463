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
// side by side stay readable: each entry of a list starts a line, lines break only at spaces (so
// the lines joined give the cell back), and a word longer than a line stands alone on its line.
RunMetrics run_with_long_cells(const std::string& strategy, int faults, const std::string& name) {
  RunMetrics r;
  r.strategy = strategy;
  for (int i = 0; i < faults; ++i) {
    FaultRecord f;
    f.target = "worker" + std::to_string(i);
    f.description = (i == 0 ? "machine " + name : f.target) + " dies";
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
  for (int i = 0; i < 3; ++i) {
    ClientMetrics c;
    c.name = "worker" + std::to_string(i);
    c.measured_steps = 4;
    c.step_rate_per_s = 9.5;
    r.clients.push_back(c);
  }
  return r;
}

// The lines of the row `label` in a report, and where its first column starts.
std::vector<std::string> row_lines(const std::string& report, const std::string& label,
                                   size_t* column) {
  std::istringstream in(report);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(label, 0) == 0) {
      *column = line.find_first_not_of(' ', label.size());
      lines.push_back(line);
    } else if (!lines.empty() && !line.empty() && line[0] == ' ') {
      lines.push_back(line);
    } else if (!lines.empty()) {
      break;
    }
  }
  return lines;
}

// One column's text of a row's lines, the continuation indent removed, joined by spaces.
std::string joined_column(const std::vector<std::string>& lines, size_t begin, size_t end,
                          size_t* widest) {
  std::string out;
  for (const std::string& line : lines) {
    std::string part = line.size() > begin ? line.substr(begin, end - begin) : "";
    part.erase(part.find_last_not_of(' ') + 1);
    if (part.empty()) continue;
    *widest = std::max(*widest, part.size());
    out += (out.empty() ? "" : " ") + part.substr(part.find_first_not_of(' '));
  }
  return out;
}

TEST(ReportTable, LongCellsContinueBelowTheirRowInTheirColumn) {
  const std::string name = "w17.training.example.com";
  const std::vector<RunMetrics> runs = {run_with_long_cells("in_graph", 1, name),
                                        run_with_long_cells("between_graph", 3, name)};
  const std::string report = format_report(runs, "t");
  size_t column = 0;
  const std::vector<std::string> faults = row_lines(report, "faults", &column);
  // Three entries in the second column, each starting a line, the first on two lines (as in the
  // first column).
  ASSERT_EQ(faults.size(), 4u) << report;
  const size_t second = faults[0].find("machine", column + 1);
  ASSERT_NE(second, std::string::npos) << report;
  size_t widest = 0;
  EXPECT_EQ(joined_column(faults, column, second, &widest), faults_text(runs[0])) << report;
  EXPECT_EQ(joined_column(faults, second, std::string::npos, &widest), faults_text(runs[1]))
      << report;
  EXPECT_EQ(faults[3].substr(second),
            "worker2 dies at 3.500 s [samples/s before 1000.0, after 750.0]")
      << report;
  // The job failure: one entry over several lines, nothing lost; no line wider than 64.
  const std::vector<std::string> jobs = row_lines(report, "job failures", &column);
  EXPECT_GE(jobs.size(), 3u) << report;
  const std::string job = joined_column(jobs, column, second, &widest);
  EXPECT_EQ(job, job_failures_text(runs[0])) << report;
  EXPECT_NE(job.find("(every other client back after -3.000 s; worker1, worker2 died before they "
                     "were back)"),
            std::string::npos)
      << report;
  EXPECT_LE(widest, 64u) << report;
  // Clients named, staleness in global steps.
  EXPECT_NE(report.find("worker0 9.50, worker1 9.50, worker2 9.50"), std::string::npos) << report;
  EXPECT_NE(report.find("staleness mean / max (global steps)"), std::string::npos) << report;
}

TEST(ReportTable, AWordLongerThanALineStandsAloneAndTheReportEnds) {
  // A machine name of 70 characters, then after a wrap (the loop this once never left).
  const std::string name(70, 'm');
  for (const std::string& cause :
       {"machine " + name + " dies", "ps0 dies at a host called " + name}) {
    RunMetrics r = run_with_long_cells("between_graph", 1, name);
    r.recoveries[0].cause = cause;
    const std::string report = format_report({r}, "t");
    size_t column = 0, widest = 0;
    const std::vector<std::string> jobs = row_lines(report, "job failures", &column);
    EXPECT_EQ(joined_column(jobs, column, std::string::npos, &widest), job_failures_text(r))
        << report;
    bool alone = false;
    for (const std::string& line : jobs)
      alone |= line.substr(column).find_first_not_of(' ') == line.substr(column).find(name) &&
               line.size() == line.find(name) + name.size();
    EXPECT_TRUE(alone) << report;
  }
}

}  // namespace
}  // namespace replisim::core
