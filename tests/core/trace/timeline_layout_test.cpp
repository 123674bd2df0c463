#include "core/trace/timeline_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace replisim::core {
namespace {

TraceEvent span(EventKind kind, uint32_t actor, double start_s, double end_s) {
  TraceEvent e;
  e.kind = kind;
  e.actor = actor;
  e.start_s = start_s;
  e.end_s = end_s;
  return e;
}

TEST(TimelineLayout, ConcurrentSlicesTakeSubLanesAndTransfersHaveTwoHalves) {
  Trace t;
  t.meta.roles = {{"worker0", RoleKind::kWorker, "pc1/gpu0", true},
                  {"ps0", RoleKind::kParameterServer, "pc2/cpu", false}};
  t.meta.ps = {"ps0"};
  const uint32_t worker = t.intern("worker0"), ps = t.intern("ps0"), link = t.intern("pc1/nic");
  const uint32_t gpu = t.intern("pc1/gpu0");
  TraceEvent a = span(EventKind::kTransfer, worker, 0.0, 2.0);
  a.peer_actor = ps;
  a.message_id = 4;
  TraceEvent b = a;  // overlaps a: a second send sub-lane, and a second recv one
  b.start_s = 1.0;
  b.end_s = 3.0;
  TraceEvent c = a;  // after a: back on the first sub-lane
  c.start_s = 2.5;
  c.end_s = 2.75;
  TraceEvent compute = span(EventKind::kCompute, worker, 0.0, 1.0);
  compute.device = gpu;
  TraceEvent fault = span(EventKind::kFault, link, 1.5, 1.5);
  TraceEvent late = span(EventKind::kStep, worker, 10.0, 11.0);
  t.events = {a, b, c, compute, fault, late};
  t.counters = {{t.intern("global_step"), 1.0, 1}, {t.intern("global_step"), 12.0, 2}};

  const TimelineLayout layout = layout_timeline(t, {0, 5});
  ASSERT_EQ(layout.processes.size(), 3u);  // the two roles, then the link the fault hit
  EXPECT_EQ(layout.roles_and_slices, 2u);
  EXPECT_EQ(layout.processes[2].actor, link);
  ASSERT_EQ(layout.slices.size(), 7u);  // three transfers in halves, one compute; not the step
  EXPECT_FALSE(layout.slices[0].receiver_side);
  EXPECT_TRUE(layout.slices[1].receiver_side);
  EXPECT_EQ(layout.slices[1].process, 1);
  auto lane = [&](size_t slice) { return layout.lanes[size_t(layout.slices[slice].lane)]; };
  EXPECT_EQ(lane(0).label(), "send.0");
  EXPECT_EQ(lane(2).label(), "send.1");
  EXPECT_EQ(lane(4).label(), "send.0");
  EXPECT_EQ(lane(5).label(), "recv.0");
  EXPECT_EQ(lane(6).label(), "compute pc1/gpu0.0");
  // Display order: by process, then lane kind, then sub-lane.
  std::vector<std::string> labels;
  for (const TimelineLane& l : layout.lanes) labels.push_back(l.label());
  EXPECT_EQ(labels, std::vector<std::string>(
                        {"compute pc1/gpu0.0", "send.0", "send.1", "recv.0", "recv.1"}));
  ASSERT_EQ(layout.instants.size(), 1u);
  EXPECT_EQ(layout.instants[0].process, 2);
  ASSERT_EQ(layout.counters.size(), 1u);  // the one at 12 s is outside the window
  EXPECT_EQ(layout.counter_process, 1);
  EXPECT_EQ(layout.max_message_id, 4);
}

// A trace of one worker's compute slices (no transfers: one slice per event).
Trace computes(const std::vector<std::pair<double, double>>& spans) {
  Trace t;
  t.meta.roles = {{"worker0", RoleKind::kWorker, "pc1/gpu0", true}};
  const uint32_t worker = t.intern("worker0"), gpu = t.intern("pc1/gpu0");
  for (const auto& [start_s, end_s] : spans) {
    TraceEvent e = span(EventKind::kCompute, worker, start_s, end_s);
    e.device = gpu;
    t.events.push_back(e);
  }
  return t;
}

// Each slice takes the smallest-numbered sub-lane whose last slice ended by its start, taking them
// by start, the longer first (the rule the sub-lanes were first assigned by, one scan of every
// sub-lane per slice), on random spans with ties and zero-length ones.
TEST(TimelineLayout, SubLanesAreTheFirstFreeAtEachStart) {
  std::vector<std::pair<double, double>> spans;
  uint64_t state = 12345;
  auto next = [&state](int below) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return int((state >> 33) % uint64_t(below));
  };
  for (int i = 0; i < 2000; ++i) {
    const double start = next(500) * 1e-3;
    spans.emplace_back(start, start + next(40) * 1e-3);
  }
  const Trace t = computes(spans);
  const TimelineLayout layout = layout_timeline(t, {});
  ASSERT_EQ(layout.slices.size(), spans.size());
  // The rule, slice by slice, in the order it takes them.
  std::vector<const TimelineSlice*> order;
  for (const TimelineSlice& s : layout.slices) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const TimelineSlice* x, const TimelineSlice* y) {
    return x->start_ns != y->start_ns ? x->start_ns < y->start_ns : x->end_ns > y->end_ns;
  });
  std::vector<int64_t> lane_end;
  for (const TimelineSlice* s : order) {
    size_t k = 0;
    while (k < lane_end.size() && lane_end[k] > s->start_ns) ++k;
    if (k == lane_end.size()) lane_end.push_back(0);
    lane_end[k] = s->end_ns;
    ASSERT_EQ(layout.lanes[size_t(s->lane)].sub_lane, int(k));
  }
  EXPECT_EQ(layout.lanes.size(), lane_end.size());
}

// 400,000 copies of one slice, all overlapping: a sub-lane each, in about a second (a scan of
// every sub-lane per slice, as before issue 37, would take about 8 minutes: 100,000 took 31 s).
TEST(TimelineLayout, ManyOverlappingSlicesLayOutInLinearithmicTime) {
  const Trace t = computes(std::vector<std::pair<double, double>>(400000, {1.0, 2.0}));
  const auto start = std::chrono::steady_clock::now();
  const TimelineLayout layout = layout_timeline(t, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(layout.lanes.size(), 400000u);
  EXPECT_EQ(layout.lanes.back().sub_lane, 399999);
  EXPECT_LT(seconds, 60.0) << "the sub-lanes' assignment is not O(n log n)";
}

}  // namespace
}  // namespace replisim::core
