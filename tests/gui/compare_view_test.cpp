// The compare view: two runs on one axis, aligned by the offset, zooming together.
#include <gtest/gtest.h>
#include <QApplication>
#include <QWheelEvent>

#include "gui/compare_view.h"
#include "gui/panels/metrics_table.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

TEST(CompareView, TheOffsetAlignsTheSecondRunWithTheFirst) {
  CompareView compare;
  compare.resize(1000, 800);
  // B is A started 0.75 s earlier: an offset of 0.75 s lines their ops up.
  compare.set_models(test::tiny_model(), test::tiny_model(-0.75));
  compare.set_offset_s(0.75);
  compare.axis()->set_range(0, 5);
  compare.show();
  QApplication::processEvents();
  TimelineView* a = compare.view_a();
  TimelineView* b = compare.view_b();
  EXPECT_NEAR(compare.offset_s(), 0.75, 1e-12);
  EXPECT_NEAR(a->x_of(1.0), b->x_of(0.25), 1e-9);
  const int lane_a = test::lane_named(*a->model(), "worker0", "compute pc1/gpu0");
  const int lane_b = test::lane_named(*b->model(), "worker0", "compute pc1/gpu0");
  const QImage image_a = a->viewport()->grab().toImage();
  const QImage image_b = b->viewport()->grab().toImage();
  // A's op 1-2 s and B's 0.25-1.25 s sit on the same pixels; so do their gaps.
  for (double t : {1.9, 2.6, 3.9}) {
    const int x = int(a->x_of(t));
    EXPECT_EQ(image_a.pixelColor(x, a->lane_middle_y(lane_a)),
              image_b.pixelColor(x, b->lane_middle_y(lane_b)))
        << t;
  }
  EXPECT_EQ(image_b.pixelColor(int(a->x_of(1.9)), b->lane_middle_y(lane_b)),
            category_colour(Category::kForward));
  // Without the offset they differ.
  compare.set_offset_s(0);
  QApplication::processEvents();
  const QImage unaligned = b->viewport()->grab().toImage();
  EXPECT_EQ(unaligned.pixelColor(int(a->x_of(3.9)), b->lane_middle_y(lane_b)), background_colour());
}

TEST(CompareView, ZoomingOneRunZoomsTheOther) {
  CompareView compare;
  compare.resize(1000, 800);
  compare.set_models(test::tiny_model(), test::tiny_model());
  compare.show();
  QApplication::processEvents();
  const double before = compare.view_b()->axis()->duration_s();
  const QPointF at(600, 60);
  QWheelEvent wheel(at, at, QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(compare.view_a()->viewport(), &wheel);
  EXPECT_LT(compare.view_b()->axis()->duration_s(), 0.7 * before);
  EXPECT_NEAR(compare.view_a()->trace_time_at(600), compare.view_b()->trace_time_at(600), 1e-12);
}

TEST(CompareView, TheMetricsTableShowsBothRunsAndTheirDifference) {
  CompareView compare;
  compare.set_models(test::tiny_model(), test::tiny_model());
  MetricsTable* table = compare.metrics_table();
  ASSERT_GT(table->rowCount(), 3);
  EXPECT_EQ(table->item(0, 1)->text(), "tiny\nbetween_graph (async)");
  // The tiny trace has no platform: its metrics say why they are missing.
  EXPECT_FALSE(table->item(table->rowCount() - 1, 1)->text().isEmpty());
}

// Each run on its own time axis: B fitted to its own run (not squeezed into the part of a shared
// axis it covers), zooming A leaves B as it is; unchecked, both share A's axis again.
TEST(CompareView, EachRunCanBeShownOnItsOwnTimeAxis) {
  CompareView compare;
  compare.resize(1200, 700);
  compare.set_models(test::tiny_model(40), test::tiny_model());  // B ends ten times sooner
  compare.show();
  TimelineView* a = compare.view_a();
  TimelineView* b = compare.view_b();
  ASSERT_EQ(a->axis(), b->axis());
  const double begin = b->model()->begin_s(), end = b->model()->end_s();
  const double shared_width = b->x_of(end) - b->x_of(begin);
  compare.set_own_axes(true);
  EXPECT_TRUE(compare.own_axes());
  ASSERT_NE(a->axis(), b->axis());
  const double own_width = b->x_of(end) - b->x_of(begin);
  EXPECT_GT(own_width, 0.9 * b->canvas_rect().width());
  EXPECT_LT(shared_width, 0.2 * b->canvas_rect().width());
  const double b_from = b->axis()->from_s();
  a->axis()->zoom_at(2, 0.5);
  EXPECT_EQ(b->axis()->from_s(), b_from);
  compare.set_own_axes(false);
  EXPECT_EQ(a->axis(), b->axis());
}

}  // namespace
}  // namespace replisim::gui

namespace replisim::gui {
namespace {

// Three runs (--strategy all): the timelines show two at a time, every pair offered above them in
// order, the table that pair's metrics; set_models drops the choice.
TEST(CompareView, ThreeRunsAreComparedTwoAtATimeByPair) {
  CompareView compare;
  compare.resize(1000, 800);
  const ModelList runs = {test::tiny_model(), test::tiny_model(-0.5), test::tiny_model(-1.0)};
  compare.set_runs(runs);
  ASSERT_EQ(compare.pair_choices(), 3);  // (0, 1), (0, 2), (1, 2)
  EXPECT_EQ(compare.view_a()->model(), runs[0]);
  EXPECT_EQ(compare.view_b()->model(), runs[1]);
  compare.show_pair(2);
  EXPECT_EQ(compare.view_a()->model(), runs[1]);
  EXPECT_EQ(compare.view_b()->model(), runs[2]);
  compare.show_pair(1);
  EXPECT_EQ(compare.view_a()->model(), runs[0]);
  EXPECT_EQ(compare.view_b()->model(), runs[2]);
  compare.set_models(runs[2], runs[0]);
  EXPECT_EQ(compare.pair_choices(), 0);
  EXPECT_EQ(compare.view_a()->model(), runs[2]);
}

// All-reduce events have colours of their own: a rank's collective phases and its chunks.
TEST(CompareView, AllReduceEventsHaveTheirOwnCategories) {
  core::TraceEvent phase;
  phase.kind = core::EventKind::kCollective;
  EXPECT_EQ(category_of(phase), Category::kCollective);
  core::TraceEvent chunk;
  chunk.kind = core::EventKind::kTransfer;
  chunk.producer = core::OpKind::kAllReduce;
  EXPECT_EQ(category_of(chunk), Category::kCollectiveChunk);
  EXPECT_NE(category_colour(Category::kCollective), category_colour(Category::kPush));
  EXPECT_NE(category_colour(Category::kCollectiveChunk), category_colour(Category::kOtherTransfer));
  EXPECT_STREQ(category_name(Category::kCollective), "all-reduce (Horovod phase)");
}

}  // namespace
}  // namespace replisim::gui
