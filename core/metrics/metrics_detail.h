// Internal pieces of the metrics (metrics*.cpp): the trace with the lookups every pass needs,
// step spans, and small numeric helpers. Not a public API.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/metrics/metrics.h"

namespace replisim::core::metrics_detail {

inline constexpr double kTimeEpsilonS = 1e-9;

struct Span {
  double start_s = -1;
  double end_s = -1;
};

// The trace and what the passes look up in it, derived once.
struct MetricsInput {
  const Trace& trace;
  const TraceMeta& meta;
  const std::string& source;                         // names the trace in errors
  std::vector<uint32_t> client_ids;                  // per meta client: its string id
  std::unordered_map<uint32_t, RoleKind> role_kind;  // actor string id -> its role's kind
  std::map<std::string, double> died_at_s;           // clients a fault killed for good
  std::set<std::string> data_limited;                // clients with a data limit
  std::vector<double> bytes_per_ps;
  bool synchronous = false;  // between_graph with sync "sync": steps count global steps
  bool barriers = false;     // sync "distributed_replicated": workers wait at barriers

  // The kind of the role `actor` names, or null when it names no role.
  const RoleKind* kind_of(uint32_t actor) const {
    const auto found = role_kind.find(actor);
    return found == role_kind.end() ? nullptr : &found->second;
  }
};

MetricsInput read_input(const Trace& trace, const std::string& source);

using StepTable = std::unordered_map<uint32_t, std::vector<Span>>;      // client -> spans by step
using MeasuredTable = std::unordered_map<uint32_t, std::vector<bool>>;  // step inside window?

// Linear interpolation between closest ranks (the "R-7" / numpy default definition).
double percentile(std::vector<double> values, double p);
double overlap(double a0, double a1, double b0, double b1);

// The passes over the trace, each filling its part of the metrics.
// metrics_events.cpp: updates, synchronous training, faults, restarts and the chief's writes.
// A forward-only run (TraceMeta::forward_only) has no update: its throughput is the samples of
// the clients' steps ending in the window, and the update figures stay 0 (RunMetrics says why).
void add_update_figures(RunMetrics& r, const MetricsInput& in, const StepTable& steps);
// training.steps "auto" that ended before the rule held: its interval over the measured window
// (the figures the report gives; -1 when too few updates) and a warning.
void add_unsteady_estimate(RunMetrics& r, const Trace& trace);
void add_sync_figures(RunMetrics& r, const MetricsInput& in);
// A stalled run (synchronous training, distributed_replicated's barriers): when, why; a warning.
void add_stall(RunMetrics& r, const MetricsInput& in);
// Per client (after the step times made RunMetrics::clients): its updates' staleness and its
// dropped gradients in the window.
void add_client_updates(RunMetrics& r, const MetricsInput& in);
// A note when a client's input pipeline takes more than kInputShareNoted of its step: the
// batch's time on its device against the mean step time, for the client where it is largest.
inline constexpr double kInputShareNoted = 0.10;
void add_input_pipeline_note(RunMetrics& r, const MetricsInput& in);
void add_faults(RunMetrics& r, const Trace& trace, StepTable& steps);
// Each fault's throughput before and after it (FaultRecord), once the window and faults are in.
void add_fault_throughputs(RunMetrics& r, const MetricsInput& in, const StepTable& steps);
void add_recoveries(RunMetrics& r, const Trace& trace);
// metrics_resources.cpp: utilisation, the bottleneck, GPU memory.
void add_utilisation(RunMetrics& r, const Trace& trace, const Platform& platform);
// "No resource is saturated" when the bottleneck is below kSaturatedUtilization and no share of
// the critical path (r.bound_by) holds kPathHeldShare of it.
void add_saturation_warning(RunMetrics& r, const Platform& platform);
void add_memory(RunMetrics& r, const Trace& trace);
// metrics_waits.cpp: what each computing role waited on.
void add_waits(RunMetrics& r, const MetricsInput& in, StepTable& steps, MeasuredTable& measured);
// Every step's wait stretches (wait_stretches).
std::vector<WaitStretch> all_wait_stretches(const MetricsInput& in);

}  // namespace replisim::core::metrics_detail
