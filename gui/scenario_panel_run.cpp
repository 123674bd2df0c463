// The scenario panel's runs (a shortened temporary copy through replisim), saving, and the knob
// specs of --knob.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>

#include "gui/scenario_panel.h"
#include "gui/scenario_runner.h"

namespace replisim::gui {

bool ScenarioPanel::open_scenario(const QString& path) {
  cancel();
  try {
    document_ = ScenarioDocument::load(path.toStdString());
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return false;
  }
  original_ = document_;
  previous_.reset();
  previous_pair_.clear();
  before_pair_.clear();
  last_models_.clear();
  change_.clear();
  knob_timed_ = false;
  error_line_.clear();
  error_->clear();
  status_->clear();
  title_->setText(QString::fromStdString(document_->name()) + " — " + QFileInfo(path).fileName());
  title_->setToolTip(path);
  setEnabled(true);
  load_knobs();
  update_note();
  emit scenario_opened(path);
  return true;
}

void ScenarioPanel::set_interactive_steps(int steps) {
  interactive_steps_ = std::max(0, steps);
  if (document_) {
    loading_ = true;
    steps_->setValue(interactive_steps_ > 0 ? interactive_steps_ : document_->steps());
    loading_ = false;
    update_note();
  }
}

void ScenarioPanel::set_interactive_granularity(int groups) {
  interactive_granularity_ = std::max(0, groups);
  update_note();
}

void ScenarioPanel::set_strategy(const QString& strategy) {
  loading_ = true;
  // A list ("between_graph,allreduce", a classroom entry's) joins the choices once given.
  if (strategy_->findText(strategy) < 0) strategy_->addItem(strategy);
  strategy_->setCurrentText(strategy);
  loading_ = false;
}

QString ScenarioPanel::strategy() const {
  return strategy_->currentText();
}

void ScenarioPanel::run() {
  if (!document_) return;
  debounce_->stop();
  ScenarioDocument copy = *document_;
  try {
    if (interactive_steps_ > 0 && interactive_steps_ < copy.steps())
      copy.set_steps(interactive_steps_);
    if (interactive_granularity_ > 0 && copy.granularity().empty())
      copy.set_granularity_groups(interactive_granularity_);
    work_ = std::make_unique<QTemporaryDir>();
    copy.write(work_->filePath("interactive.json").toStdString());
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return;
  }
  run_change_ = change_;
  progress_->setValue(0);
  progress_->show();
  cancel_->setEnabled(true);
  status_->setText("simulating " + QString::fromStdString(document_->name()) + "…");
  runner_->start(work_->filePath("interactive.json"), strategy());
}

void ScenarioPanel::cancel() {
  debounce_->stop();
  runner_->cancel();
}

bool ScenarioPanel::running() const {
  return runner_->running() || debounce_->isActive();
}

bool ScenarioPanel::wait_for_run(int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (running() && timer.elapsed() < timeout_ms)
    QApplication::processEvents(QEventLoop::AllEvents, 20);
  QApplication::processEvents();
  return !running();
}

void ScenarioPanel::on_finished(const QString& trace_path) {
  progress_->hide();
  cancel_->setEnabled(false);
  ModelList models;
  try {
    models = load_trace_file(trace_path.toStdString());
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return;
  }
  if (models.empty()) return;
  QString what;
  if (models.size() > 2) {  // all: the compare view offers each pair
    previous_.reset();
    previous_pair_.clear();
    before_pair_.clear();
    for (const auto& model : models) {
      what += (what.isEmpty() ? "" : " · ") + QString::fromStdString(model->trace().meta.strategy);
    }
  } else if (models.size() > 1) {
    previous_.reset();
    what = "A: " + QString::fromStdString(models[0]->trace().meta.strategy) +
           " · B: " + QString::fromStdString(models[1]->trace().meta.strategy);
    // A knob changed since the last pair: that pair is kept as "before" beside this one.
    before_pair_.clear();
    if (previous_pair_.size() == models.size() && !run_change_.isEmpty()) {
      before_pair_ = previous_pair_;
      what += " · after " + run_change_;
    }
    previous_pair_ = models;
  } else if (previous_ && !run_change_.isEmpty()) {
    models.insert(models.begin(), previous_);
    what = "A: before · B: after " + run_change_;
  }
  last_models_ = models;
  if (models.size() == 1 || what.startsWith("A: before")) previous_ = models.back();
  emit runs_ready(last_models_, what);
  QString line = what.isEmpty() ? "simulated" : what;
  if (knob_timed_) {
    knob_to_timeline_s_ = knob_clock_.elapsed() / 1e3;
    line += QString(" — change to timeline in %1 s").arg(knob_to_timeline_s_, 0, 'f', 2);
    knob_timed_ = false;
  }
  const FaultKnob fault = document_->fault();
  if (!fault.kind.empty() && models.back()->end_s() < fault.at_s) {
    line += QString(
                ". This run ended at %1 s, before the fault at %2 s: raise the steps to run to "
                "see it.")
                .arg(models.back()->end_s(), 0, 'f', 1)
                .arg(fault.at_s);
  }
  status_->setText(line);
}

bool ScenarioPanel::save_to(const QString& path, bool overwrite_original) {
  if (!document_) return false;
  if (!overwrite_original &&
      QFileInfo(path).absoluteFilePath() ==
          QFileInfo(QString::fromStdString(document_->path())).absoluteFilePath()) {
    show_error(path + ": that is the file it was opened from; save as a new name");
    return false;
  }
  try {
    document_->write(path.toStdString());
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return false;
  }
  return true;
}

namespace {

// "role:worker1@20" -> kind, target, at (s).
bool parse_fault(const QString& value, QString* kind, QString* target, double* at_s) {
  if (value == "none") {
    *kind = "none";
    return true;
  }
  const int colon = value.indexOf(':'), at = value.lastIndexOf('@');
  if (colon < 0 || at < colon) return false;
  bool ok = false;
  *kind = value.left(colon);
  *target = value.mid(colon + 1, at - colon - 1);
  *at_s = value.mid(at + 1).toDouble(&ok);
  return ok && (*kind == "role" || *kind == "machine");
}

}  // namespace

bool ScenarioPanel::apply_knob(const QString& spec) {
  const int eq = spec.indexOf('=');
  const QString knob = spec.left(eq), value = spec.mid(eq + 1);
  bool ok = eq > 0;
  const int number = value.toInt(&ok);
  QString kind, target;
  double at_s = 0;
  if (knob == "replicas" && ok) {
    replicas_->setValue(number);
  } else if (knob == "ps" && ok) {
    ps_->setValue(number);
  } else if (knob == "backups" && ok) {
    backups_->setValue(number);
  } else if (knob == "steps" && ok) {
    steps_->setValue(number);
  } else if (knob == "nic_gbps" && value.toDouble(&ok) > 0) {
    nic_gbps_->setValue(value.toDouble());
  } else if (knob == "sync" &&
             (value == "async" || value == "sync" || value == "distributed_replicated")) {
    sync_->setCurrentText(value);
  } else if (knob == "strategy" && strategy_->findText(value) >= 0) {
    strategy_->setCurrentText(value);
  } else if (knob == "speed" && device_->findText(value.section(':', 0, 0)) >= 0) {
    device_->setCurrentText(value.section(':', 0, 0));
    speed_factor_->setValue(value.section(':', 1).toDouble());
  } else if (knob == "fault" && parse_fault(value, &kind, &target, &at_s)) {
    fault_kind_->setCurrentText(kind);
    fault_target_->setCurrentText(target);
    fault_at_s_->setValue(at_s);
  } else {
    show_error("--knob " + spec +
               ": not a knob (replicas=N, ps=N, nic_gbps=G, "
               "sync=async|sync|distributed_replicated, backups=N, "
               "speed=DEVICE:FACTOR, fault=none|role:NAME@S|machine:NAME@S, strategy=S, steps=N)");
    return false;
  }
  return true;
}

}  // namespace replisim::gui
