// Two runs on one time axis: their timelines stacked, zooming and panning together (one shared
// TimeAxis), the second shifted by an offset so that the runs can be aligned (B's time 0 at the
// axis's `offset`), and both runs' metrics side by side with their differences; after a knob change
// in a two-strategy run, both pairs (before and after per strategy) and a choice of which two runs
// the timelines show.
#pragma once

#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

#include "gui/time_axis.h"
#include "gui/timeline_view.h"
#include "gui/trace_loading.h"

class QCheckBox;
class QComboBox;
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

  // Two pairs of runs, one per strategy before and after a knob change (`change`, "NICs at 25
  // Gbps"): the table shows A, B and B − A per strategy, and a choice above the timelines shows
  // the new pair against each other (after[0] against after[1], as set_models left them) or one
  // strategy's before against its after. set_models drops the pairs.
  void set_before_after(const ModelList& before, const ModelList& after, const QString& change);
  // Three or more runs (--strategy all: the strategies side by side): the timelines show two at
  // a time, A and B chosen above them among every pair (runs[0] against runs[1] first), and the
  // table that pair's metrics. set_models and set_before_after drop them.
  void set_runs(const ModelList& runs);
  // Before/after pairs: 0, the new pair; 1 + i, strategy i's before (A) against its after (B).
  // Runs of set_runs: the choice'th pair (i, j), i < j, in order.
  void show_pair(int choice);
  int pair_choices() const;

  TimeAxis* axis() const { return axis_; }  // A's, and B's unless own_axes()
  TimelineView* view_a() const { return a_; }
  TimelineView* view_b() const { return b_; }
  MetricsTable* metrics_table() const { return table_; }

 signals:
  // show_pair put other runs in the timelines.
  void runs_switched();

 private:
  TimeAxis* axis_;
  TimeAxis* axis_b_;  // B's own axis, while own_axes()
  QCheckBox* own_axes_;
  TimelineView* a_;
  TimelineView* b_;
  QDoubleSpinBox* offset_;
  QLabel* runs_label_;
  QComboBox* pairs_;  // shown with before/after pairs only
  ModelList before_;
  ModelList after_;
  ModelList runs_;                                    // set_runs
  std::vector<std::pair<size_t, size_t>> run_pairs_;  // set_runs: the choices (A, B)
  MetricsTable* table_;
};

}  // namespace replisim::gui
