// The statistics of a selected time range: per category and actor the count, time inside the
// range, mean and max duration (TimelineModel::range_statistics), and the metrics of that window
// (core::compute_window_metrics: throughput, step time, the bottleneck).
#pragma once

#include <QWidget>

#include "gui/timeline_model.h"

class QLabel;
class QTableWidget;

namespace replisim::gui {

class RangePanel : public QWidget {
  Q_OBJECT

 public:
  explicit RangePanel(QWidget* parent = nullptr);
  // Shows [from_s, until_s] (the trace's clock) of `model`; a null model clears the panel.
  void show_range(const TimelineModel* model, double from_s, double until_s);
  QTableWidget* table() const { return table_; }
  QString metrics_text() const;

 private:
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace replisim::gui
