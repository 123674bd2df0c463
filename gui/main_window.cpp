#include "gui/main_window.h"

#include <QAction>
#include <QDockWidget>
#include <QEventLoop>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "gui/charts/front_chart.h"
#include "gui/charts/scaling_window.h"
#include "gui/compare_view.h"
#include "gui/export.h"
#include "gui/panels/details_panel.h"
#include "gui/panels/legend.h"
#include "gui/panels/range_panel.h"
#include "gui/scenario_runner.h"
#include "gui/timeline_view.h"
#include "gui/topology_view.h"

namespace replisim::gui {

namespace {

// A .json file that is not a Chrome trace is a scenario.
bool is_scenario(const QString& path) {
  if (!path.endsWith(".json", Qt::CaseInsensitive)) return false;
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return false;
  return !file.read(1 << 16).contains("\"traceEvents\"");
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  qRegisterMetaType<ModelList>();
  qRegisterMetaType<std::shared_ptr<const TimelineModel>>();
  setWindowTitle("replisim timeline");
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(4, 2, 4, 2);
  legend_ = new Legend(central);
  layout->addWidget(legend_);
  stack_ = new QStackedWidget(central);
  timeline_ = new TimelineView(nullptr, stack_);
  compare_ = new CompareView(stack_);
  stack_->addWidget(timeline_);
  stack_->addWidget(compare_);
  layout->addWidget(stack_, 1);
  setCentralWidget(central);

  side_tabs_ = new QTabWidget(this);
  details_ = new DetailsPanel(side_tabs_);
  range_panel_ = new RangePanel(side_tabs_);
  side_tabs_->addTab(details_, "Details");
  side_tabs_->addTab(range_panel_, "Range statistics");
  auto* dock = new QDockWidget("Selection", this);
  dock->setWidget(side_tabs_);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  side_tabs_->setMinimumWidth(280);
  dock_ = dock;

  error_label_ = new QLabel(this);
  error_label_->setStyleSheet("color: #B00000;");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  cancel_ = new QPushButton("Cancel", this);
  statusBar()->addWidget(error_label_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  progress_->hide();
  cancel_->hide();

  loader_ = new TraceLoader(this);
  runner_ = new ScenarioRunner(ScenarioRunner::default_replisim(), this);
  connect_files();
  watch(timeline_);
  watch(compare_->view_a());
  watch(compare_->view_b());
  active_ = timeline_;
  build_actions();
  build_panels();
  build_topology();
  resize(1500, 950);
}

MainWindow::~MainWindow() = default;

// What the loader and the scenario runner report: models to show, progress, one-line errors.
void MainWindow::connect_files() {
  connect(loader_, &TraceLoader::preview, this, [this](std::shared_ptr<const TimelineModel> model) {
    show_models({model});
    statusBar()->showMessage("showing the first events; reading the rest of the file…");
  });
  connect(loader_, &TraceLoader::loaded, this, [this](const QString& path, ModelList models) {
    set_busy(false, "");
    last_error_.clear();
    error_label_->clear();
    show_models(models);
    statusBar()->showMessage("opened " + path, 5000);
  });
  connect(loader_, &TraceLoader::failed, this, [this](const QString&, const QString& line) {
    set_busy(false, "");
    report_error(line);
  });
  connect(runner_, &ScenarioRunner::progress, this, [this](double fraction, const QString& line) {
    progress_->setValue(int(fraction * 1000));
    statusBar()->showMessage(line);
  });
  connect(runner_, &ScenarioRunner::finished, this, [this](const QString& trace) {
    set_busy(false, "");
    statusBar()->showMessage("simulated " + scenario_, 8000);
    open_paths({trace}, scenario_wait_);
  });
  connect(runner_, &ScenarioRunner::failed, this, [this](const QString& line) {
    set_busy(false, "");
    report_error(line);
  });
  connect(runner_, &ScenarioRunner::cancelled, this, [this] {
    set_busy(false, "");
    statusBar()->showMessage("simulation cancelled", 5000);
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    runner_->cancel();
    loader_->cancel();
    set_busy(false, "");
  });
}

// The side panel wide enough for the statistics' six columns once the window has its size.
void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (docked_) return;
  docked_ = true;
  resizeDocks({dock_}, {std::min(470, width() / 3)}, Qt::Horizontal);
}

void MainWindow::build_actions() {
  QToolBar* bar = addToolBar("Main");
  bar->setObjectName("main_toolbar");
  bar->setMovable(false);
  auto add = [this, bar](const QString& text, const QKeySequence& key, auto slot) {
    QAction* action = bar->addAction(text);
    action->setShortcut(key);
    action->setToolTip(text + " (" + key.toString() + ")");
    connect(action, &QAction::triggered, this, slot);
    return action;
  };
  add("Open…", QKeySequence::Open, [this] { open_dialog(); });
  add("Simulate scenario…", QKeySequence("Ctrl+R"), [this] { simulate_dialog(); });
  add("Export PNG…", QKeySequence("Ctrl+E"), [this] { export_dialog(false); });
  add("Export SVG…", QKeySequence("Ctrl+Shift+E"), [this] { export_dialog(true); });
  bar->addSeparator();
  add("Fit all", QKeySequence("F"), [this] {
    if (comparing())
      compare_->fit_all();
    else
      timeline_->fit_all();
  });
  add("Zoom to selection", QKeySequence("Z"), [this] { active_view()->zoom_to_selection(); });
  QAction* arrows = add("Arrows", QKeySequence("A"), [this](bool on) {
    for (TimelineView* v : {timeline_, compare_->view_a(), compare_->view_b()})
      v->set_arrows_shown(on);
  });
  arrows->setCheckable(true);
  arrows->setChecked(true);
  bar->addSeparator();
  bar->addWidget(new QLabel(" Find op: ", bar));
  find_box_ = new QLineEdit(bar);
  find_box_->setPlaceholderText("name, e.g. backward/conv1 (Enter: next)");
  find_box_->setMaximumWidth(280);
  bar->addWidget(find_box_);
  connect(find_box_, &QLineEdit::returnPressed, this, [this] { find(find_box_->text()); });
  auto* focus_find = new QAction(this);
  focus_find->setShortcut(QKeySequence::Find);
  connect(focus_find, &QAction::triggered, find_box_, qOverload<>(&QWidget::setFocus));
  addAction(focus_find);
}

void MainWindow::watch(TimelineView* view) {
  connect(view, &TimelineView::slice_selected, this, [this, view](int slice) {
    active_ = view;
    details_->show_slice(view->model().get(), slice);
    if (slice >= 0) side_tabs_->setCurrentWidget(details_);
  });
  connect(view, &TimelineView::range_selected, this, [this, view](double from_s, double until_s) {
    active_ = view;
    if (view == timeline_) {
      range_panel_->show_range(view->model().get(), from_s, until_s);
    } else {  // the same stretch of the shared axis in both runs, each in its own clock
      const double axis_from = from_s + view->offset_s(), axis_until = until_s + view->offset_s();
      std::vector<RangePanel::RangeRun> runs;
      for (TimelineView* v : {compare_->view_a(), compare_->view_b()}) {
        runs.push_back({v == compare_->view_a() ? "A" : "B", v->model().get(),
                        axis_from - v->offset_s(), axis_until - v->offset_s()});
      }
      range_panel_->show_ranges(runs);
    }
    side_tabs_->setCurrentWidget(range_panel_);
  });
}

TimelineView* MainWindow::active_view() const {
  if (!comparing()) return timeline_;
  return active_ == compare_->view_b() ? compare_->view_b() : compare_->view_a();
}

bool MainWindow::comparing() const {
  return stack_->currentWidget() == compare_;
}

std::vector<const TimelineView*> MainWindow::shown_timelines() const {
  if (comparing()) return {compare_->view_a(), compare_->view_b()};
  return {timeline_};
}

void MainWindow::show_models(const ModelList& models) {
  if (models.empty()) return;
  legend_->show();
  dock_->setVisible(!classroom_on_);
  topology_->set_models(models);
  compare_->set_runs_label("");
  details_->show_slice(nullptr, -1);
  range_panel_->show_range(nullptr, 0, 0);
  if (models.size() == 1) {
    timeline_->set_model(models[0]);
    timeline_->axis()->clear_selection();
    timeline_->fit_all();
    stack_->setCurrentWidget(timeline_);
    active_ = timeline_;
    setWindowTitle(QString::fromStdString(models[0]->title()) + " — replisim timeline");
  } else {
    compare_->set_runs(models);  // three or more: two at a time, chosen above the timelines
    compare_->axis()->clear_selection();
    stack_->setCurrentWidget(compare_);
    active_ = compare_->view_a();
    QString titles;
    for (const auto& model : models) {
      titles += (titles.isEmpty() ? "" : " vs ") + QString::fromStdString(model->title());
    }
    setWindowTitle(titles + " — replisim timeline");
  }
}

void MainWindow::open_paths(const QStringList& paths, bool wait) {
  if (paths.isEmpty()) return;
  if (paths.size() == 1 &&
      (looks_like_sweep_results(paths[0]) || looks_like_recommend_results(paths[0]))) {
    open_sweep_results(paths[0]);
    return;
  }
  if (paths.size() == 1 && is_scenario(paths[0])) return run_scenario(paths[0], wait);
  if (paths.size() == 1 && !wait) {
    set_busy(true, "reading " + paths[0]);
    loader_->start(paths[0]);
    return;
  }
  ModelList models;
  for (const QString& path : paths) {
    if (is_scenario(path)) {
      report_error(path + ": open a scenario on its own (it is simulated, then compared)");
      return;
    }
    try {
      const ModelList runs = load_trace_file(path.toStdString());
      models.insert(models.end(), runs.begin(), runs.end());
    } catch (const std::exception& e) {
      report_error(QString::fromStdString(e.what()));
      return;
    }
  }
  last_error_.clear();
  error_label_->clear();
  if (models.size() > 2)
    statusBar()->showMessage(
        QString("%1 runs: two at a time, chosen above the timelines").arg(models.size()), 8000);
  show_models(models);
}

bool MainWindow::open_sweep_results(const QString& path) {
  if (scaling_ == nullptr) {  // a page of the window, beside the timelines
    scaling_ = new ScalingWindow(stack_);
    stack_->addWidget(scaling_);
  }
  QString error;
  if (!scaling_->open(path, &error)) {
    report_error(error);
    return false;
  }
  last_error_.clear();
  error_label_->clear();
  stack_->setCurrentWidget(scaling_);
  legend_->hide();  // the timelines' colours and their selection's panel: not the chart's
  dock_->hide();
  setWindowTitle(QFileInfo(path).fileName() + " (scaling chart) — replisim timeline");
  statusBar()->showMessage(
      (looks_like_recommend_results(path) ? "recommend's results: " : "sweep results: ") + path +
          " (a trace opened brings the timelines back)",
      8000);
  return true;
}

bool MainWindow::showing_scaling_chart() const {
  return scaling_ != nullptr && stack_->currentWidget() == scaling_;
}

void MainWindow::run_scenario(const QString& path, bool wait) {
  set_busy(true, "simulating " + path);
  scenario_wait_ = wait;
  scenario_ = path;
  runner_->start(path);
  if (!wait) return;
  QEventLoop loop;
  connect(runner_, &ScenarioRunner::finished, &loop, &QEventLoop::quit);
  connect(runner_, &ScenarioRunner::failed, &loop, &QEventLoop::quit);
  connect(runner_, &ScenarioRunner::cancelled, &loop, &QEventLoop::quit);
  if (runner_->running()) loop.exec();
}

void MainWindow::set_busy(bool busy, const QString& what) {
  progress_->setVisible(busy);
  cancel_->setVisible(busy);
  progress_->setValue(0);
  if (busy) statusBar()->showMessage(what);
}

void MainWindow::report_error(const QString& line) {
  last_error_ = line;
  error_label_->setText(line);
  error_label_->setToolTip(line);
}

bool MainWindow::find(const QString& text) {
  TimelineView* view = active_view();
  if (!view->model()) return false;
  const int found = view->model()->find_slice(text.toStdString(), view->selected_slice());
  if (found < 0) {
    statusBar()->showMessage("no op matches \"" + text + "\"", 5000);
    return false;
  }
  view->select_slice(found, true);
  return true;
}

void MainWindow::open_dialog() {
  const QStringList paths = QFileDialog::getOpenFileNames(
      this, "Open traces, a scenario or a sweep's results", QString(),
      "replisim traces, scenarios and sweeps (*.rstrace *.trace *.json);;All files (*)");
  open_paths(paths, false);
}

void MainWindow::simulate_dialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, "Simulate a scenario", QString(), "Scenarios (*.json)");
  if (!path.isEmpty()) run_scenario(path, false);
}

void MainWindow::export_dialog(bool svg) {
  const QString path = QFileDialog::getSaveFileName(this, svg ? "Export SVG" : "Export PNG",
                                                    QString(), svg ? "SVG (*.svg)" : "PNG (*.png)");
  if (path.isEmpty()) return;
  try {
    if (svg) {
      export_svg(shown_timelines(), shown_timelines().front()->viewport()->size(), path);
    } else {
      export_png(*centralWidget(), path);
    }
    statusBar()->showMessage("wrote " + path, 5000);
  } catch (const std::exception& e) {
    report_error(QString::fromStdString(e.what()));
  }
}

}  // namespace replisim::gui
