// Steady-state stopping (training.steps: "auto"): a batch-means estimate of the throughput's 95%
// confidence interval over the measured window, which a backend updates as training goes and asks
// whether the run may stop.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/plan/plan.h"
#include "core/trace/trace_meta.h"

namespace replisim::core {

// The batch-means method (e.g. Law, "Simulation Modeling and Analysis", 5th ed., section 9.5.3):
// the window [start, now] is cut into kBatches batches of equal time; each batch's throughput is
// its updates' samples over its length; their mean is the window's throughput (the figure the
// report gives), and the interval's half width is t(0.975, kBatches - 1) x their standard deviation
// / sqrt(kBatches). Updates are counted as the metrics count them: those ending in (start, now].
//
// Not thread-safe; O(log n) per update and O(kBatches log n) per estimate.
class SteadyStateEstimator {
 public:
  // 20 batches: enough degrees of freedom for a stable t quantile, few enough that each batch
  // holds many updates (Law recommends 10 to 30 batches).
  static constexpr int kBatches = 20;
  // t(0.975, 19), Student's t distribution table.
  static constexpr double kStudentT = 2.093;
  // Fewer updates than this in the window give no estimate: a batch must hold a few updates, or
  // the interval says more about where batch edges fall than about the run.
  static constexpr int kMinUpdates = 4 * kBatches;

  struct Estimate {
    bool valid = false;              // enough updates in the window
    double throughput = 0;           // samples/s over the window
    double half_width = 0;           // samples/s, the 95% interval's half width
    double half_width_fraction = 0;  // half_width / throughput
    int updates = 0;                 // in the window
  };

  // An update (a global_step increment) that ended at `end_s` and carried `samples`. Times must
  // not decrease.
  void add_update(double end_s, double samples);
  // Drops the updates that ended in (after_s, until_s]: a job restart rolled them back.
  void discard(double after_s, double until_s);

  // The estimate over the window (start_s, now_s].
  Estimate estimate(double start_s, double now_s) const;

 private:
  // Samples of the updates that ended at or before `time_s`.
  double samples_until(double time_s) const;
  // Updates that ended at or before `time_s`.
  int64_t updates_until(double time_s) const;

  std::vector<double> end_s_;               // non-decreasing
  std::vector<double> cumulative_samples_;  // samples of updates 0..i
};

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
