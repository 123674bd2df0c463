#include "gui/charts/scaling_chart.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QFont>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace replisim::gui {
namespace {

struct XPosition {
  std::string value;  // the knob's value
  QString label;      // what the axis shows
  double at = 0;      // where on the axis
};

// Places numeric labels at their value (log2 of it when each is at least 1.5 times the one before,
// as a doubling range: equal steps for equal ratios), and anything else one step apart.
void place_positions(std::vector<XPosition>& positions) {
  std::vector<double> numbers;
  for (const XPosition& p : positions) {
    bool ok = false;
    const double n = p.label.section(' ', 0, 0).toDouble(&ok);
    if (!ok || !(n > 0) || (!numbers.empty() && n <= numbers.back())) {
      numbers.clear();
      break;
    }
    numbers.push_back(n);
  }
  bool geometric = numbers.size() > 2;
  for (size_t i = 1; i < numbers.size(); ++i)
    geometric = geometric && numbers[i] >= 1.5 * numbers[i - 1];
  for (size_t i = 0; i < positions.size(); ++i) {
    positions[i].at = numbers.empty() ? double(i) : geometric ? std::log2(numbers[i]) : numbers[i];
  }
}

// The x positions: the x knob's values in the sweep's order, each labelled.
std::vector<XPosition> x_positions(const core::SweepResults& r, const std::string& key) {
  std::vector<XPosition> positions;
  for (const core::SweepAxis& a : r.axes) {
    if (a.key != key) continue;
    for (const std::string& v : a.values) positions.push_back({v, QString::fromStdString(v)});
  }
  if (positions.empty()) positions.push_back({"", "as given"});
  if (key == "replicas") {  // label with the devices the rows report
    for (XPosition& s : positions) {
      for (const core::SweepRow& row : r.rows) {
        for (const auto& [k, v] : row.knobs) {
          if (k == key && v == s.value && row.replica_devices > 0) {
            s.label = QString::number(row.replica_devices);
          }
        }
      }
    }
  }
  place_positions(positions);
  return positions;
}

double position_of(const std::vector<XPosition>& positions, const core::SweepRow& row,
                   const std::string& key) {
  for (const auto& [k, v] : row.knobs) {
    if (k != key) continue;
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i].value == v) return positions[i].at;
    }
  }
  return 0;
}

QString axis_title(const std::string& key) {
  if (key == "replicas") return "replica devices (GPUs or CPUs that compute a replica)";
  return key.empty() ? QString("the scenario") : QString::fromStdString(key);
}

QCategoryAxis* make_x_axis(const std::vector<XPosition>& positions, const std::string& key) {
  auto* axis = new QCategoryAxis;
  axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  for (const XPosition& p : positions) axis->append(p.label, p.at);
  const double span = positions.back().at - positions.front().at;
  const double pad = span > 0 ? 0.05 * span : 0.3;
  axis->setRange(positions.front().at - pad, positions.back().at + pad);
  axis->setTitleText(axis_title(key));
  return axis;
}

// The rows of each series, in x order.
std::map<QString, std::vector<const core::SweepRow*>> series_rows(const core::SweepResults& r) {
  std::map<QString, std::vector<const core::SweepRow*>> out;
  for (const core::SweepRow& row : r.rows) {
    if (row.error.empty()) out[sweep_series_name(r, row)].push_back(&row);
  }
  return out;
}

struct BottleneckLabel {
  QLineSeries* series;
  QPointF point;
  QGraphicsSimpleTextItem* item;
};

// Where a label may go around its point (its box's top-left from the point): above, below,
// beside, then further out. The first place that covers no label placed before it and no marker
// and stays in the plot area wins.
std::vector<QPointF> label_offsets(const QSizeF& box) {
  const double w = box.width(), h = box.height(), gap = 8;
  std::vector<QPointF> out = {
      {-w / 2, -h - gap}, {-w / 2, gap},   {gap, -h - gap},   {-w - gap, -h - gap},
      {gap, gap},         {-w - gap, gap}, {gap + 2, -h / 2}, {-w - gap - 2, -h / 2}};
  for (int ring = 1; ring <= 6; ++ring) {
    const double dy = ring * (h + 2);
    for (const QPointF& base :
         {QPointF(-w / 2, -h - gap - dy), QPointF(-w / 2, gap + dy), QPointF(gap, -h - gap - dy),
          QPointF(-w - gap, -h - gap - dy), QPointF(gap, gap + dy), QPointF(-w - gap, gap + dy)}) {
      out.push_back(base);
    }
  }
  return out;
}

// Places each label near its point without covering another label or a marker: run again
// whenever the plot area changes. A label with no free place keeps the first one in the plot area.
void place_labels(QChart* chart, const std::vector<BottleneckLabel>& labels) {
  const QRectF area = chart->plotArea();
  std::vector<QRectF> taken;
  for (QAbstractSeries* s : chart->series()) {  // every marker (9 px)
    if (auto* dots = qobject_cast<QScatterSeries*>(s)) {
      for (const QPointF& p : dots->points()) {
        const QPointF at = chart->mapToPosition(p, dots);
        taken.emplace_back(at.x() - 5, at.y() - 5, 10, 10);
      }
    }
  }
  for (const BottleneckLabel& l : labels) {
    const QPointF at = chart->mapToPosition(l.point, l.series);
    const QSizeF box = l.item->boundingRect().size();
    const std::vector<QPointF> offsets = label_offsets(box);
    std::optional<QRectF> chosen, inside;
    for (const QPointF& offset : offsets) {
      const QRectF rect(at + offset, box);
      if (!area.contains(rect)) continue;
      if (!inside) inside = rect;
      if (std::none_of(taken.begin(), taken.end(),
                       [&rect](const QRectF& t) { return rect.intersects(t); })) {
        chosen = rect;
        break;
      }
    }
    const QRectF rect = chosen ? *chosen : inside ? *inside : QRectF(at + offsets.front(), box);
    l.item->setPos(rect.topLeft());
    taken.push_back(rect);
  }
}

// Text items naming what bound the step over points (`labels`: the series, the point, the
// name), kept in place as the chart is resized.
void add_bottleneck_labels(QChart* chart,
                           const std::vector<std::tuple<QLineSeries*, QPointF, QString>>& labels) {
  auto items = std::make_shared<std::vector<BottleneckLabel>>();
  for (const auto& [series, point, text] : labels) {
    auto* item = new QGraphicsSimpleTextItem(text, chart);
    QFont font = item->font();
    font.setPointSizeF(font.pointSizeF() * 0.95);
    font.setBold(true);
    item->setFont(font);
    item->setBrush(series->pen().color().darker(120));
    item->setZValue(20);
    // A light backing keeps the text readable where a curve runs under it.
    auto* backing = new QGraphicsRectItem(item->boundingRect().adjusted(-2, -1, 2, 1), item);
    backing->setBrush(QColor(255, 255, 255, 215));
    backing->setPen(Qt::NoPen);
    backing->setFlag(QGraphicsItem::ItemStacksBehindParent);
    items->push_back({series, point, item});
  }
  QObject::connect(chart, &QChart::plotAreaChanged, chart,
                   [chart, items]() { place_labels(chart, *items); });
  place_labels(chart, *items);
}

// What bound the step at a row: the critical path's largest share, as simulate says; a sweep
// written before that was kept (version 1) names its busiest resource's kind.
std::string bound_name(const core::SweepRow& row) {
  return row.bound_by_share.empty() ? row.bottleneck_kind : row.bound_by_share;
}

double chart_value(const core::SweepRow& row, SweepChartKind kind) {
  if (kind == SweepChartKind::kTimeToTarget) {
    return row.objective ? row.objective->time_to_target_s.value_or(0) : 0;
  }
  return kind == SweepChartKind::kThroughput ? row.throughput_samples_per_s
                                             : 100 * row.scaling_efficiency.value_or(0);
}

// Whether a row is drawn: no error, for the efficiency chart an efficiency, and for the time to
// target a target reached.
bool charted(const core::SweepRow& row, SweepChartKind kind) {
  if (!row.error.empty()) return false;
  if (kind == SweepChartKind::kEfficiency) return row.scaling_efficiency.has_value();
  if (kind == SweepChartKind::kTimeToTarget) {
    return row.objective && row.objective->time_to_target_s.has_value();
  }
  return true;
}

// The time-to-target chart's axis and title: "time to test accuracy >= 0.8", and how many points
// did not reach it.
void title_time_to_target(const core::SweepResults& r, QChart* chart, QValueAxis* y, double y_max) {
  QString target = "the target";
  int missed = 0;
  for (const core::SweepRow& row : r.rows) {
    if (!row.error.empty() || !row.objective) continue;
    const core::SweepObjective& o = *row.objective;
    target = QString("test %1 %2 %3")
                 .arg(QString::fromStdString(o.target), o.target == "accuracy" ? ">=" : "<=")
                 .arg(o.target_value);
    if (!o.time_to_target_s) ++missed;
  }
  y->setRange(0, y_max * 1.12 + 1e-9);
  y->applyNiceNumbers();
  y->setLabelFormat("%.3g");
  y->setTitleText("time to " + target + " (simulated s)");
  QString title = QString::fromStdString(r.scenario_name) + ": time to " + target;
  if (missed > 0) title += QString(" (%1 point(s) did not reach it: left out)").arg(missed);
  chart->setTitle(title);
}

QChart* line_chart(const core::SweepResults& r, SweepChartKind kind, double target) {
  auto* chart = new QChart;
  const std::string key = sweep_x_key(r);
  const std::vector<XPosition> positions = x_positions(r, key);
  QCategoryAxis* x = make_x_axis(positions, key);
  auto* y = new QValueAxis;
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double y_max = 0;
  bool any = false;
  for (const core::SweepRow& row : r.rows) {
    if (!charted(row, kind)) continue;
    y_max = std::max(y_max, chart_value(row, kind));
    any = true;
  }
  const double x_span = std::max(1e-9, positions.back().at - positions.front().at);
  // Every series' labels; series that share a point and a binding share show it once.
  std::vector<std::tuple<QLineSeries*, QPointF, QString>> labels;
  size_t index = 0;
  for (const auto& [name, all_rows] : series_rows(r)) {
    std::vector<const core::SweepRow*> rows;
    for (const core::SweepRow* row : all_rows) {
      if (charted(*row, kind)) rows.push_back(row);
    }
    // A series keeps its look in every chart, even where another has no points to draw.
    const SeriesStyle style = sweep_series_style(index++);
    if (rows.empty()) continue;
    auto* line = new QLineSeries;
    line->setName(name);
    line->setPen(QPen(style.color, 2.5, style.line));
    auto* dots = new QScatterSeries;
    dots->setMarkerSize(9);
    dots->setMarkerShape(style.marker_square ? QScatterSeries::MarkerShapeRectangle
                                             : QScatterSeries::MarkerShapeCircle);
    dots->setColor(style.color);
    dots->setBorderColor(style.color);
    std::vector<QPointF> points;
    std::vector<std::string> bounds;
    for (const core::SweepRow* row : rows) {
      points.emplace_back(position_of(positions, *row, key), chart_value(*row, kind));
      bounds.push_back(bound_name(*row));
      line->append(points.back());
      dots->append(points.back());
    }
    for (size_t i : curve_label_points(points, bounds, x_span, std::max(y_max, 1e-9))) {
      const QPointF& p = points[i];
      const QString text = QString::fromStdString(bounds[i]);
      const bool shown = std::any_of(labels.begin(), labels.end(), [&](const auto& l) {
        return std::get<2>(l) == text && std::get<1>(l).x() == p.x() &&
               std::abs(std::get<1>(l).y() - p.y()) < 0.02 * y_max;
      });
      if (!shown) labels.emplace_back(line, p, text);
    }
    chart->addSeries(line);
    chart->addSeries(dots);
    for (QAbstractSeries* s :
         {static_cast<QAbstractSeries*>(line), static_cast<QAbstractSeries*>(dots)}) {
      s->attachAxis(x);
      s->attachAxis(y);
    }
    chart->legend()->markers(dots).front()->setVisible(false);
  }
  if (kind == SweepChartKind::kThroughput && target > 0) {
    auto* goal = new QLineSeries;
    goal->setName(QString("target: %1 samples/s").arg(target));
    goal->setPen(QPen(QColor(200, 0, 0), 2, Qt::DashLine));
    goal->append(x->min(), target);
    goal->append(x->max(), target);
    chart->addSeries(goal);
    goal->attachAxis(x);
    goal->attachAxis(y);
    y_max = std::max(y_max, target);
  }
  const QString labelled = " (labels: what bound the step, where it or the slope changes)";
  if (kind == SweepChartKind::kTimeToTarget) {
    title_time_to_target(r, chart, y, y_max);
  } else if (kind == SweepChartKind::kThroughput) {
    y->setRange(0, y_max * 1.12 + 1e-9);
    y->setTitleText("throughput (samples/s)");
    chart->setTitle(QString::fromStdString(r.scenario_name) + ": throughput" + labelled);
  } else {
    y->setRange(0, std::max(110.0, 10 * std::ceil(y_max * 1.05 / 10)));
    y->setTickCount(int(y->max() / 10) + 1);
    y->setTitleText("scaling efficiency (% of linear from the smallest point)");
    chart->setTitle(QString::fromStdString(r.scenario_name) +
                    (any ? ": scaling efficiency" + labelled
                         : QString(": no scaling efficiency (the sweep does not vary replicas)")));
  }
  if (kind == SweepChartKind::kThroughput) y->applyNiceNumbers();
  if (kind != SweepChartKind::kTimeToTarget) y->setLabelFormat("%.0f");
  add_bottleneck_labels(chart, labels);
  return chart;
}

QChart* breakdown_chart(const core::SweepResults& r) {
  auto* chart = new QChart;
  auto* compute = new QBarSet("compute");
  auto* network = new QBarSet("network");
  auto* waiting = new QBarSet("waiting (peers, PS, token, idle)");
  compute->setColor(QColor(0x2e, 0x7d, 0x32));
  network->setColor(QColor(0x15, 0x65, 0xc0));
  waiting->setColor(QColor(0xbd, 0xbd, 0xbd));
  QStringList categories;
  for (const core::SweepRow& row : r.rows) {
    if (!row.error.empty()) continue;
    QStringList values;  // the knobs' values only: the axis title names the knobs
    for (const auto& kv : row.knobs) values << QString::fromStdString(kv.second);
    categories << (values.isEmpty() ? QString("as given") : values.join("/"));
    const double step_ms = 1000 * row.step_time_mean_s;
    *compute << row.compute_share * step_ms;
    *network << row.network_share * step_ms;
    *waiting << row.waiting_share * step_ms;
  }
  auto* bars = new QStackedBarSeries;
  bars->append({compute, network, waiting});
  chart->addSeries(bars);
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  x->setLabelsAngle(categories.size() > 8 ? -90 : 0);
  QStringList keys;
  for (const core::SweepAxis& a : r.axes) keys << QString::fromStdString(a.key);
  x->setTitleText(keys.isEmpty() ? QString("the scenario") : "point (" + keys.join("/") + ")");
  auto* y = new QValueAxis;
  y->setTitleText("mean step time of a replica (ms)");
  double most = 0;
  for (int i = 0; i < compute->count(); ++i) {
    most = std::max(most, compute->at(i) + network->at(i) + waiting->at(i));
  }
  y->setRange(0, most * 1.05 + 1e-9);
  y->applyNiceNumbers();
  y->setLabelFormat("%.0f");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  bars->attachAxis(x);
  bars->attachAxis(y);
  chart->setTitle(QString::fromStdString(r.scenario_name) +
                  ": where a replica's step goes (compute, network, waiting)");
  return chart;
}

}  // namespace

QString sweep_chart_name(SweepChartKind kind) {
  switch (kind) {
    case SweepChartKind::kThroughput:
      return "throughput";
    case SweepChartKind::kEfficiency:
      return "efficiency";
    case SweepChartKind::kBreakdown:
      return "breakdown";
    case SweepChartKind::kTimeToTarget:
      return "time-to-target";
  }
  return "chart";
}

bool sweep_has_objective(const core::SweepResults& results) {
  return std::any_of(results.rows.begin(), results.rows.end(),
                     [](const core::SweepRow& row) { return row.objective.has_value(); });
}

std::vector<SweepChartKind> sweep_chart_kinds(const core::SweepResults& results) {
  std::vector<SweepChartKind> kinds = {SweepChartKind::kThroughput, SweepChartKind::kEfficiency,
                                       SweepChartKind::kBreakdown};
  if (sweep_has_objective(results)) kinds.push_back(SweepChartKind::kTimeToTarget);
  return kinds;
}

SeriesStyle sweep_series_style(size_t index) {
  // Okabe and Ito's colour-blind-safe palette (Color Universal Design, 2008) without its yellow,
  // then Paul Tol's "muted" indigo, wine and olive (Tol, "Colour schemes", SRON/EPS/TN/09-002)
  // and a brown and a grey apart from all of them: 12 hues.
  static const QColor palette[] = {
      QColor(0, 114, 178),  QColor(213, 94, 0),   QColor(0, 158, 115), QColor(204, 121, 167),
      QColor(86, 180, 233), QColor(230, 159, 0),  QColor(0, 0, 0),     QColor(51, 34, 136),
      QColor(136, 34, 85),  QColor(153, 153, 51), QColor(102, 17, 0),  QColor(136, 136, 136)};
  static const Qt::PenStyle lines[] = {Qt::SolidLine, Qt::DashLine, Qt::DashDotLine, Qt::DotLine};
  constexpr size_t kColors = sizeof palette / sizeof palette[0];
  SeriesStyle style;
  style.color = palette[index % kColors];
  // Neighbours in the legend differ in dash too; each lap of the palette shifts the dashes, so
  // (colour, dash) repeats only after 48 series.
  style.line = lines[(index % 3 + index / kColors) % 4];
  style.marker_square = (index / kColors) % 2 == 1;
  return style;
}

std::vector<size_t> curve_label_points(const std::vector<QPointF>& points,
                                       const std::vector<std::string>& bounds, double x_span,
                                       double y_span) {
  // The segments' directions in a unit square (x over x_span, y over y_span), in degrees.
  std::vector<double> angle;
  for (size_t i = 1; i < points.size(); ++i) {
    const double dx = (points[i].x() - points[i - 1].x()) / x_span;
    const double dy = (points[i].y() - points[i - 1].y()) / y_span;
    angle.push_back(std::atan2(dy, dx) * 180 / M_PI);
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < points.size(); ++i) {
    const bool bound_changes = i > 0 && bounds[i] != bounds[i - 1];
    const bool bends =
        i > 0 && i + 1 < points.size() && std::abs(angle[i] - angle[i - 1]) >= kSlopeChangeDegrees;
    if (i == 0 || bound_changes || bends) out.push_back(i);
  }
  return out;
}

std::string sweep_x_key(const core::SweepResults& r) {
  for (const core::SweepAxis& a : r.axes) {
    if (a.key == "replicas") return a.key;
  }
  return r.axes.empty() ? "" : r.axes.front().key;
}

QString sweep_series_name(const core::SweepResults& r, const core::SweepRow& row) {
  const std::string x = sweep_x_key(r);
  QString name;
  for (const auto& [k, v] : row.knobs) {
    if (k == x) continue;
    name += (name.isEmpty() ? "" : ", ") + QString::fromStdString(k + "=" + v);
  }
  return name.isEmpty() ? QString::fromStdString(row.strategy) : name;
}

QChart* make_sweep_chart(const core::SweepResults& results, SweepChartKind kind,
                         double target_samples_per_s) {
  QChart* chart = kind == SweepChartKind::kBreakdown
                      ? breakdown_chart(results)
                      : line_chart(results, kind, target_samples_per_s);
  QFont title = chart->titleFont();
  title.setPointSizeF(13);
  title.setBold(true);
  chart->setTitleFont(title);
  chart->legend()->setAlignment(Qt::AlignRight);
  // Line series' markers drawn with their pens (a short stroke: the colour shows there, the
  // dashes on the curves).
  if (kind != SweepChartKind::kBreakdown) {
    chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
  }
  chart->setAnimationOptions(QChart::NoAnimation);
  return chart;
}

}  // namespace replisim::gui
