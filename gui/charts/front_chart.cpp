#include "gui/charts/front_chart.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace replisim::gui {
namespace {

double hours_of(const nlohmann::json& point) {
  return point.value("job_time_s", 0.0) / 3600;
}

// A point ringed and labelled: `title` and what binds it.
void mark_point(QChart* chart, const nlohmann::json& point, const QString& title,
                const QColor& color, QValueAxis* x, QValueAxis* y) {
  auto* ring = new QScatterSeries();
  ring->setName(title + ": " + QString::fromStdString(point.value("label", "")) + ", " +
                QString::fromStdString(point.value("pricing", "")) + " — bound by " +
                QString::fromStdString(point["bound_by"].value("text", "-")));
  ring->setMarkerSize(22);
  ring->setColor(Qt::transparent);
  ring->setBorderColor(color);
  QPen pen(color);
  pen.setWidth(3);
  ring->setPen(pen);
  ring->append(hours_of(point), point.value("job_cost_usd", 0.0));
  chart->addSeries(ring);
  ring->attachAxis(x);
  ring->attachAxis(y);
}

}  // namespace

QChart* make_front_chart(const nlohmann::json& report) {
  auto* chart = new QChart();
  const bool samples = report["target"].value("kind", "") == "samples";
  chart->setTitle(QString::fromStdString("What to buy: job cost against job time — " +
                                         report.value("scenario", std::string()) + ", catalog " +
                                         report.value("catalog", std::string())));
  const nlohmann::json& points = report["points"];
  auto* x = new QValueAxis();
  x->setTitleText(samples ? "job time (h)" : "hours per 1M samples");
  auto* y = new QValueAxis();
  y->setTitleText(samples ? "job cost ($)" : "cost per 1M samples ($)");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double max_x = 0, max_y = 0;
  // One scatter per instance type and pricing.
  std::map<std::string, QScatterSeries*> series;
  for (const nlohmann::json& p : points) {
    const double h = hours_of(p), cost = p.value("job_cost_usd", 0.0);
    if (!std::isfinite(h) || !std::isfinite(cost)) continue;
    const std::string name = p.value("instance", "") + " " + p.value("pricing", "");
    QScatterSeries*& s = series[name];
    if (s == nullptr) {
      s = new QScatterSeries();
      s->setName(QString::fromStdString(name));
      s->setMarkerSize(8);
    }
    s->append(h, cost);
    max_x = std::max(max_x, h);
    max_y = std::max(max_y, cost);
  }
  for (auto& [name, s] : series) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  auto* front = new QLineSeries();
  front->setName("Pareto front");
  QPen pen(Qt::black);
  pen.setWidth(2);
  front->setPen(pen);
  for (const nlohmann::json& i : report["front"]) {
    const nlohmann::json& p = points[i.get<size_t>()];
    front->append(hours_of(p), p.value("job_cost_usd", 0.0));
  }
  chart->addSeries(front);
  front->attachAxis(x);
  front->attachAxis(y);
  if (samples) {
    const double deadline_h = report["target"].value("deadline_s", 0.0) / 3600;
    auto* deadline = new QLineSeries();
    deadline->setName(QString("deadline %1 h").arg(deadline_h));
    QPen dashed(Qt::darkRed);
    dashed.setStyle(Qt::DashLine);
    dashed.setWidth(2);
    deadline->setPen(dashed);
    deadline->append(deadline_h, 0);
    deadline->append(deadline_h, max_y * 1.1);
    chart->addSeries(deadline);
    deadline->attachAxis(x);
    deadline->attachAxis(y);
    max_x = std::max(max_x, deadline_h);
  }
  const nlohmann::json& cheapest = report["cheapest_meeting_target"];
  if (cheapest.is_number()) {
    mark_point(chart, points[cheapest.get<size_t>()], "cheapest meeting the target",
               QColor(0, 150, 0), x, y);
  }
  const nlohmann::json& fastest = report["fastest_within_budget"];
  if (fastest.is_number()) {
    mark_point(chart, points[fastest.get<size_t>()], "fastest within budget", QColor(200, 0, 0), x,
               y);
  }
  x->setRange(0, max_x > 0 ? max_x * 1.05 : 1);
  y->setRange(0, max_y > 0 ? max_y * 1.1 : 1);
  chart->legend()->setAlignment(Qt::AlignRight);
  return chart;
}

}  // namespace replisim::gui
