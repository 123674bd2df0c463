// Synchronous between-graph training in the simulation: TF's SyncReplicasOptimizer
// (tensorflow/python/training/sync_replicas_optimizer.py, TF 1.x) and its ConditionalAccumulator
// (tensorflow/core/kernels/conditional_accumulator_base.cc):
// - apply_grad drops a gradient whose local_step is older than the accumulator's global step;
// - take_grad(R) waits for R gradients, then resets the accumulator and bumps its global step;
// - the chief's sync op applies the aggregates, increments global_step and enqueues
//   max(T, R) tokens holding the new global_step (R tokens at the start); a worker dequeues one
//   after each step and uses its value as its next local_step.
// The "strict" variant gives each worker one token per global step instead (a worker waits for a
// global_step newer than its local_step).
#include <climits>

#include "sim/sim_run_state.h"

namespace replisim::sim::detail {

void SimRun::prepare_sync() {
  if (plan_.sync != "sync") return;
  const core::SyncReplicas& sr = plan_.sync_replicas;
  sync_.enabled = true;
  sync_.strict = sr.variant == "strict";
  sync_.replicas_to_aggregate = sr.replicas_to_aggregate;
  sync_.tokens_per_step = sr.tokens_per_step;
  reset_sync();
}

// Empty accumulators at global_step and the chief's initial tokens (get_init_tokens_op), as a new
// session (the first, or after a restart) starts them.
void SimRun::reset_sync() {
  sync_.accumulator_step.assign(plan_.variables.size(), global_step_);
  sync_.accumulated.assign(plan_.variables.size(), 0);
  sync_.waiting_take.assign(plan_.variables.size(), {-1, -1});
  sync_.tokens.assign(size_t(plan_.sync_replicas.initial_tokens), global_step_);
  sync_.waiting_dequeue.clear();
  sync_.done = global_step_ >= plan_.steps;
}

bool SimRun::dispatch_sync(int c, int op) {
  switch (clients_[size_t(c)].graph->ops[size_t(op)].kind) {
    case OpKind::kTakeGradient:
      take_gradient(c, op);
      return true;
    case OpKind::kTokenDequeue:
      dequeue_token(c, op);
      return true;
    case OpKind::kTokenEnqueue:
      enqueue_tokens();
      complete(c, op);
      return true;
    default:
      return false;
  }
}

void SimRun::accumulate(int c, int op_index) {
  ClientState& s = clients_[size_t(c)];
  const int v = s.graph->ops[size_t(op_index)].variable;
  if (s.global_step_read < sync_.accumulator_step[size_t(v)]) {
    core::TraceEvent dropped;
    dropped.kind = core::EventKind::kDropped;
    dropped.actor = s.actor[size_t(op_index)];
    dropped.device = s.device_name[size_t(op_index)];
    dropped.label = s.label[size_t(op_index)];
    dropped.client = s.role_name;
    dropped.step = s.step;
    dropped.start_s = dropped.end_s = sg4::Engine::get_clock();
    dropped.global_step_read = s.global_step_read;
    dropped.global_step_after = sync_.accumulator_step[size_t(v)];
    trace_.events.push_back(dropped);
    return;
  }
  ++sync_.accumulated[size_t(v)];
  const auto [waiting_client, waiting_op] = sync_.waiting_take[size_t(v)];
  if (waiting_client >= 0 && sync_.accumulated[size_t(v)] >= sync_.replicas_to_aggregate) {
    sync_.waiting_take[size_t(v)] = {-1, -1};
    take_gradient(waiting_client, waiting_op);
  }
}

void SimRun::take_gradient(int c, int op_index) {
  const int v = clients_[size_t(c)].graph->ops[size_t(op_index)].variable;
  if (sync_.accumulated[size_t(v)] < sync_.replicas_to_aggregate) {
    sync_.waiting_take[size_t(v)] = {c, op_index};
    return;
  }
  sync_.accumulated[size_t(v)] = 0;
  ++sync_.accumulator_step[size_t(v)];
  complete(c, op_index);
}

void SimRun::dequeue_token(int c, int op_index) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  if (sync_.done || (sync_.strict && global_step_ > s.global_step_read)) {
    s.next_local_step = global_step_;
  } else if (!sync_.strict && !sync_.tokens.empty()) {
    s.next_local_step = sync_.tokens.front();
    sync_.tokens.pop_front();
  } else {
    sync_.waiting_dequeue.emplace_back(c, op_index);
    return;
  }
  complete(c, op_index);
}

void SimRun::enqueue_tokens() {
  if (global_step_ >= plan_.steps) sync_.done = true;
  if (!sync_.strict && !sync_.done) {
    sync_.tokens.insert(sync_.tokens.end(), size_t(sync_.tokens_per_step), global_step_);
  }
  std::deque<std::pair<int, int>> waiting;
  waiting.swap(sync_.waiting_dequeue);
  for (const auto& [c, op] : waiting) dequeue_token(c, op);
}

bool SimRun::more_steps(const ClientState& s) const {
  if (s.graph->data_steps > 0 && s.step >= s.graph->data_steps) return false;  // out of data
  switch (s.loop) {
    case StepLoop::kFixedSteps:
      return s.step < plan_.steps;
    case StepLoop::kSyncWorker:
      return s.next_local_step < plan_.steps && s.step < INT_MAX;
    case StepLoop::kChiefSyncOp:
      return global_step_ < plan_.steps;
  }
  return false;
}

nlohmann::json SimRun::sync_stall() const {
  const int workers = int(plan_.clients.size());
  int live = 0, dead = 0, waiting = 0;
  for (int c = 0; c < workers; ++c) {
    live += !clients_[size_t(c)].finished;
    dead += clients_[size_t(c)].dead;
  }
  for (const auto& [c, op] : sync_.waiting_dequeue) waiting += !clients_[size_t(c)].dead;
  const int r = sync_.replicas_to_aggregate;
  std::string cause;
  if (clients_.back().dead) {
    cause =
        "the chief (worker0) died: its sync op, which applies the gradients and hands out the "
        "tokens, no longer runs";
  } else if (sync_.strict && live < r && dead > 0) {
    cause = "live workers (" + std::to_string(live) + ") < replicas_to_aggregate (" +
            std::to_string(r) + "): " + std::to_string(dead) +
            " died and each live one gives one gradient per global step";
  } else if (live == 0) {
    cause = "every worker ran out of data (training.data_steps_per_worker)";
  } else if (sync_.strict && live < r) {
    cause = "live workers (" + std::to_string(live) + ") < replicas_to_aggregate (" +
            std::to_string(r) + "): each gives one gradient per global step";
  } else {
    cause = std::to_string(waiting) + " of " + std::to_string(live) +
            " live workers wait for a token that no global step will enqueue";
  }
  double last_update_s = 0;
  for (auto it = trace_.counters.rbegin(); it != trace_.counters.rend(); ++it) {
    if (it->name == global_step_counter_) {
      last_update_s = it->time_s;
      break;
    }
  }
  return {{"time_s", last_update_s},
          {"global_step", global_step_},
          {"live_workers", live},
          {"detected_s", sg4::Engine::get_clock()},
          {"cause", cause}};
}

}  // namespace replisim::sim::detail
