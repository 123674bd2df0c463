// The cost-time chart of `replisim recommend`'s results (its --json, "replisim-recommend"): every
// simulated and priced point, the Pareto front joined by a line, and the chosen points marked.
#pragma once

#include <nlohmann/json.hpp>

class QChart;

namespace replisim::gui {

// A new chart (the caller owns it): x the job's time in hours (for a throughput target, the hours
// per million samples), y its cost in dollars; one scatter per instance type and pricing, the
// front as a line, the cheapest point meeting the target and the fastest within budget ringed and
// labelled with their configuration and what binds them. `report` is the recommend JSON as
// written (its "points", "front", "cheapest_meeting_target", "fastest_within_budget", "target").
QChart* make_front_chart(const nlohmann::json& report);

}  // namespace replisim::gui
