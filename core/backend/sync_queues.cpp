#include "core/backend/sync_queues.h"

#include <string>

namespace replisim::core {

SyncQueues::SyncQueues(const Plan& plan, TraceRecorder& recorder, SyncHost& host)
    : plan_(plan), graphs_(step_graphs(plan)), recorder_(recorder), host_(host) {
  if (plan.sync != "sync") return;
  const SyncReplicas& sr = plan.sync_replicas;
  enabled_ = true;
  strict_ = sr.variant == "strict";
  replicas_to_aggregate_ = sr.replicas_to_aggregate;
  tokens_per_step_ = sr.tokens_per_step;
}

void SyncQueues::reset() {
  const int64_t global_step = host_.global_step();
  accumulator_step_.assign(plan_.variables.size(), global_step);
  accumulated_.assign(plan_.variables.size(), 0);
  waiting_take_.assign(plan_.variables.size(), {-1, -1});
  tokens_.assign(size_t(plan_.sync_replicas.initial_tokens), global_step);
  waiting_dequeue_.clear();
  done_ = global_step >= plan_.steps;
}

bool SyncQueues::dispatch(int c, int op, OpKind kind) {
  switch (kind) {
    case OpKind::kTakeGradient:
      take_gradient(c, op);
      return true;
    case OpKind::kTokenDequeue:
      dequeue_token(c, op);
      return true;
    case OpKind::kTokenEnqueue:
      enqueue_tokens();
      host_.sync_complete(c, op);
      return true;
    default:
      return false;
  }
}

bool SyncQueues::fresh(int c, int op) const {
  const int v = graphs_[size_t(c)]->ops[size_t(op)].variable;
  return host_.local_step(c) >= accumulator_step_[size_t(v)];
}

bool SyncQueues::accumulate(int c, int op, int64_t step, double now) {
  const int v = graphs_[size_t(c)]->ops[size_t(op)].variable;
  const int64_t local_step = host_.local_step(c);
  if (local_step < accumulator_step_[size_t(v)]) {
    recorder_.dropped(c, op, step, now, local_step, accumulator_step_[size_t(v)]);
    return false;
  }
  ++accumulated_[size_t(v)];
  const auto [waiting_client, waiting_op] = waiting_take_[size_t(v)];
  if (waiting_client >= 0 && accumulated_[size_t(v)] >= replicas_to_aggregate_) {
    waiting_take_[size_t(v)] = {-1, -1};
    take_gradient(waiting_client, waiting_op);
  }
  return true;
}

void SyncQueues::take_gradient(int c, int op) {
  const int v = graphs_[size_t(c)]->ops[size_t(op)].variable;
  if (accumulated_[size_t(v)] < replicas_to_aggregate_) {
    waiting_take_[size_t(v)] = {c, op};
    return;
  }
  accumulated_[size_t(v)] = 0;
  ++accumulator_step_[size_t(v)];
  host_.sync_complete(c, op);
}

void SyncQueues::dequeue_token(int c, int op) {
  if (host_.client_dead(c)) return;
  const int64_t global_step = host_.global_step();
  if (done_ || (strict_ && global_step > host_.local_step(c))) {
    host_.set_next_local_step(c, global_step);
  } else if (!strict_ && !tokens_.empty()) {
    host_.set_next_local_step(c, tokens_.front());
    tokens_.pop_front();
  } else {
    waiting_dequeue_.emplace_back(c, op);
    return;
  }
  host_.sync_complete(c, op);
}

void SyncQueues::enqueue_tokens() {
  const int64_t global_step = host_.global_step();
  if (global_step >= plan_.steps) done_ = true;
  if (!strict_ && !done_) tokens_.insert(tokens_.end(), size_t(tokens_per_step_), global_step);
  std::deque<std::pair<int, int>> waiting;
  waiting.swap(waiting_dequeue_);
  for (const auto& [c, op] : waiting) dequeue_token(c, op);
}

StallRecord SyncQueues::stall(const std::vector<bool>& finished, const std::vector<bool>& dead,
                              double last_update_s, double now) const {
  const int workers = int(plan_.clients.size());
  int live = 0, died = 0, waiting = 0;
  for (int c = 0; c < workers; ++c) {
    live += !finished[size_t(c)];
    died += dead[size_t(c)];
  }
  for (const auto& [c, op] : waiting_dequeue_) waiting += !dead[size_t(c)];
  const int r = replicas_to_aggregate_;
  std::string cause;
  if (dead.back()) {
    cause =
        "the chief (worker0) died: its sync op, which applies the gradients and hands out the "
        "tokens, no longer runs";
  } else if (strict_ && live < r && died > 0) {
    cause = "live workers (" + std::to_string(live) + ") < replicas_to_aggregate (" +
            std::to_string(r) + "): " + std::to_string(died) +
            " died and each live one gives one gradient per global step";
  } else if (live == 0) {
    cause = "every worker ran out of data (training.data_steps_per_worker)";
  } else if (strict_ && live < r) {
    cause = "live workers (" + std::to_string(live) + ") < replicas_to_aggregate (" +
            std::to_string(r) + "): each gives one gradient per global step";
  } else {
    cause = std::to_string(waiting) + " of " + std::to_string(live) +
            " live workers wait for a token that no global step will enqueue";
  }
  return {last_update_s, host_.global_step(), live, now, cause};
}

}  // namespace replisim::core
