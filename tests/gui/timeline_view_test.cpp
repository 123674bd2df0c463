// The timeline's pixels and its zoom: what is drawn where, and the wheel zooming at the cursor.
#include <gtest/gtest.h>
#include <QApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QToolTip>
#include <QWheelEvent>

#include "gui/categories.h"
#include "gui/time_axis.h"
#include "gui/timeline_view.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

class TimelineViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    view.resize(1000, 400);
    view.set_model(test::tiny_model());
    view.axis()->set_range(0, 5);
    view.show();
    QApplication::processEvents();
    lane = test::lane_named(*view.model(), "worker0", "compute pc1/gpu0");
    ASSERT_GE(lane, 0);
  }
  QColor pixel(double time_s, int lane_index) {
    const QImage image = view.viewport()->grab().toImage();
    return image.pixelColor(int(view.x_of(time_s)), view.lane_middle_y(lane_index));
  }
  TimelineView view;
  int lane = -1;
};

TEST_F(TimelineViewTest, AComputeSpanHasTheComputeColourAndAnIdleTimeTheBackground) {
  // Right of the op's label (drawn from its left edge), inside its span.
  EXPECT_EQ(pixel(1.9, lane), category_colour(Category::kForward));
  EXPECT_EQ(pixel(2.6, lane), background_colour());  // between the two ops (off the grid)
  EXPECT_EQ(pixel(3.9, lane), category_colour(Category::kForward));
  const int apply = test::lane_named(*view.model(), "ps0", "compute pc2/cpu");
  ASSERT_GE(apply, 0);
  EXPECT_EQ(pixel(2.7, apply), category_colour(Category::kUpdateOp));
  EXPECT_EQ(pixel(1.6, apply), background_colour());
}

TEST_F(TimelineViewTest, AWheelStepKeepsTheTimeUnderTheCursorAndNarrowsTheRange) {
  const double x = view.x_of(1.234);
  const double before = view.trace_time_at(x), duration = view.axis()->duration_s();
  const QPointF at(x, view.lane_middle_y(lane));
  QWheelEvent wheel(at, view.viewport()->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(view.viewport(), &wheel);
  EXPECT_NEAR(view.trace_time_at(x), before, 1e-9);
  EXPECT_LT(view.axis()->duration_s(), 0.9 * duration);
  // Zooming back out restores the range about the same point.
  QWheelEvent back(at, view.viewport()->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton,
                   Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(view.viewport(), &back);
  EXPECT_NEAR(view.axis()->duration_s(), duration, 1e-9);
  EXPECT_NEAR(view.trace_time_at(x), before, 1e-9);
}

TEST_F(TimelineViewTest, SpansNarrowerThanTwoPixelsFoldIntoOneBlock) {
  // Zoomed out a thousand times the two ops and the gap between them fall within 2 px.
  view.axis()->set_range(0, 5000);
  QApplication::processEvents();
  const QImage image = view.viewport()->grab().toImage();
  const int y = view.lane_middle_y(lane);
  int drawn = 0;
  for (int x = int(view.x_of(0)); x <= int(view.x_of(10)) + 1; ++x) {
    drawn += image.pixelColor(x, y) != background_colour();
  }
  EXPECT_GE(drawn, 1);  // the block
  EXPECT_LE(drawn, 3);  // one block, not two spans and a gap
  EXPECT_EQ(image.pixelColor(int(view.x_of(3100)), y), background_colour());
}

TEST_F(TimelineViewTest, ACollapsedGroupHidesItsLanesAndShowsThemInItsHeader) {
  const int process = view.model()->lanes()[size_t(lane)].process;
  view.set_group_collapsed(process, true);
  EXPECT_EQ(view.lane_middle_y(lane), -1);
  view.set_group_collapsed(process, false);
  EXPECT_GT(view.lane_middle_y(lane), 0);
}

TEST(RulerTicks, PickAUnitAndFiveToFifteenTicks) {
  for (double duration : {3e-7, 4.2e-5, 0.0009, 0.013, 0.7, 2.0, 17.0, 420.0, 9000.0}) {
    for (double from : {0.0, 1.2345, 100.0}) {
      const RulerTicks ticks = ruler_ticks(from, from + duration);
      EXPECT_GE(ticks.times_s.size(), 5u) << duration;
      EXPECT_LE(ticks.times_s.size(), 15u) << duration;
    }
  }
  EXPECT_EQ(ruler_ticks(0, 0.05).unit, "ms");
  EXPECT_EQ(ruler_ticks(0, 4e-5).unit, QString::fromUtf8("µs"));
  EXPECT_EQ(ruler_ticks(0, 30).unit, "s");
  EXPECT_EQ(ruler_ticks(0, 30).labels.at(1), "5 s");
  EXPECT_EQ(ruler_ticks(0.156, 0.160).labels.at(1), "156.5 ms");  // a 500 µs step
}

}  // namespace
}  // namespace replisim::gui

namespace replisim::gui {
namespace {

TEST_F(TimelineViewTest, AClickSelectsTheSpanUnderTheCursorAndKeysFitAndZoom) {
  int selected = -2;
  QObject::connect(&view, &TimelineView::slice_selected, [&](int slice) { selected = slice; });
  const QPointF at(view.x_of(3.5), view.lane_middle_y(lane));
  QMouseEvent press(QEvent::MouseButtonPress, at, view.viewport()->mapToGlobal(at), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QMouseEvent release(QEvent::MouseButtonRelease, at, view.viewport()->mapToGlobal(at),
                      Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(view.viewport(), &press);
  QApplication::sendEvent(view.viewport(), &release);
  ASSERT_GE(selected, 0);
  EXPECT_EQ(view.model()->trace().str(view.model()->layout().slices[size_t(selected)].event->label),
            "fwd/b");
  // F fits the run (0 to 4.5 s, padded); Z zooms to a selected range.
  QKeyEvent f(QEvent::KeyPress, Qt::Key_F, Qt::NoModifier, "f");
  QApplication::sendEvent(&view, &f);
  EXPECT_LT(view.axis()->from_s(), 0.0);
  EXPECT_GT(view.axis()->until_s(), 4.5);
  EXPECT_LT(view.axis()->until_s(), 4.6);
  view.select_range(1.0, 2.0);
  QKeyEvent z(QEvent::KeyPress, Qt::Key_Z, Qt::NoModifier, "z");
  QApplication::sendEvent(&view, &z);
  EXPECT_NEAR(view.trace_time_at(view.canvas_rect().left()), 0.98, 0.01);
  EXPECT_NEAR(view.axis()->duration_s(), 1.04, 0.01);
}

}  // namespace
}  // namespace replisim::gui

namespace replisim::gui {
namespace {

// From the middle of a role's last lane (its step lane) to the middle of its waits row below.
constexpr int kWaitRowOffsetPx = (TimelineView::kLaneHeightPx + TimelineView::kWaitHeightPx) / 2;

TEST_F(TimelineViewTest, HoveringASpanOrAWaitShowsWhatItIs) {
  auto tip_at = [&](QPointF at) {
    QHelpEvent help(QEvent::ToolTip, at.toPoint(), view.viewport()->mapToGlobal(at.toPoint()));
    QApplication::sendEvent(view.viewport(), &help);
    return QToolTip::isVisible() ? QToolTip::text() : QString();
  };
  const QString span = tip_at(QPointF(view.x_of(1.5), view.lane_middle_y(lane)));
  EXPECT_TRUE(span.contains("fwd/a")) << span.toStdString();
  EXPECT_TRUE(span.contains("duration 1 s")) << span.toStdString();
  EXPECT_TRUE(span.contains("worker0")) << span.toStdString();
  // The waits row sits right under worker0's lanes: [2.5, 2.75] s is a wait on ps0's apply.
  const int step = test::lane_named(*view.model(), "worker0", "step");
  const QString wait = tip_at(QPointF(view.x_of(2.6), view.lane_middle_y(step) + kWaitRowOffsetPx));
  EXPECT_TRUE(wait.contains("worker0 waits</b>")) << wait.toStdString();
  EXPECT_TRUE(wait.contains("held by a parameter server")) << wait.toStdString();
  EXPECT_TRUE(wait.contains("250 ms")) << wait.toStdString();
  QToolTip::hideText();
}

}  // namespace
}  // namespace replisim::gui
