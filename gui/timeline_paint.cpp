// TimelineView's painting: the ruler, the rows, the folded spans, instants, tracks and arrows.
#include <QImage>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>

#include "gui/timeline_view.h"
#include "gui/timeline_view_geometry.h"

namespace replisim::gui {

namespace {

QColor text_colour() {
  return QColor(0x20, 0x24, 0x2A);
}
// From a line's vertical middle to its baseline, for the painter's font.
double baseline_offset(const QPainter& p) {
  const QFontMetricsF metrics(p.font());
  return (metrics.ascent() - metrics.descent()) / 2;
}

// Spans of one crowded pixel column that choose its colour when folded.
constexpr int kColumnSamples = 6;

// A track's note at its top right, on a light box so that it reads over the track.
void paint_track_note(QPainter& p, QRect band, const QString& text) {
  const int width = p.fontMetrics().horizontalAdvance(text) + 8;
  const QRect box(band.right() - width - 2, band.top(), width, p.fontMetrics().height());
  p.fillRect(box, QColor(255, 255, 255, 215));
  p.setPen(QColor(0x20, 0x24, 0x2A));
  p.drawText(box, Qt::AlignCenter, text);
}

QColor grid_colour() {
  return QColor(0xDD, 0xE1, 0xE6);
}

}  // namespace

void TimelineView::render_to(QPainter& p, QSize size) const {
  const Geometry g = geometry_for(size);
  p.fillRect(QRect(QPoint(0, 0), size), background_colour());
  if (!model_) {
    p.setPen(text_colour());
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
               "Open a trace (File > Open) or a scenario (File > Simulate scenario)");
    return;
  }
  paint_rows(p, g);
  paint_instants(p, g);
  if (arrows_shown_) paint_arrows(p, g);
  if (selected_slice_ >= 0) paint_arrow(p, g, selected_slice_);
  paint_selection(p, g);
  paint_overlay(p, g);
  paint_ruler(p, g);
}

void TimelineView::paint_ruler(QPainter& p, const Geometry& g) const {
  p.setClipping(false);
  p.fillRect(QRect(0, 0, g.width, kRulerHeightPx), QColor(0xF4, 0xF5, 0xF7));
  p.setPen(grid_colour());
  p.drawLine(0, kRulerHeightPx - 1, g.width, kRulerHeightPx - 1);
  p.setPen(text_colour());
  // The run's name on two lines: the scenario (bold), then the strategy.
  const core::TraceMeta& meta = model_->trace().meta;
  QString first = QString::fromStdString(meta.scenario.empty() ? model_->source() : meta.scenario);
  QString second = QString::fromStdString(meta.strategy);
  if (core::clients_are_workers(meta)) second += " (" + QString::fromStdString(meta.sync) + ")";
  QFont font = p.font();
  const QFont plain = font;
  font.setBold(true);
  p.setFont(font);
  const int line = kRulerHeightPx / 2;
  p.drawText(QRect(6, 0, kLabelWidthPx - 8, line + 1), Qt::AlignBottom | Qt::AlignLeft,
             p.fontMetrics().elidedText(first, Qt::ElideMiddle, kLabelWidthPx - 8));
  p.setFont(plain);
  p.drawText(QRect(6, line, kLabelWidthPx - 8, line), Qt::AlignVCenter | Qt::AlignLeft,
             p.fontMetrics().elidedText(second, Qt::ElideRight, kLabelWidthPx - 8));
  const RulerTicks ticks = ruler_ticks(g.from_s - offset_s_, g.until_s - offset_s_);
  double free_x = 0;  // a narrow view labels every other tick rather than overlap them
  for (size_t i = 0; i < ticks.times_s.size(); ++i) {
    const double x = g.x(ticks.times_s[i]);
    if (x < kLabelWidthPx || x > g.width) continue;
    p.setPen(QColor(0x80, 0x86, 0x90));
    p.drawLine(QPointF(x, kRulerHeightPx - 8), QPointF(x, kRulerHeightPx - 1));
    p.setPen(text_colour());
    const double end = x + 3 + p.fontMetrics().horizontalAdvance(ticks.labels[i]);
    if (end > g.width || x < free_x) continue;
    p.drawText(QPointF(x + 3, kRulerHeightPx - 11), ticks.labels[i]);
    free_x = end + 6;
  }
}

void TimelineView::paint_rows(QPainter& p, const Geometry& g) const {
  const RulerTicks ticks = ruler_ticks(g.from_s - offset_s_, g.until_s - offset_s_);
  const QRect canvas = canvas_rect_for(g);
  p.setPen(QColor(0xEE, 0xF0, 0xF3));  // the grid at the ticks
  for (double t : ticks.times_s) {
    const double x = g.x(t);
    if (x >= kLabelWidthPx) p.drawLine(QPointF(x, kRulerHeightPx), QPointF(x, g.height));
  }
  const QFont original = p.font();  // the ruler's, drawn after
  QFont base = original;
  if (lane_scale_ != 1) base.setPointSizeF(base.pointSizeF() * lane_scale_);
  QFont small = base;
  small.setPointSizeF(std::max(6.5, small.pointSizeF() - lane_scale_));
  for (const Row& row : rows_) {
    const int y = g.screen_y(row.y);
    if (y + row.height < kRulerHeightPx || y > g.height) continue;
    const QRect label(0, y, kLabelWidthPx, row.height);
    const QRect band(kLabelWidthPx, y, g.width - kLabelWidthPx, row.height);
    p.setClipRect(QRect(0, kRulerHeightPx, g.width, g.height - kRulerHeightPx));
    if (row.type == RowType::kHeader || row.type == RowType::kSection) {
      p.setFont(base);
      paint_header(p, g, row, label, band);
      continue;
    }
    p.setFont(small);
    if (highlighted_.count(row.process)) p.fillRect(label, highlight_colour().lighter(125));
    p.setPen(lane_scale_ > 1 ? text_colour() : QColor(0x50, 0x56, 0x60));
    std::string name;
    if (row.type == RowType::kLane) name = model_->lanes()[size_t(row.index)].label;
    if (row.type == RowType::kWait) name = "waits";
    if (row.type == RowType::kCounter) name = model_->counters()[size_t(row.index)].name;
    if (row.type == RowType::kLink) name = model_->links()[size_t(row.index)].name;
    p.drawText(label.adjusted(16, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(QString::fromStdString(name), Qt::ElideMiddle,
                                          kLabelWidthPx - 20));
    p.setClipRect(canvas.intersected(band));
    if (row.type == RowType::kLane) paint_lane(p, g, row.index, band.adjusted(0, 1, 0, -1), true);
    if (row.type == RowType::kWait) paint_waits(p, g, row.index, band.adjusted(0, 1, 0, -1));
    if (row.type == RowType::kCounter) paint_counter(p, g, row, band.adjusted(0, 3, 0, -3));
    if (row.type == RowType::kLink) paint_link(p, g, row, band.adjusted(0, 2, 0, -2));
  }
  p.setFont(original);
  p.setClipping(false);
  p.setPen(grid_colour());
  p.drawLine(kLabelWidthPx - 1, kRulerHeightPx, kLabelWidthPx - 1, g.height);
}

// A group's row (an actor, with its fold mark) or a section's ("counters"); a folded group
// overlays its lanes there: steps underneath, then transfers, then compute on top.
void TimelineView::paint_header(QPainter& p, const Geometry& g, const Row& row, QRect label,
                                QRect band) const {
  const bool highlighted = row.type == RowType::kHeader && highlighted_.count(row.process);
  p.fillRect(QRect(0, band.top(), g.width, row.height),
             highlighted ? highlight_colour() : group_header_colour());
  if (highlighted) p.fillRect(QRect(0, band.top(), 4, row.height), text_colour());
  p.setPen(text_colour());
  QFont bold = p.font();
  bold.setBold(true);
  p.setFont(bold);
  QString name;
  if (row.type == RowType::kHeader) {
    name = QString(collapsed_.count(row.process) ? "▸ " : "▾ ") +
           QString::fromStdString(model_->process_name(row.process));
  } else {
    name = row.index == 0 ? "counters" : "busiest links (utilisation)";
  }
  p.drawText(label.adjusted(6, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft,
             p.fontMetrics().elidedText(name, Qt::ElideRight, label.width() - 10));
  bold.setBold(false);
  p.setFont(bold);
  if (row.type != RowType::kHeader || !collapsed_.count(row.process)) return;
  p.setClipRect(canvas_rect_for(g).intersected(band));
  std::vector<int> lanes = model_->lanes_of(row.process);
  auto layer = [this](int lane) {
    const std::string& lane_label = model_->lanes()[size_t(lane)].label;
    if (lane_label.rfind("step", 0) == 0) return 0;
    return lane_label.rfind("compute", 0) == 0 ? 2 : 1;
  };
  std::stable_sort(lanes.begin(), lanes.end(),
                   [&layer](int a, int b) { return layer(a) < layer(b); });
  for (int lane : lanes) paint_lane(p, g, lane, band.adjusted(0, 3, 0, -3), false);
}

// The visible slices of one lane: each at least kFoldWidthPx wide as a rectangle (with its label
// when it fits), runs of narrower ones folded (paint_folded).
void TimelineView::paint_lane(QPainter& p, const Geometry& g, int lane_index, QRect band,
                              bool labels) const {
  const LaneSlices& lane = model_->lanes()[size_t(lane_index)];
  const int64_t from_ns = core::timeline_ns(g.from_s - offset_s_);
  const int64_t until_ns = core::timeline_ns(g.until_s - offset_s_);
  const auto [first, last] = lane.overlapping(from_ns, until_ns);
  const double ns_per_px = (g.until_s - g.from_s) * 1e9 / std::max(1.0, g.canvas_width());
  const int64_t fold_ns = int64_t(std::ceil(kFoldWidthPx * ns_per_px));
  const int64_t gap_ns = int64_t(std::ceil(ns_per_px));
  p.setPen(Qt::NoPen);
  // On a raster device the folded columns are collected in one strip of pixels, drawn at once
  // (a fillRect per column costs more than the walk); a vector device (SVG) gets rectangles.
  FoldStrip strip;
  if (p.paintEngine() && p.paintEngine()->type() == QPaintEngine::Raster) {
    fold_strip_.assign(size_t(std::max(1, g.width)), 0);
    strip.pixels = fold_strip_.data();
    strip.width = g.width;
  }
  for (size_t i = first; i < last;) {
    if (lane.end_ns[i] - lane.start_ns[i] >= fold_ns) {
      paint_span(p, g, lane, i, band, labels);
      ++i;
    } else {
      i = paint_folded(p, g, lane, {i, last}, {fold_ns, gap_ns}, band, strip);
    }
  }
  if (strip.pixels && strip.until > strip.from) {
    const QImage pixels(reinterpret_cast<const uchar*>(strip.pixels + strip.from),
                        strip.until - strip.from, 1, QImage::Format_ARGB32_Premultiplied);
    p.drawImage(QRect(strip.from, band.top(), strip.until - strip.from, band.height()), pixels);
  }
  paint_fold_marks(p, strip.blocks, band, labels);
}

// Over the folded blocks: a dark line along the top, and the count where it fits.
void TimelineView::paint_fold_marks(QPainter& p, const std::vector<FoldStrip::Block>& blocks,
                                    QRect band, bool labels) const {
  const int top = band.top(), height = band.height();
  for (const FoldStrip::Block& b : blocks) {
    if (b.x1 - b.x0 >= 3) p.fillRect(QRectF(b.x0, top, b.x1 - b.x0, 2), fold_colour());
    if (!labels || b.x1 - b.x0 <= 44) continue;
    const QString text = QString::fromUtf8("×") + QString::number(qulonglong(b.count));
    const int w = p.fontMetrics().horizontalAdvance(text) + 6;
    if (w >= b.x1 - b.x0) continue;
    const QRectF box(0.5 * (b.x0 + b.x1) - w / 2.0, top + 1, w, height - 2);
    p.fillRect(box, QColor(255, 255, 255, 210));
    p.setPen(text_colour());
    // At a baseline: a point needs no text layout, which a rectangle and alignment would.
    p.drawText(QPointF(box.left() + 3, box.center().y() + baseline_offset(p)), text);
    p.setPen(Qt::NoPen);
  }
}

void TimelineView::paint_span(QPainter& p, const Geometry& g, const LaneSlices& lane, size_t i,
                              QRect band, bool labels) const {
  const double top = band.top(), height = band.height();
  const double x0 = std::max(g.x_ns(lane.start_ns[i]), double(kLabelWidthPx) - 2);
  const double x1 = std::min(g.x_ns(lane.end_ns[i]), double(g.width) + 2);
  const bool selected = int(lane.slice[i]) == selected_slice_;
  p.fillRect(QRectF(x0, top, x1 - x0, height), category_colour(lane.category[i]));
  if (x1 - x0 >= 3) {  // a light edge keeps touching spans apart
    p.setPen(selected ? QPen(Qt::black, 2) : QPen(QColor(255, 255, 255, 150), 1));
    p.drawLine(QPointF(x1 - 0.5, top), QPointF(x1 - 0.5, top + height));
    if (selected) p.drawRect(QRectF(x0, top, x1 - x0, height));
    p.setPen(Qt::NoPen);
  }
  if (!labels || x1 - x0 <= 36) return;
  const core::TraceEvent& e = *model_->layout().slices[lane.slice[i]].event;
  const Category c = lane.category[i];
  p.setPen(category_colour(c).lightness() < 140 ? QColor(Qt::white) : text_colour());
  const QString text = e.label == core::kNoString
                           ? QString(category_name(c))
                           : QString::fromStdString(model_->trace().str(e.label));
  const QString shown = p.fontMetrics().elidedText(text, Qt::ElideRight, int(x1 - x0 - 4));
  if (!shown.isEmpty()) p.drawText(QPointF(x0 + 2, top + height / 2 + baseline_offset(p)), shown);
  p.setPen(Qt::NoPen);
}

// A run of narrow spans from `range.first`, each starting within a pixel of the block so far and
// narrower than `limits.first` ns (`limits.second`: a pixel, ns): one block, each pixel column in
// the colour of the category covering most of it (into `strip`, or as rectangles), noted in
// strip.blocks for paint_fold_marks. Returns the index after the run.
size_t TimelineView::paint_folded(QPainter& p, const Geometry& g, const LaneSlices& lane,
                                  std::pair<size_t, size_t> range,
                                  std::pair<int64_t, int64_t> limits, QRect band,
                                  FoldStrip& strip) const {
  const auto [i, last] = range;
  const auto [fold_ns, gap_ns] = limits;
  const int top = band.top(), height = band.height();
  std::array<int64_t, kCategoryCount> covered{};
  int column = int(std::floor(g.x_ns(lane.start_ns[i])));
  int run_start = column, run_category = -1;
  auto flush_run = [&](int until_column) {  // columns of one colour as one rectangle
    if (run_category < 0 || until_column <= run_start) return;
    const QColor colour = category_colour(Category(run_category));
    if (strip.pixels == nullptr) {
      p.fillRect(QRect(run_start, top, until_column - run_start, height), colour);
      return;
    }
    const int from = std::max(0, run_start), until = std::min(strip.width, until_column);
    std::fill(strip.pixels + std::min(from, until), strip.pixels + until, colour.rgba());
    if (until > from) {
      strip.from = strip.until > strip.from ? std::min(strip.from, from) : from;
      strip.until = std::max(strip.until, until);
    }
  };
  auto end_column = [&]() {
    const int dominant = int(std::max_element(covered.begin(), covered.end()) - covered.begin());
    if (dominant != run_category) {
      flush_run(column);
      run_start = column;
      run_category = dominant;
    }
    covered.fill(0);
  };
  // The first time of the next pixel column: integer comparisons in the loop.
  auto column_end_ns = [&g](int c) { return core::timeline_ns(g.trace_time(c + 1.0)); };
  int64_t next_column_ns = column_end_ns(column), block_end = lane.end_ns[i];
  int in_column = 0;
  size_t j = i;
  for (; j < last; ++j) {
    const int64_t s = lane.start_ns[j], e = lane.end_ns[j];
    if (j > i && (s > block_end + gap_ns || e - s >= fold_ns)) break;
    if (s >= next_column_ns) {
      end_column();
      column = std::max(column + 1, int(std::floor(g.x_ns(s))));
      next_column_ns = column_end_ns(column);
      in_column = 0;
    }
    covered[size_t(lane.category[j])] += e - s + 1;
    block_end = std::max(block_end, e);
    // A crowded column: its first kColumnSamples spans choose its colour; jump over the rest (a
    // lane's spans do not overlap, so only the column's last one can reach past it).
    if (++in_column == kColumnSamples) {
      const size_t next =
          size_t(std::lower_bound(lane.start_ns.begin() + ptrdiff_t(j) + 1,
                                  lane.start_ns.begin() + ptrdiff_t(last), next_column_ns) -
                 lane.start_ns.begin());
      if (next - 1 > j) {
        const size_t final_in_column = next - 1;
        if (lane.end_ns[final_in_column] - lane.start_ns[final_in_column] >= fold_ns) {
          j = final_in_column - 1;  // the wide one ends the block, in the next round
        } else {
          block_end = std::max(block_end, lane.end_ns[final_in_column]);
          j = final_in_column;
        }
      }
    }
  }
  end_column();
  const double x0 = std::max(g.x_ns(lane.start_ns[i]), double(kLabelWidthPx) - 2);
  const double x1 = std::max(g.x_ns(block_end), x0 + 1);
  flush_run(std::max(column + 1, int(std::ceil(x1))));
  if (j - i > 1) strip.blocks.push_back({x0, x1, j - i});
  return j;
}

// A role's waits, hatched; stretches closer than a pixel merge, and a crowded pixel column is
// jumped over by binary search.
void TimelineView::paint_waits(QPainter& p, const Geometry& g, int process, QRect band) const {
  const WaitLane* lane = model_->waits_of(process);
  if (lane == nullptr) return;
  const auto [first, last] = lane->overlapping(core::timeline_ns(g.from_s - offset_s_),
                                               core::timeline_ns(g.until_s - offset_s_));
  const QBrush brush = category_brush(Category::kWait);
  double run_x0 = 0, run_x1 = -1;
  auto flush = [&] {
    if (run_x1 >= run_x0)
      p.fillRect(QRectF(run_x0, band.top(), run_x1 - run_x0, band.height()), brush);
  };
  for (size_t i = first; i < last; ++i) {
    const double x0 = std::max(g.x_ns(lane->start_ns[i]), double(kLabelWidthPx) - 2);
    double x1 = std::max(std::min(g.x_ns(lane->end_ns[i]), double(g.width) + 2), x0 + 1);
    if (x1 < std::floor(x0) + 1 && i + 1 < last) {  // the rest of this pixel column at once
      const int64_t column_end = core::timeline_ns(g.trace_time(std::floor(x0) + 1));
      const auto begin = lane->start_ns.begin();
      const size_t final_in_column =
          size_t(std::lower_bound(begin + ptrdiff_t(i) + 1, begin + ptrdiff_t(last), column_end) -
                 begin - 1);
      if (final_in_column > i) {
        i = final_in_column;
        x1 = std::max(x1, std::min(g.x_ns(lane->end_ns[i]), double(g.width) + 2));
      }
    }
    if (run_x1 >= run_x0 && x0 <= run_x1 + 1) {
      run_x1 = std::max(run_x1, x1);
    } else {
      flush();
      run_x0 = x0;
      run_x1 = x1;
    }
  }
  flush();
}

// Faults (a red mark and, for a window, a band across the actor's rows), updates (ticks) and
// dropped gradients (crosses), in their actor's header row.
void TimelineView::paint_instants(QPainter& p, const Geometry& g) const {
  p.setClipRect(canvas_rect_for(g));
  const auto& layout = model_->layout();
  // Per process and kind, the pixel column last marked: one mark per column is enough.
  std::vector<std::array<int, 2>> marked(layout.processes.size(), {INT_MIN, INT_MIN});
  for (const core::TimelineInstant& instant : layout.instants) {
    const core::TraceEvent& e = *instant.event;
    const int row_index = row_of_process_[size_t(instant.process)];
    if (row_index < 0) continue;
    if (e.kind == core::EventKind::kUpdate || e.kind == core::EventKind::kDropped) {
      int& last = marked[size_t(instant.process)][e.kind == core::EventKind::kUpdate ? 0 : 1];
      const int column = int(std::floor(g.x(e.start_s)));
      if (column == last) continue;
      last = column;
    }
    const Row& header = rows_[size_t(row_index)];
    const int y = g.screen_y(header.y);
    const double x = g.x(e.start_s);
    if (e.kind == core::EventKind::kFault) {
      const double end = (e.flags & core::kEventOpenEnded) ? model_->end_s() : e.end_s;
      int bottom = y + header.height;
      for (size_t r = size_t(row_index) + 1; r < rows_.size() && rows_[r].type == RowType::kLane;
           ++r) {
        bottom = g.screen_y(rows_[r].y) + rows_[r].height;
      }
      const QColor colour = category_colour(Category::kFault);
      if (end > e.start_s) {
        p.fillRect(QRectF(x, y, std::max(1.0, g.x(end) - x), bottom - y), QColor(200, 0, 0, 28));
      }
      p.setPen(QPen(colour, 2));
      p.drawLine(QPointF(x, y), QPointF(x, bottom));
      QPainterPath mark;
      mark.moveTo(x - 6, y + 1);
      mark.lineTo(x + 6, y + 1);
      mark.lineTo(x, y + 11);
      mark.closeSubpath();
      p.fillPath(mark, colour);
    } else if (e.kind == core::EventKind::kUpdate) {
      if (x < kLabelWidthPx || x > g.width) continue;
      p.setPen(QPen(category_colour(Category::kUpdate), 1));
      p.drawLine(QPointF(x, y + header.height - 7), QPointF(x, y + header.height - 1));
    } else if (e.kind == core::EventKind::kDropped) {
      if (x < kLabelWidthPx || x > g.width) continue;
      p.setPen(QPen(category_colour(Category::kDropped), 1.5));
      const double m = y + header.height / 2.0;
      p.drawLine(QPointF(x - 3, m - 3), QPointF(x + 3, m + 3));
      p.drawLine(QPointF(x - 3, m + 3), QPointF(x + 3, m - 3));
    }
  }
  p.setClipping(false);
}

// A counter as a step line sampled at each pixel column, scaled to the values in view (so that a
// change, such as global_step rolled back by a restart, shows at any zoom).
void TimelineView::paint_counter(QPainter& p, const Geometry& g, const Row& row, QRect band) const {
  const CounterTrack& track = model_->counters()[size_t(row.index)];
  if (track.time_s.empty()) return;
  const int x0 = kLabelWidthPx, x1 = g.width;
  std::vector<double> values(size_t(std::max(0, x1 - x0 + 1)));
  for (int x = x0; x <= x1; ++x) values[size_t(x - x0)] = track.value_at(g.trace_time(x + 1.0));
  if (values.empty()) return;
  const auto [low_it, high_it] = std::minmax_element(values.begin(), values.end());
  const double low = *low_it, high = *high_it;
  const double span = high > low ? high - low : 1.0;
  const double scale = (band.height() - 16) / span;
  auto y_of = [&](double v) { return band.bottom() - (v - low) * scale; };
  QPainterPath path;
  path.moveTo(x0, band.bottom());
  for (int x = x0; x <= x1; ++x) path.lineTo(x, y_of(values[size_t(x - x0)]));
  path.lineTo(x1, band.bottom());
  path.closeSubpath();
  p.fillPath(path, QColor(0x17, 0x80, 0x3A, 60));
  p.setPen(QPen(category_colour(Category::kUpdate), 1.2));
  p.drawPath(path);
  paint_track_note(p, band,
                   QString("%1 to %2 in view (run max %3)")
                       .arg(low, 0, 'g', 8)
                       .arg(high, 0, 'g', 8)
                       .arg(track.max_value, 0, 'g', 8));
}

// A link direction's utilisation per pixel column, 0 to 100 % of the band (above 100 %: the
// transfers' mean rates overlapped beyond the bandwidth, drawn full in a darker colour).
void TimelineView::paint_link(QPainter& p, const Geometry& g, const Row& row, QRect band) const {
  const LinkTrack& track = model_->links()[size_t(row.index)];
  const QColor colour(0xF2, 0x8E, 0x2B);
  double peak = 0;
  for (int x = kLabelWidthPx; x < g.width; ++x) {
    const double u = track.utilisation(g.trace_time(x), g.trace_time(x + 1.0));
    peak = std::max(peak, u);
    if (u <= 0.001) continue;
    const double h = std::min(1.0, u) * band.height();
    p.fillRect(QRectF(x, band.bottom() + 1 - h, 1, h), u > 1.001 ? colour.darker(150) : colour);
  }
  paint_track_note(p, band, QString("peak %1 %").arg(int(std::lround(peak * 100))));
}

// Message arrows of the visible transfers (when there are few enough to read).
void TimelineView::paint_arrows(QPainter& p, const Geometry& g) const {
  static constexpr size_t kMaxArrows = 300;
  const int64_t from_ns = core::timeline_ns(g.from_s - offset_s_);
  const int64_t until_ns = core::timeline_ns(g.until_s - offset_s_);
  std::vector<int> shown;
  for (size_t l = 0; l < model_->lanes().size(); ++l) {
    const LaneSlices& lane = model_->lanes()[l];
    if (lane.label.rfind("send", 0) != 0) continue;
    const auto [first, last] = lane.overlapping(from_ns, until_ns);
    if (shown.size() + (last - first) > kMaxArrows) return;
    for (size_t i = first; i < last; ++i) shown.push_back(int(lane.slice[i]));
  }
  for (int slice : shown) paint_arrow(p, g, slice);
}

void TimelineView::paint_arrow(QPainter& p, const Geometry& g, int slice) const {
  const int partner = model_->partner_slice(slice);
  if (partner < 0) return;
  const auto& slices = model_->layout().slices;
  const core::TimelineSlice& send = slices[size_t(slice < partner ? slice : partner)];
  const core::TimelineSlice& recv = slices[size_t(slice < partner ? partner : slice)];
  const int y0 = row_middle_of_lane(g, send.lane), y1 = row_middle_of_lane(g, recv.lane);
  if (y0 < 0 || y1 < 0) return;
  const QPointF from(g.x(send.event->start_s), y0), to(g.x(recv.event->end_s), y1);
  p.setClipRect(canvas_rect_for(g));
  const bool selected = slice == selected_slice_ || partner == selected_slice_;
  p.setPen(QPen(selected ? QColor(0, 0, 0) : QColor(0x40, 0x40, 0x40, 90), selected ? 1.8 : 0.8));
  p.drawLine(from, to);
  const double angle = std::atan2(to.y() - from.y(), to.x() - from.x());
  const double size = selected ? 8 : 5;
  QPainterPath head;
  head.moveTo(to);
  head.lineTo(to - QPointF(size * std::cos(angle - 0.4), size * std::sin(angle - 0.4)));
  head.lineTo(to - QPointF(size * std::cos(angle + 0.4), size * std::sin(angle + 0.4)));
  head.closeSubpath();
  p.fillPath(head, p.pen().color());
  p.setClipping(false);
}

void TimelineView::paint_selection(QPainter& p, const Geometry& g) const {
  if (!axis_->has_selection()) return;
  const double x0 = std::max(double(kLabelWidthPx), g.x_axis(axis_->selection_from_s()));
  const double x1 = std::min(double(g.width), g.x_axis(axis_->selection_until_s()));
  if (x1 < x0) return;
  p.fillRect(QRectF(x0, kRulerHeightPx, std::max(1.0, x1 - x0), g.height - kRulerHeightPx),
             selection_colour());
  p.setPen(QPen(QColor(0x30, 0x80, 0xFF), 1));
  p.drawLine(QPointF(x0, 0), QPointF(x0, g.height));
  p.drawLine(QPointF(x1, 0), QPointF(x1, g.height));
}

int TimelineView::row_middle_of_lane(const Geometry& g, int lane) const {
  if (lane < 0 || size_t(lane) >= row_of_lane_.size()) return -1;
  int r = row_of_lane_[size_t(lane)];
  if (r < 0) r = row_of_process_[size_t(model_->lanes()[size_t(lane)].process)];
  if (r < 0) return -1;
  return g.screen_y(rows_[size_t(r)].y) + rows_[size_t(r)].height / 2;
}

}  // namespace replisim::gui
