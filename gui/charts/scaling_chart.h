// Qt Charts of a sweep (core/sweep/sweep_results.h): throughput and scaling efficiency against
// replicas per series with what bound the step named along each curve, and the step-time breakdown
// per point. Drawn by `replisim plot` (plot_files.h) and the viewer's scaling window alike.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "core/sweep/sweep_results.h"

QT_BEGIN_NAMESPACE
class QChart;
QT_END_NAMESPACE

namespace replisim::gui {

enum class SweepChartKind { kThroughput, kEfficiency, kBreakdown };

// The file-name part and title of each chart ("throughput", "efficiency", "breakdown").
QString sweep_chart_name(SweepChartKind kind);

// A new chart (owned by the caller, usually a QChartView) of `results`. The x axis is `replicas`
// (labelled with the replica devices of each point) when the sweep varies it, else its first
// knob; one series per value of the other knobs (and strategy). Rows with an error are left out.
// Throughput and efficiency charts name what bound the step (the critical path's largest share,
// SweepRow::bound_by_share; a version-1 sweep: the busiest resource's kind) over each point where
// it changes along a series (text items placed again whenever the plot area changes). A throughput
// chart with `target_samples_per_s` > 0 also draws that target as a dashed line.
QChart* make_sweep_chart(const core::SweepResults& results, SweepChartKind kind,
                         double target_samples_per_s = 0);

// The knob along the x axis: "replicas" when varied, else the first axis ("" without axes).
std::string sweep_x_key(const core::SweepResults& results);
// The series a row belongs to: its other knobs and, when varied, its strategy ("ps=2"), or the
// scenario's name when there is no other knob.
QString sweep_series_name(const core::SweepResults& results, const core::SweepRow& row);

}  // namespace replisim::gui
