#include "gui/classroom_panel.h"

#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "gui/timeline_view.h"

namespace replisim::gui {

namespace {

constexpr double kPlaybackS = 15;    // a run plays in this many seconds at ×1
constexpr int kShortWindowPx = 900;  // a window lower than this shows fewer list rows

QLabel* wrapped_label(QWidget* parent, const char* name) {
  auto* label = new QLabel(parent);
  label->setObjectName(name);
  label->setWordWrap(true);
  label->setTextFormat(Qt::RichText);
  return label;
}

double global_step_at(const TimelineModel& model, double time_s) {
  for (const CounterTrack& counter : model.counters())
    if (counter.name == "global_step") return counter.value_at(time_s);
  return 0;
}

}  // namespace

ClassroomPanel::ClassroomPanel(std::function<std::vector<TimelineView*>()> views, QWidget* parent)
    : QWidget(parent), views_(std::move(views)) {
  build();
  timer_ = new QTimer(this);
  timer_->setInterval(33);
  connect(timer_, &QTimer::timeout, this, &ClassroomPanel::tick);
}

// The list as tall as its titles, or on a short screen (a 720 pixel projector) as three of them
// (it scrolls to the one chosen): the height goes to the texts below.
void ClassroomPanel::fit_list() {
  const int rows =
      window()->height() < kShortWindowPx ? std::min(list_->count(), 3) : list_->count();
  int height = 2 * list_->frameWidth();
  for (int i = 0; i < rows; ++i) height += list_->sizeHintForRow(i) + 2 * list_->spacing();
  list_->setFixedHeight(std::max(height, list_->fontMetrics().height() * 2));
}

void ClassroomPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::FontChange) fit_list();  // classroom mode's larger font
}

void ClassroomPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fit_list();
}

void ClassroomPanel::build() {
  auto* layout = new QVBoxLayout(this);
  list_ = new QListWidget(this);
  list_->setObjectName("classroom_list");
  list_->setWordWrap(true);
  list_->setSpacing(1);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  layout->addWidget(list_);
  claim_ = wrapped_label(this, "claim");
  look_ = wrapped_label(this, "look");
  steps_note_ = wrapped_label(this, "steps_note");
  caption_ = wrapped_label(this, "caption");
  caption_->setStyleSheet(
      "background: #FFF1A8; color: #000000; border: 2px solid #000000; padding: 6px; "
      "font-size: 13pt;");
  steps_note_->setStyleSheet("color: #404040; font-size: 9pt;");
  for (QLabel* label : {claim_, look_, caption_}) layout->addWidget(label);
  auto* controls = new QHBoxLayout;
  play_ = new QPushButton("▶ Play", this);
  play_->setObjectName("play");
  speed_ = new QSlider(Qt::Horizontal, this);
  speed_->setObjectName("speed");
  speed_->setRange(-4, 8);  // ×2^(value/2): ×0.25 to ×16
  speed_->setValue(0);
  speed_label_ = new QLabel(this);
  controls->addWidget(play_);
  controls->addWidget(new QLabel("speed", this));
  controls->addWidget(speed_, 1);
  controls->addWidget(speed_label_);
  layout->addLayout(controls);
  clock_ = new QLabel(this);
  clock_->setObjectName("clock");
  clock_->setWordWrap(true);
  clock_->setStyleSheet("font-weight: bold; color: #000000; font-size: 13pt;");
  layout->addWidget(clock_);
  layout->addWidget(steps_note_);
  layout->addStretch(1);
  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && row != current_) choose(row);
  });
  connect(play_, &QPushButton::clicked, this, [this] { playing() ? stop() : play(); });
  connect(speed_, &QSlider::valueChanged, this, [this] {
    speed_label_->setText(QString("×%1").arg(std::pow(2.0, speed_->value() / 2.0), 0, 'g', 3));
  });
  speed_label_->setText("×1");
}

bool ClassroomPanel::load_catalog(const QString& scenarios_dir) {
  scenarios_dir_ = scenarios_dir;
  list_->clear();
  try {
    entries_ = load_classroom_catalog(scenarios_dir.toStdString());
  } catch (const std::exception& e) {
    entries_.clear();
    error_line_ = QString::fromStdString(e.what());
    claim_->setText(error_line_.toHtmlEscaped());
    return false;
  }
  for (const ClassroomEntry& entry : entries_) {  // the claim is shown below, once chosen
    auto* item = new QListWidgetItem(QString::fromStdString(entry.title));
    item->setToolTip(QString::fromStdString(entry.file + ": " + entry.claim));
    list_->addItem(item);
  }
  fit_list();
  error_line_.clear();
  return true;
}

QString ClassroomPanel::scenario_path(int index) const {
  return QDir(scenarios_dir_).filePath(QString::fromStdString(entries_.at(size_t(index)).file));
}

int ClassroomPanel::index_of(const QString& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const QString file = QString::fromStdString(entries_[i].file);
    if (file == name || QFileInfo(file).completeBaseName() == name) return int(i);
  }
  return -1;
}

void ClassroomPanel::choose(int index) {
  if (index < 0 || index >= int(entries_.size())) return;
  stop();
  current_ = index;
  list_->setCurrentRow(index);
  QTimer::singleShot(0, list_, [this] {  // once the list is laid out
    list_->scrollToItem(list_->currentItem(), QAbstractItemView::PositionAtTop);
  });
  const ClassroomEntry& e = entries_[size_t(index)];
  claim_->setText("<b>The claim:</b> " + QString::fromStdString(e.claim).toHtmlEscaped());
  look_->setText("<b>Where to look:</b> " + QString::fromStdString(e.look).toHtmlEscaped());
  steps_note_->setText(e.steps_note.empty()
                           ? QString()
                           : "<i>" + QString::fromStdString(e.steps_note).toHtmlEscaped() + "</i>");
  // A short (projector) window keeps the height for the caption: the note is the clock's tooltip.
  steps_note_->setVisible(window()->height() >= kShortWindowPx);
  clock_->setToolTip(QString::fromStdString(e.steps_note));
  caption_->setText("<b>What to notice:</b> running " + QString::fromStdString(e.file) + "…");
  models_.clear();
  emit entry_chosen(index);
}

// Run `model`'s caption: the entry's for its strategy filled from its metrics, or (a knob took
// away what the entry's speaks of) what the run itself says bound it.
QString ClassroomPanel::caption_of(const TimelineModel& model) const {
  if (!model.metrics()) return "no metrics: " + QString::fromStdString(model.metrics_error());
  const std::string strategy = model.trace().meta.strategy;
  const ClassroomEntry* entry = current_ >= 0 ? &entries_[size_t(current_)] : nullptr;
  if (entry && entry->captions.count(strategy)) {
    try {
      return QString::fromStdString(render_caption(entry->captions.at(strategy), *model.metrics()));
    } catch (const std::invalid_argument&) {
      // the run lacks a figure the entry names: say what the run does show
    }
  }
  return QString::fromStdString(fallback_caption(*model.metrics()));
}

void ClassroomPanel::show_runs(const ModelList& models, const ModelList& before) {
  models_ = models;
  if (list_->currentItem()) list_->scrollToItem(list_->currentItem());  // laid out by now
  QStringList lines;
  for (size_t i = 0; i < models.size(); ++i) {
    const TimelineModel& model = *models[i];
    const QString strategy = QString::fromStdString(model.trace().meta.strategy);
    // Before and after a change the timelines may show either pair: name the strategy only.
    const QString who = models.size() > 1 && before.empty()
                            ? QString(i == 0 ? "A" : "B") + " (" + strategy + ")"
                            : strategy;
    QString line = "<b>" + who.toHtmlEscaped() + ":</b> " + caption_of(model).toHtmlEscaped();
    if (i < before.size() && before.size() == models.size() && before[i]->metrics() &&
        model.metrics()) {
      const double was = before[i]->metrics()->throughput_samples_per_s;
      const double now = model.metrics()->throughput_samples_per_s;
      line += QString(" <i>Before the change: %1 samples/s, now %2 (%3%4).</i>")
                  .arg(was, 0, 'f', 0)
                  .arg(now, 0, 'f', 0)
                  .arg(now >= was ? "+" : "−")
                  .arg(std::abs(now - was), 0, 'f', 0);
    }
    lines << line;
  }
  caption_->setText("<b>What to notice</b><br>" + lines.join("<br>"));
  show_time(std::numeric_limits<double>::infinity());
}

QString ClassroomPanel::caption_text() const {
  return caption_->text();
}

double ClassroomPanel::run_end_s() const {
  double end = 0;
  for (const TimelineView* view : views_())
    if (view->model()) end = std::max(end, view->model()->end_s() + view->offset_s());
  return end;
}

double ClassroomPanel::speed_s_per_s() const {
  return run_end_s() / kPlaybackS * std::pow(2.0, speed_->value() / 2.0);
}

void ClassroomPanel::play() {
  time_s_ = 0;
  frame_clock_.start();
  play_->setText("❚❚ Pause");
  timer_->start();
  show_time(0);
}

void ClassroomPanel::stop() {
  timer_->stop();
  play_->setText("▶ Play");
}

bool ClassroomPanel::playing() const {
  return timer_->isActive();
}

void ClassroomPanel::tick() {
  const double elapsed_s = frame_clock_.restart() / 1e3;
  time_s_ += elapsed_s * speed_s_per_s();
  if (time_s_ >= run_end_s()) {
    stop();
    show_time(std::numeric_limits<double>::infinity());
    return;
  }
  show_time(time_s_);
}

// Every shown timeline drawn up to `time_s` on the shared axis; the clock and global_step there.
void ClassroomPanel::show_time(double time_s) {
  QStringList steps;
  const std::vector<TimelineView*> views = views_();
  for (size_t i = 0; i < views.size(); ++i) {
    TimelineView* view = views[i];
    view->set_reveal_until_s(time_s - view->offset_s());
    if (!view->model()) continue;
    const double at = std::min(time_s - view->offset_s(), view->model()->end_s());
    const QString who = views.size() > 1 ? QString(i == 0 ? "A " : "B ") : QString();
    steps << who + QString::number(global_step_at(*view->model(), at), 'f', 0);
  }
  const QString clock =
      std::isfinite(time_s) ? QString("t = %1 s").arg(time_s, 0, 'f', 1) : QString("whole run");
  clock_->setText(clock + "    global_step " + steps.join(", "));
}

}  // namespace replisim::gui
