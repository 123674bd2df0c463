// The training objective in the simulation (issue 40): the value engine (core/values) gives each
// completed op its meaning at the simulated instant it completes, in zero simulated time (as
// SimGrid's SMPI runs an application's real arithmetic while the model gives the time); its
// evaluations become the trace's "loss" and "accuracy" counters.
#include "sim/sim_engine.h"

namespace replisim::sim::detail {

void SimRun::compute_values(int c, int op) {
  if (!values_) return;
  core::OpMoment at;
  at.step = loop_.client(c).step;
  at.global_step = global_step_;
  at.global_step_read = clients_[size_t(c)].global_step_read;
  // Whether the accumulator counts it is decided before it does (SyncQueues::accumulate).
  if (clients_[size_t(c)].graph->ops[size_t(op)].kind == core::OpKind::kAccumulate) {
    at.fresh = sync_.fresh(c, op);
  }
  values_->op_completed(c, op, at);
}

void SimRun::values_updated(double at_s) {
  if (!values_) return;
  if (const std::optional<core::ValueEvaluation> e = values_->updated(global_step_)) {
    record_evaluation(*e, at_s);
  }
}

void SimRun::record_evaluation(const core::ValueEvaluation& evaluation, double at_s) {
  if (objective_diverged_) return;
  if (!evaluation.finite()) {
    objective_diverged_ = true;
    outcome_.notes.push_back(core::diverged_note(evaluation.global_step));
    return;
  }
  recorder_.counter("loss", at_s, evaluation.result.loss);
  recorder_.counter("accuracy", at_s, evaluation.result.accuracy);
}

}  // namespace replisim::sim::detail
