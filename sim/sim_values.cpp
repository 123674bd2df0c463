// The training objective in the simulation (issue 40): the value engine (core/values) gives each
// completed op its meaning at the simulated instant it completes, in zero simulated time (as
// SimGrid's SMPI runs an application's real arithmetic while the model gives the time); its
// evaluations become the trace's "loss" and "accuracy" counters.
#include "sim/sim_engine.h"

namespace replisim::sim::detail {

std::optional<core::ValueEvaluation> SimRun::compute_values(int c, int op) {
  if (!values_) return std::nullopt;
  // Between-graph asynchronous plans only (core::objective_computed_by_simulator): one graph per
  // worker, numbered as Plan::clients.
  return values_->op_completed(c, op, loop_.client(c).step, global_step_,
                               clients_[size_t(c)].global_step_read);
}

void SimRun::record_evaluation(const core::ValueEvaluation& evaluation, double at_s) {
  recorder_.counter("loss", at_s, evaluation.result.loss);
  recorder_.counter("accuracy", at_s, evaluation.result.accuracy);
}

}  // namespace replisim::sim::detail
