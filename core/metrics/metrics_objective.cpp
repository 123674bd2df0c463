// The training objective's figures (metrics.h ObjectiveMetrics) from the trace's counters: the
// backends record, per evaluation, the global_step counter of the update that triggered it, then
// "loss", then "accuracy" (sim/sim_values.cpp; the initial evaluation at time 0 has no update).
#include "core/metrics/metrics.h"

namespace replisim::core {

std::vector<ObjectivePoint> objective_curve(const Trace& trace) {
  std::vector<ObjectivePoint> curve;
  const uint32_t global_step = trace.find("global_step");
  const uint32_t loss = trace.find("loss");
  const uint32_t accuracy = trace.find("accuracy");
  if (loss == kNoString || accuracy == kNoString) return curve;
  int64_t step_now = 0;  // the global_step counter's last value (restarts set it back)
  double loss_now = 0;
  for (const CounterSample& sample : trace.counters) {
    if (sample.name == global_step) {
      step_now = int64_t(sample.value);
    } else if (sample.name == loss) {
      loss_now = sample.value;
    } else if (sample.name == accuracy) {  // the pair's second half: one evaluation complete
      curve.push_back({sample.time_s, step_now, loss_now, sample.value});
    }
  }
  return curve;
}

std::optional<ObjectiveMetrics> objective_metrics(const Trace& trace) {
  if (trace.meta.objective_target.empty()) return std::nullopt;
  ObjectiveMetrics m;
  m.target = trace.meta.objective_target;
  m.target_value = trace.meta.objective_target_value;
  const bool by_accuracy = m.target == "accuracy";
  for (const ObjectivePoint& p : objective_curve(trace)) {
    ++m.evaluations;
    m.final_loss = p.loss;
    m.final_accuracy = p.accuracy;
    m.final_s = p.time_s;
    m.final_global_step = p.global_step;
    const bool reached = by_accuracy ? p.accuracy >= m.target_value : p.loss <= m.target_value;
    if (reached && !m.reached()) {
      m.time_to_target_s = p.time_s;
      m.global_steps_to_target = p.global_step;
    }
  }
  return m;
}

}  // namespace replisim::core
