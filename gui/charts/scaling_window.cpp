#include "gui/charts/scaling_window.h"

#include <QChart>
#include <QChartView>
#include <QFile>
#include <QHeaderView>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/base/error.h"
#include "gui/charts/scaling_chart.h"

namespace replisim::gui {

ScalingWindow::ScalingWindow(QWidget* parent)
    : QWidget(parent), tabs_(new QTabWidget), table_(new QTableWidget) {
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(tabs_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);
  resize(1300, 900);
}

bool ScalingWindow::open(const QString& path, QString* error) {
  try {
    show_results(core::read_sweep_results(path.toStdString()));
  } catch (const core::InputError& e) {
    if (error != nullptr) *error = QString::fromStdString(e.what());
    return false;
  }
  setWindowTitle("replisim scaling: " + path);
  return true;
}

namespace {

// The time to the objective's target (s), "not reached", or "-" without an objective or an
// evaluation.
QString time_to_target_cell(const std::optional<core::SweepObjective>& objective) {
  if (!objective || objective->evaluations == 0) return "-";
  if (!objective->time_to_target_s) return "not reached";
  return QString::number(*objective->time_to_target_s, 'f', 3);
}

}  // namespace

void ScalingWindow::show_results(const core::SweepResults& results) {
  while (tabs_->count() > 0) {
    QWidget* page = tabs_->widget(0);
    tabs_->removeTab(0);
    delete page;
  }
  for (SweepChartKind kind : sweep_chart_kinds(results)) {
    auto* view = new QChartView(make_sweep_chart(results, kind));
    view->setRenderHint(QPainter::Antialiasing);
    tabs_->addTab(view, sweep_chart_name(kind));
  }
  QStringList header;
  for (const core::SweepAxis& a : results.axes) header << QString::fromStdString(a.key);
  header << "devices"
         << "samples/s"
         << "step p50 (ms)"
         << "efficiency"
         << "bound by (critical path)"
         << "busiest resource";
  const bool objective = sweep_has_objective(results);
  if (objective) header << "to target (s)";
  table_->clear();
  table_->setColumnCount(header.size());
  table_->setHorizontalHeaderLabels(header);
  table_->setRowCount(int(results.rows.size()));
  for (int r = 0; r < int(results.rows.size()); ++r) {
    const core::SweepRow& row = results.rows[size_t(r)];
    QStringList cells;
    for (const auto& kv : row.knobs) cells << QString::fromStdString(kv.second);
    cells << QString::number(row.replica_devices);
    if (row.error.empty()) {
      cells << QString::number(row.throughput_samples_per_s, 'f', 1)
            << QString::number(1000 * row.step_time_p50_s, 'f', 2)
            << (row.scaling_efficiency
                    ? QString::number(100 * *row.scaling_efficiency, 'f', 0) + "%"
                    : QString("-"))
            << QString::fromStdString(row.bound_by.empty() ? "-" : row.bound_by)
            << QString::fromStdString(row.bottleneck + " (" + row.bottleneck_kind + ") ") +
                   QString::number(100 * row.bottleneck_utilization, 'f', 0) + "%";
      if (objective) cells << time_to_target_cell(row.objective);
    } else {
      cells << "failed: " + QString::fromStdString(row.error);
    }
    for (int c = 0; c < cells.size() && c < header.size(); ++c) {
      table_->setItem(r, c, new QTableWidgetItem(cells[c]));
    }
  }
  table_->resizeColumnsToContents();
}

bool looks_like_sweep_results(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return false;
  const QByteArray head = file.read(4096);
  return head.contains("\"format\"") && head.contains("\"replisim-sweep\"");
}

}  // namespace replisim::gui
