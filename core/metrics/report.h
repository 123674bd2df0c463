// The side-by-side report of one or more runs (text for people, JSON for tools).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/metrics.h"

namespace replisim::core {

// A table with one column per run: throughput, step time, update interval, staleness,
// bottleneck, busiest link, bytes per PS, where each role's time went, window and run size.
// `title` is printed above it (scenario, backend, seed).
std::string format_report(const std::vector<RunMetrics>& runs, const std::string& title);

// The report's "faults" cell: each fault in time order, "; " between them, e.g. "ps1 dies at
// 35.000 s [samples/s before 1976.9, after 937.6]"; "-" without faults.
std::string faults_text(const RunMetrics& r);

// The report's "job failures" cell: each restart (cause, checkpoint, work lost, how it ended) and
// a failure without restart, "; " between them; "-" without any.
std::string job_failures_text(const RunMetrics& r);

// training.steps "auto": the report's "steady state (95% interval)" cell, e.g. "+-0.89% after 364
// updates, stopped at 6.612 s" or "not within +-1.00% when the run ended (+-6.00% over 920
// updates)".
std::string steady_state_text(const SteadyStateRecord& record);

// {"scenario": NAME, "provenance": ..., "runs": [{"strategy", "throughput_samples_per_s",
//  "step_time_s": {"mean","p50","p95"}, "update_interval_s", "staleness": {"mean","max"},
//  "bottleneck": {"resource","utilization"}, "bytes_per_ps": [...], "simulated_time_s",
//  "events", ...}]} — docs/metrics.md lists every field.
nlohmann::json summary_json(const std::vector<RunMetrics>& runs, const nlohmann::json& provenance);

}  // namespace replisim::core
