// The training objective's figures (metrics.h ObjectiveMetrics) from the trace's counters: the
// backends record, per evaluation, the global_step counter of the update that triggered it, then
// "loss", then "accuracy" (sim/sim_values.cpp; the initial evaluation at time 0 has no update).
#include "core/metrics/metrics.h"

namespace replisim::core {

std::optional<ObjectiveMetrics> objective_metrics(const Trace& trace) {
  if (trace.meta.objective_target.empty()) return std::nullopt;
  ObjectiveMetrics m;
  m.target = trace.meta.objective_target;
  m.target_value = trace.meta.objective_target_value;
  const bool by_accuracy = m.target == "accuracy";
  const uint32_t global_step = trace.find("global_step");
  const uint32_t loss = trace.find("loss");
  const uint32_t accuracy = trace.find("accuracy");
  if (loss == kNoString || accuracy == kNoString) return m;
  int64_t step_now = 0;  // the global_step counter's last value (restarts set it back)
  for (const CounterSample& sample : trace.counters) {
    if (sample.name == global_step) {
      step_now = int64_t(sample.value);
    } else if (sample.name == loss) {
      m.final_loss = sample.value;
    } else if (sample.name == accuracy) {
      // The pair's second half: one evaluation complete.
      ++m.evaluations;
      m.final_accuracy = sample.value;
      m.final_s = sample.time_s;
      m.final_global_step = step_now;
      const bool reached =
          by_accuracy ? m.final_accuracy >= m.target_value : m.final_loss <= m.target_value;
      if (reached && !m.reached()) {
        m.time_to_target_s = sample.time_s;
        m.global_steps_to_target = step_now;
      }
    }
  }
  return m;
}

}  // namespace replisim::core
