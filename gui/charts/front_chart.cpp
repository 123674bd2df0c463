#include "gui/charts/front_chart.h"

#include <QChart>
#include <QFile>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::gui {
namespace {

// A number, or null (a point that never reaches its target: an infinite time or cost).
void check_number_or_null(const core::JsonCursor& c) {
  if (!c.value().is_null()) c.as_number();
}

// A point index or null.
void check_index_or_null(const core::JsonCursor& c, size_t points) {
  if (!c.value().is_null()) c.as_int(0, int64_t(points) - 1);
}

// A point's number, NaN where it is null (never reached: read_recommend_results allows it).
double number_of(const nlohmann::json& point, const char* key) {
  const nlohmann::json& v = point.at(key);
  return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

double hours_of(const nlohmann::json& point) {
  return number_of(point, "job_time_s") / 3600;
}

double cost_of(const nlohmann::json& point) {
  return number_of(point, "job_cost_usd");
}

// A point ringed and labelled: `title` and what binds it.
void mark_point(QChart* chart, const nlohmann::json& point, const QString& title,
                const QColor& color, QAbstractAxis* x, QAbstractAxis* y) {
  auto* ring = new QScatterSeries();
  ring->setName(title);
  ring->setMarkerSize(22);
  ring->setColor(Qt::transparent);
  ring->setBorderColor(color);
  QPen pen(color);
  pen.setWidth(3);
  ring->setPen(pen);
  ring->append(hours_of(point), cost_of(point));
  chart->addSeries(ring);
  ring->attachAxis(x);
  ring->attachAxis(y);
}

}  // namespace

nlohmann::json read_recommend_results(const std::string& path) {
  nlohmann::json report = core::read_json_file(path);
  const core::JsonCursor c(report, path);
  c.expect_object();
  if (!c.has("format") || c.at("format").as_string() != "replisim-recommend") {
    throw core::InputError(path, "/format",
                           "not recommend's results (expected \"replisim-recommend\")");
  }
  if (c.at("version").as_int(0, 1000) != 1) {
    c.at("version").fail("recommend's results of another version (this replisim reads 1)");
  }
  for (const char* key : {"scenario", "catalog"}) c.at(key).as_string();
  const core::JsonCursor target = c.at("target");
  const std::string kind = target.at("kind").as_string();
  if (kind == "samples") {
    target.at("deadline_s").as_number_in(1e-9, 1e300);
  } else if (kind != "throughput") {
    target.at("kind").fail("expected \"samples\" or \"throughput\"");
  }
  check_number_or_null(c.at("budget_usd"));
  const core::JsonCursor points = c.at("points");
  points.expect_array();
  for (size_t i = 0; i < points.size(); ++i) {
    const core::JsonCursor p = points.at(i);
    for (const char* key : {"label", "instance", "pricing"}) p.at(key).as_string();
    for (const char* key : {"job_time_s", "job_cost_usd", "throughput_samples_per_s"}) {
      check_number_or_null(p.at(key));
    }
    for (const char* key : {"meets_target", "within_budget", "on_front"}) p.at(key).as_bool();
    p.at("bound_by").at("text").as_string();
    p.at("bottleneck").at("resource").as_string();
    p.at("bottleneck").at("utilization").as_number();
  }
  const core::JsonCursor front = c.at("front");
  front.expect_array();
  for (size_t i = 0; i < front.size(); ++i) front.at(i).as_int(0, int64_t(points.size()) - 1);
  check_index_or_null(c.at("cheapest_meeting_target"), points.size());
  check_index_or_null(c.at("fastest_within_budget"), points.size());
  return report;
}

bool looks_like_recommend_results(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return false;
  const QByteArray head = file.read(4096);
  return head.contains("\"format\"") && head.contains("\"replisim-recommend\"");
}

QChart* make_front_chart(const nlohmann::json& report) {
  auto* chart = new QChart();
  const bool samples = report["target"].value("kind", "") == "samples";
  const nlohmann::json& points = report["points"];
  // The title names the chosen points and what binds them (the legend has room for short names).
  QString title = QString::fromStdString("What to buy: job cost against job time — " +
                                         report.value("scenario", std::string()) + ", catalog " +
                                         report.value("catalog", std::string()));
  const auto describe = [&](const char* what, const nlohmann::json& index) {
    if (!index.is_number()) return;
    const nlohmann::json& p = points[index.get<size_t>()];
    title += QString("<br>%1: %2, %3 — bound by %4")
                 .arg(what, QString::fromStdString(p.value("label", "")),
                      QString::fromStdString(p.value("pricing", "")),
                      QString::fromStdString(p["bound_by"].value("text", "-")))
                 .toHtmlEscaped()
                 .replace("&lt;br&gt;", "<br>");
  };
  describe("cheapest meeting the target (green)", report["cheapest_meeting_target"]);
  describe("fastest within budget (red)", report["fastest_within_budget"]);
  chart->setTitle(title);
  // Log axes: the points span two orders of magnitude of time and cost, and the front sits in
  // the cheap and fast corner.
  auto* x = new QLogValueAxis();
  x->setTitleText(samples ? "job time (h, log scale)" : "hours per 1M samples (log scale)");
  x->setLabelFormat("%g");
  x->setMinorTickCount(8);
  auto* y = new QLogValueAxis();
  y->setTitleText(samples ? "job cost ($, log scale)" : "cost per 1M samples ($, log scale)");
  y->setLabelFormat("%g");
  y->setMinorTickCount(8);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double max_x = 0, max_y = 0;
  double min_x = std::numeric_limits<double>::infinity(), min_y = min_x;
  // A palette of distinct colours (Qt's theme repeats after five).
  const std::vector<QColor> palette = {
      QColor(31, 119, 180), QColor(255, 127, 14),  QColor(44, 160, 44),   QColor(148, 103, 189),
      QColor(140, 86, 75),  QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
      QColor(23, 190, 207), QColor(214, 39, 40)};
  // One scatter per instance type and pricing.
  std::map<std::string, QScatterSeries*> series;
  for (const nlohmann::json& p : points) {
    const double h = hours_of(p), cost = cost_of(p);
    if (!std::isfinite(h) || !std::isfinite(cost) || !(h > 0) || !(cost > 0)) continue;
    const std::string pricing = p.value("pricing", "");
    const std::string name = p.value("instance", "") + (pricing == "spot" ? " spot" : "");
    QScatterSeries*& s = series[name];
    if (s == nullptr) {
      s = new QScatterSeries();
      s->setName(QString::fromStdString(name));
      s->setMarkerSize(8);
      s->setColor(palette[(series.size() - 1) % palette.size()]);
      s->setBorderColor(s->color());
    }
    s->append(h, cost);
    max_x = std::max(max_x, h);
    max_y = std::max(max_y, cost);
    min_x = std::min(min_x, h);
    min_y = std::min(min_y, cost);
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
    front->append(hours_of(p), cost_of(p));
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
    deadline->append(deadline_h, std::min(min_y, max_y) * 0.5);
    deadline->append(deadline_h, max_y * 2);
    chart->addSeries(deadline);
    deadline->attachAxis(x);
    deadline->attachAxis(y);
    max_x = std::max(max_x, deadline_h);
  }
  if (report["budget_usd"].is_number() && samples) {
    const double budget = report["budget_usd"].get<double>();
    auto* line = new QLineSeries();
    line->setName(QString("budget $%1").arg(budget));
    QPen dashed(Qt::darkBlue);
    dashed.setStyle(Qt::DashLine);
    dashed.setWidth(2);
    line->setPen(dashed);
    line->append(std::min(min_x, max_x) * 0.5, budget);
    line->append(std::max(max_x, min_x) * 2, budget);
    chart->addSeries(line);
    line->attachAxis(x);
    line->attachAxis(y);
    min_y = std::min(min_y, budget);
    max_y = std::max(max_y, budget);
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
  if (!(max_x > 0)) min_x = 0.1, max_x = 1;
  if (!(max_y > 0)) min_y = 0.1, max_y = 1;
  // Whole decades around the points.
  x->setRange(std::pow(10, std::floor(std::log10(min_x))),
              std::pow(10, std::ceil(std::log10(max_x))));
  y->setRange(std::pow(10, std::floor(std::log10(min_y))),
              std::pow(10, std::ceil(std::log10(max_y))));
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

}  // namespace replisim::gui
