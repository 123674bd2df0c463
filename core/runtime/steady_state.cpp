#include "core/runtime/steady_state.h"

#include <algorithm>
#include <cmath>

namespace replisim::core {

SteadyStateStop::SteadyStateStop(const Plan& plan)
    : plan_(plan),
      tolerance_(plan.steady_tolerance),
      synchronous_(plan.sync == "sync"),
      warm_s_(plan.clients.size(), -1.0),
      dead_(plan.clients.size(), false) {
  // core/metrics' kFewMeasuredSteps (3) plus one, per client, for asynchronous training; this
  // floor cannot include core/metrics.
  if (!synchronous_) min_updates_ = std::max(min_updates_, 4 * int(plan.clients.size()));
  for (const PlanFault& f : plan.faults) {
    const bool windowed = f.kind == PlanFaultKind::kSlowdown || f.kind == PlanFaultKind::kLink;
    const double end_s = !windowed ? f.at_s : f.open_ended ? f.from_s : f.until_s;
    last_fault_end_s_ = std::max(last_fault_end_s_, end_s);
  }
}

bool SteadyStateStop::step_ended(int client, int64_t step, double start_s, double end_s,
                                 int64_t global_step) {
  if (!enabled() || stopped_) return false;
  if (step == 0) first_step_start_s_ = std::min(first_step_start_s_, start_s);
  if (synchronous_) return false;
  double& warm = warm_s_[size_t(client)];
  if (warm < 0 && plan_.warmup_steps == 0) warm = start_s;
  if (warm < 0 && step + 1 == plan_.warmup_steps) warm = end_s;
  return stop_if_steady(end_s, global_step);
}

bool SteadyStateStop::update(double at_s, double samples, int64_t global_step_after) {
  if (!enabled() || stopped_) return false;
  estimator_.add_update(at_s, samples);
  if (!synchronous_) return false;
  if (sync_start_s_ < 0 && plan_.warmup_steps > 0 && global_step_after == plan_.warmup_steps) {
    sync_start_s_ = at_s;
  }
  return stop_if_steady(at_s, global_step_after);
}

void SteadyStateStop::restarted(double checkpoint_start_s, double now_s) {
  estimator_.discard(checkpoint_start_s, now_s);
  dead_.assign(dead_.size(), false);
}

void SteadyStateStop::client_died(int client) {
  if (size_t(client) < dead_.size()) dead_[size_t(client)] = true;
}

bool SteadyStateStop::stop_if_steady(double now_s, int64_t global_step) {
  if (now_s < last_fault_end_s_) return false;
  double start_s = -1;
  if (synchronous_) {
    start_s = plan_.warmup_steps > 0 ? sync_start_s_ : first_step_start_s_;
    if (!std::isfinite(start_s) || start_s < 0) return false;
  } else {
    bool any = false;
    for (size_t c = 0; c < warm_s_.size(); ++c) {
      if (dead_[c]) continue;
      if (warm_s_[c] < 0) return false;
      start_s = std::max(start_s, warm_s_[c]);
      any = true;
    }
    if (!any) return false;
  }
  const SteadyStateEstimator::Estimate e = estimator_.estimate(start_s, now_s);
  if (!e.valid || e.updates < min_updates_ || e.half_width_fraction > tolerance_) return false;
  SteadyStateRecord r;
  r.tolerance = tolerance_;
  r.max_steps = plan_.steps;
  r.converged = true;
  r.stop_s = now_s;
  r.stop_global_step = global_step;
  r.throughput_samples_per_s = e.throughput;
  r.half_width_fraction = e.half_width_fraction;
  r.updates = e.updates;
  stopped_ = r;
  return true;
}

SteadyStateRecord SteadyStateStop::record(double end_s) const {
  if (stopped_) return *stopped_;
  SteadyStateRecord r;
  r.tolerance = tolerance_;
  r.max_steps = plan_.steps;
  double start_s = synchronous_ && plan_.warmup_steps > 0 ? sync_start_s_ : -1;
  if (!synchronous_ || plan_.warmup_steps == 0) {
    for (size_t c = 0; c < warm_s_.size(); ++c) {
      if (!dead_[c]) start_s = std::max(start_s, warm_s_[c]);
    }
    if (synchronous_) start_s = first_step_start_s_;
  }
  if (start_s >= 0 && std::isfinite(start_s)) {
    const SteadyStateEstimator::Estimate e = estimator_.estimate(start_s, end_s);
    r.throughput_samples_per_s = e.throughput;
    r.half_width_fraction = e.valid ? e.half_width_fraction : 0;
    r.updates = e.updates;
  }
  return r;
}

}  // namespace replisim::core
