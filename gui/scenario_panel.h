// The scenario panel: a scenario's knobs as form controls bound to its fields (ScenarioDocument),
// a run of the edited scenario in the background through `replisim simulate` (progress, cancel),
// shortened to fewer steps for interactive use, and the new run handed to the window beside the
// previous one. A bad edit shows replisim's one-line error here; the window stays usable.
#pragma once

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QWidget>
#include <memory>
#include <optional>

#include "gui/scenario_document.h"
#include "gui/trace_loading.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTimer;

namespace replisim::gui {

class ScenarioRunner;

class ScenarioPanel : public QWidget {
  Q_OBJECT

 public:
  // `replisim` is the command line the runs go through (ScenarioRunner::default_replisim()).
  explicit ScenarioPanel(const QString& replisim, QWidget* parent = nullptr);
  ~ScenarioPanel() override;

  // Opens a scenario file and shows its knobs (the previous run is forgotten); false, with the
  // reason in error_line(), when it cannot be read.
  bool open_scenario(const QString& path);
  // Steps each interactive run simulates (0: the file's own); the panel says so on screen.
  void set_interactive_steps(int steps);
  // Layer groups each interactive run uses (training.granularity; 0: the file's own), for a
  // scenario whose window needs all its steps; the panel says so on screen.
  void set_interactive_granularity(int groups);
  // "both" (the two strategies compared), "in_graph" or "between_graph" (before against after).
  void set_strategy(const QString& strategy);
  QString strategy() const;

  // Runs the edited scenario now (a run in progress is cancelled first).
  void run();
  void cancel();
  bool running() const;
  // Processes events until the run in progress ends or `timeout_ms` passes; true when it ended.
  bool wait_for_run(int timeout_ms);

  // Applies "KNOB=VALUE" through the form controls, as a person would: replicas=N, ps=N,
  // nic_gbps=G, sync=async|sync, backups=N, speed=DEVICE:FACTOR, fault=none|role:NAME@S|
  // machine:NAME@S, strategy=..., steps=N. False, with error_line(), on a spec it cannot apply.
  bool apply_knob(const QString& spec);

  // Writes the edited scenario (all its steps) to `path`, through a temporary file. Refuses the
  // file it was opened from unless `overwrite_original` (the dialog asks first). False, with
  // error_line(), when it cannot.
  bool save_to(const QString& path, bool overwrite_original = false);

  const std::optional<ScenarioDocument>& document() const { return document_; }
  // The last error shown ("" when the last edit and run worked).
  const QString& error_line() const { return error_line_; }
  // Seconds from the last knob change to its runs shown (-1 before any).
  double last_knob_to_timeline_s() const { return knob_to_timeline_s_; }
  // The runs of the last finished run: [previous, current] (one strategy, after a knob change),
  // [in_graph, between_graph] ("both") or [current].
  const ModelList& last_models() const { return last_models_; }
  // "both", after a knob change: the pair [in_graph, between_graph] run before it (last_models()
  // is the pair after it); empty otherwise.
  const ModelList& before_pair() const { return before_pair_; }

 signals:
  // New runs to show (last_models()); `what` names them ("A: before · B: replicas 2 -> 3").
  void runs_ready(const replisim::gui::ModelList& models, const QString& what);
  void scenario_opened(const QString& path);

 private:
  void build_form();
  QFormLayout* build_knob_rows();
  void connect_knobs();
  void connect_sync_speed_fault();
  void load_knobs();
  void fill_targets();
  // Applies `change` to the document (its description for the compare view), then runs.
  template <typename Change>
  void edit(const QString& what, Change change);
  void show_error(const QString& line);
  void on_finished(const QString& trace_path);
  void update_note();
  void save_dialog();

  ScenarioRunner* runner_;
  std::optional<ScenarioDocument> document_;
  std::optional<ScenarioDocument> original_;  // as read: speed factors are relative to it
  std::unique_ptr<QTemporaryDir> work_;
  int interactive_steps_ = 0;
  int interactive_granularity_ = 0;
  bool loading_ = false;  // filling the controls: no edits
  QString change_;        // the last knob change, for the compare view's caption
  QString run_change_;    // the change the run in progress shows
  QElapsedTimer knob_clock_;
  bool knob_timed_ = false;
  double knob_to_timeline_s_ = -1;
  std::shared_ptr<const TimelineModel> previous_;
  ModelList previous_pair_;  // the last two-strategy pair shown
  ModelList before_pair_;
  ModelList last_models_;
  QString error_line_;

  QLabel* title_;
  QComboBox* strategy_;
  QSpinBox* replicas_;
  QSpinBox* ps_;
  QDoubleSpinBox* nic_gbps_;
  QComboBox* sync_;
  QSpinBox* backups_;
  QComboBox* device_;
  QDoubleSpinBox* speed_factor_;
  QComboBox* fault_kind_;
  QComboBox* fault_target_;
  QDoubleSpinBox* fault_at_s_;
  QSpinBox* steps_;
  QCheckBox* auto_run_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* save_;
  QProgressBar* progress_;
  QLabel* note_;
  QLabel* status_;
  QLabel* error_;
  QTimer* debounce_;
};

}  // namespace replisim::gui
