// The window's scenario panel and classroom mode: their docks, the runs they hand over, and the
// large fonts and high-contrast colours of classroom mode.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QStatusBar>
#include <QToolBar>

#include "gui/classroom_panel.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/scenario_panel.h"
#include "gui/scenario_runner.h"
#include "gui/timeline_view.h"

namespace replisim::gui {

namespace {

// A dock on the left holding `content` (scrolled), at least `min_width_px` wide.
QDockWidget* left_dock(QMainWindow* window, const QString& title, QWidget* content,
                       int min_width_px) {
  auto* scroll = new QScrollArea(window);
  scroll->setMinimumWidth(min_width_px);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // its text wraps instead
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* dock = new QDockWidget(title, window);
  dock->setObjectName(title);
  dock->setWidget(scroll);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                    QDockWidget::DockWidgetClosable);
  window->addDockWidget(Qt::LeftDockWidgetArea, dock);
  dock->hide();
  return dock;
}

// Black on white, a strong blue for what is selected: readable from the back of a room.
QPalette high_contrast_palette() {
  QPalette palette;
  for (QPalette::ColorRole role : {QPalette::Window, QPalette::Base, QPalette::Button})
    palette.setColor(role, Qt::white);
  for (QPalette::ColorRole role :
       {QPalette::WindowText, QPalette::Text, QPalette::ButtonText, QPalette::ToolTipText})
    palette.setColor(role, Qt::black);
  palette.setColor(QPalette::AlternateBase, QColor(0xEE, 0xEE, 0xEE));
  palette.setColor(QPalette::Highlight, QColor(0x00, 0x3C, 0xB4));
  palette.setColor(QPalette::HighlightedText, Qt::white);
  palette.setColor(QPalette::ToolTipBase, QColor(0xFF, 0xF1, 0xA8));
  return palette;
}

}  // namespace

void MainWindow::build_panels() {
  // The timelines and what stands around them keep the viewer's font (their lanes are sized for
  // it, and the classroom's panels need the width); classroom mode enlarges the panels.
  centralWidget()->setFont(QApplication::font());
  scenario_panel_ = new ScenarioPanel(ScenarioRunner::default_replisim());
  panel_dock_ = left_dock(this, "Scenario", scenario_panel_, 400);
  classroom_ = new ClassroomPanel([this] { return animated_timelines(); });
  classroom_dock_ = left_dock(this, "Classroom", classroom_, 430);
  connect(scenario_panel_, &ScenarioPanel::runs_ready, this, &MainWindow::show_panel_runs);
  connect(classroom_, &ClassroomPanel::entry_chosen, this, [this](int index) {
    const ClassroomEntry& entry = classroom_->entries().at(size_t(index));
    if (!scenario_panel_->open_scenario(classroom_->scenario_path(index))) {
      report_error(scenario_panel_->error_line());
      return;
    }
    scenario_panel_->set_interactive_steps(entry.interactive_steps);
    scenario_panel_->set_interactive_granularity(entry.interactive_granularity);
    scenario_panel_->set_strategy(QString::fromStdString(entry.strategy));
    scenario_panel_->run();
  });
  QToolBar* bar = addToolBar("Panels");
  bar->setMovable(false);
  panel_action_ = bar->addAction("Scenario panel");
  panel_action_->setShortcut(QKeySequence("Ctrl+K"));
  panel_action_->setCheckable(true);
  panel_action_->setToolTip("Edit a scenario's knobs and see the effect (Ctrl+K)");
  connect(panel_action_, &QAction::toggled, panel_dock_, &QDockWidget::setVisible);
  connect(panel_dock_, &QDockWidget::visibilityChanged, panel_action_, &QAction::setChecked);
  classroom_action_ = bar->addAction("Classroom");
  classroom_action_->setShortcut(QKeySequence("Ctrl+L"));
  classroom_action_->setCheckable(true);
  classroom_action_->setToolTip(
      "Classroom mode: the bundled scenarios, large and animated (Ctrl+L)");
  connect(classroom_action_, &QAction::toggled, this, &MainWindow::set_classroom_mode);
}

std::vector<TimelineView*> MainWindow::animated_timelines() const {
  if (comparing()) return {compare_->view_a(), compare_->view_b()};
  return {timeline_};
}

void MainWindow::show_panel_runs(const ModelList& models, const QString& what) {
  last_error_.clear();
  error_label_->clear();
  show_models(models);
  compare_->set_runs_label(what);
  classroom_->show_runs(models);
  if (!what.isEmpty()) statusBar()->showMessage(what, 8000);
}

bool MainWindow::open_in_panel(const QString& path) {
  panel_dock_->show();
  if (!scenario_panel_->open_scenario(path)) {
    report_error(scenario_panel_->error_line());
    return false;
  }
  scenario_panel_->run();
  return true;
}

void MainWindow::set_classroom_mode(bool on) {
  if (on == classroom_on_) return;
  classroom_on_ = on;
  static const QFont normal_font = QApplication::font();
  static const QPalette normal_palette = QApplication::palette();
  QFont font = normal_font;
  if (on) font.setPointSizeF(normal_font.pointSizeF() * 1.35);
  QApplication::setFont(font);
  QApplication::setPalette(on ? high_contrast_palette() : normal_palette);
  dock_->setVisible(!on);
  classroom_dock_->setVisible(on);
  // The scenario panel takes the selection panel's place on the right: the list fills the left.
  addDockWidget(on ? Qt::RightDockWidgetArea : Qt::LeftDockWidgetArea, panel_dock_);
  panel_dock_->setVisible(on || panel_dock_->isVisible());
  if (on && classroom_->entries().empty()) classroom_->load_catalog(default_scenarios_dir());
  if (on)
    resizeDocks({classroom_dock_, panel_dock_}, {width() * 3 / 10, width() * 3 / 10},
                Qt::Horizontal);
  const QSignalBlocker block(classroom_action_);
  classroom_action_->setChecked(on);
}

}  // namespace replisim::gui
