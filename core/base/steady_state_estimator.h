// The throughput's 95% confidence interval by batch means (training.steps: "auto"): the backends'
// stopping rule (core/runtime/steady_state.h) and the metrics of a run that ended first use it.
#pragma once

#include <cstdint>
#include <vector>

namespace replisim::core {

// The batch-means method (e.g. Law, "Simulation Modeling and Analysis", 5th ed., section 9.5.3):
// the window [start, now] is cut into kBatches batches of equal time; each batch's throughput is
// its updates' samples over its length; their mean is the window's throughput (the figure the
// report gives), and the interval's half width is t(0.975, kBatches - 1) x their standard deviation
// / sqrt(kBatches), but never below one update in the window's n (1/n of the throughput: where the
// window's ends fall between updates), so a periodic run whose batches hold equal counts is not
// taken as known exactly. Updates are counted as the metrics count them: those ending in
// (start, now].
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

}  // namespace replisim::core
