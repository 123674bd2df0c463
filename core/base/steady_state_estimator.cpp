#include "core/base/steady_state_estimator.h"

#include <algorithm>
#include <cmath>

namespace replisim::core {

void SteadyStateEstimator::add_update(double end_s, double samples) {
  end_s_.push_back(end_s);
  cumulative_samples_.push_back((cumulative_samples_.empty() ? 0.0 : cumulative_samples_.back()) +
                                samples);
}

void SteadyStateEstimator::discard(double after_s, double until_s) {
  std::vector<double> kept_end, kept_cumulative;
  double previous = 0, total = 0;
  for (size_t i = 0; i < end_s_.size(); ++i) {
    const double samples = cumulative_samples_[i] - previous;
    previous = cumulative_samples_[i];
    if (end_s_[i] > after_s && end_s_[i] <= until_s) continue;
    total += samples;
    kept_end.push_back(end_s_[i]);
    kept_cumulative.push_back(total);
  }
  end_s_ = std::move(kept_end);
  cumulative_samples_ = std::move(kept_cumulative);
}

int64_t SteadyStateEstimator::updates_until(double time_s) const {
  return std::upper_bound(end_s_.begin(), end_s_.end(), time_s) - end_s_.begin();
}

double SteadyStateEstimator::samples_until(double time_s) const {
  const int64_t n = updates_until(time_s);
  return n == 0 ? 0.0 : cumulative_samples_[size_t(n - 1)];
}

SteadyStateEstimator::Estimate SteadyStateEstimator::estimate(double start_s, double now_s) const {
  Estimate e;
  if (!(now_s > start_s)) return e;
  e.updates = int(updates_until(now_s) - updates_until(start_s));
  const double window_s = now_s - start_s;
  e.throughput = (samples_until(now_s) - samples_until(start_s)) / window_s;
  if (e.updates < kMinUpdates || e.throughput <= 0) return e;
  const double batch_s = window_s / kBatches;
  double sum_squares = 0;
  double before = samples_until(start_s);
  for (int b = 0; b < kBatches; ++b) {
    const double edge = b + 1 == kBatches ? now_s : start_s + batch_s * (b + 1);
    const double after = samples_until(edge);
    const double deviation = (after - before) / batch_s - e.throughput;
    sum_squares += deviation * deviation;
    before = after;
  }
  const double deviation = std::sqrt(sum_squares / (kBatches - 1));
  // Updates are whole: where the window's ends fall between two updates moves the throughput by
  // up to one update in n, which batches holding equal counts (a periodic run) would not show.
  const double resolution = 1.0 / e.updates;
  e.half_width_fraction =
      std::max(kStudentT * deviation / std::sqrt(double(kBatches)) / e.throughput, resolution);
  e.half_width = e.half_width_fraction * e.throughput;
  e.valid = true;
  return e;
}

}  // namespace replisim::core
