// What happened to training over the run: updates (throughput, update interval, staleness),
// synchronous training's computed samples and dropped gradients, faults with the work they lost,
// job restarts, and the chief's checkpoints and summaries.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/base/steady_state_estimator.h"
#include "core/base/units.h"
#include "core/metrics/metrics_detail.h"

namespace replisim::core::metrics_detail {

namespace {

// An update at `time_s` that a restart rolled back: after the checkpoint's save started, up to
// the failure's detection.
bool rolled_back(const RunMetrics& r, double time_s) {
  for (const RecoveryRecord& k : r.recoveries) {
    if (time_s > k.checkpoint_start_s && time_s <= k.detected_s) return true;
  }
  return false;
}

// An update event the window's figures count: it lies in (start, end] and no restart rolled it
// back.
bool counted_update(const RunMetrics& r, const TraceEvent& e) {
  return e.kind == EventKind::kUpdate && e.end_s > r.window_start_s && e.end_s <= r.window_end_s &&
         !rolled_back(r, e.end_s);
}

// A forward-only run: the samples of the clients' steps that end in (from_s, until_s] (a step a
// restart ran again counts once: step_spans keeps its first run).
double forward_samples(const MetricsInput& in, const StepTable& steps, double from_s,
                       double until_s) {
  double samples = 0;
  for (size_t i = 0; i < in.meta.clients.size() && i < in.client_ids.size(); ++i) {
    const auto found = steps.find(in.client_ids[i]);
    if (found == steps.end()) continue;
    for (const Span& span : found->second) {
      if (span.end_s > from_s && span.end_s <= until_s) {
        samples += in.meta.clients[i].samples_per_step;
      }
    }
  }
  return samples;
}

}  // namespace

// Throughput, update interval and staleness: updates whose time lies in (start, end] and that no
// restart rolled back.
void add_update_figures(RunMetrics& r, const MetricsInput& in, const StepTable& steps) {
  const Trace& trace = in.trace;
  const double window = r.window_end_s - r.window_start_s;
  if (in.meta.forward_only) {
    r.throughput_samples_per_s =
        forward_samples(in, steps, r.window_start_s, r.window_end_s) / window;
    return;
  }
  double samples = 0, staleness_sum = 0;
  for (const TraceEvent& e : trace.events) {
    if (!counted_update(r, e)) continue;
    samples += e.samples;
    ++r.updates_in_window;
    const double staleness = double(e.global_step_after - 1 - e.global_step_read);
    staleness_sum += staleness;
    r.staleness_max = std::max(r.staleness_max, staleness);
  }
  r.throughput_samples_per_s = samples / window;
  r.update_interval_s = r.updates_in_window > 0 ? window / r.updates_in_window : 0;
  r.staleness_mean = r.updates_in_window > 0 ? staleness_sum / r.updates_in_window : 0;
}

void add_stall(RunMetrics& r, const MetricsInput& in) {
  if (!in.trace.outcome.stall) return;
  const StallRecord& stall = *in.trace.outcome.stall;
  r.stalled = true;
  r.stall_start_s = stall.time_s;
  r.stall_end_s = stall.detected_s;
  r.stall_global_step = stall.global_step;
  r.stall_cause = stall.cause;
  r.warnings.push_back("training stalled at global_step " + std::to_string(r.stall_global_step) +
                       " (t = " + format_quantity(r.stall_start_s, Dimension::kTime) +
                       "): " + r.stall_cause);
}

// Synchronous training: the sync settings, computed samples and dropped gradients in the window.
void add_sync_figures(RunMetrics& r, const MetricsInput& in) {
  const TraceSyncReplicas& settings = in.meta.sync_replicas;
  r.synchronous = true;
  r.sync_variant = settings.variant;
  r.replicas_to_aggregate = settings.replicas_to_aggregate;
  r.total_num_replicas = settings.total_num_replicas;
  std::unordered_map<uint32_t, int> samples_of;
  for (size_t i = 0; i < in.meta.clients.size(); ++i) {
    samples_of[in.client_ids[i]] = in.meta.clients[i].samples_per_step;
  }
  // A worker step's gradient reached the PS when its first slice was accumulated (or dropped)
  // there: count each (worker, step) once, at that time. The chief's sync op is no worker.
  std::map<std::pair<uint32_t, int64_t>, double> pushed_at;
  std::vector<std::pair<uint32_t, int64_t>> dropped;
  for (const TraceEvent& e : in.trace.events) {
    const RoleKind* client = in.kind_of(e.client);
    const bool accumulate = e.kind == EventKind::kCompute && e.op == OpKind::kAccumulate &&
                            !(client != nullptr && *client == RoleKind::kSyncQueueRunner);
    if (accumulate || e.kind == EventKind::kDropped) {
      auto [it, added] = pushed_at.emplace(std::make_pair(e.client, e.step), e.end_s);
      if (!added) it->second = std::min(it->second, e.end_s);
    }
    if (e.kind == EventKind::kDropped && e.end_s > r.window_start_s && e.end_s <= r.window_end_s) {
      dropped.emplace_back(e.client, e.step);
    }
  }
  double computed = 0;
  for (const auto& [key, time_s] : pushed_at) {
    if (time_s <= r.window_start_s || time_s > r.window_end_s) continue;
    auto found = samples_of.find(key.first);
    if (found != samples_of.end()) computed += found->second;
  }
  std::sort(dropped.begin(), dropped.end());
  r.dropped_gradients = int(std::unique(dropped.begin(), dropped.end()) - dropped.begin());
  r.computed_samples_per_s = computed / (r.window_end_s - r.window_start_s);
}

void add_unsteady_estimate(RunMetrics& r, const Trace& trace) {
  if (!r.steady_state || r.steady_state->converged) return;
  SteadyStateRecord& s = *r.steady_state;
  std::vector<std::pair<double, double>> updates;  // (end_s, samples), in time order
  for (const TraceEvent& e : trace.events) {
    if (counted_update(r, e)) updates.emplace_back(e.end_s, e.samples);
  }
  std::stable_sort(updates.begin(), updates.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  SteadyStateEstimator estimator;
  for (const auto& [end_s, samples] : updates) estimator.add_update(end_s, samples);
  const SteadyStateEstimator::Estimate e = estimator.estimate(r.window_start_s, r.window_end_s);
  s.throughput_samples_per_s = e.throughput;
  s.updates = e.updates;
  s.half_width_fraction = e.valid ? e.half_width_fraction : -1;
  auto percent = [](double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g%%", 100 * fraction);
    return std::string(text);
  };
  const std::string interval = e.valid
                                   ? "+-" + percent(e.half_width_fraction)
                                   : "no interval from " + std::to_string(e.updates) + " updates";
  r.warnings.push_back(
      "the throughput was not steady to +-" + percent(s.tolerance) + " when the run ended (" +
      interval + " over its measured window): raise training.max_steps (" +
      std::to_string(s.max_steps) + ") if it ran them all, or training.steady_tolerance");
}

void add_fault_throughputs(RunMetrics& r, const MetricsInput& in, const StepTable& steps) {
  const Trace& trace = in.trace;
  // Samples over (from, until] inside the window, or -1 for an empty part.
  auto throughput = [&r, &trace, &in, &steps](double from_s, double until_s) {
    from_s = std::max(from_s, r.window_start_s);
    until_s = std::min(until_s, r.window_end_s);
    if (!(until_s > from_s)) return -1.0;
    if (in.meta.forward_only)
      return forward_samples(in, steps, from_s, until_s) / (until_s - from_s);
    double samples = 0;
    for (const TraceEvent& e : trace.events) {
      if (counted_update(r, e) && e.end_s > from_s && e.end_s <= until_s) samples += e.samples;
    }
    return samples / (until_s - from_s);
  };
  for (FaultRecord& f : r.faults) {
    f.throughput_before_samples_per_s = throughput(r.window_start_s, f.start_s);
    f.throughput_after_samples_per_s =
        f.open_ended ? -1.0 : throughput(std::max(f.start_s, f.end_s), r.window_end_s);
  }
}

void add_input_pipeline_note(RunMetrics& r, const MetricsInput& in) {
  struct InputTime {
    double busy_s = 0;
    int batches = 0;
    uint32_t device = 0;
  };
  std::map<uint32_t, InputTime> inputs;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind != EventKind::kCompute || e.op != OpKind::kInput) continue;
    if (e.end_s <= r.window_start_s || e.end_s > r.window_end_s) continue;
    InputTime& t = inputs[e.client];
    t.busy_s += e.end_s - e.start_s;
    ++t.batches;
    t.device = e.device;
  }
  double largest = 0;
  int above = 0;
  std::string note;
  for (size_t i = 0; i < in.meta.clients.size() && i < r.clients.size(); ++i) {
    const auto found = inputs.find(in.client_ids[i]);
    const ClientMetrics& c = r.clients[i];
    if (found == inputs.end() || c.mean_step_time_s <= 0) continue;
    const double per_batch_s = found->second.busy_s / found->second.batches;
    const double share = per_batch_s / c.mean_step_time_s;
    if (share <= kInputShareNoted) continue;
    ++above;
    if (share <= largest) continue;
    largest = share;
    note = "input pipeline on " + in.trace.str(found->second.device) + ": " +
           format_quantity(per_batch_s, Dimension::kTime) + " of " + c.name + "'s " +
           format_quantity(c.mean_step_time_s, Dimension::kTime) + " mean step (" +
           std::to_string(int(std::lround(100 * share))) + "%)";
  }
  if (note.empty()) return;
  if (above > 1) note += " and " + std::to_string(above - 1) + " other client(s) above 10%";
  r.notes.push_back(note + "; set training.costs to change it");
}

void add_client_updates(RunMetrics& r, const MetricsInput& in) {
  std::map<uint32_t, ClientMetrics*> by_id;
  for (size_t i = 0; i < in.meta.clients.size() && i < r.clients.size(); ++i) {
    by_id[in.client_ids[i]] = &r.clients[i];
  }
  std::set<std::pair<uint32_t, int64_t>> dropped;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind == EventKind::kDropped && e.end_s > r.window_start_s && e.end_s <= r.window_end_s) {
      if (dropped.emplace(e.client, e.step).second && by_id.count(e.client) > 0) {
        ++by_id[e.client]->dropped_gradients;
      }
    }
    if (!counted_update(r, e)) continue;
    const auto found = by_id.find(e.client);
    if (found == by_id.end()) continue;  // the chief's sync op
    ClientMetrics& c = *found->second;
    const double staleness = double(e.global_step_after - 1 - e.global_step_read);
    if (c.staleness_histogram.empty()) c.staleness_histogram.assign(kStalenessBuckets, 0);
    ++c.staleness_histogram[size_t(std::clamp(staleness, 0.0, double(kStalenessBuckets - 1)))];
    c.staleness_mean += staleness;  // a sum until the end
    c.staleness_max = std::max(c.staleness_max, staleness);
    ++c.updates;
  }
  for (ClientMetrics& c : r.clients) {
    if (c.updates > 0) c.staleness_mean /= c.updates;
    // Trailing empty buckets say nothing.
    while (!c.staleness_histogram.empty() && c.staleness_histogram.back() == 0) {
      c.staleness_histogram.pop_back();
    }
  }
}

// The faults: roles that died (with the work they lost) and slowdowns, in time order.
void add_faults(RunMetrics& r, const Trace& trace, StepTable& steps) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kFault) continue;
    FaultRecord f;
    f.target = trace.str(e.actor);
    f.description = trace.str(e.label);
    f.start_s = e.start_s;
    f.end_s = e.end_s;
    f.open_ended = (e.flags & kEventOpenEnded) != 0;
    f.unplanned = (e.flags & kEventUnplanned) != 0;
    if (e.client != kNoString && e.step >= 0) {  // -1: it was running no step
      double last_end = 0;
      for (const Span& span : steps[e.client]) {
        if (span.end_s >= 0 && span.end_s <= e.start_s) last_end = std::max(last_end, span.end_s);
      }
      f.lost_work_s = e.start_s - last_end;
      f.lost_step = e.step;
    }
    // One fault that kills several roles (a machine) is one record naming them all.
    auto same = std::find_if(r.faults.begin(), r.faults.end(), [&f](const FaultRecord& g) {
      return g.description == f.description && g.start_s == f.start_s && g.lost_step < 0 &&
             f.lost_step < 0;
    });
    if (same != r.faults.end()) {
      same->target += ", " + f.target;
      continue;
    }
    r.faults.push_back(f);
  }
  std::stable_sort(
      r.faults.begin(), r.faults.end(),
      [](const FaultRecord& a, const FaultRecord& b) { return a.start_s < b.start_s; });
}

// Job restarts, a job failure that ended the run, and the chief's checkpoints and summaries.
void add_recoveries(RunMetrics& r, const Trace& trace) {
  for (const RestartRecord& k : trace.outcome.restarts) {
    RecoveryRecord rec;
    rec.cause = k.cause;
    rec.fault_s = k.fault_s;
    rec.detected_s = k.detected_s;
    rec.resumed_s = k.resumed_s;
    rec.workers_resumed_s = k.workers_resumed_s;
    rec.interrupted_s = k.interrupted_s;
    rec.workers_lost = k.workers_lost;
    rec.recovery_time_s = k.resumed_s - k.fault_s;
    rec.checkpoint_global_step = k.checkpoint_global_step;
    rec.checkpoint_start_s = k.checkpoint_start_s;
    rec.global_step_at_failure = k.global_step_at_failure;
    rec.lost_global_steps = k.global_step_at_failure - k.checkpoint_global_step;
    rec.lost_work_s = k.lost_work_s;
    r.recoveries.push_back(rec);
  }
  if (trace.outcome.job_failure) {
    r.job_failed = true;
    r.job_failure_s = trace.outcome.job_failure->time_s;
    r.job_failure_cause = trace.outcome.job_failure->cause;
    r.job_failure_unplanned = trace.outcome.job_failure->unplanned;
    r.warnings.push_back(
        "the job failed at t = " + format_quantity(r.job_failure_s, Dimension::kTime) + ": " +
        r.job_failure_cause + "; the window ends at the last step before it");
  }
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kCheckpoint) continue;
    if ((e.flags & kEventSummaries) != 0) {
      ++r.summaries_written;
    } else {
      ++r.checkpoints_written;
    }
    r.chief_writing_s += e.end_s - e.start_s;
  }
}

}  // namespace replisim::core::metrics_detail
