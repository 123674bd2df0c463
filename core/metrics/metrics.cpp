// compute_metrics and what every pass needs first: the trace's lookups, the step spans, the
// measured window and the step times (docs/metrics.md).
#include "core/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/metrics/metrics_detail.h"

namespace replisim::core {
namespace metrics_detail {

MetricsInput read_input(const Trace& trace, const std::string& source) {
  const TraceMeta& meta = trace.meta;
  if (meta.steps < 1) {
    throw InputError(source, "/meta/steps", "missing: the trace has no run metadata");
  }
  if (meta.warmup_steps < 0 || meta.warmup_steps >= meta.steps) {
    throw InputError(source, "/meta/warmup_steps", "must be in [0, steps - 1]");
  }
  if (meta.platform.devices.empty()) {
    throw InputError(source, "/meta/platform", "the trace's platform has no devices");
  }
  MetricsInput in{trace,
                  meta,
                  source,
                  {},
                  {},
                  {},
                  {},
                  {},
                  meta.synchronous(),
                  meta.sync == kDistributedReplicated};
  for (const TraceRole& role : meta.roles) {
    const uint32_t id = trace.find(role.name);
    if (id != kNoString) in.role_kind.emplace(id, role.kind);
  }
  for (const TraceClient& client : meta.clients) {
    in.client_ids.push_back(trace.find(client.role));
    if (client.data_steps > 0) in.data_limited.insert(client.role);
  }
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kFault || e.client == kNoString) continue;
    in.died_at_s.emplace(trace.str(e.client), e.start_s);
  }
  // A job restart brings dead workers back: one that steps again after its death is not dead.
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kStep) continue;
    auto died = in.died_at_s.find(trace.str(e.client));
    if (died != in.died_at_s.end() && e.end_s > died->second) in.died_at_s.erase(died);
  }
  in.bytes_per_ps.assign(meta.ps.size(), 0.0);
  for (const TraceVariable& v : meta.variables) {
    if (v.ps >= 0 && size_t(v.ps) < in.bytes_per_ps.size())
      in.bytes_per_ps[size_t(v.ps)] += v.bytes;
  }
  return in;
}

double percentile(std::vector<double> sorted, double p) {
  if (sorted.empty()) return 0;
  std::sort(sorted.begin(), sorted.end());
  const double rank = p * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - double(lo)) * (sorted[hi] - sorted[lo]);
}

double overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace metrics_detail

namespace {

using namespace metrics_detail;

// Steps by client. A synchronous worker's local steps may outnumber the global steps (a spare
// token lets it contribute twice), so the table grows with the steps the trace has. A client's
// steps run from 0 without gaps (a restart repeats some), so no step exceeds the number of its
// step events: a trace that says otherwise is refused before it can size a table.
StepTable step_spans(const MetricsInput& in) {
  std::unordered_map<uint32_t, size_t> step_events;
  for (const TraceEvent& e : in.trace.events) step_events[e.client] += e.kind == EventKind::kStep;
  StepTable steps;
  const int64_t limit = in.synchronous ? INT64_MAX : in.meta.steps;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind != EventKind::kStep || e.step < 0) continue;
    if (uint64_t(e.step) >= step_events[e.client]) {
      throw InputError(in.source, "",
                       "step " + std::to_string(e.step) + " of " + in.trace.str(e.client) +
                           " comes with only " + std::to_string(step_events[e.client]) +
                           " step events: a client's steps run from 0 without gaps");
    }
    if (e.step >= limit) continue;
    std::vector<Span>& spans = steps[e.client];
    if (spans.size() <= size_t(e.step)) spans.resize(size_t(e.step) + 1);
    // A job restart runs steps again from its checkpoint: the first run of a step defines it.
    if (spans[size_t(e.step)].end_s < 0) spans[size_t(e.step)] = {e.start_s, e.end_s};
  }
  return steps;
}

// When the last client to begin training began its first step (workers launched late,
// training.start_times, may begin after global_step's warm-up: the few workers up before them take
// every token meanwhile); -infinity when no step began.
double last_first_step_s(const Trace& trace) {
  std::unordered_map<uint32_t, double> first;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kStep) continue;
    const auto [it, added] = first.try_emplace(e.client, e.start_s);
    if (!added) it->second = std::min(it->second, e.start_s);
  }
  double last = -INFINITY;
  for (const auto& [client, s] : first) last = std::max(last, s);
  return last;
}

// Synchronous training: the window runs from the update that made global_step warmup_steps (the
// first step's start when there is no warm-up), or the first update after every client began
// training when one began later, to the update that made it steps; a run whose global_step
// stopped earlier is measured up to its last update, with a warning.
void find_sync_window(RunMetrics& r, const MetricsInput& in) {
  const TraceMeta& meta = in.meta;
  // training.steps "auto" stopped at an update: the run is one of that many global steps.
  const std::optional<SteadyStateRecord>& steady = in.trace.outcome.steady_state;
  const int64_t steps = steady && steady->converged ? steady->stop_global_step : meta.steps;
  const RunOutcome& outcome = in.trace.outcome;
  double start = INFINITY, end = -1;
  int64_t last_global_step = 0;
  bool warm = false;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind == EventKind::kStep && meta.warmup_steps == 0) start = std::min(start, e.start_s);
    if (e.kind != EventKind::kUpdate) continue;
    // The first time (a restart may reach it again).
    if (e.global_step_after == meta.warmup_steps && !warm) {
      start = e.end_s;
      warm = true;
    }
    if (e.global_step_after <= steps && e.global_step_after >= last_global_step) {
      last_global_step = e.global_step_after;
      end = e.end_s;
    }
  }
  // A client that began training after that: from the first update once every client trains.
  const double everyone_in_s = last_first_step_s(in.trace);
  if (std::isfinite(start) && everyone_in_s > start) {
    start = INFINITY;
    for (const TraceEvent& e : in.trace.events) {
      if (e.kind == EventKind::kUpdate && e.end_s >= everyone_in_s)
        start = std::min(start, e.end_s);
    }
  }
  if (!std::isfinite(start) || !(end > start)) {
    const std::string why = outcome.stall ? "; training stalled: " + outcome.stall->cause : "";
    const char* steps_path =
        in.trace.outcome.steady_state ? "/training/max_steps" : "/training/steps";
    // A stall names what stopped the workers: their data, a fault, or else a warm-up longer than
    // the run could go.
    const char* stall_path = !in.died_at_s.empty()      ? "/faults"
                             : !in.data_limited.empty() ? "/training/data_steps_per_worker"
                                                        : "/training/warmup_steps";
    throw MeasurementError(in.source, why.empty() ? steps_path : stall_path,
                           "the measurement window is empty: global_step reached " +
                               std::to_string(last_global_step) + " of " + std::to_string(steps) +
                               " (warm-up " + std::to_string(meta.warmup_steps) + ")" + why);
  }
  if (last_global_step < steps && !outcome.stall && !outcome.job_failure) {
    r.warnings.push_back("global_step stopped at " + std::to_string(last_global_step) + " of " +
                         std::to_string(steps) + " (t = " + format_quantity(end, Dimension::kTime) +
                         "): the window ends at the last update");
  }
  r.window_start_s = start;
  r.window_end_s = end;
}

// The measured window: latest end of a last warm-up step to earliest end of a last step (an
// all-reduce job's: latest, since its ranks end each step together but for the ring's last
// chunks, and the chief's update closing the last step must count).
void find_window(RunMetrics& r, const MetricsInput& in, StepTable& steps) {
  const TraceMeta& meta = in.meta;
  double window_start = 0, window_end = INFINITY, latest_end = 0;
  std::string last_to_warm, first_to_finish;
  for (size_t i = 0; i < meta.clients.size(); ++i) {
    const std::string& client = meta.clients[i].role;
    // A client a fault killed ends early by design: it neither opens nor closes the window.
    if (in.died_at_s.count(client) > 0) continue;
    const std::vector<Span>& spans = steps[in.client_ids[i]];
    const size_t needed = size_t(std::max(1, meta.warmup_steps));
    if (spans.size() < needed || spans.back().end_s < 0 || spans[needed - 1].end_s < 0) {
      if (in.trace.outcome.job_failure) {
        throw MeasurementError(in.source, "/faults",
                               "the job failed (" + in.trace.outcome.job_failure->cause +
                                   ") before " + client + " finished " +
                                   (meta.warmup_steps > 0 ? "its warm-up" : "a step") +
                                   ": no window to measure");
      }
      if (in.trace.outcome.stall) {
        // distributed_replicated: a worker gone before the warm-up's end holds the others.
        throw MeasurementError(in.source, "/faults",
                               "training stalled (" + in.trace.outcome.stall->cause + ") before " +
                                   client + " finished " +
                                   (meta.warmup_steps > 0 ? "its warm-up" : "a step") +
                                   ": no window to measure");
      }
      if (in.data_limited.count(client) > 0 && !spans.empty() && spans.back().end_s >= 0) {
        // Out of data within its warm-up: it measured nothing, and the others' window cannot
        // wait for it.
        throw MeasurementError(in.source, "/training/data_steps_per_worker",
                               client + " ran out of data after " + std::to_string(spans.size()) +
                                   " step(s), within its " + std::to_string(meta.warmup_steps) +
                                   " warm-up steps: no window to measure; give it more data than "
                                   "training.warmup_steps");
      }
      throw InputError(in.source, "", "the trace has no complete steps for " + client);
    }
    const double warm =
        meta.warmup_steps > 0 ? spans[size_t(meta.warmup_steps - 1)].end_s : spans.front().start_s;
    if (last_to_warm.empty() || warm > window_start) {
      window_start = warm;
      last_to_warm = client;
    }
    if (spans.back().end_s < window_end) {
      window_end = spans.back().end_s;
      first_to_finish = client;
    }
    latest_end = std::max(latest_end, spans.back().end_s);
  }
  if (meta.sync == kAllReduceSync && !first_to_finish.empty()) window_end = latest_end;
  if (first_to_finish.empty()) {
    throw MeasurementError(in.source, "/faults",
                           "every client died before the end of the run: no window to measure");
  }
  if (!(window_end > window_start)) {
    const bool data_limited = in.data_limited.count(first_to_finish) > 0;
    // training.steps "auto": the steps a client may run are training.max_steps.
    const bool steps_auto = in.trace.outcome.steady_state.has_value();
    throw MeasurementError(
        in.source,
        data_limited ? "/training/data_steps_per_worker"
        : steps_auto ? "/training/max_steps"
                     : "/training/steps",
        "the measurement window is empty: " + first_to_finish + " finished its last step before " +
            last_to_warm + (meta.warmup_steps > 0 ? " finished warming up" : " started") +
            (data_limited ? "; give it more data (training.data_steps_per_worker)"
             : steps_auto ? "; raise training.max_steps"
                          : "; raise training.steps"));
  }
  r.window_start_s = window_start;
  r.window_end_s = window_end;
}

// "12.3" (one decimal).
std::string fixed_ratio(double a, double b) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", a / b);
  return text;
}

// A step that overlaps the window without lying in it is left out of the step times: say so when
// one is much longer than the rest (a stall behind a link cut, say).
void warn_of_long_edge_step(RunMetrics& r, const std::string& client,
                            const std::vector<Span>& spans, const std::vector<bool>& inside,
                            double mean_step_time_s) {
  const Span* longest = nullptr;
  for (size_t k = 0; k < spans.size(); ++k) {
    const Span& span = spans[k];
    if (inside[k] || span.end_s < 0 || span.end_s <= r.window_start_s ||
        span.start_s >= r.window_end_s) {
      continue;
    }
    if (longest == nullptr || span.end_s - span.start_s > longest->end_s - longest->start_s) {
      longest = &span;
    }
  }
  if (longest == nullptr ||
      longest->end_s - longest->start_s <= kLongStepFactor * mean_step_time_s) {
    return;
  }
  r.warnings.push_back(client + " has a step of " +
                       format_quantity(longest->end_s - longest->start_s, Dimension::kTime) +
                       " from t = " + format_quantity(longest->start_s, Dimension::kTime) +
                       " across the window's edge, " +
                       fixed_ratio(longest->end_s - longest->start_s, mean_step_time_s) +
                       "x its mean step time; the step times leave it out");
}

// Step times: the steps wholly inside the window.
MeasuredTable add_step_times(RunMetrics& r, const MetricsInput& in, StepTable& steps) {
  std::vector<double> durations;
  MeasuredTable measured;
  for (size_t i = 0; i < in.meta.clients.size(); ++i) {
    const std::string& client = in.meta.clients[i].role;
    ClientMetrics cm;
    cm.name = client;
    cm.died = in.died_at_s.count(client) > 0;
    double sum = 0;
    std::vector<bool>& inside = measured[in.client_ids[i]];
    const std::vector<Span>& spans = steps[in.client_ids[i]];
    inside.assign(spans.size(), false);
    for (size_t k = 0; k < spans.size(); ++k) {
      const Span& s = spans[k];
      if (s.end_s < 0 || s.start_s < r.window_start_s - kTimeEpsilonS ||
          s.end_s > r.window_end_s + kTimeEpsilonS) {
        continue;
      }
      inside[k] = true;
      durations.push_back(s.end_s - s.start_s);
      sum += s.end_s - s.start_s;
      ++cm.measured_steps;
    }
    if (cm.measured_steps > 0) {
      cm.mean_step_time_s = sum / cm.measured_steps;
      cm.step_rate_per_s = cm.mean_step_time_s > 0 ? 1.0 / cm.mean_step_time_s : 0;
      warn_of_long_edge_step(r, client, spans, inside, cm.mean_step_time_s);
    }
    if (cm.measured_steps < kFewMeasuredSteps && !cm.died && in.data_limited.count(client) == 0) {
      // training.steps "auto": the steps a client may run are training.max_steps.
      const bool steps_auto = in.trace.outcome.steady_state.has_value();
      r.warnings.push_back(client + " has " + std::to_string(cm.measured_steps) +
                           " step(s) wholly inside the measured window, so its step time is "
                           "noisy or missing; raise training." +
                           (steps_auto ? "max_steps" : "steps"));
    }
    r.clients.push_back(cm);
  }
  if (!durations.empty()) {
    double sum = 0;
    for (double d : durations) sum += d;
    r.step_time_s = {sum / double(durations.size()), percentile(durations, 0.5),
                     percentile(durations, 0.95)};
  }
  return measured;
}

// What every run's metrics carry whatever their window: names, sizes, the run's length.
RunMetrics run_facts(const MetricsInput& in, const Trace& trace) {
  RunMetrics r;
  r.scenario = in.meta.scenario;
  r.strategy = in.meta.strategy;
  r.worker_clients = clients_are_workers(in.meta);
  r.forward_only = in.meta.forward_only;
  if (in.meta.sync == kDistributedReplicated || in.meta.sync == kAllReduceSync) {
    r.sync_variant = in.meta.sync;
  }
  r.backend = trace.meta.backend;
  r.events = trace.events.size();
  r.bytes_per_ps = in.bytes_per_ps;
  r.simulated_time_s = trace.outcome.end_s;
  r.steady_state = trace.outcome.steady_state;
  r.objective = objective_metrics(trace);
  return r;
}

}  // namespace

RunMetrics compute_metrics(const Trace& trace, const std::string& source) {
  const MetricsInput in = read_input(trace, source);
  RunMetrics r = run_facts(in, trace);
  add_memory(r, trace);
  add_recoveries(r, trace);
  StepTable steps = step_spans(in);
  if (in.synchronous) {
    find_sync_window(r, in);
    add_sync_figures(r, in);
  } else {
    find_window(r, in, steps);
  }
  add_stall(r, in);
  // The critical paths need only the trace and the window, and on a large trace take a large
  // part of the metrics' time: a second thread computes them meanwhile (everything else only
  // reads the trace too).
  std::future<std::vector<CriticalPath>> paths =
      std::async(std::launch::async, [&trace, from_s = r.window_start_s, until_s = r.window_end_s] {
        return critical_paths(trace, from_s, until_s);
      });
  add_update_figures(r, in, steps);
  add_unsteady_estimate(r, trace);
  add_faults(r, trace, steps);
  add_fault_throughputs(r, in, steps);
  MeasuredTable measured = add_step_times(r, in, steps);
  add_client_updates(r, in);
  add_input_pipeline_note(r, in);
  add_utilisation(r, trace, in.meta.platform);
  add_waits(r, in, steps, measured);
  r.paths = paths.get();
  if (!r.paths.empty()) r.bound_by = combine_paths(r.paths);
  add_saturation_warning(r, in.meta.platform);
  return r;
}

RunMetrics compute_window_metrics(const Trace& trace, double from_s, double until_s,
                                  const std::string& source) {
  if (!(until_s > from_s)) {
    throw InputError(
        source, "",
        "the window [" + std::to_string(from_s) + ", " + std::to_string(until_s) + "] s is empty");
  }
  const MetricsInput in = read_input(trace, source);
  RunMetrics r = run_facts(in, trace);
  r.window_start_s = from_s;
  r.window_end_s = until_s;
  add_memory(r, trace);
  add_recoveries(r, trace);
  StepTable steps = step_spans(in);
  add_update_figures(r, in, steps);
  add_faults(r, trace, steps);
  add_step_times(r, in, steps);
  add_client_updates(r, in);
  add_utilisation(r, trace, in.meta.platform);
  add_saturation_warning(r, in.meta.platform);
  return r;
}

}  // namespace replisim::core
