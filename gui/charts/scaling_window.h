// The viewer's scaling chart: a sweep's results (sweep --json, merge --json) as the three charts
// `replisim plot` draws (scaling_chart.h), one tab each, with the table of points below; or
// recommend's results (recommend --json) as its cost-time chart with the Pareto front and the
// chosen points (front_chart.h), with the table of priced points below, the chosen ones first.
#pragma once

#include <QWidget>
#include <nlohmann/json.hpp>

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

  // Reads `path` (a sweep's or recommend's results) and shows it; false (the window unchanged)
  // with `error` set to the one-line reason when the file is neither.
  bool open(const QString& path, QString* error);
  void show_results(const core::SweepResults& results);
  // recommend's results as read_recommend_results checked them: the "front" tab, and a row per
  // priced point: the cheapest meeting the target and the fastest within budget first (named in
  // the "choice" column), then the front's other points, then the rest in the file's order.
  void show_recommendation(const nlohmann::json& report);

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
