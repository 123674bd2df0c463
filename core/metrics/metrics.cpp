#include "core/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/hardware/platform.h"

namespace replisim::core {
namespace {

constexpr double kTimeEpsilonS = 1e-9;

struct Span {
  double start_s = -1;
  double end_s = -1;
};

// What metrics need from the trace metadata.
struct Meta {
  std::string scenario, strategy;
  int steps = 0, warmup_steps = 0;
  Platform platform;
  std::map<std::string, std::string> role_kind;  // role name -> "worker", "tower", ...
  std::vector<std::string> clients;
  std::vector<int> samples_per_step;  // per client
  std::vector<double> bytes_per_ps;
  bool synchronous = false;  // between_graph with sync "sync": steps count global steps
  std::map<std::string, double> died_at_s;  // clients a fault killed
  std::map<std::string, int> data_limited;  // clients with a data limit: their steps of data
};

Meta read_meta(const Trace& trace, const std::string& source) {
  const JsonCursor c(trace.meta, source, "/meta");
  Meta m;
  m.scenario = c.at("scenario").as_string();
  m.strategy = c.at("strategy").as_string();
  m.steps = int(c.at("steps").as_int(1, 100000000));
  m.warmup_steps = int(c.at("warmup_steps").as_int(0, m.steps - 1));
  m.platform = platform_from_json(c.at("platform").value(), source, "/meta/platform");
  const JsonCursor roles = c.at("roles");
  for (size_t i = 0; i < roles.size(); ++i) {
    m.role_kind[roles.at(i).at("name").as_string()] = roles.at(i).at("kind").as_string();
  }
  const JsonCursor clients = c.at("clients");
  for (size_t i = 0; i < clients.size(); ++i) {
    m.clients.push_back(clients.at(i).at("role").as_string());
    m.samples_per_step.push_back(int(clients.at(i).at("samples_per_step").as_int(0, 1 << 30)));
    if (clients.at(i).has("data_steps")) {
      m.data_limited[m.clients.back()] = int(clients.at(i).at("data_steps").as_int(1, 1 << 30));
    }
  }
  m.synchronous = c.has("sync") && c.at("sync").as_string() == "sync";
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kFault || e.client == kNoString) continue;
    m.died_at_s.emplace(trace.str(e.client), e.start_s);
  }
  // A job restart brings dead workers back: one that steps again after its death is not dead.
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kStep) continue;
    auto died = m.died_at_s.find(trace.str(e.client));
    if (died != m.died_at_s.end() && e.end_s > died->second) m.died_at_s.erase(died);
  }
  const JsonCursor ps = c.at("ps");
  m.bytes_per_ps.assign(ps.size(), 0.0);
  const JsonCursor variables = c.at("variables");
  for (size_t i = 0; i < variables.size(); ++i) {
    const int shard = int(variables.at(i).at("ps").as_int(0, int64_t(ps.size()) - 1));
    m.bytes_per_ps[size_t(shard)] += variables.at(i).at("bytes").as_number();
  }
  return m;
}

// Linear interpolation between closest ranks (the "R-7" / numpy default definition).
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

void sort_by_use(std::vector<ResourceUse>& uses) {
  std::stable_sort(uses.begin(), uses.end(), [](const ResourceUse& a, const ResourceUse& b) {
    return a.utilization > b.utilization;
  });
}

enum WaitCategory { kCompute, kNetwork, kClient, kPeers, kPs, kToken, kOther, kCategories };

// Classifies the time of `role` inside one step span from the events of that step.
void accumulate_waits(const Trace& trace, const std::vector<const TraceEvent*>& group,
                      const Span& span, uint32_t role, const Meta& meta,
                      std::vector<double>& seconds) {
  struct Boundary {
    double time;
    int delta;
    int counter;
  };
  // Counters: 0 own compute, 1 own transfer, 2 client compute, 3 peer compute, 4 ps compute,
  // 5 any transfer.
  std::vector<Boundary> boundaries;
  double last_event_end = span.start_s;
  for (const TraceEvent* e : group) {
    // The token's own 8-byte trip back to the worker ends the wait; it does not start it.
    if (meta.synchronous && trace.str(e->label).rfind("send/sync_token_q/", 0) == 0) continue;
    last_event_end = std::max(last_event_end, std::min(e->end_s, span.end_s));
  }
  auto kind_of = [&](uint32_t actor) {
    auto found = meta.role_kind.find(trace.str(actor));
    return found == meta.role_kind.end() ? std::string() : found->second;
  };
  for (const TraceEvent* e : group) {
    const double start = std::max(e->start_s, span.start_s);
    const double end = std::min(e->end_s, span.end_s);
    if (end <= start) continue;
    std::vector<int> counters;
    if (e->kind == EventKind::kCompute) {
      if (e->actor == role) {
        counters.push_back(0);
      } else {
        const std::string kind = kind_of(e->actor);
        counters.push_back(kind == "client" ? 2 : kind == "ps" ? 4 : 3);
      }
    } else if (e->kind == EventKind::kTransfer) {
      if (e->actor == role || e->peer_actor == role) counters.push_back(1);
      counters.push_back(5);
    }
    for (int counter : counters) {
      boundaries.push_back({start, +1, counter});
      boundaries.push_back({end, -1, counter});
    }
  }
  std::sort(boundaries.begin(), boundaries.end(),
            [](const Boundary& a, const Boundary& b) { return a.time < b.time; });
  int active[6] = {0, 0, 0, 0, 0, 0};
  double t = span.start_s;
  auto charge = [&](double until) {
    if (until <= t) return;
    // Synchronous workers: once every op of the step is done, the rest of the step is the wait
    // for a token (the other workers' gradients and the chief's update).
    WaitCategory category = meta.synchronous && t >= last_event_end ? kToken : kOther;
    if (active[0] > 0) {
      category = kCompute;
    } else if (active[1] > 0) {
      category = kNetwork;
    } else if (active[2] > 0) {
      category = kClient;
    } else if (active[3] > 0) {
      category = kPeers;
    } else if (active[4] > 0) {
      category = kPs;
    } else if (active[5] > 0) {
      category = kNetwork;
    }
    seconds[size_t(category)] += until - t;
    t = until;
  };
  for (const Boundary& b : boundaries) {
    charge(b.time);
    active[b.counter] += b.delta;
  }
  charge(span.end_s);
}

using StepTable = std::unordered_map<uint32_t, std::vector<Span>>;      // client -> spans by step
using MeasuredTable = std::unordered_map<uint32_t, std::vector<bool>>;  // step inside window?

// Steps by client. A synchronous worker's local steps may outnumber the global steps (a spare
// token lets it contribute twice), so the table grows with the steps the trace has.
StepTable step_spans(const Trace& trace, const Meta& meta) {
  StepTable steps;
  constexpr int64_t kMaxLocalSteps = int64_t(1) << 26;  // far beyond any global step count
  const int64_t limit = meta.synchronous ? kMaxLocalSteps : meta.steps;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kStep || e.step < 0 || e.step >= limit) continue;
    std::vector<Span>& spans = steps[e.client];
    if (spans.size() <= size_t(e.step)) spans.resize(std::max(size_t(e.step) + 1, spans.size()));
    // A job restart runs steps again from its checkpoint: the first run of a step defines it.
    if (spans[size_t(e.step)].end_s < 0) spans[size_t(e.step)] = {e.start_s, e.end_s};
  }
  return steps;
}

// Synchronous training: the window runs from the update that made global_step warmup_steps (the
// first step's start when there is no warm-up) to the update that made it steps; a run whose
// global_step stopped earlier is measured up to its last update, with a warning.
void find_sync_window(RunMetrics& r, const Trace& trace, const Meta& meta,
                      const std::string& source) {
  double start = INFINITY, end = -1;
  int64_t last_global_step = 0;
  bool warm = false;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kStep && meta.warmup_steps == 0) start = std::min(start, e.start_s);
    if (e.kind != EventKind::kUpdate) continue;
    // The first time (a restart may reach it again).
    if (e.global_step_after == meta.warmup_steps && !warm) {
      start = e.end_s;
      warm = true;
    }
    if (e.global_step_after <= meta.steps && e.global_step_after >= last_global_step) {
      last_global_step = e.global_step_after;
      end = e.end_s;
    }
  }
  if (!std::isfinite(start) || !(end > start)) {
    std::string why;
    if (trace.meta.contains("stall") && trace.meta["stall"].is_object() &&
        trace.meta["stall"].contains("cause") && trace.meta["stall"]["cause"].is_string()) {
      why = "; training stalled: " + trace.meta["stall"]["cause"].get<std::string>();
    }
    throw InputError(source, why.empty() ? "/training/steps" : "/training/warmup_steps",
                     "the measurement window is empty: global_step reached " +
                         std::to_string(last_global_step) + " of " + std::to_string(meta.steps) +
                         " (warm-up " + std::to_string(meta.warmup_steps) + ")" + why);
  }
  if (last_global_step < meta.steps && !trace.meta.contains("stall") &&
      !trace.meta.contains("job_failure")) {
    r.warnings.push_back("global_step stopped at " + std::to_string(last_global_step) + " of " +
                         std::to_string(meta.steps) +
                         " (t = " + format_quantity(end, Dimension::kTime) +
                         "): the window ends at the last update");
  }
  r.window_start_s = start;
  r.window_end_s = end;
}

// The measured window: latest end of a last warm-up step to earliest end of a last step.
void find_window(RunMetrics& r, const Trace& trace, const Meta& meta, StepTable& steps,
                 const std::string& source) {
  double window_start = 0, window_end = INFINITY;
  std::string last_to_warm, first_to_finish;
  for (const std::string& client : meta.clients) {
    // A client a fault killed ends early by design: it neither opens nor closes the window.
    if (meta.died_at_s.count(client) > 0) continue;
    const std::vector<Span>& spans = steps[trace.find(client)];
    const size_t needed = size_t(std::max(1, meta.warmup_steps));
    if (spans.size() < needed || spans.back().end_s < 0 || spans[needed - 1].end_s < 0) {
      if (trace.meta.contains("job_failure")) {
        throw InputError(source, "/faults",
                         "the job failed (" + trace.meta["job_failure"].value("cause", "") +
                             ") before " + client + " finished " +
                             (meta.warmup_steps > 0 ? "its warm-up" : "a step") +
                             ": no window to measure");
      }
      throw InputError(source, "", "the trace has no complete steps for " + client);
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
  }
  if (first_to_finish.empty()) {
    throw InputError(source, "/faults",
                     "every client died before the end of the run: no window to measure");
  }
  if (!(window_end > window_start)) {
    const bool data_limited = meta.data_limited.count(first_to_finish) > 0;
    throw InputError(source, data_limited ? "/training/data_steps_per_worker" : "/training/steps",
                     "the measurement window is empty: " + first_to_finish +
                         " finished its last step before " + last_to_warm +
                         (meta.warmup_steps > 0 ? " finished warming up" : " started") +
                         (data_limited ? "; give it more data (training.data_steps_per_worker)"
                                       : "; raise training.steps"));
  }
  r.window_start_s = window_start;
  r.window_end_s = window_end;
}

// Throughput, update interval and staleness: updates whose time lies in (start, end] and that no
// restart rolled back.
void add_update_figures(RunMetrics& r, const Trace& trace) {
  const double window_start = r.window_start_s, window_end = r.window_end_s;
  const double window = window_end - window_start;
  double samples = 0, staleness_sum = 0;
  auto rolled_back = [&r](double time_s) {
    for (const RecoveryRecord& k : r.recoveries) {
      // After the checkpoint's save started, up to the failure's detection.
      if (time_s > k.checkpoint_start_s && time_s <= k.detected_s) return true;
    }
    return false;
  };
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kUpdate) continue;
    if (e.end_s <= window_start || e.end_s > window_end || rolled_back(e.end_s)) continue;
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

// Synchronous training: the sync settings, computed samples and dropped gradients in the window.
void add_sync_figures(RunMetrics& r, const Trace& trace, const Meta& meta,
                      const std::string& source) {
  const JsonCursor sync(trace.meta, source, "/meta");
  const JsonCursor settings = sync.at("sync_replicas");
  r.synchronous = true;
  r.sync_variant = settings.at("variant").as_string();
  r.replicas_to_aggregate = int(settings.at("replicas_to_aggregate").as_int(1, 1 << 30));
  r.total_num_replicas = int(settings.at("total_num_replicas").as_int(1, 1 << 30));
  if (sync.has("stall")) {
    const JsonCursor stall = sync.at("stall");
    r.stalled = true;
    r.stall_start_s = stall.at("time_s").as_number_in(0, 1e300);
    r.stall_end_s = stall.at("detected_s").as_number_in(r.stall_start_s, 1e300);
    r.stall_global_step = stall.at("global_step").as_int(0, INT64_MAX);
    r.stall_cause = stall.at("cause").as_string();
    r.warnings.push_back("training stalled at global_step " + std::to_string(r.stall_global_step) +
                         " (t = " + format_quantity(r.stall_start_s, Dimension::kTime) +
                         "): " + r.stall_cause);
  }
  std::unordered_map<uint32_t, int> samples_of;
  for (size_t i = 0; i < meta.clients.size(); ++i) {
    samples_of[trace.find(meta.clients[i])] = meta.samples_per_step[i];
  }
  // A worker step's gradient reached the PS when its first slice was accumulated (or dropped)
  // there: count each (worker, step) once, at that time.
  std::map<std::pair<uint32_t, int64_t>, double> pushed_at;
  std::vector<std::pair<uint32_t, int64_t>> dropped;
  const uint32_t chief_sync = trace.find("chief/sync");
  for (const TraceEvent& e : trace.events) {
    const bool accumulate = e.kind == EventKind::kCompute && e.client != chief_sync &&
                            trace.str(e.label).rfind("accumulate/", 0) == 0;
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

// The faults: roles that died (with the work they lost) and slowdowns, in time order.
void add_faults(RunMetrics& r, const Trace& trace, StepTable& steps) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kFault) continue;
    FaultRecord f;
    f.target = trace.str(e.actor);
    f.description = trace.str(e.label);
    f.start_s = e.start_s;
    f.end_s = e.end_s;
    f.open_ended = e.end_s >= 86400.0 * 365;     // until the trace records it
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
void add_recoveries(RunMetrics& r, const Trace& trace, const std::string& source) {
  const JsonCursor meta(trace.meta, source, "/meta");
  if (meta.has("restarts")) {
    const JsonCursor restarts = meta.at("restarts");
    for (size_t i = 0; i < restarts.size(); ++i) {
      const JsonCursor k = restarts.at(i);
      RecoveryRecord rec;
      rec.cause = k.at("cause").as_string();
      rec.fault_s = k.at("fault_s").as_number_in(0, 1e300);
      rec.detected_s = k.at("detected_s").as_number_in(rec.fault_s, 1e300);
      rec.resumed_s = k.at("resumed_s").as_number_in(rec.detected_s, 1e300);
      rec.workers_resumed_s = k.at("workers_resumed_s").as_number_in(rec.detected_s, 1e300);
      if (k.has("workers_lost")) {
        const JsonCursor lost = k.at("workers_lost");
        for (size_t w = 0; w < lost.size(); ++w) rec.workers_lost.push_back(lost.at(w).as_string());
      }
      if (k.has("interrupted_s")) {
        rec.interrupted_s =
            k.at("interrupted_s").as_number_in(rec.detected_s, rec.workers_resumed_s);
      }
      rec.recovery_time_s = rec.resumed_s - rec.fault_s;
      rec.checkpoint_start_s = k.at("checkpoint_start_s").as_number_in(0, rec.fault_s);
      rec.lost_work_s = k.at("lost_work_s").as_number_in(0, rec.fault_s);
      rec.checkpoint_global_step = k.at("checkpoint_global_step").as_int(0, INT64_MAX);
      rec.global_step_at_failure =
          k.at("global_step_at_failure").as_int(rec.checkpoint_global_step, INT64_MAX);
      rec.lost_global_steps = rec.global_step_at_failure - rec.checkpoint_global_step;
      r.recoveries.push_back(rec);
    }
  }
  if (meta.has("job_failure")) {
    const JsonCursor failure = meta.at("job_failure");
    r.job_failed = true;
    r.job_failure_s = failure.at("time_s").as_number_in(0, 1e300);
    r.job_failure_cause = failure.at("cause").as_string();
    r.warnings.push_back(
        "the job failed at t = " + format_quantity(r.job_failure_s, Dimension::kTime) + ": " +
        r.job_failure_cause + "; the window ends at the last step before it");
  }
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kCheckpoint) continue;
    if (trace.str(e.label) == "summaries") {
      ++r.summaries_written;
    } else {
      ++r.checkpoints_written;
    }
    r.chief_writing_s += e.end_s - e.start_s;
  }
}

// Step times: the steps wholly inside the window.
// "12.3" (one decimal).
std::string fixed_ratio(double a, double b) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", a / b);
  return text;
}

MeasuredTable add_step_times(RunMetrics& r, const Trace& trace, const Meta& meta,
                             StepTable& steps) {
  const double window_start = r.window_start_s, window_end = r.window_end_s;
  std::vector<double> durations;
  std::unordered_map<uint32_t, std::vector<bool>> measured;
  for (const std::string& client : meta.clients) {
    const uint32_t id = trace.find(client);
    ClientMetrics cm;
    cm.name = client;
    cm.died = meta.died_at_s.count(client) > 0;
    double sum = 0;
    std::vector<bool>& inside = measured[id];
    const std::vector<Span>& spans = steps[id];
    inside.assign(spans.size(), false);
    for (size_t k = 0; k < spans.size(); ++k) {
      const Span& s = spans[k];
      if (s.end_s < 0 || s.start_s < window_start - kTimeEpsilonS ||
          s.end_s > window_end + kTimeEpsilonS) {
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
      // A step that overlaps the window without lying in it is left out of the step times: say
      // so when one is much longer than the rest (a stall behind a link cut, say).
      const Span* longest = nullptr;
      for (size_t k = 0; k < spans.size(); ++k) {
        const Span& span = spans[k];
        if (inside[k] || span.end_s < 0 || span.end_s <= window_start || span.start_s >= window_end)
          continue;
        if (longest == nullptr || span.end_s - span.start_s > longest->end_s - longest->start_s) {
          longest = &span;
        }
      }
      if (longest != nullptr &&
          longest->end_s - longest->start_s > kLongStepFactor * cm.mean_step_time_s) {
        r.warnings.push_back(client + " has a step of " +
                             format_quantity(longest->end_s - longest->start_s, Dimension::kTime) +
                             " from t = " + format_quantity(longest->start_s, Dimension::kTime) +
                             " across the window's edge, " +
                             fixed_ratio(longest->end_s - longest->start_s, cm.mean_step_time_s) +
                             "x its mean step time; the step times leave it out");
      }
    }
    if (cm.measured_steps < kFewMeasuredSteps && meta.died_at_s.count(client) == 0 &&
        meta.data_limited.count(client) == 0) {
      r.warnings.push_back(client + " has " + std::to_string(cm.measured_steps) +
                           " step(s) wholly inside the measured window, so its step time is "
                           "noisy or missing; raise training.steps");
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

// Utilisation of devices and link directions over the window; the bottleneck.
void add_utilisation(RunMetrics& r, const Trace& trace, const Meta& meta) {
  const double window_start = r.window_start_s, window_end = r.window_end_s;
  const double window = window_end - window_start;
  const Platform& p = meta.platform;
  std::unordered_map<std::string, int> device_index;
  for (size_t d = 0; d < p.devices.size(); ++d) device_index[p.devices[d].name] = int(d);
  std::vector<double> busy(p.devices.size(), 0.0);
  std::vector<double> channel_bytes(size_t(p.channel_count()), 0.0);
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kCompute) {
      auto found = device_index.find(trace.str(e.device));
      if (found == device_index.end()) continue;
      busy[size_t(found->second)] += overlap(e.start_s, e.end_s, window_start, window_end);
    } else if (e.kind == EventKind::kTransfer && e.bytes > 0 && e.end_s > e.start_s) {
      auto src = device_index.find(trace.str(e.device));
      auto dst = device_index.find(trace.str(e.peer));
      if (src == device_index.end() || dst == device_index.end()) continue;
      const double fraction =
          overlap(e.start_s, e.end_s, window_start, window_end) / (e.end_s - e.start_s);
      if (fraction <= 0) continue;
      for (const Hop& hop : p.route(src->second, dst->second)) {
        channel_bytes[size_t(p.channel_of(hop))] += e.bytes * fraction;
      }
    }
  }
  for (size_t d = 0; d < p.devices.size(); ++d) {
    r.devices.push_back({p.devices[d].name, busy[d] / (window * p.devices[d].cores)});
  }
  for (int ch = 0; ch < p.channel_count(); ++ch) {
    if (!p.channel_exists(ch)) continue;
    r.links.push_back({p.channel_name(ch),
                       channel_bytes[size_t(ch)] / (p.channel_bandwidth_bytes_per_s(ch) * window)});
  }
  sort_by_use(r.devices);
  sort_by_use(r.links);
  r.bottleneck = r.devices.front();
  if (!r.links.empty() && r.links.front().utilization > r.bottleneck.utilization) {
    r.bottleneck = r.links.front();
  }
  if (r.bottleneck.utilization < kSaturatedUtilization) {
    r.warnings.push_back(
        "no resource is saturated over the window (the busiest, " + r.bottleneck.name + ", is " +
        std::to_string(int(std::lround(r.bottleneck.utilization * 100))) +
        "% busy): the steps wait along the chain of dependent compute and transfers, or load "
        "different resources in turn; see what each role waited on");
  }
}

// What each computing role waited on, over its measured steps.
void add_waits(RunMetrics& r, const Trace& trace, const Meta& meta, StepTable& steps,
               MeasuredTable& measured) {
  std::map<std::pair<uint32_t, int64_t>, std::vector<const TraceEvent*>> groups;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kCompute || e.kind == EventKind::kTransfer) {
      groups[{e.client, e.step}].push_back(&e);
    }
  }
  // The computing roles of each client graph (not PS), from all of its steps.
  std::map<uint32_t, std::vector<uint32_t>> roles_of_client;
  for (const auto& [key, group] : groups) {
    std::vector<uint32_t>& roles = roles_of_client[key.first];
    for (const TraceEvent* e : group) {
      const auto kind = meta.role_kind.find(trace.str(e->actor));
      if (kind == meta.role_kind.end() || kind->second == "ps") continue;
      if (std::find(roles.begin(), roles.end(), e->actor) == roles.end()) {
        roles.push_back(e->actor);
      }
    }
  }
  std::map<uint32_t, std::vector<double>> seconds_by_role;
  const std::vector<const TraceEvent*> no_events;
  for (const auto& [client, roles] : roles_of_client) {
    const std::vector<bool>& inside = measured[client];
    for (size_t k = 0; k < inside.size(); ++k) {
      if (!inside[k]) continue;
      const auto group = groups.find({client, int64_t(k)});
      const auto& events = group == groups.end() ? no_events : group->second;
      for (uint32_t role : roles) {
        std::vector<double>& seconds = seconds_by_role[role];
        seconds.resize(kCategories, 0.0);
        accumulate_waits(trace, events, steps[client][k], role, meta, seconds);
      }
    }
  }
  for (const auto& [role, seconds] : seconds_by_role) {
    double total = 0;
    for (double s : seconds) total += s;
    if (total <= 0) continue;
    WaitBreakdown w;
    w.role = trace.str(role);
    w.role_kind = meta.role_kind.at(w.role);
    w.compute = seconds[kCompute] / total;
    w.network = seconds[kNetwork] / total;
    w.client = seconds[kClient] / total;
    w.peers = seconds[kPeers] / total;
    w.ps = seconds[kPs] / total;
    w.token = seconds[kToken] / total;
    w.other = seconds[kOther] / total;
    r.waits.push_back(w);
  }
}

// GPU memory from the metadata: tightest first, a warning for each GPU that cannot hold its share.
void add_memory(RunMetrics& r, const Trace& trace, const std::string& source) {
  const JsonCursor c(trace.meta, source, "/meta");
  r.granularity = c.has("granularity") ? c.at("granularity").as_string() : "layer";
  if (c.has("notes")) {
    const JsonCursor notes = c.at("notes");
    for (size_t i = 0; i < notes.size(); ++i) r.notes.push_back(notes.at(i).as_string());
  }
  if (!c.has("memory")) return;
  const JsonCursor memory = c.at("memory");
  for (size_t i = 0; i < memory.size(); ++i) {
    const JsonCursor m = memory.at(i);
    r.memory.push_back({m.at("device").as_string(), m.at("needed_bytes").as_number(),
                        m.at("capacity_bytes").as_number()});
  }
  std::stable_sort(r.memory.begin(), r.memory.end(), [](const MemoryUse& a, const MemoryUse& b) {
    return a.needed_bytes / a.capacity_bytes > b.needed_bytes / b.capacity_bytes;
  });
  for (const MemoryUse& m : r.memory) {
    if (m.headroom_bytes() >= 0) continue;
    r.warnings.push_back(m.device + " needs " + format_quantity(m.needed_bytes, Dimension::kBytes) +
                         " of memory but has " +
                         format_quantity(m.capacity_bytes, Dimension::kBytes) +
                         " (weights, gradients, optimizer state and activations x batch); the "
                         "run would not fit");
  }
}

}  // namespace

RunMetrics compute_metrics(const Trace& trace, const std::string& source) {
  const Meta meta = read_meta(trace, source);
  RunMetrics r;
  r.scenario = meta.scenario;
  r.strategy = meta.strategy;
  r.events = trace.events.size();
  r.bytes_per_ps = meta.bytes_per_ps;
  const JsonCursor meta_cursor(trace.meta, source, "/meta");
  if (meta_cursor.has("simulated_time_s")) {
    r.simulated_time_s = meta_cursor.at("simulated_time_s").as_number_in(0, 1e300);
  }
  add_memory(r, trace, source);
  add_recoveries(r, trace, source);
  StepTable steps = step_spans(trace, meta);
  if (meta.synchronous) {
    find_sync_window(r, trace, meta, source);
    add_sync_figures(r, trace, meta, source);
  } else {
    find_window(r, trace, meta, steps, source);
  }
  add_update_figures(r, trace);
  add_faults(r, trace, steps);
  MeasuredTable measured = add_step_times(r, trace, meta, steps);
  add_utilisation(r, trace, meta);
  add_waits(r, trace, meta, steps, measured);
  return r;
}

std::vector<WaitBreakdown> average_waits_by_kind(const std::vector<WaitBreakdown>& waits) {
  std::vector<WaitBreakdown> out;
  for (const char* kind : {"worker", "tower", "client"}) {
    WaitBreakdown sum;
    sum.role = kind;
    sum.role_kind = kind;
    int n = 0;
    for (const WaitBreakdown& w : waits) {
      if (w.role_kind != kind) continue;
      sum.compute += w.compute;
      sum.network += w.network;
      sum.client += w.client;
      sum.peers += w.peers;
      sum.ps += w.ps;
      sum.token += w.token;
      sum.other += w.other;
      ++n;
    }
    if (n == 0) continue;
    for (double* f :
         {&sum.compute, &sum.network, &sum.client, &sum.peers, &sum.ps, &sum.token, &sum.other}) {
      *f /= n;
    }
    out.push_back(sum);
  }
  return out;
}

}  // namespace replisim::core
