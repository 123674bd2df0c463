// The window's scenario panel and classroom mode: their docks, the runs they hand over, and the
// large fonts and high-contrast colours of classroom mode.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QEvent>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
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

// A vertical scroll area at least `min_width_px` wide and never narrower than its content needs
// (its text wraps, but a row of controls does not): a dock holding it keeps the content whole
// instead of cutting off its right side. (A minimum width set on it would override this hint.)
class DockScrollArea : public QScrollArea {
 public:
  DockScrollArea(int min_width_px, QWidget* parent)
      : QScrollArea(parent), min_width_px_(min_width_px) {}
  QSize minimumSizeHint() const override {
    QSize size = QScrollArea::minimumSizeHint();
    int content = 0;
    if (widget()) {
      content = widget()->minimumSizeHint().width() + verticalScrollBar()->sizeHint().width() +
                2 * frameWidth();
    }
    size.setWidth(std::max({size.width(), content, min_width_px_}));
    return size;
  }
  // The content laid out anew (classroom mode's larger font): the dock asks for the hint again.
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == widget() && event->type() == QEvent::LayoutRequest) updateGeometry();
    return QScrollArea::eventFilter(watched, event);
  }

 private:
  int min_width_px_;
};

// A dock on the left holding `content` (scrolled), at least `min_width_px` wide.
QDockWidget* left_dock(QMainWindow* window, const QString& title, QWidget* content,
                       int min_width_px) {
  auto* scroll = new DockScrollArea(min_width_px, window);
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

// Classroom mode's lanes and their labels: readable from the back of a room.
constexpr double kClassroomLaneScale = 1.4;
// Classroom mode puts the scenario panel in a third column from this window width (1600 and
// 1920 pixel screens; a 1280 pixel projector gets it as a tab beside the classroom panel).
constexpr int kThreeColumnsMinWidthPx = 1600;
constexpr int kClassroomMinWidthPx = 380;

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
  QFont viewer_font = QApplication::font();
  viewer_font.setPointSizeF(viewer_font.pointSizeF());  // explicit: not enlarged with the app's
  centralWidget()->setFont(viewer_font);
  scenario_panel_ = new ScenarioPanel(ScenarioRunner::default_replisim());
  panel_dock_ = left_dock(this, "Scenario", scenario_panel_, 360);
  classroom_ = new ClassroomPanel([this] { return animated_timelines(); });
  classroom_dock_ = left_dock(this, "Classroom", classroom_, kClassroomMinWidthPx);
  connect(scenario_panel_, &ScenarioPanel::runs_ready, this, &MainWindow::show_panel_runs);
  connect(compare_, &CompareView::runs_switched, this, [this] {
    if (classroom_on_) focus_classroom_rows();
  });
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
  // Before the main tool bar: on a narrow window the find box gives way, not the Classroom button.
  auto* bar = new QToolBar("Panels", this);
  insertToolBar(findChild<QToolBar*>("main_toolbar"), bar);
  bar->setMovable(false);
  panel_action_ = bar->addAction("Scenario panel");
  panel_action_->setShortcut(QKeySequence("Ctrl+K"));
  panel_action_->setCheckable(true);
  panel_action_->setToolTip("Edit a scenario's knobs and see the effect (Ctrl+K)");
  // A click shows (and brings forward, when it is a tab) or hides the panel; the check mark follows
  // what is on screen. (Not `toggled`: a tab put behind another reports itself invisible, and
  // that must not close it.)
  connect(panel_action_, &QAction::triggered, this, [this](bool on) {
    panel_dock_->setVisible(on);
    if (on) panel_dock_->raise();
  });
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
  const ModelList& before = scenario_panel_->before_pair();
  if (!before.empty() && before.size() == models.size() && models.size() == 2)
    compare_->set_before_after(before, models, what.section(" · after ", 1));
  classroom_->show_runs(models, before);
  if (classroom_on_) focus_classroom_rows();
  if (!what.isEmpty()) statusBar()->showMessage(what, 8000);
}

// Classroom mode: the rows the entry's "Where to look" names, per run, unfolded, highlighted and
// scrolled to (the others folded); each run on its own time axis when one is much shorter.
void MainWindow::focus_classroom_rows() {
  const int index = classroom_->current();
  if (index < 0) return;
  const ClassroomEntry& entry = classroom_->entries().at(size_t(index));
  double shortest = 0, longest = 0;
  for (TimelineView* view : animated_timelines()) {
    if (!view->model()) continue;
    const auto rows = entry.rows.find(view->model()->trace().meta.strategy);
    view->focus_groups(rows == entry.rows.end() ? std::vector<std::string>() : rows->second);
    const double length = view->model()->end_s() - view->model()->begin_s();
    shortest = shortest == 0 ? length : std::min(shortest, length);
    longest = std::max(longest, length);
  }
  if (comparing()) compare_->set_own_axes(longest > 2 * shortest);
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
  for (TimelineView* view : {timeline_, compare_->view_a(), compare_->view_b()}) {
    view->set_lane_scale(on ? kClassroomLaneScale : 1);
    if (!on) view->focus_groups({});  // every group unfolded, none highlighted
  }
  // The scenario panel takes the selection panel's place on the right where the window is wide
  // enough for three columns; on a projector's 1280 pixels it is a tab beside the classroom panel,
  // so that the timelines keep their width.
  const bool three_columns = width() >= kThreeColumnsMinWidthPx;
  addDockWidget(on && three_columns ? Qt::RightDockWidgetArea : Qt::LeftDockWidgetArea,
                panel_dock_);
  panel_dock_->setVisible(on || panel_dock_->isVisible());
  if (on && !three_columns) {
    tabifyDockWidget(classroom_dock_, panel_dock_);
    classroom_dock_->raise();
  }
  if (on && classroom_->entries().empty()) classroom_->load_catalog(default_scenarios_dir());
  if (on && three_columns) {
    resizeDocks({classroom_dock_, panel_dock_}, {width() * 3 / 10, width() / 4}, Qt::Horizontal);
  } else if (on) {
    resizeDocks({classroom_dock_}, {std::max(kClassroomMinWidthPx, width() * 9 / 25)},
                Qt::Horizontal);
  }
  const QSignalBlocker block(classroom_action_);
  classroom_action_->setChecked(on);
}

}  // namespace replisim::gui
