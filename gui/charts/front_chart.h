// The cost-time chart of `replisim recommend`'s results (its --json, "replisim-recommend"): every
// simulated and priced point, the Pareto front joined by a line, and the chosen points marked.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

class QChart;
class QString;

namespace replisim::gui {

// Reads a `replisim recommend --json` file and checks what the chart and the viewer's table read
// of it: "format" "replisim-recommend", version 1; "target" {"kind": "samples" (with
// "deadline_s" > 0) | "throughput"}; "points" an array of objects, each with "label", "instance"
// and "pricing" strings, "job_time_s", "job_cost_usd" and "throughput_samples_per_s" numbers (or
// null: never reached), "meets_target", "within_budget" and "on_front" booleans, "bound_by"
// {"text"} and "bottleneck" {"resource", "utilization"}; "front" an array of point indices;
// "cheapest_meeting_target" and "fastest_within_budget" a point index or null; "budget_usd" a
// number or null. Throws core::InputError naming `path` and the JSON path of what is wrong.
nlohmann::json read_recommend_results(const std::string& path);

// Whether `path` holds recommend's results ("format": "replisim-recommend"), read cheaply (its
// first kilobytes), so the viewer can tell them from sweeps, traces and scenarios.
bool looks_like_recommend_results(const QString& path);

// A new chart (the caller owns it): x the job's time in hours (for a throughput target, the hours
// per million samples), y its cost in dollars; one scatter per instance type and pricing, the
// front as a line, the cheapest point meeting the target and the fastest within budget ringed and
// labelled with their configuration and what binds them. `report` is the recommend JSON as
// written (its "points", "front", "cheapest_meeting_target", "fastest_within_budget", "target"),
// as read_recommend_results checked it.
QChart* make_front_chart(const nlohmann::json& report);

}  // namespace replisim::gui
