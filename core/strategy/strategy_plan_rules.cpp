// The strategies' own plan rules (Strategy::check_plan) and check_plan_rules. The rules here are
// those of TF 1.x's parameter-server training, in-graph and between-graph alike: variables live on
// parameter servers (tf.train.replica_device_setter), and a client that trains asynchronously
// increments global_step once per step (the optimizer's minimize(global_step=...)).
#include "core/strategy/plan_rules.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/strategy/strategy.h"

namespace replisim::core {

namespace strategy_detail {

void require_parameter_servers(const Plan& plan, const std::string& file) {
  if (plan.ps_roles.empty()) {
    throw InputError(file, "/ps_roles",
                     "a plan of strategy " + plan.strategy +
                         " needs a parameter server (its variables live there)");
  }
}

void require_global_step_increments(const Plan& plan, const std::string& file) {
  if (plan.sync == "sync") return;  // the chief's sync op increments it (validate_plan)
  if (plan.forward_only) return;    // no update: validate_plan refuses an increment
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    if (plan.clients[c].global_step_op < 0) {
      throw InputError(file, "/clients/" + std::to_string(c) + "/global_step_op",
                       "a client of strategy " + plan.strategy + " training with sync \"" +
                           plan.sync + "\" increments global_step: name its op");
    }
  }
}

void require_barriers(const Plan& plan, const std::string& file) {
  if (plan.sync != kDistributedReplicated) return;
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    const std::vector<Op>& ops = plan.clients[c].ops;
    const bool barrier = std::any_of(ops.begin(), ops.end(),
                                     [](const Op& op) { return op.kind == OpKind::kBarrier; });
    if (!barrier) {
      throw InputError(file, "/clients/" + std::to_string(c) + "/ops",
                       "a worker of sync \"distributed_replicated\" passes a barrier each step "
                       "(tf_cnn_benchmarks' cross_replica_sync); this one passes none");
    }
  }
}

void refuse_sync_replicas(const Plan& plan, const std::string& file) {
  if (plan.sync == "sync" || plan.sync == kDistributedReplicated) {
    throw InputError(file, "/sync",
                     "strategy " + plan.strategy + " has no sync \"" + plan.sync +
                         "\" (one client applies every tower's gradients itself)");
  }
}

}  // namespace strategy_detail

void check_plan_rules(const Plan& plan, const std::string& file) {
  validate_plan(plan, file);
  const Strategy* strategy = find_strategy(plan.strategy);
  if (strategy != nullptr && strategy->check_plan) strategy->check_plan(plan, file);
}

}  // namespace replisim::core
