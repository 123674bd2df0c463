// Two runs on one time axis: their timelines stacked, zooming and panning together (one shared
// TimeAxis), the second shifted by an offset so that the runs can be aligned (B's time 0 at the
// axis's `offset`), and both runs' metrics side by side with their differences.
#pragma once

#include <QWidget>
#include <memory>

#include "gui/time_axis.h"
#include "gui/timeline_view.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;

namespace replisim::gui {

class MetricsTable;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  void set_models(std::shared_ptr<const TimelineModel> a, std::shared_ptr<const TimelineModel> b);
  // Where B's time 0 lies on the shared axis, seconds (A's lies at 0).
  void set_offset_s(double offset_s);
  double offset_s() const;
  void fit_all();
  // Each run on a time axis of its own (each fitted to its run: a much shorter run is not squeezed
  // into a sliver of the width), or both on the shared one (zooming and panning together).
  void set_own_axes(bool own);
  bool own_axes() const { return b_->axis() != axis_; }
  // Names the two runs above them ("A: before · B: after replicas 2 → 3"); "" clears it.
  void set_runs_label(const QString& text);

  TimeAxis* axis() const { return axis_; }  // A's, and B's unless own_axes()
  TimelineView* view_a() const { return a_; }
  TimelineView* view_b() const { return b_; }
  MetricsTable* metrics_table() const { return table_; }

 private:
  TimeAxis* axis_;
  TimeAxis* axis_b_;  // B's own axis, while own_axes()
  QCheckBox* own_axes_;
  TimelineView* a_;
  TimelineView* b_;
  QDoubleSpinBox* offset_;
  QLabel* runs_label_;
  MetricsTable* table_;
};

}  // namespace replisim::gui
