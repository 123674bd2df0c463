// Qt Charts of a sweep (core/sweep/sweep_results.h): throughput and scaling efficiency against
// replicas per series with what bound the step named along each curve, and the step-time breakdown
// per point. Drawn by `replisim plot` (plot_files.h) and the viewer's scaling window alike.
#pragma once

#include <QColor>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <vector>

#include "core/sweep/sweep_results.h"

QT_BEGIN_NAMESPACE
class QChart;
QT_END_NAMESPACE

namespace replisim::gui {

// kTimeToTarget: training.objective's time to target (simulated s) per point, for sweeps whose
// scenario has an objective (sweep_has_objective).
enum class SweepChartKind { kThroughput, kEfficiency, kBreakdown, kTimeToTarget };

// The file-name part and title of each chart ("throughput", "efficiency", "breakdown",
// "time-to-target").
QString sweep_chart_name(SweepChartKind kind);

// The charts a sweep's results make: throughput, efficiency, breakdown, and time to target when
// a row has an objective.
std::vector<SweepChartKind> sweep_chart_kinds(const core::SweepResults& results);
bool sweep_has_objective(const core::SweepResults& results);

// A new chart (owned by the caller, usually a QChartView) of `results`. The x axis is `replicas`
// (labelled with the replica devices of each point) when the sweep varies it, else its first
// knob; one series per value of the other knobs (and strategy). Rows with an error are left out.
// Throughput and efficiency charts name what bound the step (the critical path's largest share,
// SweepRow::bound_by_share; a version-1 sweep: the busiest resource's kind) at the points
// curve_label_points picks (text items placed clear of each other and of the markers, again
// whenever the plot area changes). The efficiency chart leaves out rows without an efficiency
// (`replicas` not varied) and says so in its title when no row has one. A throughput
// chart with `target_samples_per_s` > 0 also draws that target as a dashed line. The time-to-target
// chart draws the rows that reached the objective's target (the others are left out, their count
// in the title), labelled as the throughput chart is.
QChart* make_sweep_chart(const core::SweepResults& results, SweepChartKind kind,
                         double target_samples_per_s = 0);

// How series `index` (0, 1, ... in legend order) is drawn: 12 colours, and dashes that differ
// between legend neighbours and between laps of the colours, so no two of the first 48 series
// look alike; from the 13th series on the markers are squares.
struct SeriesStyle {
  QColor color;
  Qt::PenStyle line = Qt::SolidLine;
  bool marker_square = false;
};
SeriesStyle sweep_series_style(size_t index);

// A bend a reader sees: the curve's direction (drawn in a square plot) turns by this much.
inline constexpr double kSlopeChangeDegrees = 15;

// Which points of a curve get a label: the first, each where what bound the step (`bounds[i]`)
// differs from the point before, and each where the curve bends (the segments before and after
// differ in direction by kSlopeChangeDegrees or more, x scaled by `x_span` and y by `y_span`
// into a unit square). `points` in x order; `bounds` the same size. Indices ascending.
std::vector<size_t> curve_label_points(const std::vector<QPointF>& points,
                                       const std::vector<std::string>& bounds, double x_span,
                                       double y_span);

// The knob along the x axis: "replicas" when varied, else the first axis ("" without axes).
std::string sweep_x_key(const core::SweepResults& results);
// The series a row belongs to: its other knobs and, when varied, its strategy ("ps=2"), or the
// scenario's name when there is no other knob.
QString sweep_series_name(const core::SweepResults& results, const core::SweepRow& row);

}  // namespace replisim::gui
