// The custom-painted timeline of one run (a TimelineModel): a row group per actor with its lanes,
// counter and link tracks, a time ruler, message arrows, folding of narrow spans, a selected
// range and a selected slice. Painting walks only the visible part of each lane (binary search
// on the lane's sorted slices) and folds runs of spans narrower than kFoldWidthPx, so its cost
// follows the pixels, not the events. Interaction: wheel zooms at the cursor (Shift+wheel
// scrolls), drag pans, Shift+drag or a drag on the ruler selects a range, a click selects a span
// or folds/unfolds a group; keys F (fit all), Z (zoom to the selection), A (arrows), +/-.
// A widget: used from the GUI thread only.
#pragma once

#include <QAbstractScrollArea>
#include <QPointF>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gui/time_axis.h"
#include "gui/timeline_model.h"

class QPainter;

namespace replisim::gui {

class TimelineView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  // `axis` is shared (not owned; it must outlive the view); null makes the view its own.
  explicit TimelineView(TimeAxis* axis = nullptr, QWidget* parent = nullptr);

  // Shows `model` (shared with other views); null shows nothing. Keeps the axis's range.
  void set_model(std::shared_ptr<const TimelineModel> model);
  const std::shared_ptr<const TimelineModel>& model() const { return model_; }
  TimeAxis* axis() const { return axis_; }

  // Where this run's time 0 lies on the axis (s): trace time = axis time - offset.
  void set_offset_s(double offset_s);
  double offset_s() const { return offset_s_; }

  // Shows the whole run (plus this view's offset).
  void fit_all();
  void zoom_to_selection();
  void set_arrows_shown(bool shown);
  bool arrows_shown() const { return arrows_shown_; }
  void set_group_collapsed(int process, bool collapsed);
  bool group_collapsed(int process) const { return collapsed_.count(process) > 0; }
  // Shows the row groups of `actors` (process names) unfolded and highlighted (their header and
  // labels on a yellow ground), folds every other group; an empty
  // list unfolds every group and highlights none. Scrolls so that the first of them is at the top
  // (or, when it lies in the upper half of the view or the run has training.objective's accuracy
  // curve, to the top: the counters stay in sight).
  // Returns the groups found (names the run lacks are left out).
  int focus_groups(const std::vector<std::string>& actors);
  bool group_highlighted(int process) const { return highlighted_.count(process) > 0; }
  // The scroll position (content pixels) of the top row shown.
  int scroll_y() const;
  // The top of process `process`'s header row in content pixels (-1 when it has none).
  int group_top_y(int process) const;

  // Row heights and label fonts times `scale` (classroom mode: lanes readable from the back of a
  // room); 1 is the viewer's size.
  void set_lane_scale(double scale);
  double lane_scale() const { return lane_scale_; }
  // Draws on `axis` from now on (not owned; it must outlive the view): the compare view gives
  // each run its own axis or both one.
  void set_axis(TimeAxis* axis);

  // Animation: draws only what happened by `trace_s` (later spans, counters and link use blank,
  // a line marks the time); infinity (the default) draws the whole run. A role that died is
  // drawn dark from its death until its restart (or the end) either way.
  void set_reveal_until_s(double trace_s);
  double reveal_until_s() const { return reveal_until_s_; }

  // Selects a slice of the layout (-1: none), scrolls and zooms it into view when `reveal`.
  void select_slice(int slice, bool reveal);
  int selected_slice() const { return selected_slice_; }
  // A range in the trace's own clock (s); selects it on the shared axis.
  void select_range(double from_s, double until_s);

  // Geometry, in viewport pixels (for tests and the screenshot driver). The x of a trace time,
  // the trace time at x, and the vertical middle of lane `lane` (-1 when it is not shown).
  double x_of(double trace_s) const;
  double trace_time_at(double x) const;
  int lane_middle_y(int lane) const;
  QRect canvas_rect() const;  // where spans are drawn: right of the labels, below the ruler

  // Paints the whole view (ruler, labels, rows) into `painter` over a `size` area: the viewport's
  // painting, and what PNG and SVG exports draw.
  void render_to(QPainter& painter, QSize size) const;

  static constexpr int kLabelWidthPx = 220;
  static constexpr int kRulerHeightPx = 34;
  static constexpr int kLaneHeightPx = 16;
  static constexpr int kHeaderHeightPx = 20;
  static constexpr int kCounterHeightPx = 40;
  static constexpr int kLinkHeightPx = 26;
  static constexpr int kWaitHeightPx = 12;

 signals:
  void slice_selected(int slice);
  // A range was selected, in this trace's clock (s).
  void range_selected(double from_s, double until_s);
  // set_reveal_until_s was called (the animation's time, this trace's clock; infinity: none).
  void reveal_changed(double trace_s);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  bool viewportEvent(QEvent* event) override;

 private:
  enum class RowType { kHeader, kLane, kWait, kCounter, kLink, kSection };
  struct Row {
    RowType type = RowType::kLane;
    int process = -1;  // header: its process; lane: its lane's
    int index = -1;    // lane, counter or link track index (waits: the process)
    int y = 0;         // top, in content pixels (below the ruler)
    int height = 0;
  };
  struct Hit {
    int slice = -1;  // a slice under the point
    int folded = 0;  // or a folded block of this many spans
    int row = -1;
  };
  struct Geometry;  // the mapping of one paint: time <-> x, rows <-> y

  Geometry geometry_for(QSize size) const;
  static QRect canvas_rect_for(const Geometry& g);
  void rebuild_rows();
  void update_scrollbars();
  int content_height() const;
  Hit hit_at(QPointF point) const;
  QString tooltip_text(const Hit& hit) const;
  QString track_tooltip(const Row& row, double x) const;

  void paint_ruler(QPainter& p, const Geometry& g) const;
  void paint_rows(QPainter& p, const Geometry& g) const;
  void paint_header(QPainter& p, const Geometry& g, const Row& row, QRect label, QRect band) const;
  void paint_lane(QPainter& p, const Geometry& g, int lane, QRect band, bool labels) const;
  void paint_span(QPainter& p, const Geometry& g, const LaneSlices& lane, size_t i, QRect band,
                  bool labels) const;
  // Pixel columns of folded spans collected for one lane (a raster device only).
  struct FoldStrip {
    uint32_t* pixels = nullptr;  // premultiplied ARGB, `width` of them; null: paint rectangles
    int width = 0;
    int from = 0;  // the columns set: [from, until)
    int until = 0;
    struct Block {
      double x0, x1;  // pixels
      size_t count;   // spans folded into it
    };
    std::vector<Block> blocks;  // marked after the strip is drawn
  };
  void paint_fold_marks(QPainter& p, const std::vector<FoldStrip::Block>& blocks, QRect band,
                        bool labels) const;
  size_t paint_folded(QPainter& p, const Geometry& g, const LaneSlices& lane,
                      std::pair<size_t, size_t> range, std::pair<int64_t, int64_t> limits,
                      QRect band, FoldStrip& strip) const;
  void paint_instants(QPainter& p, const Geometry& g) const;
  void paint_counter(QPainter& p, const Geometry& g, const Row& row, QRect band) const;
  void paint_waits(QPainter& p, const Geometry& g, int process, QRect band) const;
  void paint_link(QPainter& p, const Geometry& g, const Row& row, QRect band) const;
  void paint_arrows(QPainter& p, const Geometry& g) const;
  void paint_arrow(QPainter& p, const Geometry& g, int slice) const;
  void paint_selection(QPainter& p, const Geometry& g) const;
  // Dead roles darkened and, while animating, the not-yet-happened part blanked
  // (timeline_overlay.cpp).
  void paint_overlay(QPainter& p, const Geometry& g) const;
  // The time-to-target marker: a line across the rows where training.objective's target was
  // first reached, labelled in the counters' section row (timeline_overlay.cpp).
  void paint_target_marker(QPainter& p, const Geometry& g) const;
  int row_middle_of_lane(const Geometry& g, int lane) const;

  TimeAxis* axis_;
  std::shared_ptr<const TimelineModel> model_;
  double offset_s_ = 0;
  bool arrows_shown_ = true;
  std::set<int> collapsed_;
  std::set<int> highlighted_;
  double lane_scale_ = 1;
  std::vector<Row> rows_;
  std::vector<int> row_of_lane_;     // lane -> row (-1 when collapsed)
  std::vector<int> row_of_process_;  // process -> its header row
  int selected_slice_ = -1;
  double reveal_until_s_ = std::numeric_limits<double>::infinity();
  // Roles that died: name, death and return (s), found once per model (timeline_overlay.cpp).
  struct Death {
    std::string role;
    double from_s, until_s;
  };
  mutable const TimelineModel* deaths_of_ = nullptr;
  mutable std::vector<Death> deaths_;
  mutable std::vector<uint32_t> fold_strip_;  // painting's scratch (FoldStrip)
  // Dragging: a pan, or a range selection, from where the button went down.
  enum class Drag { kNone, kPending, kPan, kSelect } drag_ = Drag::kNone;
  QPointF drag_origin_;
  double drag_origin_from_s_ = 0;
  int drag_origin_scroll_ = 0;
  bool drag_selects_ = false;
};

}  // namespace replisim::gui
