#include "gui/timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "core/base/units.h"
#include "gui/timeline_view_geometry.h"

namespace replisim::gui {

namespace {

QString quantity(double value, core::Dimension dimension) {
  return QString::fromStdString(core::format_quantity(value, dimension));
}

}  // namespace

TimelineView::TimelineView(TimeAxis* axis, QWidget* parent)
    : QAbstractScrollArea(parent), axis_(axis ? axis : new TimeAxis(this)) {
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  setFocusPolicy(Qt::StrongFocus);
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(400, 120);
  set_axis(axis_);
}

void TimelineView::set_axis(TimeAxis* axis) {
  disconnect(axis_, nullptr, viewport(), nullptr);
  axis_ = axis;
  connect(axis_, &TimeAxis::range_changed, viewport(), qOverload<>(&QWidget::update));
  connect(axis_, &TimeAxis::selection_changed, viewport(), qOverload<>(&QWidget::update));
  viewport()->update();
}

void TimelineView::set_lane_scale(double scale) {
  lane_scale_ = std::clamp(scale, 0.5, 3.0);
  rebuild_rows();
  viewport()->update();
}

int TimelineView::focus_groups(const std::vector<std::string>& actors) {
  highlighted_.clear();
  if (!model_) return 0;
  for (int p = 0; p < model_->process_count(); ++p) {
    const std::string name = model_->process_name(p);
    if (std::find(actors.begin(), actors.end(), name) != actors.end()) highlighted_.insert(p);
  }
  collapsed_.clear();
  for (int p = 0; p < model_->process_count() && !highlighted_.empty(); ++p) {
    if (!highlighted_.count(p)) collapsed_.insert(p);
  }
  rebuild_rows();
  if (!highlighted_.empty()) {  // the first group at the top, or the counters above it kept
    const int top = group_top_y(*highlighted_.begin());
    const int visible = viewport()->height() - kRulerHeightPx;
    // A run with training.objective's curve keeps it in sight: the curve is what it shows.
    const bool curve = std::any_of(model_->counters().begin(), model_->counters().end(),
                                   [](const CounterTrack& c) { return c.name == "accuracy"; });
    verticalScrollBar()->setValue(
        curve || top + kHeaderHeightPx * lane_scale_ <= visible / 2 ? 0 : top);
  }
  viewport()->update();
  return int(highlighted_.size());
}

int TimelineView::scroll_y() const {
  return verticalScrollBar()->value();
}

int TimelineView::group_top_y(int process) const {
  if (process < 0 || size_t(process) >= row_of_process_.size()) return -1;
  const int row = row_of_process_[size_t(process)];
  return row < 0 ? -1 : rows_[size_t(row)].y;
}

void TimelineView::set_model(std::shared_ptr<const TimelineModel> model) {
  model_ = std::move(model);
  collapsed_.clear();
  highlighted_.clear();
  selected_slice_ = -1;
  rebuild_rows();
  viewport()->update();
}

void TimelineView::set_offset_s(double offset_s) {
  offset_s_ = offset_s;
  viewport()->update();
}

void TimelineView::fit_all() {
  if (!model_) return;
  const double from = model_->begin_s() + offset_s_, until = model_->end_s() + offset_s_;
  const double pad = 0.01 * (until - from);
  axis_->set_range(from - pad, until + pad);
}

void TimelineView::zoom_to_selection() {
  if (!axis_->has_selection()) return;
  const double from = axis_->selection_from_s(), until = axis_->selection_until_s();
  const double pad = 0.02 * (until - from);
  axis_->set_range(from - pad, until + pad);
}

void TimelineView::set_arrows_shown(bool shown) {
  arrows_shown_ = shown;
  viewport()->update();
}

void TimelineView::set_group_collapsed(int process, bool collapsed) {
  if (collapsed) {
    collapsed_.insert(process);
  } else {
    collapsed_.erase(process);
  }
  rebuild_rows();
  viewport()->update();
}

void TimelineView::select_slice(int slice, bool reveal) {
  selected_slice_ = slice;
  if (slice >= 0 && model_ && reveal) {
    const core::TimelineSlice& s = model_->layout().slices[size_t(slice)];
    if (collapsed_.count(s.process)) set_group_collapsed(s.process, false);
    const double start = s.event->start_s + offset_s_, end = s.event->end_s + offset_s_;
    const double shown = axis_->duration_s();
    const double wanted = (end - start) * canvas_rect().width() > 40 * shown
                              ? shown
                              : std::max((end - start) * 6, 1e-6);
    const double middle = 0.5 * (start + end);
    axis_->set_range(middle - wanted / 2, middle + wanted / 2);
    const int row = row_of_lane_[size_t(s.lane)];
    if (row >= 0) {
      verticalScrollBar()->setValue(rows_[size_t(row)].y - viewport()->height() / 3);
    }
  }
  viewport()->update();
  emit slice_selected(slice);
}

void TimelineView::select_range(double from_s, double until_s) {
  axis_->set_selection(from_s + offset_s_, until_s + offset_s_);
  emit range_selected(std::min(from_s, until_s), std::max(from_s, until_s));
}

TimelineView::Geometry TimelineView::geometry_for(QSize size) const {
  Geometry g;
  g.width = size.width();
  g.height = size.height();
  g.from_s = axis_->from_s();
  g.until_s = axis_->until_s();
  g.offset_s = offset_s_;
  g.scroll_y = verticalScrollBar()->value();
  return g;
}

QRect TimelineView::canvas_rect_for(const Geometry& g) {
  return QRect(kLabelWidthPx, kRulerHeightPx, g.width - kLabelWidthPx, g.height - kRulerHeightPx);
}

QRect TimelineView::canvas_rect() const {
  return canvas_rect_for(geometry_for(viewport()->size()));
}

double TimelineView::x_of(double trace_s) const {
  return geometry_for(viewport()->size()).x(trace_s);
}

double TimelineView::trace_time_at(double x) const {
  return geometry_for(viewport()->size()).trace_time(x);
}

int TimelineView::lane_middle_y(int lane) const {
  if (!model_ || lane < 0 || size_t(lane) >= row_of_lane_.size() ||
      row_of_lane_[size_t(lane)] < 0) {
    return -1;
  }
  return row_middle_of_lane(geometry_for(viewport()->size()), lane);
}

void TimelineView::rebuild_rows() {
  rows_.clear();
  row_of_lane_.clear();
  row_of_process_.clear();
  if (!model_) return update_scrollbars();
  row_of_lane_.assign(model_->lanes().size(), -1);
  row_of_process_.assign(size_t(model_->process_count()), -1);
  int y = 0;
  auto add = [&](RowType type, int process, int index, int height_px) {
    const int height = int(std::lround(height_px * lane_scale_));
    rows_.push_back({type, process, index, y, height});
    y += height;
    return int(rows_.size()) - 1;
  };
  if (!model_->counters().empty()) {
    add(RowType::kSection, -1, 0, kHeaderHeightPx);
    for (size_t c = 0; c < model_->counters().size(); ++c) {
      add(RowType::kCounter, -1, int(c), kCounterHeightPx);
    }
  }
  for (int p = 0; p < model_->process_count(); ++p) {
    row_of_process_[size_t(p)] = add(RowType::kHeader, p, -1, kHeaderHeightPx);
    if (collapsed_.count(p)) continue;
    for (int lane : model_->lanes_of(p)) {
      row_of_lane_[size_t(lane)] = add(RowType::kLane, p, lane, kLaneHeightPx);
    }
    if (model_->waits_of(p)) add(RowType::kWait, p, p, kWaitHeightPx);
  }
  if (!model_->links().empty()) {
    add(RowType::kSection, -1, 1, kHeaderHeightPx);
    for (size_t l = 0; l < model_->links().size(); ++l)
      add(RowType::kLink, -1, int(l), kLinkHeightPx);
  }
  update_scrollbars();
}

int TimelineView::content_height() const {
  return rows_.empty() ? 0 : rows_.back().y + rows_.back().height;
}

void TimelineView::update_scrollbars() {
  const int visible = std::max(0, viewport()->height() - kRulerHeightPx);
  verticalScrollBar()->setRange(0, std::max(0, content_height() - visible));
  verticalScrollBar()->setPageStep(visible);
  verticalScrollBar()->setSingleStep(int(kLaneHeightPx * lane_scale_));
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter painter(viewport());
  render_to(painter, viewport()->size());
}

void TimelineView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  update_scrollbars();
}

void TimelineView::scrollContentsBy(int, int) {
  viewport()->update();
}

// Wheel: zoom about the time under the cursor (which stays put); with Shift, scroll the rows.
void TimelineView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & (Qt::ShiftModifier | Qt::AltModifier)) {
    QAbstractScrollArea::wheelEvent(event);
    return;
  }
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  const Geometry g = geometry_for(viewport()->size());
  const double x = std::max(double(kLabelWidthPx), event->position().x());
  axis_->zoom_at(g.axis_time(x), std::pow(0.8, steps));
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton && event->button() != Qt::RightButton) return;
  drag_ = Drag::kPending;
  drag_origin_ = event->position();
  drag_origin_from_s_ = axis_->from_s();
  drag_origin_scroll_ = verticalScrollBar()->value();
  drag_selects_ = event->button() == Qt::RightButton || (event->modifiers() & Qt::ShiftModifier) ||
                  event->position().y() < kRulerHeightPx;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (drag_ == Drag::kNone) return;
  const QPointF delta = event->position() - drag_origin_;
  if (drag_ == Drag::kPending) {
    if (std::abs(delta.x()) + std::abs(delta.y()) < 4) return;
    drag_ = drag_selects_ ? Drag::kSelect : Drag::kPan;
  }
  const Geometry g = geometry_for(viewport()->size());
  if (drag_ == Drag::kPan) {
    const double s_per_px = axis_->duration_s() / g.canvas_width();
    axis_->set_range(drag_origin_from_s_ - delta.x() * s_per_px,
                     drag_origin_from_s_ - delta.x() * s_per_px + axis_->duration_s());
    verticalScrollBar()->setValue(drag_origin_scroll_ - int(delta.y()));
  } else {
    axis_->set_selection(g.axis_time(drag_origin_.x()), g.axis_time(event->position().x()));
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  const Drag drag = drag_;
  drag_ = Drag::kNone;
  if (drag == Drag::kSelect) {
    const Geometry g = geometry_for(viewport()->size());
    select_range(g.trace_time(drag_origin_.x()), g.trace_time(event->position().x()));
    return;
  }
  if (drag != Drag::kPending || !model_) return;
  const Hit hit = hit_at(event->position());
  if (hit.row >= 0 && rows_[size_t(hit.row)].type == RowType::kHeader &&
      event->position().x() < kLabelWidthPx) {
    const int process = rows_[size_t(hit.row)].process;
    set_group_collapsed(process, !group_collapsed(process));
    return;
  }
  select_slice(hit.slice, false);
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const double middle = 0.5 * (axis_->from_s() + axis_->until_s());
  switch (event->key()) {
    case Qt::Key_F:
      fit_all();
      break;
    case Qt::Key_Z:
      zoom_to_selection();
      break;
    case Qt::Key_A:
      set_arrows_shown(!arrows_shown_);
      break;
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      axis_->zoom_at(middle, 0.5);
      break;
    case Qt::Key_Minus:
      axis_->zoom_at(middle, 2.0);
      break;
    case Qt::Key_Left:
      axis_->pan_by(-0.1 * axis_->duration_s());
      break;
    case Qt::Key_Right:
      axis_->pan_by(0.1 * axis_->duration_s());
      break;
    case Qt::Key_Escape:
      axis_->clear_selection();
      select_slice(-1, false);
      break;
    default:
      QAbstractScrollArea::keyPressEvent(event);
      return;
  }
  event->accept();
}

bool TimelineView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip && model_) {
    auto* help = static_cast<QHelpEvent*>(event);
    const Hit hit = hit_at(help->pos());
    QString text = tooltip_text(hit);
    if (text.isEmpty() && hit.row >= 0)
      text = track_tooltip(rows_[size_t(hit.row)], help->pos().x());
    if (text.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), text, viewport());
    }
    return true;
  }
  return QAbstractScrollArea::viewportEvent(event);
}

// The slice under `point` (within 3 pixels), or the count of a folded block there.
TimelineView::Hit TimelineView::hit_at(QPointF point) const {
  Hit hit;
  if (!model_ || point.y() < kRulerHeightPx) return hit;
  const Geometry g = geometry_for(viewport()->size());
  const int y = int(point.y()) - kRulerHeightPx + g.scroll_y;
  for (size_t r = 0; r < rows_.size(); ++r) {
    if (y >= rows_[r].y && y < rows_[r].y + rows_[r].height) hit.row = int(r);
  }
  if (hit.row < 0 || point.x() < kLabelWidthPx) return hit;
  const Row& row = rows_[size_t(hit.row)];
  std::vector<int> lanes;
  if (row.type == RowType::kLane) lanes.push_back(row.index);
  if (row.type == RowType::kHeader && collapsed_.count(row.process))
    lanes = model_->lanes_of(row.process);
  const double t = g.trace_time(point.x());
  const int64_t tolerance = core::timeline_ns(3 * axis_->duration_s() / g.canvas_width());
  const int64_t at = core::timeline_ns(t);
  for (int l : lanes) {
    const LaneSlices& lane = model_->lanes()[size_t(l)];
    const auto [first, last] = lane.overlapping(at - tolerance, at + tolerance);
    for (size_t i = first; i < last; ++i) {
      if (lane.start_ns[i] <= at && at <= lane.end_ns[i]) hit.slice = int(lane.slice[i]);
    }
    if (hit.slice < 0 && last > first) hit.slice = int(lane.slice[first]);
    if (last - first > 1) hit.folded += int(last - first);
  }
  return hit;
}

// Over a counter, a link or a waits row: its value at the cursor (a link: over the cursor's
// pixel column; waits: the stretch under it).
QString TimelineView::track_tooltip(const Row& row, double x) const {
  if (x < kLabelWidthPx) return {};
  const Geometry g = geometry_for(viewport()->size());
  const double t = g.trace_time(x);
  const QString at = quantity(t, core::Dimension::kTime);
  if (row.type == RowType::kCounter) {
    const CounterTrack& track = model_->counters()[size_t(row.index)];
    return QString("<b>%1</b> %2 at %3")
        .arg(QString::fromStdString(track.name))
        .arg(track.value_at(t), 0, 'g', 10)
        .arg(at);
  }
  if (row.type == RowType::kLink) {
    const LinkTrack& track = model_->links()[size_t(row.index)];
    const double u =
        track.utilisation(g.trace_time(std::floor(x)), g.trace_time(std::floor(x) + 1));
    return QString("<b>%1</b> %2 % busy at %3 (bandwidth %4)")
        .arg(QString::fromStdString(track.name))
        .arg(int(std::lround(u * 100)))
        .arg(at, quantity(track.bandwidth_bytes_per_s, core::Dimension::kBandwidth));
  }
  if (row.type == RowType::kWait) {
    const WaitLane* lane = model_->waits_of(row.index);
    const int64_t tolerance = core::timeline_ns(2 * axis_->duration_s() / g.canvas_width());
    const int64_t ns = core::timeline_ns(t);
    const auto [first, last] = lane->overlapping(ns - tolerance, ns + tolerance);
    if (first == last) return {};
    const double start = double(lane->start_ns[first]) * 1e-9,
                 end = double(lane->end_ns[first]) * 1e-9;
    return QString(
               "<b>%1 waits</b> from %2 for %3, held by %4 (nothing of its own runs in its "
               "step)")
        .arg(QString::fromStdString(model_->process_name(row.index)),
             quantity(start, core::Dimension::kTime), quantity(end - start, core::Dimension::kTime),
             core::wait_cause_text(lane->cause[first]));
  }
  return {};
}

QString TimelineView::tooltip_text(const Hit& hit) const {
  if (hit.slice < 0) return {};
  const core::Trace& trace = model_->trace();
  const core::TraceEvent& e = *model_->layout().slices[size_t(hit.slice)].event;
  auto str = [&trace](uint32_t id) {
    return id == core::kNoString ? QString("-") : QString::fromStdString(trace.str(id));
  };
  QString text = QString("<b>%1</b> (%2)<br>")
                     .arg(str(e.label).toHtmlEscaped(), category_name(category_of(e)));
  if (hit.folded > 1) {
    text = QString("<b>%1 spans</b> within 3 px (zoom in to separate them); nearest:<br>")
               .arg(hit.folded) +
           text;
  }
  text += QString("actor %1, device %2").arg(str(e.actor), str(e.device));
  if (e.kind == core::EventKind::kTransfer)
    text += QString(" → %1 %2").arg(str(e.peer_actor), str(e.peer));
  text += "<br>";
  if (e.step >= 0) text += QString("step %1<br>").arg(e.step);
  text += QString("start %1, duration %2")
              .arg(quantity(e.start_s, core::Dimension::kTime),
                   quantity(e.end_s - e.start_s, core::Dimension::kTime));
  if (e.bytes > 0) text += "<br>" + quantity(e.bytes, core::Dimension::kBytes);
  if (e.flop > 0) text += "<br>" + quantity(e.flop, core::Dimension::kFlop);
  return text;
}

}  // namespace replisim::gui
