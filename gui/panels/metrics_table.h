// Two runs' metrics side by side with their differences (B - A and B / A): throughput, step and
// update times, staleness, the bottleneck, simulated time, events.
#pragma once

#include <QTableWidget>

#include "gui/timeline_model.h"

namespace replisim::gui {

class MetricsTable : public QTableWidget {
  Q_OBJECT

 public:
  explicit MetricsTable(QWidget* parent = nullptr);
  // Either may be null (its column stays empty).
  void set_models(const TimelineModel* a, const TimelineModel* b);
};

}  // namespace replisim::gui
