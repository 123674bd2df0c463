// Classroom mode's panel: every bundled seed and classroom scenario one click away with the seed's
// claim it shows and where to look; the "what to notice" caption of the runs shown, its numbers
// from their metrics; and the run played as an animation at an adjustable speed (steps appearing
// as they happen, the global_step counter rising, a dead role's rows going dark).
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <functional>
#include <vector>

#include "gui/classroom_catalog.h"
#include "gui/trace_loading.h"

class QLabel;
class QListWidget;
class QPushButton;
class QSlider;
class QTimer;

namespace replisim::gui {

class TimelineView;

class ClassroomPanel : public QWidget {
  Q_OBJECT

 public:
  // `views` gives the timelines shown now (those the animation drives; called on each frame).
  ClassroomPanel(std::function<std::vector<TimelineView*>()> views, QWidget* parent = nullptr);

  // Reads the catalog of `scenarios_dir` (default_scenarios_dir()); false, with error_line(), when
  // it cannot (the list then stays empty and says why).
  bool load_catalog(const QString& scenarios_dir);
  const std::vector<ClassroomEntry>& entries() const { return entries_; }
  QListWidget* list() const { return list_; }
  // Absolute path of entry `index`'s scenario file.
  QString scenario_path(int index) const;
  // Selects entry `index` and asks for its run (entry_chosen); -1 when no entry has that file name
  // ("two_machines" or "seed/two_machines.json") for index_of.
  void choose(int index);
  int index_of(const QString& name) const;
  int current() const { return current_; }

  // The runs now shown (in_graph/between_graph, or before/after): their captions. `before`, when
  // not empty, is the pair of the same strategies run before a knob change: each caption then
  // says the throughput before and after it.
  void show_runs(const ModelList& models, const ModelList& before = {});
  QString caption_text() const;
  const QString& error_line() const { return error_line_; }

  // Animation over the runs' clocks: play from the start, stop, or show the state at `time_s`.
  void play();
  void stop();
  void show_time(double time_s);
  bool playing() const;
  // Seconds of run per second of animation (the slider: ×0.25 to ×16 a 15 s playback).
  double speed_s_per_s() const;

 signals:
  // Entry `index` was chosen: run its scenario (the window opens it in the scenario panel).
  void entry_chosen(int index);

 protected:
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void build();
  void fit_list();
  QString caption_of(const TimelineModel& model) const;
  void tick();
  double run_end_s() const;

  std::function<std::vector<TimelineView*>()> views_;
  std::vector<ClassroomEntry> entries_;
  QString scenarios_dir_;
  int current_ = -1;
  ModelList models_;
  QString error_line_;
  double time_s_ = 0;
  QElapsedTimer frame_clock_;

  QListWidget* list_;
  QLabel* claim_;
  QLabel* look_;
  QLabel* caption_;
  QLabel* steps_note_;
  QPushButton* play_;
  QSlider* speed_;
  QLabel* speed_label_;
  QLabel* clock_;
  QTimer* timer_;
};

}  // namespace replisim::gui
