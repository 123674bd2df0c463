// The viewer's window: one timeline (or two in the compare view), the legend, the details of the
// selected span and the statistics of the selected range, files (native and Chrome traces,
// scenarios run through replisim), find, exports. Errors go to one line in the status bar and
// leave the window as it was.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>

#include "gui/trace_loading.h"

class QAction;
class QDockWidget;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTabWidget;

namespace replisim::gui {

class ClassroomPanel;
class CompareView;
class DetailsPanel;
class RangePanel;
class ScenarioPanel;
class ScalingWindow;
class ScenarioRunner;
class TimelineView;
class TopologyView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens traces and scenarios: one run shows in the timeline, two (a file of both strategies,
  // two files, a scenario) in the compare view. With `wait`, returns once they are shown (or
  // failed); otherwise loads on a worker thread, showing a preview of a large trace first.
  void open_paths(const QStringList& paths, bool wait);
  void show_models(const ModelList& models);

  // The one-line error of the last failed open ("" when the last open worked).
  const QString& last_error() const { return last_error_; }
  bool comparing() const;
  TimelineView* timeline() const { return timeline_; }
  CompareView* compare() const { return compare_; }
  RangePanel* range_panel() const { return range_panel_; }
  QTabWidget* side_tabs() const { return side_tabs_; }
  // Finds the next op whose name contains `text` in the active timeline; false when none does.
  bool find(const QString& text);
  // The timelines shown now (one, or both of the compare view).
  std::vector<const TimelineView*> shown_timelines() const;

  // The scenario panel (a dock on the left; main_window_panels.cpp): opens `path` there, shows the
  // dock and runs it. False, with the panel's error line, when the file cannot be read.
  bool open_in_panel(const QString& path);
  ScenarioPanel* scenario_panel() const { return scenario_panel_; }

  // A sweep's results (replisim sweep --json): the scaling charts (gui/charts) shown in this
  // window in the timelines' place (what --screenshot then renders) until a trace is opened; or
  // recommend's results (replisim recommend --json): its cost-time front and priced points.
  // False, with last_error() set and the window unchanged, when the file is neither.
  bool open_sweep_results(const QString& path);
  ScalingWindow* scaling_window() const { return scaling_; }
  bool showing_scaling_chart() const;
  // Classroom mode: the classroom panel (the bundled scenarios, captions, animation) beside the
  // scenario panel, large fonts and high-contrast colours; off restores the viewer.
  void set_classroom_mode(bool on);
  bool classroom_mode() const { return classroom_on_; }
  ClassroomPanel* classroom() const { return classroom_; }
  // The cluster picture (a dock under the timelines; main_window_topology.cpp): shown or hidden.
  void show_topology(bool on);
  TopologyView* topology() const { return topology_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void build_actions();
  void build_panels();
  void build_topology();
  void show_panel_runs(const ModelList& models, const QString& what);
  void focus_classroom_rows();
  std::vector<TimelineView*> animated_timelines() const;
  void connect_files();
  void watch(TimelineView* view);
  void report_error(const QString& line);
  void open_dialog();
  void simulate_dialog();
  void export_dialog(bool svg);
  void run_scenario(const QString& path, bool wait);
  void set_busy(bool busy, const QString& what);
  TimelineView* active_view() const;

  QWidget* legend_;
  QStackedWidget* stack_;
  TimelineView* timeline_;
  CompareView* compare_;
  TimelineView* active_ = nullptr;
  QTabWidget* side_tabs_;
  QDockWidget* dock_ = nullptr;
  bool docked_ = false;
  bool scenario_wait_ = false;
  QString scenario_;  // the scenario being simulated  // open the scenario's trace before returning
                      // (screenshots)
  DetailsPanel* details_;
  RangePanel* range_panel_;
  QLineEdit* find_box_;
  QLabel* error_label_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  TraceLoader* loader_;
  ScenarioRunner* runner_;
  QString last_error_;
  QStringList pending_paths_;
  ScenarioPanel* scenario_panel_ = nullptr;
  ScalingWindow* scaling_ = nullptr;  // made on the first sweep opened; a page of stack_
  ClassroomPanel* classroom_ = nullptr;
  QDockWidget* panel_dock_ = nullptr;
  QDockWidget* classroom_dock_ = nullptr;
  QAction* panel_action_ = nullptr;
  QAction* classroom_action_ = nullptr;
  bool classroom_on_ = false;
  TopologyView* topology_ = nullptr;
  QDockWidget* topology_dock_ = nullptr;
  QAction* topology_action_ = nullptr;
};

}  // namespace replisim::gui
