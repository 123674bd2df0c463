// replisim-gui: the timeline viewer. `replisim-gui [FILE...]` opens native or Chrome traces and
// scenarios; `--screenshot OUT.png [--size 1600x1000]` renders offscreen, writes the image and
// exits (no display needed). Options that set the view up (for screenshots and scripts) are
// listed by --help.
#include <QApplication>
#include <QCommandLineParser>
#include <QGuiApplication>
#include <QPixmap>
#include <QScreen>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "gui/classroom_panel.h"
#include "gui/compare_view.h"
#include "gui/export.h"
#include "gui/main_window.h"
#include "gui/scenario_panel.h"
#include "gui/timeline_view.h"
#include "gui/topology_view.h"

namespace {

using replisim::gui::MainWindow;

bool parse_pair(const QString& text, QChar separator, double* a, double* b) {
  const QStringList parts = text.split(separator);
  bool ok_a = false, ok_b = false;
  if (parts.size() == 2) {
    *a = parts[0].toDouble(&ok_a);
    *b = parts[1].toDouble(&ok_b);
  }
  return ok_a && ok_b;
}

int fail(const QString& line) {
  std::fprintf(stderr, "replisim-gui: %s\n", line.toUtf8().constData());
  return 1;
}

// Applies the view options (offset, range, selection, find, collapse) to the window.
int set_up_view(MainWindow& window, const QCommandLineParser& args) {
  replisim::gui::TimelineView* view =
      window.comparing() ? window.compare()->view_a() : window.timeline();
  if (args.isSet("offset")) {
    if (!window.comparing()) return fail("--offset needs two runs (the compare view)");
    window.compare()->set_offset_s(args.value("offset").toDouble());
    window.compare()->fit_all();
  }
  double a = 0, b = 0;
  if (args.isSet("range")) {
    if (!parse_pair(args.value("range"), ':', &a, &b))
      return fail("--range wants FROM:UNTIL in seconds");
    view->axis()->set_range(a, b);
  }
  std::vector<replisim::gui::TimelineView*> views{view};
  if (window.comparing()) views.push_back(window.compare()->view_b());
  for (const QString& name : args.values("collapse")) {
    for (replisim::gui::TimelineView* v : views) {
      for (int p = 0; v->model() && p < v->model()->process_count(); ++p) {
        if (QString::fromStdString(v->model()->process_name(p)) == name)
          v->set_group_collapsed(p, true);
      }
    }
  }
  if (args.isSet("select")) {
    if (!parse_pair(args.value("select"), ':', &a, &b))
      return fail("--select wants FROM:UNTIL in seconds");
    view->select_range(a, b);
  }
  if (args.isSet("find") && !window.find(args.value("find"))) {
    return fail("--find: no op matches " + args.value("find"));
  }
  return 0;
}

void add_options(QCommandLineParser& args) {
  args.setApplicationDescription("replisim's timeline viewer: traces, scenarios, compare.");
  args.addHelpOption();
  args.addPositionalArgument(
      "FILE", "native traces (.rstrace), Chrome traces (.json) or a scenario (.json)");
  args.addOptions({
      {"screenshot", "Render offscreen, write OUT.png and exit.", "OUT.png"},
      {"size", "Window size (default 1600x1000).", "WxH", "1600x1000"},
      {"svg", "Also write the timelines as SVG (with --screenshot).", "OUT.svg"},
      {"grab-after", "Real window: after MS milliseconds grab the screen into OUT.png and exit.",
       "MS:OUT.png"},
      {"offset", "Compare view: B's time 0 on the shared axis (s).", "S"},
      {"range", "Visible range (s, the first run's clock).", "FROM:UNTIL"},
      {"select", "Select a time range (s) and show its statistics.", "FROM:UNTIL"},
      {"find", "Select the first op whose name contains TEXT.", "TEXT"},
      {"collapse", "Collapse the row group of this actor (repeatable).", "ACTOR"},
      {"panel", "Open SCENARIO in the scenario panel and run it.", "SCENARIO"},
      {"classroom", "Classroom mode; with a NAME (two_machines, ps_failure, ...) that scenario.",
       "NAME"},
      {"strategy", "Scenario panel: both, all, or a strategy (in_graph, between_graph, allreduce).",
       "S"},
      {"steps", "Scenario panel: steps of each interactive run.", "N"},
      {"knob",
       "Scenario panel: after the first run, change KNOB=VALUE (repeatable; replicas=N, "
       "ps=N, nic_gbps=G, sync=async|sync, backups=N, speed=DEVICE:FACTOR, "
       "fault=none|role:NAME@S|machine:NAME@S) and run again: before against after.",
       "KNOB=VALUE"},
      {"animate-to", "Classroom mode: show the animation at S seconds.", "S"},
      {"topology",
       "Show the cluster picture (machines, links, tensors in flight) under the "
       "timelines."},
      {"topology-at", "Show the cluster picture with its playhead at S seconds.", "S"},
      {"print-timing", "Print the seconds from the --knob change to its timeline shown."},
  });
}

// --screenshot: the window's pixels (and with --svg its timelines as vectors).
int write_screenshot(MainWindow& window, const QCommandLineParser& args) {
  QApplication::processEvents();
  try {
    replisim::gui::export_png(window, args.value("screenshot"));
    if (args.isSet("svg")) {
      if (window.showing_scaling_chart()) return fail("--svg draws timelines; a sweep has none");
      const auto views = window.shown_timelines();
      replisim::gui::export_svg(views, views.front()->viewport()->size(), args.value("svg"));
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

// --grab-after MS:OUT.png: the screen as it is after MS milliseconds (a real window: what
// scripts/gui-screenshots drives), then quit.
int schedule_grab(QApplication& app, const QString& spec) {
  const int colon = spec.indexOf(':');
  const int delay_ms = spec.left(colon).toInt();
  const QString out = spec.mid(colon + 1);
  if (colon < 0 || out.isEmpty()) return fail("--grab-after wants MS:OUT.png");
  QTimer::singleShot(delay_ms, &app, [&app, out] {
    const QPixmap shot = QGuiApplication::primaryScreen()->grabWindow(0);
    if (!shot.save(out, "PNG")) {
      std::fprintf(stderr, "replisim-gui: cannot write %s\n", qPrintable(out));
    }
    app.quit();
  });
  return 0;
}

// --classroom, --panel, --knob: the scenario panel's runs, waited for (a batch run) or not.
int run_panel(MainWindow& window, const QCommandLineParser& args, bool batch) {
  replisim::gui::ScenarioPanel* panel = window.scenario_panel();
  if (args.isSet("classroom")) {
    window.set_classroom_mode(true);
    const QString name = args.value("classroom");
    const int index = window.classroom()->index_of(name);
    if (index < 0) return fail("--classroom: no bundled scenario " + name);
    window.classroom()->choose(index);
  }
  if (args.isSet("steps")) panel->set_interactive_steps(args.value("steps").toInt());
  if (args.isSet("strategy")) panel->set_strategy(args.value("strategy"));
  if (args.isSet("panel") && !window.open_in_panel(args.value("panel")))
    return fail(panel->error_line());
  if (!batch && args.values("knob").isEmpty()) return 0;
  if (!panel->wait_for_run(600000) || !panel->error_line().isEmpty())
    return fail(panel->error_line().isEmpty() ? "the run did not finish" : panel->error_line());
  if (args.values("knob").isEmpty()) return 0;
  for (const QString& knob : args.values("knob"))
    if (!panel->apply_knob(knob)) return fail(panel->error_line());
  panel->run();
  if (!panel->wait_for_run(600000) || !panel->error_line().isEmpty())
    return fail(panel->error_line().isEmpty() ? "the run did not finish" : panel->error_line());
  if (args.isSet("print-timing"))
    std::printf("knob-to-timeline %.3f s\n", panel->last_knob_to_timeline_s());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // --screenshot renders without a display, and --help and --version need none: choose the
  // offscreen platform before Qt starts. Without a display for a window, say so in one line
  // (Qt's xcb plugin would abort with several).
  bool offscreen = false;
  for (int i = 1; i < argc; ++i) {
    for (const char* flag : {"--screenshot", "--help", "-h", "--help-all", "--version", "-v"}) {
      offscreen |= std::strcmp(argv[i], flag) == 0;
    }
  }
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    if (offscreen) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (qEnvironmentVariableIsEmpty("DISPLAY") &&
               qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
      std::fprintf(stderr,
                   "replisim-gui: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are "
                   "not set): run it in a desktop session or under xvfb-run, or render one with "
                   "--screenshot OUT.png\n");
      return 2;
    }
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("replisim-gui");
  QCommandLineParser args;
  add_options(args);
  args.process(app);

  MainWindow window;
  double width = 1600, height = 1000;
  if (!parse_pair(args.value("size"), 'x', &width, &height) || width < 200 || height < 150) {
    return fail("--size wants WxH, e.g. 1600x1000");
  }
  window.resize(int(width), int(height));
  window.show();
  const bool batch = args.isSet("screenshot") || args.isSet("grab-after");
  window.open_paths(args.positionalArguments(), batch);
  if (batch && !window.last_error().isEmpty()) return fail(window.last_error());
  if (args.isSet("panel") || args.isSet("classroom")) {
    if (int rc = run_panel(window, args, batch); rc != 0) return rc;
  }
  if (args.isSet("animate-to")) window.classroom()->show_time(args.value("animate-to").toDouble());
  if (int rc = set_up_view(window, args); rc != 0) return rc;
  if (args.isSet("topology") || args.isSet("topology-at")) {
    window.show_topology(true);
    bool ok = true;
    const double at_s = args.isSet("topology-at") ? args.value("topology-at").toDouble(&ok) : 0;
    if (!ok || at_s < 0) return fail("--topology-at wants a time in seconds, e.g. 0.25");
    if (args.isSet("topology-at")) window.topology()->set_time_s(at_s);
  }
  if (args.isSet("screenshot")) return write_screenshot(window, args);
  if (args.isSet("grab-after")) {
    if (int rc = schedule_grab(app, args.value("grab-after")); rc != 0) return rc;
  }
  return app.exec();
}
