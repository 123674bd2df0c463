// Two runs' metrics side by side with their differences (B - A and B / A): throughput, step and
// update times, staleness, the bottleneck, simulated time, events; or two pairs of runs (before
// and after a knob change, one pair per strategy) with B - A per strategy.
#pragma once

#include <QTableWidget>

#include "gui/timeline_model.h"
#include "gui/trace_loading.h"

namespace replisim::gui {

class MetricsTable : public QTableWidget {
  Q_OBJECT

 public:
  explicit MetricsTable(QWidget* parent = nullptr);
  // Either may be null (its column stays empty).
  void set_models(const TimelineModel* a, const TimelineModel* b);
  // Before against after per strategy (a knob changed in a two-strategy run): for each pair
  // before[i], after[i] (the same strategy), columns A (before), B (after) and B − A, and what
  // bound each run (the first entry of the report's "bound by" row). Runs without metrics show
  // "-".
  void set_before_after(const ModelList& before, const ModelList& after);
};

}  // namespace replisim::gui
