// The model under the view: lanes, range statistics, find, link and counter tracks.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "core/metrics/metrics.h"

#include "gui/timeline_model.h"
#include "gui/trace_loading.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

const RangeStatistic* row_of(const std::vector<RangeStatistic>& rows, Category category,
                             const std::string& actor) {
  for (const RangeStatistic& r : rows) {
    if (r.category == category && r.actor == actor) return &r;
  }
  return nullptr;
}

TEST(TimelineModel, RangeStatisticsCountAndTotalTheEventsOfTheRange) {
  const auto model = test::tiny_model();
  // [1.5, 3.5]: half of each forward op, the whole send and the whole apply.
  const std::vector<RangeStatistic> rows = model->range_statistics(1.5, 3.5);
  const RangeStatistic* forward = row_of(rows, Category::kForward, "worker0");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->count, 2);
  EXPECT_DOUBLE_EQ(forward->total_s, 1.0);
  EXPECT_DOUBLE_EQ(forward->mean_s, 1.0);
  EXPECT_DOUBLE_EQ(forward->max_s, 1.0);
  const RangeStatistic* push = row_of(rows, Category::kPush, "worker0");
  ASSERT_NE(push, nullptr);  // counted once, at its sender
  EXPECT_EQ(push->count, 1);
  EXPECT_DOUBLE_EQ(push->total_s, 0.5);
  EXPECT_EQ(row_of(rows, Category::kPush, "ps0"), nullptr);
  const RangeStatistic* apply = row_of(rows, Category::kUpdateOp, "ps0");
  ASSERT_NE(apply, nullptr);
  EXPECT_DOUBLE_EQ(apply->total_s, 0.25);
  // A range after everything holds nothing.
  EXPECT_TRUE(model->range_statistics(10, 11).empty());
}

TEST(TimelineModel, LanesComeFromTheSharedLayoutWithSlicesSortedByStart) {
  const auto model = test::tiny_model();
  const int lane = test::lane_named(*model, "worker0", "compute pc1/gpu0");
  ASSERT_GE(lane, 0);
  const LaneSlices& slices = model->lanes()[size_t(lane)];
  ASSERT_EQ(slices.start_ns.size(), 2u);
  EXPECT_EQ(slices.start_ns[0], 1000000000);
  EXPECT_EQ(slices.end_ns[1], 4000000000);
  EXPECT_EQ(slices.overlapping(2100000000, 2900000000).second -
                slices.overlapping(2100000000, 2900000000).first,
            0u);
  EXPECT_GE(test::lane_named(*model, "worker0", "send"), 0);
  EXPECT_GE(test::lane_named(*model, "ps0", "recv"), 0);
  EXPECT_DOUBLE_EQ(model->end_s(), 4.5);
}

// The report's wait stretches (core::wait_stretches), each with what held it.
TEST(TimelineModel, AWorkerWaitsInItsStepWhereNothingOfItsOwnRuns) {
  const auto model = test::tiny_model();
  const int worker = model->lanes()[size_t(test::lane_named(*model, "worker0", "step"))].process;
  const WaitLane* waits = model->waits_of(worker);
  ASSERT_NE(waits, nullptr);
  // The step [0.5, 4.5] less its ops [1, 2], [3, 4] and its send [2, 2.5]; ps0 applies over
  // [2.5, 2.75].
  const std::vector<int64_t> starts{500000000, 2500000000, 2750000000, 4000000000};
  const std::vector<int64_t> ends{1000000000, 2750000000, 3000000000, 4500000000};
  EXPECT_EQ(waits->start_ns, starts);
  EXPECT_EQ(waits->end_ns, ends);
  const std::vector<core::WaitCause> causes{core::WaitCause::kOther,
                                            core::WaitCause::kParameterServer,
                                            core::WaitCause::kOther, core::WaitCause::kOther};
  EXPECT_EQ(waits->cause, causes);
  const int ps = model->lanes()[size_t(test::lane_named(*model, "ps0", "recv"))].process;
  EXPECT_EQ(model->waits_of(ps), nullptr);  // a parameter server serves; it does not wait
  const std::vector<RangeStatistic> rows = model->range_statistics(1.5, 3.5);
  const RangeStatistic* wait = row_of(rows, Category::kWait, "worker0");
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->count, 2);
  EXPECT_DOUBLE_EQ(wait->total_s, 0.5);
}

TEST(TimelineModel, FindGoesFromOneMatchingOpToTheNext) {
  const auto model = test::tiny_model();
  const int first = model->find_slice("FWD/", -1);
  ASSERT_GE(first, 0);
  const int second = model->find_slice("fwd/", first);
  ASSERT_GE(second, 0);
  EXPECT_NE(first, second);
  EXPECT_EQ(model->find_slice("fwd/", second), first);  // wraps round
  EXPECT_EQ(model->find_slice("no such op", -1), -1);
}

TEST(TimelineModel, ATransferPairsItsSendingAndReceivingSlices) {
  const auto model = test::tiny_model();
  const int send = model->find_slice("send/grad", -1);
  ASSERT_GE(send, 0);
  const int recv = model->partner_slice(send);
  ASSERT_GE(recv, 0);
  EXPECT_TRUE(model->layout().slices[size_t(recv)].receiver_side);
  EXPECT_EQ(model->partner_slice(recv), send);
}

// The viewer's link tracks cross the links the report counts (Platform::transfer_route): a tensor
// between two processes on one GPU goes through host memory, up and down its PCIe link.
TEST(TimelineModel, LinkTracksCrossTheLinksTheReportCounts) {
  core::Trace trace = test::tiny_trace(0);
  trace.meta.platform.transport.between_processes = true;
  for (core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kTransfer) e.peer = e.device;  // worker0 to another process
  }
  const TimelineModel model(trace, "tiny");
  std::set<std::string> tracks;
  for (const LinkTrack& t : model.links()) tracks.insert(t.name);
  const core::RunMetrics report = core::compute_window_metrics(trace, 0, 4.5);
  std::set<std::string> counted;
  for (const core::ResourceUse& l : report.links) {
    if (l.utilization > 0) counted.insert(l.name);
  }
  EXPECT_EQ(tracks, counted);
  EXPECT_EQ(tracks.count("pc1/pcie/gpu0/up"), 1u);
  EXPECT_EQ(tracks.count("pc1/pcie/gpu0/down"), 1u);
}

TEST(TimelineModel, CounterValuesHoldFromEachSample) {
  core::Trace trace = test::tiny_trace();
  const uint32_t name = trace.intern("global_step");
  trace.counters.push_back({name, 1.0, 1});
  trace.counters.push_back({name, 3.0, 2});
  TimelineModel model(std::move(trace), "t");
  ASSERT_EQ(model.counters().size(), 1u);
  EXPECT_EQ(model.counters()[0].value_at(0.5), 0);
  EXPECT_EQ(model.counters()[0].value_at(2.0), 1);
  EXPECT_EQ(model.counters()[0].value_at(9.0), 2);
  EXPECT_EQ(model.counters()[0].max_value, 2);
}

}  // namespace
}  // namespace replisim::gui

namespace replisim::gui {
namespace {

TEST(TraceLoading, APreviewOfTheFirstEventsComesBeforeTheWholeFile) {
  const std::string path = test::temporary_path("preview.rstrace");
  test::write_native(test::tiny_trace(), path);
  size_t preview_events = 0;
  bool whole_file_read = false;
  const ModelList models = load_trace_file(
      path,
      [&](std::shared_ptr<const TimelineModel> preview) {
        preview_events = preview->trace().events.size();
        EXPECT_FALSE(whole_file_read);
      },
      2);
  whole_file_read = true;
  EXPECT_EQ(preview_events, 2u);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0]->trace().events.size(), test::tiny_trace().events.size());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace replisim::gui
