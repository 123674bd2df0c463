// The time-to-target marker (training.objective): a line across the timeline where the target was
// first reached, labelled; nothing without an objective, when it is not reached, or (animating)
// before the animation's time comes to it. And the sweep chart and scaling window's time to target.
#include <gtest/gtest.h>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QScatterSeries>
#include <QTabWidget>
#include <QTableWidget>

#include "gui/categories.h"
#include "gui/charts/scaling_chart.h"
#include "gui/charts/scaling_window.h"
#include "gui/time_axis.h"
#include "gui/timeline_view.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

// Whether a pixel of the marker's colour lies within a pixel of `time_s` on `lane`'s row.
bool marker_at(TimelineView& view, double time_s, int lane) {
  const QImage image = view.viewport()->grab().toImage();
  const int x = int(view.x_of(time_s)), y = view.lane_middle_y(lane);
  for (int dx = -1; dx <= 1; ++dx) {
    if (image.pixelColor(x + dx, y) == objective_target_colour()) return true;
  }
  return false;
}

class TargetMarkerTest : public ::testing::Test {
 protected:
  void show(std::shared_ptr<const TimelineModel> model) {
    view.resize(1000, 400);
    view.set_model(std::move(model));
    view.axis()->set_range(0, 5);
    view.show();
    QApplication::processEvents();
    lane = test::lane_named(*view.model(), "worker0", "compute pc1/gpu0");
    ASSERT_GE(lane, 0);
  }
  TimelineView view;
  int lane = -1;
};

TEST_F(TargetMarkerTest, ALineWhereTheTargetIsFirstReachedWithItsLabel) {
  show(std::make_shared<const TimelineModel>(test::tiny_objective_trace(0.75), "o"));
  const auto& objective = view.model()->objective();
  ASSERT_TRUE(objective && objective->reached());
  EXPECT_DOUBLE_EQ(objective->time_to_target_s, 2.75);
  EXPECT_EQ(objective_marker_text(*objective), "target accuracy 0.75 at 2.75 s, global step 1");
  // worker0's compute lane is idle at 2.75 s: the marker crosses it there, and only there.
  EXPECT_TRUE(marker_at(view, 2.75, lane));
  EXPECT_FALSE(marker_at(view, 2.6, lane));
  // Animating: not before the animation reaches it.
  view.set_reveal_until_s(2.5);
  QApplication::processEvents();
  EXPECT_FALSE(marker_at(view, 2.75, lane));
  view.set_reveal_until_s(3.0);
  QApplication::processEvents();
  EXPECT_TRUE(marker_at(view, 2.75, lane));
}

TEST_F(TargetMarkerTest, NothingWithoutAnObjectiveOrWhenTheTargetIsNotReached) {
  show(std::make_shared<const TimelineModel>(test::tiny_objective_trace(0.9), "o"));
  ASSERT_TRUE(view.model()->objective());
  EXPECT_FALSE(view.model()->objective()->reached());
  EXPECT_FALSE(marker_at(view, 2.75, lane));
  show(test::tiny_model());
  EXPECT_FALSE(view.model()->objective());
  EXPECT_FALSE(marker_at(view, 2.75, lane));
}

// replicas 1, 2, 4: 4 did not reach the target.
core::SweepResults objective_sweep() {
  core::SweepResults r;
  r.scenario_name = "toy";
  r.axes = {{"replicas", {"1", "2", "4"}}};
  r.points_total = 3;
  const double times[] = {3.0, 2.0, -1};
  for (size_t i = 0; i < 3; ++i) {
    core::SweepRow row;
    row.index = i;
    row.knobs = {{"replicas", r.axes[0].values[i]}};
    row.strategy = "between_graph";
    row.replica_devices = 1 << i;
    row.throughput_samples_per_s = 100.0 * row.replica_devices;
    core::SweepObjective o{"accuracy", 0.8, 10, std::nullopt, std::nullopt, 0.7, 0.6};
    if (times[i] > 0) {
      o.time_to_target_s = times[i];
      o.global_steps_to_target = 40;
    }
    row.objective = o;
    r.rows.push_back(row);
  }
  return r;
}

TEST(TimeToTargetChart, DrawsThePointsThatReachedTheTargetAndCountsTheOthers) {
  const core::SweepResults r = objective_sweep();
  ASSERT_EQ(sweep_chart_kinds(r).size(), 4u);
  EXPECT_EQ(sweep_chart_kinds(r).back(), SweepChartKind::kTimeToTarget);
  EXPECT_EQ(sweep_chart_name(SweepChartKind::kTimeToTarget), "time-to-target");
  QChartView view(make_sweep_chart(r, SweepChartKind::kTimeToTarget));
  view.resize(1000, 700);
  QLineSeries* line = nullptr;
  for (QAbstractSeries* s : view.chart()->series()) {
    if (auto* l = qobject_cast<QLineSeries*>(s); l && !qobject_cast<QScatterSeries*>(s)) line = l;
  }
  ASSERT_NE(line, nullptr);
  ASSERT_EQ(line->count(), 2);
  EXPECT_DOUBLE_EQ(line->at(0).y(), 3.0);
  EXPECT_DOUBLE_EQ(line->at(1).y(), 2.0);
  const QString title = view.chart()->title();
  EXPECT_TRUE(title.contains("time to test accuracy >= 0.8")) << title.toStdString();
  EXPECT_TRUE(title.contains("1 point(s) did not reach it")) << title.toStdString();
  // A sweep without an objective makes the three charts it made before.
  core::SweepResults plain = r;
  for (core::SweepRow& row : plain.rows) row.objective.reset();
  EXPECT_EQ(sweep_chart_kinds(plain).size(), 3u);
}

TEST(TimeToTargetChart, TheScalingWindowHasItsTabAndColumn) {
  ScalingWindow window;
  window.show_results(objective_sweep());
  ASSERT_EQ(window.tabs()->count(), 4);
  EXPECT_EQ(window.tabs()->tabText(3), "time-to-target");
  QTableWidget* table = window.table();
  const int last = table->columnCount() - 1;
  EXPECT_EQ(table->horizontalHeaderItem(last)->text(), "to target (s)");
  EXPECT_EQ(table->item(0, last)->text(), "3.000");
  EXPECT_EQ(table->item(2, last)->text(), "not reached");
}

}  // namespace
}  // namespace replisim::gui
