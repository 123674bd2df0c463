// The metrics of an all-reduce run on a hand-built trace of two ranks (worker0 on machine a,
// worker1 on machine b, the straggler): the collective wait, the critical path through the
// negotiation to the last rank ready and through the reduction to its slowest chunk's link, the
// chunks' bytes on the links, the phases, and the Chrome trace's Horovod names.
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/metrics/critical_path.h"
#include "core/metrics/metrics.h"
#include "core/metrics/validation.h"
#include "core/strategy/strategy.h"
#include "core/trace/chrome_trace.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

int op_of_kind(const Plan& plan, size_t client, OpKind kind) {
  const std::vector<Op>& ops = plan.clients[client].ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == kind) return int(i);
  }
  ADD_FAILURE() << "no op of kind " << op_kind_name(kind);
  return -1;
}

// Steps k = 0..2 (step 0 the warm-up) over [k, k + 1] on both ranks. Per step: worker0's backward
// over [k, k + 0.3], worker1's over [k, k + 0.5]; each rank's NEGOTIATE_ALLREDUCE from its ready
// report to k + 0.55, then NCCL_ALLREDUCE over [k + 0.55, k + 0.9] with a chunk each way (b -> a
// the slower, bound by b/nic/up); each rank's apply over [k + 0.9, k + 0.95].
class AllReduceMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json doc = test::scenario_json(
        {test::machine("a", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
         test::machine("b", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
        test::one_layer_model(1e6, "1 MFLOP"),
        {{"replicas", {"a/gpu0", "b/gpu0"}}, {"steps", 3}, {"warmup_steps", 1}});
    plan_ = compile_plan(test::parse(doc), "allreduce", {});
    trace_.meta = trace_meta_from_plan(plan_);
    w_[0] = trace_.intern("worker0");
    w_[1] = trace_.intern("worker1");
    backward_ = op_of_kind(plan_, 0, OpKind::kBackward);
    allreduce_ = op_of_kind(plan_, 0, OpKind::kAllReduce);
    apply_ = op_of_kind(plan_, 0, OpKind::kApply);
    const char* gpu[2] = {"a/gpu0", "b/gpu0"};
    const double backward_end[2] = {0.3, 0.5};
    for (int k = 0; k < 3; ++k) {
      for (int r = 0; r < 2; ++r) {
        add(EventKind::kStep, r, gpu[r], k, k, k + 1.0);
        trace_.events.back().op_index = -1;
        add(EventKind::kCompute, r, gpu[r], k, k, k + backward_end[r], backward_);
        collective(r, gpu[r], k, "NEGOTIATE_ALLREDUCE", k + backward_end[r], k + 0.55);
        collective(r, gpu[r], k, "NCCL_ALLREDUCE", k + 0.55, k + 0.9);
        add(EventKind::kCompute, r, gpu[r], k, k + 0.9, k + 0.95, apply_);
      }
      chunk(0, 1, k, k + 0.55, k + 0.7, "");
      chunk(1, 0, k, k + 0.6, k + 0.9, "b/nic/up");
      TraceEvent u;
      u.kind = EventKind::kUpdate;
      u.actor = u.client = w_[0];
      u.step = k;
      u.start_s = u.end_s = k + 1.0;
      u.samples = 64;
      u.global_step_read = k;
      u.global_step_after = k + 1;
      trace_.events.push_back(u);
    }
  }

  TraceEvent& add(EventKind kind, int rank, const std::string& device, int64_t step, double start,
                  double end, int op = -1) {
    TraceEvent e;
    e.kind = kind;
    e.actor = e.client = w_[rank];
    e.device = trace_.intern(device);
    e.step = step;
    e.start_s = start;
    e.end_s = end;
    e.op_index = op;
    trace_.events.push_back(e);
    return trace_.events.back();
  }

  void collective(int rank, const std::string& device, int64_t step, const std::string& name,
                  double start, double end) {
    TraceEvent& e = add(EventKind::kCollective, rank, device, step, start, end, allreduce_);
    e.op = OpKind::kAllReduce;
    e.label = trace_.intern(name);
    e.bytes = 4e6;
    e.message_id = step;
  }

  void chunk(int from, int to, int64_t step, double start, double end, const std::string& bound) {
    const char* gpu[2] = {"a/gpu0", "b/gpu0"};
    TraceEvent& e = add(EventKind::kTransfer, from, gpu[from], step, start, end, allreduce_);
    e.op = e.producer = OpKind::kAllReduce;
    e.peer = trace_.intern(gpu[to]);
    e.peer_actor = w_[to];
    e.bytes = 2e6;
    e.message_id = 100 + 2 * step + from;
    if (!bound.empty()) e.bound = trace_.intern(bound);
  }

  const WaitBreakdown& waits_of(const RunMetrics& m, const std::string& role) {
    for (const WaitBreakdown& w : m.waits) {
      if (w.role == role) return w;
    }
    ADD_FAILURE() << "no waits of " << role;
    static const WaitBreakdown kNone;
    return kNone;
  }

  Plan plan_;
  Trace trace_;
  uint32_t w_[2] = {0, 0};
  int backward_ = -1, allreduce_ = -1, apply_ = -1;
};

// Time in a collective of its own with its compute idle is the rank's wait on the collective,
// its own chunks in flight included; it is not the network's.
TEST_F(AllReduceMetricsTest, TimeInItsOwnCollectiveIsTheCollectiveWait) {
  const RunMetrics m = compute_metrics(trace_);
  const WaitBreakdown& w0 = waits_of(m, "worker0");
  EXPECT_NEAR(w0.compute, 0.35, 1e-9);     // backward 0.3, apply 0.05
  EXPECT_NEAR(w0.collective, 0.60, 1e-9);  // negotiation 0.25, reduction 0.35
  EXPECT_NEAR(w0.network, 0, 1e-12);
  EXPECT_NEAR(w0.other, 0.05, 1e-9);
  const WaitBreakdown& w1 = waits_of(m, "worker1");
  EXPECT_NEAR(w1.compute, 0.55, 1e-9);
  EXPECT_NEAR(w1.collective, 0.40, 1e-9);
  const std::vector<WaitStretch> stretches = wait_stretches(trace_);
  bool collective_stretch = false;
  for (const WaitStretch& s : stretches) {
    collective_stretch |= s.cause == WaitCause::kCollective && s.role == w_[0] &&
                          std::abs(s.start_s - 1.3) < 1e-9 && std::abs(s.end_s - 1.9) < 1e-9;
  }
  EXPECT_TRUE(collective_stretch);
  EXPECT_STREQ(wait_cause_text(WaitCause::kCollective), "the collective (all-reduce)");
}

// worker0's step: its apply, then the reduction to the slowest chunk's link (b -> a, bound by
// b/nic/up), the negotiation back to worker1's ready report, and worker1's backward.
TEST_F(AllReduceMetricsTest, TheCriticalPathGoesThroughTheCollective) {
  const std::vector<CriticalPath> paths = critical_paths(trace_, 1.0, 3.0);
  ASSERT_EQ(paths.size(), 2u);
  const CriticalPath& p = paths[0];
  EXPECT_EQ(p.client, "worker0");
  EXPECT_EQ(p.steps, 2);
  auto seconds_of = [&p](const std::string& name) {
    for (const PathShare& s : p.shares) {
      if (s.name == name) return s.seconds;
    }
    return 0.0;
  };
  EXPECT_NEAR(seconds_of("b/gpu0"), 2 * 0.5, 1e-9);  // the straggler's backward
  EXPECT_NEAR(seconds_of("a<->b network"), 2 * 0.35, 1e-9);
  EXPECT_NEAR(seconds_of("all-reduce negotiation"), 2 * 0.05, 1e-9);
  EXPECT_NEAR(seconds_of("a/gpu0"), 2 * 0.05, 1e-9);  // its apply
  EXPECT_NEAR(seconds_of("a/gpu0") + seconds_of("b/gpu0") + seconds_of("a<->b network") +
                  seconds_of("all-reduce negotiation") + seconds_of("other"),
              2.0, 1e-9);
  for (const PathShare& s : p.shares) {
    if (s.name != "a<->b network") continue;
    ASSERT_EQ(s.directions.size(), 1u);
    EXPECT_EQ(s.directions[0].first, "allreduce");
    ASSERT_EQ(s.bounds.size(), 1u);
    EXPECT_EQ(s.bounds[0].first, "b/nic/up");
  }
  const std::string text = describe_path(combine_paths(paths), 4, true);
  EXPECT_NE(text.find("b/nic/up binds"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce"), std::string::npos) << text;
  PathShare negotiation;
  negotiation.name = "all-reduce negotiation";
  EXPECT_EQ(path_share_kind(negotiation), "sync");
}

// Without a recorded bound, the share names the slowest chunk's direction; with no chunk (one
// rank), the rank's device.
TEST_F(AllReduceMetricsTest, AnUnboundChunkNamesItsDirection) {
  for (TraceEvent& e : trace_.events) {
    if (e.kind == EventKind::kTransfer) e.bound = kNoString;
  }
  const std::vector<CriticalPath> paths = critical_paths(trace_, 1.0, 3.0);
  ASSERT_FALSE(paths.empty());
  bool named = false;
  for (const PathShare& s : paths[0].shares) {
    if (s.name == "a<->b network") named = s.bounds.front().first == "b->a";
  }
  EXPECT_TRUE(named);
}

// The chunks load the links they cross: each NIC sends 2 MB per step and receives 2 MB.
TEST_F(AllReduceMetricsTest, ChunksCountOnTheLinksTheyCross) {
  const RunMetrics m = compute_metrics(trace_);
  double a_up = -1, b_down = -1;
  for (const ResourceUse& l : m.links) {
    if (l.name == "a/nic/up") a_up = l.utilization;
    if (l.name == "b/nic/down") b_down = l.utilization;
  }
  // Window [1, 3]: two steps' 2 MB at 10 Gbps (1.25 GB/s).
  EXPECT_NEAR(a_up, 2 * 2e6 / (1.25e9 * 2.0), 1e-12);
  EXPECT_NEAR(b_down, a_up, 1e-12);
}

TEST_F(AllReduceMetricsTest, PhasesCountTheCollectiveAsPushAndItsChunksOnce) {
  TraceEvent c;
  c.kind = EventKind::kCollective;
  EXPECT_EQ(phase_of(c), Phase::kPush);
  TraceEvent chunk;
  chunk.kind = EventKind::kTransfer;
  chunk.producer = OpKind::kAllReduce;
  EXPECT_FALSE(phase_of(chunk).has_value());
}

// The Chrome trace shows each phase under Horovod's name on the rank's row, with the fused
// buffer's bytes and the collective's number.
TEST_F(AllReduceMetricsTest, TheChromeTraceUsesHorovodsNames) {
  std::ostringstream out;
  write_chrome_trace(out, {{&trace_, ""}}, nlohmann::json::object());
  const nlohmann::json j = nlohmann::json::parse(out.str());
  int pid_of_worker0 = -1;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "worker0") {
      pid_of_worker0 = e["pid"];
    }
  }
  int found = 0;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "collective") continue;
    EXPECT_TRUE(e["name"] == "NEGOTIATE_ALLREDUCE" || e["name"] == "NCCL_ALLREDUCE") << e;
    EXPECT_EQ(e["args"]["bytes"], 4e6);
    EXPECT_EQ(e["args"]["collective"], e["args"]["step"]);
    if (e["name"] == "NCCL_ALLREDUCE" && e["args"]["client"] == "worker0" &&
        e["args"]["step"] == 1) {
      EXPECT_EQ(e["pid"], pid_of_worker0);
      EXPECT_NEAR(e["ts"].get<double>(), 1.55e6, 1e-3);
      EXPECT_NEAR(e["dur"].get<double>(), 0.35e6, 1e-3);
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace replisim::core

namespace replisim::core {
namespace {

int op_named(const Plan& plan, OpKind kind, const std::string& layer) {
  const std::vector<Op>& ops = plan.clients[0].ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == kind && ops[i].name.find(layer) != std::string::npos) return int(i);
  }
  ADD_FAILURE() << "no " << op_kind_name(kind) << " op of " << layer;
  return -1;
}

// Two layers, so two tensors and two collectives a step: C1 (dense2's gradient, backward's first)
// reduces over [k + 0.42, k + 0.6] and C2 (dense1's), queued behind it, over [k + 0.6, k + 0.8].
// worker1's backward of dense2 ends at k + 0.4, worker0's at k + 0.2. worker0's path: its last
// apply, C2's reduction, C1's (C2 queued behind it), the negotiation back to dense2's gradient on
// worker1 (ready last), and worker1's backward.
TEST(AllReduceCriticalPath, AQueuedReductionLeadsToTheOneBeforeAndItsLastReadyTensor) {
  nlohmann::json model = test::one_layer_model(1e6, "1 MFLOP");
  model["layers"].push_back(model["layers"][0]);
  model["layers"][0]["name"] = "dense1";
  model["layers"][1]["name"] = "dense2";
  const nlohmann::json doc = test::scenario_json(
      {test::machine("a", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
       test::machine("b", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
      model, {{"replicas", {"a/gpu0", "b/gpu0"}}, {"steps", 3}, {"warmup_steps", 1}});
  const Plan plan = compile_plan(test::parse(doc), "allreduce", {});
  Trace trace;
  trace.meta = trace_meta_from_plan(plan);
  const uint32_t w[2] = {trace.intern("worker0"), trace.intern("worker1")};
  const char* gpu[2] = {"a/gpu0", "b/gpu0"};
  const int backward2 = op_named(plan, OpKind::kBackward, "dense2");
  const int backward1 = op_named(plan, OpKind::kBackward, "dense1");
  const int reduce2 = op_named(plan, OpKind::kAllReduce, "dense2");
  const int reduce1 = op_named(plan, OpKind::kAllReduce, "dense1");
  const int apply2 = op_named(plan, OpKind::kApply, "dense2");
  const int apply1 = op_named(plan, OpKind::kApply, "dense1");
  ASSERT_LT(reduce2, reduce1);  // graph order = backward's order
  auto event = [&](EventKind kind, int r, int64_t k, double start, double end, int op) {
    TraceEvent e;
    e.kind = kind;
    e.actor = e.client = w[r];
    e.device = trace.intern(gpu[r]);
    e.step = k;
    e.start_s = k + start;
    e.end_s = k + end;
    e.op_index = op;
    trace.events.push_back(e);
    return &trace.events.back();
  };
  for (int k = 0; k < 3; ++k) {
    const double dense2_end[2] = {0.2, 0.4};
    for (int r = 0; r < 2; ++r) {
      event(EventKind::kStep, r, k, 0, 1, -1);
      event(EventKind::kCompute, r, k, 0, dense2_end[r], backward2);
      event(EventKind::kCompute, r, k, dense2_end[r], dense2_end[r] + 0.05, backward1);
      for (const auto& [name, start, end, op, id] :
           {std::make_tuple("NEGOTIATE_ALLREDUCE", dense2_end[r], 0.42, reduce2, 2 * k),
            std::make_tuple("NCCL_ALLREDUCE", 0.42, 0.6, reduce2, 2 * k),
            std::make_tuple("NEGOTIATE_ALLREDUCE", dense2_end[r] + 0.05, 0.6, reduce1, 2 * k + 1),
            std::make_tuple("NCCL_ALLREDUCE", 0.6, 0.8, reduce1, 2 * k + 1)}) {
        TraceEvent* e = event(EventKind::kCollective, r, k, start, end, op);
        e->op = OpKind::kAllReduce;
        e->label = trace.intern(name);
        e->message_id = id;
      }
      event(EventKind::kCompute, r, k, 0.6, 0.62, apply2);
      event(EventKind::kCompute, r, k, 0.8, 0.85, apply1);
    }
    for (const auto& [from, start, end, op, bound] :
         {std::make_tuple(0, 0.42, 0.6, reduce2, "a/nic/up"),
          std::make_tuple(1, 0.6, 0.8, reduce1, "b/nic/up")}) {
      TraceEvent* c = event(EventKind::kTransfer, from, k, start, end, op);
      c->op = c->producer = OpKind::kAllReduce;
      c->peer = trace.intern(gpu[1 - from]);
      c->peer_actor = w[1 - from];
      c->bytes = 1e6;
      c->bound = trace.intern(bound);
    }
  }
  const std::vector<CriticalPath> paths = critical_paths(trace, 1.0, 3.0);
  ASSERT_EQ(paths.size(), 2u);
  std::map<std::string, double> seconds;
  for (const PathShare& s : paths[0].shares) seconds[s.name] = s.seconds / paths[0].steps;
  EXPECT_NEAR(seconds["a<->b network"], 0.2 + 0.18, 1e-9);
  EXPECT_NEAR(seconds["all-reduce negotiation"], 0.02, 1e-9);
  EXPECT_NEAR(seconds["b/gpu0"], 0.4, 1e-9);   // worker1's backward of dense2
  EXPECT_NEAR(seconds["a/gpu0"], 0.05, 1e-9);  // worker0's apply of dense1
  EXPECT_NEAR(seconds["other"], 0.15, 1e-9);
  for (const PathShare& s : paths[0].shares) {
    if (s.name != "a<->b network") continue;
    ASSERT_EQ(s.bounds.size(), 2u);
    EXPECT_EQ(s.bounds[0].first, "b/nic/up");  // C2's 0.2 s before C1's 0.18 s
    EXPECT_EQ(s.bounds[1].first, "a/nic/up");
  }
}

}  // namespace
}  // namespace replisim::core
