#include "gui/panels/metrics_table.h"

#include <QHeaderView>
#include <cmath>
#include <functional>

#include "core/base/units.h"

namespace replisim::gui {

MetricsTable::MetricsTable(QWidget* parent) : QTableWidget(0, 5, parent) {
  setHorizontalHeaderLabels({"metric", "A", "B", "B − A", "B / A"});
  verticalHeader()->hide();
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setStretchLastSection(true);
}

void MetricsTable::set_models(const TimelineModel* a, const TimelineModel* b) {
  const core::RunMetrics* ma = a ? a->metrics() : nullptr;
  const core::RunMetrics* mb = b ? b->metrics() : nullptr;
  struct Figure {
    QString name;
    core::Dimension dimension;
    bool plain;  // a bare number (no unit)
    std::function<double(const core::RunMetrics&)> get;
  };
  const std::vector<Figure> figures = {
      {"throughput (samples/s)", core::Dimension::kTime, true,
       [](auto& m) { return m.throughput_samples_per_s; }},
      {"step time, mean", core::Dimension::kTime, false,
       [](auto& m) { return m.step_time_s.mean; }},
      {"step time, p95", core::Dimension::kTime, false, [](auto& m) { return m.step_time_s.p95; }},
      {"update interval", core::Dimension::kTime, false,
       [](auto& m) { return m.update_interval_s; }},
      {"updates in window", core::Dimension::kTime, true,
       [](auto& m) { return double(m.updates_in_window); }},
      {"staleness, mean", core::Dimension::kTime, true, [](auto& m) { return m.staleness_mean; }},
      {"bottleneck utilisation (%)", core::Dimension::kTime, true,
       [](auto& m) { return 100 * m.bottleneck.utilization; }},
      {"simulated time", core::Dimension::kTime, false, [](auto& m) { return m.simulated_time_s; }},
      {"events", core::Dimension::kTime, true, [](auto& m) { return double(m.events); }},
  };
  setRowCount(int(figures.size()) + 3);
  auto cell = [this](int r, int c, const QString& text) {
    setItem(r, c, new QTableWidgetItem(text));
  };
  auto show = [](const Figure& f, double v) {
    return f.plain ? QString::number(v, 'g', 6)
                   : QString::fromStdString(core::format_quantity(v, f.dimension));
  };
  int r = 0;
  cell(r, 0, "run");
  cell(r, 1, a ? QString::fromStdString(a->title()) : "-");
  cell(r, 2, b ? QString::fromStdString(b->title()) : "-");
  ++r;
  for (const Figure& f : figures) {
    cell(r, 0, f.name);
    cell(r, 1, ma ? show(f, f.get(*ma)) : "-");
    cell(r, 2, mb ? show(f, f.get(*mb)) : "-");
    if (ma && mb) {
      const double va = f.get(*ma), vb = f.get(*mb);
      cell(r, 3, (vb - va >= 0 ? "+" : "") + show(f, vb - va));
      cell(r, 4, va != 0 ? QString::number(vb / va, 'f', 3) : "-");
    }
    ++r;
  }
  cell(r, 0, "bottleneck");
  cell(r, 1, ma ? QString::fromStdString(ma->bottleneck.name) : "-");
  cell(r, 2, mb ? QString::fromStdString(mb->bottleneck.name) : "-");
  ++r;
  cell(r, 0, "metrics");
  cell(r, 1, a && !ma ? QString::fromStdString(a->metrics_error()) : "ok");
  cell(r, 2, b && !mb ? QString::fromStdString(b->metrics_error()) : "ok");
}

}  // namespace replisim::gui
