// Steady-state stopping (training.steps: "auto"): the rule a backend drives as training goes,
// over the batch-means estimate of core/base/steady_state_estimator.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/base/steady_state_estimator.h"
#include "core/plan/plan.h"
#include "core/trace/trace_meta.h"

namespace replisim::core {

// The stopping rule of a run whose plan has a steady_tolerance, as a backend drives it: it follows
// the measured window as the metrics define it (core/metrics/metrics.h) and says when the run may
// stop. Asynchronous and in-graph training stop at a step's end (every other client ends the step
// it is in or about to start, so the window ends there); synchronous training stops at an update
// (the chief's sync op ends there and the workers take their last tokens, as a run of that many
// global steps would). Faults keep their meaning: no stop before the last fault window has ended
// (a fault with only a start counts from it). Not thread-safe.
class SteadyStateStop {
 public:
  // `plan` must outlive the rule. Disabled when plan.steady_tolerance is 0.
  explicit SteadyStateStop(const Plan& plan);
  bool enabled() const { return tolerance_ > 0; }

  // Client `client` (an index into Plan::clients) finished its local step `step` (from 0), run over
  // [start_s, end_s], global_step being `global_step`. Returns true when the run should stop now
  // (asynchronous or in-graph).
  bool step_ended(int client, int64_t step, double start_s, double end_s, int64_t global_step);
  // An update made global_step `global_step_after` at `at_s`, carrying `samples`. Returns true
  // when a synchronous run should stop with this update.
  bool update(double at_s, double samples, int64_t global_step_after);
  // A fault killed client `client`: it no longer opens the window.
  void client_died(int client);
  // A job restart at `now_s` rolled back the updates after `checkpoint_start_s` (0: all of
  // them), and brought every client back.
  void restarted(double checkpoint_start_s, double now_s);

  // The rule held, but the run did not end there: it stalled first (a worker that died as the
  // rule held leaves the others at a barrier or without tokens). The record then gives the
  // estimate over the window up to the run's end, not converged, as for a run that ended first.
  void stop_overtaken() { stopped_.reset(); }

  // What the run's outcome records (`end_s`: the run's end): the stop, or the last estimate when
  // max_steps came first.
  SteadyStateRecord record(double end_s) const;

 private:
  bool stop_if_steady(double now_s, int64_t global_step);

  const Plan& plan_;
  double tolerance_ = 0;
  bool synchronous_ = false;
  double last_fault_end_s_ = 0;
  SteadyStateEstimator estimator_;
  // The window's start as the metrics find it: per client, when it warmed up (-1: not yet).
  std::vector<double> warm_s_;
  std::vector<bool> dead_;
  double sync_start_s_ = -1;  // synchronous: the update that made global_step warmup_steps
  double first_step_start_s_ = INFINITY;
  // Asynchronous: a few measured steps per client (the metrics warn below kFewMeasuredSteps).
  int min_updates_ = SteadyStateEstimator::kMinUpdates;
  std::optional<SteadyStateRecord> stopped_;
};

}  // namespace replisim::core
