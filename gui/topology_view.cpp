#include "gui/topology_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/base/units.h"
#include "gui/timeline_model.h"

namespace replisim::gui {
namespace {

constexpr int kTickMs = 33;

// The canvas: paints the view into itself.
class TopologyCanvas : public QWidget {
 public:
  explicit TopologyCanvas(TopologyView* view) : QWidget(view), view_(view) {
    setMinimumSize(320, 240);
    setAutoFillBackground(true);
    QPalette palette = this->palette();
    palette.setColor(QPalette::Window, Qt::white);
    setPalette(palette);
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    view_->paint(painter, QRectF(rect()));
  }

 private:
  TopologyView* view_;
};

}  // namespace

TopologyView::TopologyView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  canvas_ = new TopologyCanvas(this);
  layout->addWidget(canvas_, 1);
  auto* controls = new QHBoxLayout;
  play_ = new QPushButton("Play", this);
  play_->setToolTip("Move the playhead: tensors travel as dots, links colour with their use");
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setRange(0, 10000);
  speed_ = new QComboBox(this);
  speed_->addItem("slow", 0.25);
  speed_->addItem("normal", 1.0);
  speed_->addItem("fast", 4.0);
  speed_->addItem("fastest", 16.0);
  speed_->setCurrentIndex(1);
  speed_->setToolTip("Normal: a median transfer crosses in about half a second");
  clock_ = new QLabel(this);
  clock_->setMinimumWidth(110);
  controls->addWidget(play_);
  controls->addWidget(slider_, 1);
  controls->addWidget(speed_);
  controls->addWidget(clock_);
  layout->addLayout(controls);
  timer_ = new QTimer(this);
  timer_->setInterval(kTickMs);
  connect(timer_, &QTimer::timeout, this, &TopologyView::tick);
  connect(play_, &QPushButton::clicked, this, [this] { playing() ? stop() : play(); });
  connect(slider_, &QSlider::sliderMoved, this,
          [this](int value) { set_time_s(end_s_ * value / double(slider_->maximum())); });
  update_controls();
}

TopologyView::~TopologyView() = default;

void TopologyView::set_models(const ModelList& models) {
  stop();
  runs_.clear();
  end_s_ = 0;
  std::vector<double> durations;
  for (const auto& model : models) {
    if (!model) continue;
    Run run{model, std::make_unique<TopologyModel>(model->trace())};
    end_s_ = std::max(end_s_, model->end_s());
    for (const core::TraceEvent& e : model->trace().events) {
      if (e.kind == core::EventKind::kTransfer && e.end_s > e.start_s)
        durations.push_back(e.end_s - e.start_s);
    }
    runs_.push_back(std::move(run));
  }
  // Normal speed: a median transfer crosses in about half a second of playback.
  if (!durations.empty()) {
    std::nth_element(durations.begin(), durations.begin() + long(durations.size() / 2),
                     durations.end());
    base_speed_s_per_s_ = std::max(1e-6, durations[durations.size() / 2] / 0.5);
  }
  time_s_ = std::min(time_s_, end_s_);
  update_controls();
  canvas_->update();
}

void TopologyView::set_time_s(double time_s) {
  time_s_ = std::clamp(time_s, 0.0, std::max(0.0, end_s_));
  update_controls();
  canvas_->update();
  emit time_changed(time_s_);
}

void TopologyView::play() {
  if (runs_.empty()) return;
  if (time_s_ >= end_s_) time_s_ = 0;
  last_tick_s_ = -1;
  timer_->start();
  update_controls();
}

void TopologyView::stop() {
  timer_->stop();
  update_controls();
}

bool TopologyView::playing() const {
  return timer_->isActive();
}

double TopologyView::speed_s_per_s() const {
  return base_speed_s_per_s_ * speed_->currentData().toDouble();
}

void TopologyView::tick() {
  const double next = time_s_ + speed_s_per_s() * kTickMs / 1000.0;
  set_time_s(next);
  if (next >= end_s_) stop();
}

void TopologyView::update_controls() {
  play_->setText(playing() ? "Stop" : "Play");
  play_->setEnabled(!runs_.empty());
  const QSignalBlocker block(slider_);
  slider_->setValue(end_s_ > 0 ? int(std::lround(slider_->maximum() * time_s_ / end_s_)) : 0);
  clock_->setText("t = " +
                  QString::fromStdString(core::format_quantity(time_s_, core::Dimension::kTime)));
}

QRectF TopologyView::panel_rect(size_t run, const QRectF& area) const {
  const size_t n = std::max<size_t>(1, runs_.size());
  if (area.width() >= 1.2 * area.height()) {  // side by side
    const double w = area.width() / double(n);
    return QRectF(area.left() + double(run) * w, area.top(), w, area.height());
  }
  const double h = area.height() / double(n);
  return QRectF(area.left(), area.top() + double(run) * h, area.width(), h);
}

void TopologyView::paint(QPainter& painter, const QRectF& area) const {
  painter.fillRect(area, Qt::white);
  if (runs_.empty()) {
    painter.setPen(Qt::darkGray);
    painter.drawText(area, Qt::AlignCenter,
                     "Open a trace or run a scenario: its cluster is drawn here");
    return;
  }
  for (size_t i = 0; i < runs_.size(); ++i) {
    const QRectF panel = panel_rect(i, area);
    const Run& run = runs_[i];
    const std::string& strategy = run.topology->strategy();
    paint_topology_run(painter, *run.topology,
                       QString::fromStdString(strategy.empty() ? run.timeline->source() : strategy),
                       time_s_, panel);
    if (i > 0) {
      painter.setPen(QPen(QColor(200, 200, 200), 1));
      if (panel.top() > area.top())
        painter.drawLine(panel.topLeft(), panel.topRight());
      else
        painter.drawLine(panel.topLeft(), panel.bottomLeft());
    }
  }
}

std::vector<QPointF> TopologyView::dot_positions(size_t run, const QRectF& area) const {
  std::vector<QPointF> out;
  if (run >= runs_.size()) return out;
  const TopologyModel& model = *runs_[run].topology;
  const TopologyGeometry g = layout_topology(model, panel_rect(run, area));
  for (const TransferInFlight& t : model.state_at(time_s_).in_flight) {
    out.push_back(
        point_along(g.route_points(model.platform(), t.src_device, t.dst_device), t.progress));
  }
  return out;
}

}  // namespace replisim::gui
