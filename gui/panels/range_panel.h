// The statistics of a selected time range: per category and actor the count, time inside the
// range, mean and max duration (TimelineModel::range_statistics), and the metrics of that window
// (core::compute_window_metrics: throughput, step time, the bottleneck).
#pragma once

#include <QWidget>
#include <vector>

#include "gui/timeline_model.h"

class QLabel;
class QTableWidget;

namespace replisim::gui {

class RangePanel : public QWidget {
  Q_OBJECT

 public:
  explicit RangePanel(QWidget* parent = nullptr);
  // One run's range: [from_s, until_s] in its own clock; `name` ("A", "B"; "" for a lone run)
  // fills the table's run column.
  struct RangeRun {
    QString name;
    const TimelineModel* model = nullptr;
    double from_s = 0;
    double until_s = 0;
  };
  // Shows [from_s, until_s] (the trace's clock) of `model`; a null model clears the panel.
  void show_range(const TimelineModel* model, double from_s, double until_s);
  // The same range of several runs (the compare view's two), their rows one after the other.
  void show_ranges(const std::vector<RangeRun>& runs);
  QTableWidget* table() const { return table_; }
  QString metrics_text() const;

 private:
  static QString window_summary(const RangeRun& run);
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace replisim::gui
