// Files: Chrome traces read back, exports, scenarios run through replisim (progress, cancel), and
// the executable's offscreen --screenshot.
#include <gtest/gtest.h>
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QProcess>
#include <QSvgRenderer>
#include <filesystem>
#include <fstream>

#include "core/trace/chrome_trace.h"
#include "gui/export.h"
#include "gui/scenario_runner.h"
#include "gui/timeline_view.h"
#include "gui/trace_loading.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

template <typename Done>
bool wait_for(Done done, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (!done() && timer.elapsed() < timeout_ms) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  return done();
}

TEST(Files, AChromeTraceReplisimWroteReadsBackWithItsLanesAndKinds) {
  const std::string path = test::temporary_path("tiny.json");
  {
    const core::Trace a = test::tiny_trace(), b = test::tiny_trace(1);
    std::ofstream out(path);
    core::write_chrome_trace(out, {{&a, "in_graph "}, {&b, "between_graph "}},
                             nlohmann::json::object());
  }
  const ModelList models = load_trace_file(path);
  ASSERT_EQ(models.size(), 2u);
  const TimelineModel& a = *models[0];
  EXPECT_EQ(a.trace().meta.strategy, "in_graph");
  const int lane = test::lane_named(a, "worker0", "compute pc1/gpu0");
  ASSERT_GE(lane, 0);
  ASSERT_EQ(a.lanes()[size_t(lane)].start_ns.size(), 2u);
  // The op kind is not in the Chrome form: taken from the name ("fwd" names none).
  EXPECT_EQ(a.lanes()[size_t(lane)].category[0], Category::kOtherOp);
  const int send = a.find_slice("send/grad", -1);
  ASSERT_GE(send, 0);
  EXPECT_EQ(a.trace().str(a.layout().slices[size_t(send)].event->peer_actor), "ps0");
  EXPECT_GE(a.partner_slice(send), 0);
  EXPECT_NEAR(models[1]
                  ->lanes()[size_t(test::lane_named(*models[1], "worker0", "compute pc1/gpu0"))]
                  .start_ns[0],
              2e9, 1);
  std::filesystem::remove(path);
}

TEST(Files, PngAndSvgExportsHoldTheTimeline) {
  TimelineView view;
  view.resize(800, 300);
  view.set_model(test::tiny_model());
  view.axis()->set_range(0, 5);
  view.show();
  QApplication::processEvents();
  const QString png = QString::fromStdString(test::temporary_path("view.png"));
  const QString svg = QString::fromStdString(test::temporary_path("view.svg"));
  export_png(view, png);
  export_svg({&view}, view.viewport()->size(), svg);
  const QImage image(png);
  EXPECT_EQ(image.width(), 800);
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QByteArray text = file.readAll();
  EXPECT_TRUE(text.contains("<svg"));
  EXPECT_TRUE(text.contains("fwd/a"));  // the op's label, as text
  EXPECT_FALSE(QFile::exists(png + ".part"));
  // Drawn back, the SVG has the span's colour where the view has it.
  QSvgRenderer renderer(svg);
  ASSERT_TRUE(renderer.isValid());
  QImage drawn(view.viewport()->size(), QImage::Format_RGB32);
  drawn.fill(Qt::white);
  QPainter painter(&drawn);
  renderer.render(&painter, QRectF(QPointF(0, 0), QSizeF(view.viewport()->size())));
  painter.end();
  const int lane = test::lane_named(*view.model(), "worker0", "compute pc1/gpu0");
  EXPECT_EQ(drawn.pixelColor(int(view.x_of(1.9)), view.lane_middle_y(lane)),
            category_colour(Category::kForward));
  EXPECT_EQ(drawn.pixelColor(int(view.x_of(2.6)), view.lane_middle_y(lane)), background_colour());
  EXPECT_THROW(export_png(view, "/nonexistent-folder/x.png"), core::OutputError);
  QFile::remove(png);
  QFile::remove(svg);
}

TEST(Files, AScenarioRunsThroughReplisimWithProgressAndGivesBothStrategies) {
  ScenarioRunner runner(REPLISIM_BINARY);
  int progress_lines = 0;
  QString trace, error;
  QObject::connect(&runner, &ScenarioRunner::progress,
                   [&](double, const QString&) { ++progress_lines; });
  QObject::connect(&runner, &ScenarioRunner::finished, [&](const QString& path) { trace = path; });
  QObject::connect(&runner, &ScenarioRunner::failed, [&](const QString& line) { error = line; });
  runner.start(QString(REPLISIM_SOURCE_DIR) + "/scenarios/seed/two_machines.json");
  ASSERT_TRUE(wait_for([&] { return !trace.isEmpty() || !error.isEmpty(); }, 60000));
  ASSERT_TRUE(error.isEmpty()) << error.toStdString();
  (void)progress_lines;  // the seed runs too fast to report progress; the next test sees it
  const ModelList models = load_trace_file(trace.toStdString());
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0]->trace().meta.strategy, "in_graph");
  EXPECT_EQ(models[1]->trace().meta.strategy, "between_graph");
}

TEST(Files, ABadScenarioGivesReplisimsOneLineAndCancelKillsARun) {
  ScenarioRunner runner(REPLISIM_BINARY);
  QString error;
  bool cancelled = false;
  QObject::connect(&runner, &ScenarioRunner::failed, [&](const QString& line) { error = line; });
  QObject::connect(&runner, &ScenarioRunner::cancelled, [&] { cancelled = true; });
  const std::string bad = test::temporary_path("bad.json");
  std::ofstream(bad) << "{\"name\": \"x\"}";
  runner.start(QString::fromStdString(bad));
  ASSERT_TRUE(wait_for([&] { return !error.isEmpty(); }, 30000));
  EXPECT_TRUE(error.contains("bad.json")) << error.toStdString();
  // A long run, cancelled once it has started.
  int progress_lines = 0;
  QObject::connect(&runner, &ScenarioRunner::progress,
                   [&](double, const QString&) { ++progress_lines; });
  runner.start(QString(REPLISIM_SOURCE_DIR) + "/scenarios/classroom/ps_failure.json");
  ASSERT_TRUE(wait_for([&] { return progress_lines > 0; }, 30000));
  runner.cancel();
  EXPECT_TRUE(wait_for([&] { return cancelled; }, 5000));
  EXPECT_FALSE(runner.running());
  std::filesystem::remove(bad);
}

TEST(Files, TheExecutableRendersAScreenshotOffscreenAndExits) {
  const std::string trace = test::temporary_path("shot.rstrace");
  test::write_native(test::tiny_trace(), trace);
  const QString png = QString::fromStdString(test::temporary_path("shot.png"));
  QProcess gui;
  gui.start(REPLISIM_GUI_BINARY,
            {QString::fromStdString(trace), "--screenshot", png, "--size", "900x500"});
  ASSERT_TRUE(gui.waitForFinished(30000));
  EXPECT_EQ(gui.exitCode(), 0) << gui.readAllStandardError().toStdString();
  EXPECT_EQ(QImage(png).size(), QSize(900, 500));
  // A truncated file: status 1 and the reader's line.
  std::filesystem::resize_file(trace, 40);
  gui.start(REPLISIM_GUI_BINARY, {QString::fromStdString(trace), "--screenshot", png});
  ASSERT_TRUE(gui.waitForFinished(30000));
  EXPECT_EQ(gui.exitCode(), 1);
  EXPECT_TRUE(gui.readAllStandardError().contains("shot.rstrace"));
  QFile::remove(png);
  std::filesystem::remove(trace);
}

// Without a display, --help still prints the options (it needs none) and a window asked for is
// one line naming what to do, exit 2 (Qt's xcb plugin used to abort: status 134).
TEST(Files, WithoutADisplayHelpPrintsAndAWindowIsOneLine) {
  QProcessEnvironment no_display = QProcessEnvironment::systemEnvironment();
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    no_display.remove(name);
  }
  QProcess gui;
  gui.setProcessEnvironment(no_display);
  gui.start(REPLISIM_GUI_BINARY, {"--help"});
  ASSERT_TRUE(gui.waitForFinished(30000));
  EXPECT_EQ(gui.exitStatus(), QProcess::NormalExit);
  EXPECT_EQ(gui.exitCode(), 0) << gui.readAllStandardError().toStdString();
  EXPECT_TRUE(gui.readAllStandardOutput().contains("--screenshot"));
  gui.start(REPLISIM_GUI_BINARY, {});
  ASSERT_TRUE(gui.waitForFinished(30000));
  EXPECT_EQ(gui.exitStatus(), QProcess::NormalExit);
  EXPECT_EQ(gui.exitCode(), 2);
  const QString err = QString::fromUtf8(gui.readAllStandardError());
  EXPECT_TRUE(err.startsWith("replisim-gui: no display")) << err.toStdString();
  EXPECT_EQ(err.count('\n'), 1) << err.toStdString();
}

}  // namespace
}  // namespace replisim::gui
