// The window: a corrupt file gives one line and leaves the window working; a range dragged with
// the mouse gives its statistics.
#include <gtest/gtest.h>
#include <QApplication>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QTableWidget>
#include <filesystem>
#include <fstream>

#include "core/trace/trace_format.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/panels/range_panel.h"
#include "gui/timeline_view.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

// Waits (processing events) until `done` or 10 s.
template <typename Done>
bool wait_for(Done done) {
  QElapsedTimer timer;
  timer.start();
  while (!done() && timer.elapsed() < 10000) QApplication::processEvents(QEventLoop::AllEvents, 20);
  return done();
}

class MainWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good = test::temporary_path("good.rstrace");
    test::write_native(test::tiny_trace(), good);
    window.resize(1400, 800);
    window.show();
  }
  void TearDown() override { std::filesystem::remove(good); }
  std::string good;
  MainWindow window;
};

TEST_F(MainWindowTest, ATruncatedTraceGivesOneLineAndTheWindowStaysUsable) {
  window.open_paths({QString::fromStdString(good)}, true);
  ASSERT_TRUE(window.last_error().isEmpty()) << window.last_error().toStdString();
  ASSERT_TRUE(window.timeline()->model());
  const auto shown = window.timeline()->model();
  // The same file cut in the middle of its events.
  const std::string cut = test::temporary_path("cut.rstrace");
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  window.open_paths({QString::fromStdString(cut)}, true);
  EXPECT_FALSE(window.last_error().isEmpty());
  EXPECT_FALSE(window.last_error().contains('\n'));
  EXPECT_TRUE(window.last_error().contains(QString::fromStdString(cut)));
  EXPECT_EQ(window.timeline()->model(), shown);  // still showing the trace it had
  // Through the worker thread as well (File > Open): the same line, the window still answers.
  window.open_paths({QString::fromStdString(cut)}, false);
  EXPECT_TRUE(wait_for([&] { return !window.last_error().isEmpty(); }));
  const std::string garbage = test::temporary_path("garbage.rstrace");
  std::ofstream(garbage, std::ios::binary) << "not a trace at all";
  window.open_paths({QString::fromStdString(garbage)}, true);
  EXPECT_TRUE(window.last_error().contains("garbage.rstrace")) << window.last_error().toStdString();
  // Usable: a good file opens, and a search finds an op.
  window.open_paths({QString::fromStdString(good)}, false);
  EXPECT_TRUE(wait_for([&] { return window.last_error().isEmpty(); }));
  EXPECT_NE(window.timeline()->model(), shown);
  EXPECT_TRUE(window.find("fwd/b"));
  std::filesystem::remove(cut);
  std::filesystem::remove(garbage);
}

TEST_F(MainWindowTest, AShiftDragSelectsARangeAndShowsItsTotals) {
  window.open_paths({QString::fromStdString(good)}, true);
  TimelineView* view = window.timeline();
  view->axis()->set_range(0, 5);
  QApplication::processEvents();
  const int y =
      view->lane_middle_y(test::lane_named(*view->model(), "worker0", "compute pc1/gpu0"));
  const QPointF from(view->x_of(0.5), y), to(view->x_of(3.5), y);
  auto mouse = [&](QEvent::Type type, QPointF at, Qt::MouseButtons buttons) {
    QMouseEvent event(type, at, view->viewport()->mapToGlobal(at), Qt::LeftButton, buttons,
                      Qt::ShiftModifier);
    QApplication::sendEvent(view->viewport(), &event);
  };
  mouse(QEvent::MouseButtonPress, from, Qt::LeftButton);
  mouse(QEvent::MouseMove, (from + to) / 2, Qt::LeftButton);
  mouse(QEvent::MouseMove, to, Qt::LeftButton);
  mouse(QEvent::MouseButtonRelease, to, Qt::NoButton);
  ASSERT_TRUE(view->axis()->has_selection());
  EXPECT_NEAR(view->axis()->selection_from_s(), 0.5, 0.01);
  EXPECT_NEAR(view->axis()->selection_until_s(), 3.5, 0.01);
  QTableWidget* table = window.range_panel()->table();
  bool found = false;
  for (int r = 0; r < table->rowCount(); ++r) {
    if (table->item(r, 0)->text() != "forward") continue;
    found = true;
    EXPECT_EQ(table->item(r, 1)->text(), "worker0");
    EXPECT_EQ(table->item(r, 2)->text(), "2");
    EXPECT_EQ(table->item(r, 3)->text(), "1.5 s");  // 1 s of the first op, 0.5 s of the second
  }
  EXPECT_TRUE(found);
  // The window's metrics: one update of 32 samples in 3 s.
  EXPECT_TRUE(window.range_panel()->metrics_text().contains("throughput 10.7 samples/s"))
      << window.range_panel()->metrics_text().toStdString();
  // A plain drag pans instead, keeping the selection.
  const double from_s = view->axis()->from_s();
  QMouseEvent press(QEvent::MouseButtonPress, to, view->viewport()->mapToGlobal(to), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(view->viewport(), &press);
  mouse(QEvent::MouseMove, from, Qt::LeftButton);
  EXPECT_GT(view->axis()->from_s(), from_s + 2.5);
}

TEST_F(MainWindowTest, ATraceOfTwoRunsOpensInTheCompareView) {
  const std::string both = test::temporary_path("both.rstrace");
  {
    std::ofstream out(both, std::ios::binary);
    const core::Trace a = test::tiny_trace(), b = test::tiny_trace(0.5);
    core::write_traces_binary(out, {&a, &b});
  }
  window.open_paths({QString::fromStdString(both)}, true);
  ASSERT_TRUE(window.comparing());
  // B started 0.5 s later: with B's offset at -0.5 s a range of the axis covers the same ops of
  // both, and the statistics give both the same totals.
  window.compare()->set_offset_s(-0.5);
  window.compare()->view_a()->select_range(0.5, 3.5);
  QTableWidget* table = window.range_panel()->table();
  int forward_rows = 0;
  for (int r = 0; r < table->rowCount(); ++r) {
    if (table->item(r, 0)->text() != "forward") continue;
    ++forward_rows;
    EXPECT_EQ(table->item(r, 3)->text(), "1.5 s") << table->item(r, 6)->text().toStdString();
  }
  EXPECT_EQ(forward_rows, 2);
  EXPECT_FALSE(table->isColumnHidden(6));
  std::filesystem::remove(both);
}

}  // namespace
}  // namespace replisim::gui
