// What the timeline draws over the rows: a dead role's rows darkened from its death until its
// restart, while classroom mode animates the run the part after the animation's time blanked with
// a line at that time, and the time-to-target marker of training.objective.
#include <QPainter>
#include <cmath>

#include "gui/categories.h"
#include "gui/timeline_view.h"
#include "gui/timeline_view_geometry.h"

namespace replisim::gui {

void TimelineView::set_reveal_until_s(double trace_s) {
  reveal_until_s_ = trace_s;
  viewport()->update();
  emit reveal_changed(trace_s);
}

void TimelineView::paint_overlay(QPainter& p, const Geometry& g) const {
  const QRect canvas(kLabelWidthPx, kRulerHeightPx, std::max(0, g.width - kLabelWidthPx),
                     std::max(0, g.height - kRulerHeightPx));
  p.save();
  p.setClipRect(canvas);
  const double now_s = std::min(reveal_until_s_, model_->end_s());
  if (deaths_of_ != model_.get()) {  // the trace's deaths ("worker1 dies") and restarts
    deaths_of_ = model_.get();
    deaths_.clear();
    const core::Trace& trace = model_->trace();
    for (const core::TraceEvent& e : trace.events) {
      if (e.kind != core::EventKind::kFault || trace.str(e.label).find("dies") == std::string::npos)
        continue;
      double back_s = model_->end_s();
      for (const core::RestartRecord& r : trace.outcome.restarts)
        if (std::abs(r.fault_s - e.start_s) < 1e-9) back_s = r.resumed_s;
      deaths_.push_back({trace.str(e.actor), e.start_s, back_s});
    }
  }
  for (const Death& death : deaths_) {
    if (death.from_s > now_s) continue;
    const double x0 = std::max<double>(g.x(death.from_s), kLabelWidthPx);
    const double x1 = std::min<double>(g.x(std::min(death.until_s, now_s)), g.width);
    if (x1 <= x0) continue;
    for (const Row& row : rows_) {
      const int process = row.type == RowType::kWait ? row.index : row.process;
      if (process >= 0 && model_->process_name(process) == death.role)
        p.fillRect(QRectF(x0, g.screen_y(row.y), x1 - x0, row.height), QColor(0, 0, 0, 150));
    }
  }
  if (std::isfinite(reveal_until_s_)) {
    const double x = std::max<double>(g.x(reveal_until_s_), kLabelWidthPx);
    if (x < g.width)
      p.fillRect(QRectF(x, canvas.top(), g.width - x, canvas.height()), background_colour());
    p.setPen(QPen(QColor(0x00, 0x30, 0xA0), 2));
    p.drawLine(QPointF(x, canvas.top()), QPointF(x, canvas.bottom()));
  }
  p.restore();
  paint_target_marker(p, g);
}

void TimelineView::paint_target_marker(QPainter& p, const Geometry& g) const {
  const std::optional<core::ObjectiveMetrics>& objective = model_->objective();
  // Nothing without an objective, before it is reached, or (animating) before the animation's
  // time has come to it.
  if (!objective || !objective->reached() || objective->time_to_target_s > reveal_until_s_) return;
  const double x = g.x(objective->time_to_target_s);
  if (x < kLabelWidthPx || x > g.width) return;
  const QRect canvas(kLabelWidthPx, kRulerHeightPx, std::max(0, g.width - kLabelWidthPx),
                     std::max(0, g.height - kRulerHeightPx));
  p.save();
  p.setClipRect(canvas);
  p.setPen(QPen(objective_target_colour(), 2));
  p.drawLine(QPointF(x, canvas.top()), QPointF(x, canvas.bottom()));
  const QString text = QString::fromStdString(objective_marker_text(*objective));
  QFont bold = p.font();
  bold.setBold(true);
  p.setFont(bold);
  const int width = p.fontMetrics().horizontalAdvance(text) + 8;
  const int height = p.fontMetrics().height() + 2;
  // The label in the "counters" section's row, right above the loss and accuracy tracks (clear of
  // their notes and curves), or at the top of the rows when that row is scrolled off.
  int label_y = canvas.top() + 2;
  for (const Row& row : rows_) {
    if (row.type != RowType::kSection || row.index != 0) continue;
    const int y = g.screen_y(row.y);
    if (y >= canvas.top() && y + row.height <= canvas.bottom()) {
      label_y = y + std::max(0, (row.height - height) / 2);
    }
  }
  // Right of the line, or left of it where the canvas ends first.
  const double left = x + 4 + width <= g.width ? x + 4 : x - 4 - width;
  const QRectF box(left, label_y, width, height);
  p.fillRect(box, QColor(255, 255, 255, 230));
  p.setPen(QPen(objective_target_colour(), 1));
  p.drawRect(box);
  p.drawText(box, Qt::AlignCenter, text);
  p.restore();
}

}  // namespace replisim::gui
