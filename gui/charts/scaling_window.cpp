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
#include "gui/charts/front_chart.h"
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
    if (looks_like_recommend_results(path)) {
      show_recommendation(read_recommend_results(path.toStdString()));
    } else {
      show_results(core::read_sweep_results(path.toStdString()));
    }
  } catch (const core::InputError& e) {
    if (error != nullptr) *error = QString::fromStdString(e.what());
    return false;
  }
  setWindowTitle("replisim scaling: " + path);
  return true;
}

namespace {

void clear_tabs(QTabWidget* tabs) {
  while (tabs->count() > 0) {
    QWidget* page = tabs->widget(0);
    tabs->removeTab(0);
    delete page;
  }
}

// A number of recommend's results with `decimals`, or `otherwise` (null: never reached).
QString number_cell(const nlohmann::json& v, int decimals, double scale = 1,
                    const QString& otherwise = "never") {
  return v.is_number() ? QString::number(scale * v.get<double>(), 'f', decimals) : otherwise;
}

// The time to the objective's target (s), "not reached", or "-" without an objective or an
// evaluation.
QString time_to_target_cell(const std::optional<core::SweepObjective>& objective) {
  if (!objective || objective->evaluations == 0) return "-";
  if (!objective->time_to_target_s) return "not reached";
  return QString::number(*objective->time_to_target_s, 'f', 3);
}

}  // namespace

void ScalingWindow::show_results(const core::SweepResults& results) {
  clear_tabs(tabs_);
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

void ScalingWindow::show_recommendation(const nlohmann::json& report) {
  clear_tabs(tabs_);
  auto* view = new QChartView(make_front_chart(report));
  view->setRenderHint(QPainter::Antialiasing);
  tabs_->addTab(view, "front");
  const nlohmann::json& points = report.at("points");
  // The chosen points first, then the front, then the rest.
  std::vector<std::pair<size_t, QString>> order;
  std::vector<bool> listed(points.size(), false);
  const auto add = [&](size_t i, const QString& choice) {
    if (listed[i]) {  // both choices name it (a chosen point is on the front: not repeated)
      for (auto& [index, text] : order) {
        if (index == i && !choice.isEmpty() && choice != "on the front") text += ", " + choice;
      }
      return;
    }
    listed[i] = true;
    order.emplace_back(i, choice);
  };
  for (const auto& [key, choice] : {std::pair<const char*, const char*>{
                                        "cheapest_meeting_target", "cheapest meeting the target"},
                                    {"fastest_within_budget", "fastest within budget"}}) {
    if (report.at(key).is_number()) add(report.at(key).get<size_t>(), choice);
  }
  for (const nlohmann::json& i : report.at("front")) add(i.get<size_t>(), "on the front");
  for (size_t i = 0; i < points.size(); ++i) add(i, "");
  const bool samples = report.at("target").at("kind") == "samples";
  const QStringList header = {"choice",
                              "configuration",
                              "pricing",
                              "$ per hour",
                              "samples/s",
                              samples ? "job time (h)" : "hours per 1M samples",
                              samples ? "job cost ($)" : "$ per 1M samples",
                              "meets target",
                              "within budget",
                              "bound by (critical path)",
                              "busiest resource"};
  table_->clear();
  table_->setColumnCount(header.size());
  table_->setHorizontalHeaderLabels(header);
  table_->setRowCount(int(order.size()));
  for (int r = 0; r < int(order.size()); ++r) {
    const nlohmann::json& p = points[order[size_t(r)].first];
    const nlohmann::json& busiest = p.at("bottleneck");
    const QStringList cells = {
        order[size_t(r)].second,
        QString::fromStdString(p.at("label").get<std::string>()),
        QString::fromStdString(p.at("pricing").get<std::string>()),
        number_cell(p.value("usd_per_hour", nlohmann::json()), 2, 1, "-"),
        number_cell(p.at("throughput_samples_per_s"), 1),
        number_cell(p.at("job_time_s"), 2, 1.0 / 3600),
        number_cell(p.at("job_cost_usd"), 0),
        p.at("meets_target").get<bool>() ? "yes" : "no",
        p.at("within_budget").get<bool>() ? "yes" : "no",
        QString::fromStdString(p.at("bound_by").at("text").get<std::string>()),
        QString::fromStdString(busiest.at("resource").get<std::string>()) + " " +
            QString::number(100 * busiest.at("utilization").get<double>(), 'f', 0) + "%"};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (!order[size_t(r)].second.isEmpty()) {
        QFont bold = item->font();
        bold.setBold(order[size_t(r)].second != "on the front");
        item->setFont(bold);
      }
      table_->setItem(r, c, item);
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
