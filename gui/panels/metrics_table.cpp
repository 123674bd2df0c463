#include "gui/panels/metrics_table.h"

#include <QHeaderView>
#include <algorithm>
#include <cmath>
#include <functional>

#include "core/base/units.h"
#include "core/metrics/critical_path.h"

namespace replisim::gui {

MetricsTable::MetricsTable(QWidget* parent) : QTableWidget(0, 5, parent) {
  setHorizontalHeaderLabels({"metric", "A", "B", "B − A", "B / A"});
  verticalHeader()->hide();
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setStretchLastSection(true);
}

namespace {

struct Figure {
  QString name;
  core::Dimension dimension;
  bool plain;  // a bare number (no unit)
  std::function<double(const core::RunMetrics&)> get;
};

const std::vector<Figure>& figures() {
  static const std::vector<Figure> list = {
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
  return list;
}

QString shown(const Figure& f, double v) {
  return f.plain ? QString::number(v, 'g', 6)
                 : QString::fromStdString(core::format_quantity(v, f.dimension));
}

QString difference(const Figure& f, double a, double b) {
  return (b - a >= 0 ? "+" : "") + shown(f, b - a);
}

}  // namespace

void MetricsTable::set_models(const TimelineModel* a, const TimelineModel* b) {
  const core::RunMetrics* ma = a ? a->metrics() : nullptr;
  const core::RunMetrics* mb = b ? b->metrics() : nullptr;
  clear();
  setColumnCount(5);
  setHorizontalHeaderLabels({"metric", "A", "B", "B − A", "B / A"});
  setRowCount(int(figures().size()) + 3);
  auto cell = [this](int r, int c, const QString& text) {
    setItem(r, c, new QTableWidgetItem(text));
  };
  int r = 0;
  auto title = [](const TimelineModel* model) {  // "tiny\nbetween_graph (async)": narrower
    return model ? QString::fromStdString(model->title()).replace(" · ", "\n") : QString("-");
  };
  cell(r, 0, "run");
  cell(r, 1, title(a));
  cell(r, 2, title(b));
  ++r;
  for (const Figure& f : figures()) {
    cell(r, 0, f.name);
    cell(r, 1, ma ? shown(f, f.get(*ma)) : "-");
    cell(r, 2, mb ? shown(f, f.get(*mb)) : "-");
    if (ma && mb) {
      const double va = f.get(*ma), vb = f.get(*mb);
      cell(r, 3, difference(f, va, vb));
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
  resizeRowToContents(0);
}

void MetricsTable::set_before_after(const ModelList& before, const ModelList& after) {
  clear();
  const size_t pairs = std::min(before.size(), after.size());
  setColumnCount(int(1 + 3 * pairs));
  setRowCount(int(figures().size()) + 2);
  QStringList headers{"metric"};
  auto cell = [this](int r, int c, const QString& text) {
    setItem(r, c, new QTableWidgetItem(text));
  };
  for (size_t i = 0; i < pairs; ++i) {
    const QString strategy = QString::fromStdString(after[i]->trace().meta.strategy);
    headers << strategy + "\nA: before" << strategy + "\nB: after" << strategy + "\nB − A";
    const core::RunMetrics* ma = before[i]->metrics();
    const core::RunMetrics* mb = after[i]->metrics();
    const int c = int(1 + 3 * i);
    int r = 0;
    for (const Figure& f : figures()) {
      cell(r, 0, f.name);
      cell(r, c, ma ? shown(f, f.get(*ma)) : "-");
      cell(r, c + 1, mb ? shown(f, f.get(*mb)) : "-");
      if (ma && mb) cell(r, c + 2, difference(f, f.get(*ma), f.get(*mb)));
      ++r;
    }
    cell(r, 0, "bound by (critical path)");
    auto bound = [](const core::RunMetrics* m) {  // its largest share (the report's first)
      return m && !m->bound_by.shares.empty()
                 ? QString::fromStdString(core::describe_path(m->bound_by, 1, false))
                 : QString("-");
    };
    cell(r, c, bound(ma));
    cell(r, c + 1, bound(mb));
    ++r;
    cell(r, 0, "bottleneck");
    cell(r, c, ma ? QString::fromStdString(ma->bottleneck.name) : "-");
    cell(r, c + 1, mb ? QString::fromStdString(mb->bottleneck.name) : "-");
  }
  setHorizontalHeaderLabels(headers);
}

}  // namespace replisim::gui
