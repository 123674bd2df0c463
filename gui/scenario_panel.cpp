// The scenario panel's form: its controls, bound to the document's knobs. Runs, saving and the
// knob specs are in scenario_panel_run.cpp.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include "core/strategy/strategy_names.h"
#include "gui/scenario_panel.h"
#include "gui/scenario_runner.h"

namespace replisim::gui {

ScenarioPanel::ScenarioPanel(const QString& replisim, QWidget* parent)
    : QWidget(parent), runner_(new ScenarioRunner(replisim, this)) {
  build_form();
  connect_knobs();
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(60);
  connect(debounce_, &QTimer::timeout, this, &ScenarioPanel::run);
  connect(runner_, &ScenarioRunner::progress, this, [this](double fraction, const QString& line) {
    progress_->setValue(int(fraction * 1000));
    status_->setText(line);
  });
  connect(runner_, &ScenarioRunner::finished, this, &ScenarioPanel::on_finished);
  connect(runner_, &ScenarioRunner::failed, this, [this](const QString& line) {
    progress_->hide();
    cancel_->setEnabled(false);
    QString shown = line;  // replisim names the temporary copy: name the user's file instead
    if (work_ && document_) {
      shown.replace(work_->path() + "/interactive.json",
                    QFileInfo(QString::fromStdString(document_->path())).fileName() + " (edited)");
    }
    show_error(shown);
    status_->setText("the run failed: fix the knob and it runs again");
  });
  connect(runner_, &ScenarioRunner::cancelled, this, [this] {
    progress_->hide();
    cancel_->setEnabled(false);
    status_->setText("run cancelled");
  });
  setEnabled(false);
}

ScenarioPanel::~ScenarioPanel() = default;

// The knobs' rows, each control named after its knob (the tests find them by name).
QFormLayout* ScenarioPanel::build_knob_rows() {
  auto* form = new QFormLayout;
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a narrow dock: labels above their fields
  auto named = [this](auto* widget, const char* name, const QString& tip) {
    widget->setObjectName(name);
    widget->setToolTip(tip);
    return widget;
  };
  strategy_ = named(new QComboBox(this), "strategy", "Which strategy runs (--strategy)");
  strategy_->addItem("both");  // in_graph and between_graph (core::parse_strategy_list)
  strategy_->addItem("all");   // every strategy of the registry, side by side
  for (const std::string& name : core::strategy_names()) {
    strategy_->addItem(QString::fromStdString(name));
  }
  form->addRow("Strategy", strategy_);
  replicas_ = named(new QSpinBox(this), "replicas",
                    "training.replicas: towers (in-graph) or workers (between-graph)");
  replicas_->setRange(1, 256);
  form->addRow("Replicas", replicas_);
  ps_ = named(new QSpinBox(this), "ps_count", "training.ps: parameter server tasks");
  ps_->setRange(1, 64);
  form->addRow("Parameter servers", ps_);
  nic_gbps_ = named(new QDoubleSpinBox(this), "nic_gbps", "nic.bandwidth of every machine (Gbps)");
  nic_gbps_->setRange(0.01, 10000);
  nic_gbps_->setDecimals(2);
  nic_gbps_->setSuffix(" Gbps");
  nic_gbps_->setKeyboardTracking(false);
  form->addRow("NIC bandwidth", nic_gbps_);
  sync_ = named(new QComboBox(this), "sync", "training.sync (between-graph only)");
  sync_->addItems({"async", "sync", "distributed_replicated"});
  backups_ = named(new QSpinBox(this), "backup_workers",
                   "sync: backup workers = total_num_replicas - replicas_to_aggregate");
  backups_->setRange(0, 255);
  auto* sync_row = new QHBoxLayout;
  sync_row->addWidget(sync_);
  sync_row->addWidget(new QLabel("backups", this));
  sync_row->addWidget(backups_);
  form->addRow("Sync mode", sync_row);
  device_ = named(new QComboBox(this), "device", "A GPU (w*/gpu0: every copy of template w)");
  speed_factor_ = named(new QDoubleSpinBox(this), "speed_factor",
                        "Its speed as a multiple of the file's (gpus[i].speed)");
  speed_factor_->setRange(0.05, 20);
  speed_factor_->setSingleStep(0.25);
  speed_factor_->setPrefix("× ");
  speed_factor_->setKeyboardTracking(false);
  auto* speed_row = new QHBoxLayout;
  speed_row->addWidget(device_, 1);
  speed_row->addWidget(speed_factor_);
  form->addRow("Device speed", speed_row);
  fault_kind_ = named(new QComboBox(this), "fault_kind", "faults: a role or a machine dies");
  fault_kind_->addItems({"none", "role", "machine"});
  fault_target_ = named(new QComboBox(this), "fault_target", "Which role or machine dies");
  fault_target_->setEditable(true);
  // Room for a role's whole name ("worker1"), not its last letters.
  fault_target_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  fault_target_->setMinimumContentsLength(8);
  fault_at_s_ = named(new QDoubleSpinBox(this), "fault_at_s", "When it dies (s)");
  fault_at_s_->setRange(0, 1e6);
  fault_at_s_->setSuffix(" s");
  fault_at_s_->setKeyboardTracking(false);
  auto* fault_row = new QHBoxLayout;
  fault_row->addWidget(fault_kind_);
  fault_row->addWidget(fault_target_, 1);
  fault_row->addWidget(fault_at_s_);
  form->addRow("Fault", fault_row);
  steps_ = named(new QSpinBox(this), "interactive_steps",
                 "Steps each interactive run simulates (Save as keeps the file's)");
  steps_->setRange(2, 1000000);
  steps_->setKeyboardTracking(false);
  form->addRow("Steps to run", steps_);
  return form;
}

void ScenarioPanel::build_form() {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel("No scenario open", this);
  title_->setWordWrap(true);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  layout->addWidget(title_);
  layout->addLayout(build_knob_rows());
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  layout->addWidget(note_);
  auto* buttons = new QHBoxLayout;
  auto_run_ = new QCheckBox("Run on change", this);
  auto_run_->setChecked(true);
  run_ = new QPushButton("Run", this);
  cancel_ = new QPushButton("Cancel", this);
  cancel_->setEnabled(false);
  save_ = new QPushButton("Save as…", this);
  for (QWidget* w : std::initializer_list<QWidget*>{auto_run_, run_, cancel_, save_})
    buttons->addWidget(w);
  layout->addLayout(buttons);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->hide();
  layout->addWidget(progress_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  error_ = new QLabel(this);
  error_->setObjectName("error");
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #B00000; font-weight: bold;");
  layout->addWidget(error_);
  layout->addStretch(1);
  connect(run_, &QPushButton::clicked, this, &ScenarioPanel::run);
  connect(cancel_, &QPushButton::clicked, this, &ScenarioPanel::cancel);
  connect(save_, &QPushButton::clicked, this, &ScenarioPanel::save_dialog);
}

template <typename Change>
void ScenarioPanel::edit(const QString& what, Change change) {
  if (loading_ || !document_) return;
  try {
    change(*document_);
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return;
  }
  error_->clear();
  error_line_.clear();
  change_ = what;
  knob_clock_.start();
  knob_timed_ = true;
  update_note();
  if (auto_run_->isChecked()) debounce_->start();
}

void ScenarioPanel::connect_knobs() {
  connect(strategy_, &QComboBox::currentTextChanged, this,
          [this](const QString& s) { edit("strategy " + s, [](ScenarioDocument&) {}); });
  connect(replicas_, &QSpinBox::valueChanged, this, [this](int n) {
    const int before = document_ ? document_->replica_count() : 0;
    edit(QString("replicas %1 → %2").arg(before).arg(n),
         [n](ScenarioDocument& d) { d.set_replica_count(n); });
  });
  connect(ps_, &QSpinBox::valueChanged, this, [this](int n) {
    edit(QString("%1 parameter servers").arg(n), [n](ScenarioDocument& d) { d.set_ps_count(n); });
  });
  connect(nic_gbps_, &QDoubleSpinBox::valueChanged, this, [this](double g) {
    edit(QString("NICs at %1 Gbps").arg(g),
         [g](ScenarioDocument& d) { d.set_nic_bandwidth_bytes_per_s(g * 1e9 / 8); });
  });
  connect_sync_speed_fault();
}

// Sync mode and backups, a device's speed factor (relative to the file as read), the fault.
void ScenarioPanel::connect_sync_speed_fault() {
  auto sync_changed = [this] {
    SyncKnob knob{sync_->currentText() == "sync", false, backups_->value(),
                  document_ ? document_->sync().variant : ""};
    knob.distributed_replicated = sync_->currentText() == "distributed_replicated";
    backups_->setEnabled(knob.synchronous);
    edit(knob.synchronous              ? QString("sync, %1 backup workers").arg(knob.backup_workers)
         : knob.distributed_replicated ? QString("distributed_replicated")
                                       : QString("async"),
         [knob](ScenarioDocument& d) { d.set_sync(knob); });
  };
  connect(sync_, &QComboBox::currentTextChanged, this, sync_changed);
  connect(backups_, &QSpinBox::valueChanged, this, sync_changed);
  connect(device_, &QComboBox::currentTextChanged, this, [this](const QString& device) {
    if (!document_ || device.isEmpty()) return;
    const QSignalBlocker block(speed_factor_);
    const std::string d = device.toStdString();
    speed_factor_->setValue(document_->device_speed_flop_per_s(d) /
                            original_->device_speed_flop_per_s(d));
  });
  connect(speed_factor_, &QDoubleSpinBox::valueChanged, this, [this](double factor) {
    const std::string d = device_->currentText().toStdString();
    if (d.empty() || !original_) return;
    const double speed = original_->device_speed_flop_per_s(d) * factor;
    edit(QString("%1 at ×%2").arg(device_->currentText()).arg(factor),
         [d, speed](ScenarioDocument& doc) { doc.set_device_speed_flop_per_s(d, speed); });
  });
  auto fault_changed = [this] {
    const QString kind = fault_kind_->currentText();
    fault_target_->setEnabled(kind != "none");
    fault_at_s_->setEnabled(kind != "none");
    const FaultKnob knob{kind == "none" ? "" : kind.toStdString(),
                         fault_target_->currentText().trimmed().toStdString(),
                         fault_at_s_->value()};
    edit(kind == "none"
             ? QString("no fault")
             : QString("%1 dies at %2 s").arg(fault_target_->currentText()).arg(knob.at_s),
         [knob](ScenarioDocument& d) { d.set_fault(knob); });
  };
  connect(fault_kind_, &QComboBox::currentTextChanged, this, [this, fault_changed] {
    if (loading_) return;
    fill_targets();
    fault_changed();
  });
  connect(fault_target_, &QComboBox::currentTextChanged, this, fault_changed);
  connect(fault_at_s_, &QDoubleSpinBox::valueChanged, this, fault_changed);
  connect(steps_, &QSpinBox::valueChanged, this, [this](int steps) {
    if (loading_) return;
    interactive_steps_ = steps;
    edit(QString("%1 steps").arg(steps), [](ScenarioDocument&) {});
  });
}

// The roles or machines a fault may name, for the kind chosen.
void ScenarioPanel::fill_targets() {
  const QSignalBlocker block(fault_target_);
  const QString keep = fault_target_->currentText();
  fault_target_->clear();
  if (!document_) return;
  if (fault_kind_->currentText() == "machine") {
    for (const std::string& m : document_->machine_names())
      fault_target_->addItem(QString::fromStdString(m));
  } else if (fault_kind_->currentText() == "role") {
    for (int i = 0; i < document_->replica_count(); ++i)
      fault_target_->addItem(QString("worker%1").arg(i));
    for (int i = 0; i < document_->ps_count(); ++i) fault_target_->addItem(QString("ps%1").arg(i));
    fault_target_->addItem("client");
  }
  const int at = fault_target_->findText(keep);
  if (at >= 0) fault_target_->setCurrentIndex(at);
}

// Fills the controls from the document without counting as edits.
void ScenarioPanel::load_knobs() {
  loading_ = true;
  const ScenarioDocument& d = *document_;
  const std::string fixed = d.replicas_fixed_reason();
  replicas_->setEnabled(fixed.empty());
  replicas_->setToolTip(fixed.empty() ? "training.replicas" : QString::fromStdString(fixed));
  replicas_->setSingleStep(d.replica_step());  // a template grows by whole machines
  replicas_->setValue(d.replica_count());
  ps_->setValue(d.ps_count());
  const double nic = d.nic_bandwidth_bytes_per_s();
  nic_gbps_->setEnabled(nic > 0);
  nic_gbps_->setValue(nic * 8 / 1e9);
  const SyncKnob sync = d.sync();
  sync_->setCurrentText(sync.synchronous              ? "sync"
                        : sync.distributed_replicated ? "distributed_replicated"
                                                      : "async");
  backups_->setValue(sync.backup_workers);
  backups_->setEnabled(sync.synchronous);
  device_->clear();
  for (const std::string& g : d.gpu_devices()) device_->addItem(QString::fromStdString(g));
  speed_factor_->setValue(1);
  speed_factor_->setEnabled(device_->count() > 0);
  const FaultKnob fault = d.fault();
  fault_kind_->setCurrentText(fault.kind.empty() ? "none" : QString::fromStdString(fault.kind));
  fill_targets();
  fault_target_->setCurrentText(QString::fromStdString(fault.target));
  fault_at_s_->setValue(fault.at_s);
  fault_target_->setEnabled(!fault.kind.empty());
  fault_at_s_->setEnabled(!fault.kind.empty());
  steps_->setValue(interactive_steps_ > 0 ? interactive_steps_ : d.steps());
  loading_ = false;
}

void ScenarioPanel::show_error(const QString& line) {
  error_line_ = line;
  error_->setText(line);
  error_->setToolTip(line);
}

// Says on screen how many steps an interactive run simulates.
void ScenarioPanel::update_note() {
  if (!document_) return;
  const int file_steps = document_->steps();
  const int run_steps =
      interactive_steps_ > 0 ? std::min(interactive_steps_, file_steps) : file_steps;
  QString note = run_steps < file_steps
                     ? QString(
                           "Interactive: runs %1 of the file's %2 steps (warm-up in proportion), "
                           "so a change shows in about a second; Save as keeps %2.")
                           .arg(run_steps)
                           .arg(file_steps)
                     : QString("Runs all %1 steps of the file.").arg(file_steps);
  if (interactive_granularity_ > 0 && document_->granularity().empty()) {
    note += QString(
                " Ops grouped into %1 groups of layers (training.granularity) instead of one "
                "per layer, to run faster.")
                .arg(interactive_granularity_);
  }
  const FaultKnob fault = document_->fault();
  if (!fault.kind.empty())
    note +=
        QString(" The fault at %1 s stays inside the run when it lasts that long.").arg(fault.at_s);
  note_->setText(note);
}

void ScenarioPanel::save_dialog() {
  if (!document_) return;
  const QString path =
      QFileDialog::getSaveFileName(this, "Save the edited scenario as",
                                   QString::fromStdString(document_->path()), "Scenarios (*.json)");
  if (path.isEmpty()) return;
  // The dialog has asked before replacing an existing file, the original included.
  if (save_to(path, true)) status_->setText("wrote " + path);
}

}  // namespace replisim::gui
