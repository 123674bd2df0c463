// The viewer's scaling chart: a sweep's results (sweep --json, merge --json) as the three charts
// `replisim plot` draws (scaling_chart.h), one tab each, with the table of points below.
#pragma once

#include <QWidget>

#include "core/sweep/sweep_results.h"

QT_BEGIN_NAMESPACE
class QTabWidget;
class QTableWidget;
QT_END_NAMESPACE

namespace replisim::gui {

class ScalingWindow : public QWidget {
  Q_OBJECT

 public:
  explicit ScalingWindow(QWidget* parent = nullptr);

  // Reads `path` and shows it; false (the window unchanged) with `error` set to the one-line
  // reason when the file is not a sweep's results.
  bool open(const QString& path, QString* error);
  void show_results(const core::SweepResults& results);

  QTabWidget* tabs() const { return tabs_; }
  QTableWidget* table() const { return table_; }

 private:
  QTabWidget* tabs_;
  QTableWidget* table_;
};

// Whether `path` holds a sweep's results ("format": "replisim-sweep"), read cheaply (its first
// kilobytes), so the viewer can tell them from traces and scenarios.
bool looks_like_sweep_results(const QString& path);

}  // namespace replisim::gui
