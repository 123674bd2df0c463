#include "core/runtime/sync_queues.h"

#include <cmath>
#include <map>
#include <string>

namespace replisim::core {

SyncQueues::SyncQueues(const Plan& plan, TraceRecorder& recorder, SyncHost& host)
    : plan_(plan), graphs_(step_graphs(plan)), recorder_(recorder), host_(host) {
  if (plan.sync == kDistributedReplicated) {
    std::map<std::string, int> id;
    for (const ClientGraph* graph : graphs_) {
      std::vector<int>& of_op = barrier_of_op_.emplace_back(graph->ops.size(), -1);
      for (size_t k = 0; k < graph->ops.size(); ++k) {
        if (graph->ops[k].kind != OpKind::kBarrier) continue;
        const auto [it, added] = id.emplace(graph->ops[k].name, int(barrier_names_.size()));
        if (added) barrier_names_.push_back(graph->ops[k].name);
        of_op[k] = it->second;
      }
    }
    return;
  }
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
  accumulated_samples_.assign(plan_.variables.size(), 0);
  taken_samples_ = 0;
  takes_ = 0;
  waiting_take_.assign(plan_.variables.size(), {-1, -1});
  tokens_.assign(size_t(plan_.sync_replicas.initial_tokens), global_step);
  waiting_dequeue_.clear();
  done_ = global_step >= plan_.steps;
  barrier_tokens_.assign(barrier_names_.size(), std::vector<int>(graphs_.size(), 0));
  barrier_waiting_.assign(barrier_names_.size(), std::vector<int>(graphs_.size(), -1));
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
    case OpKind::kBarrier:
      arrive_at_barrier(c, op);
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
  accumulated_samples_[size_t(v)] += graphs_[size_t(c)]->samples_per_step;
  const auto [waiting_client, waiting_op] = waiting_take_[size_t(v)];
  if (waiting_client >= 0 && accumulated_[size_t(v)] >= replicas_to_aggregate_) {
    waiting_take_[size_t(v)] = {-1, -1};
    take_gradient(waiting_client, waiting_op);
  }
  return true;
}

std::optional<int> SyncQueues::take_update_samples() {
  if (takes_ == 0) return std::nullopt;
  const int samples = int(std::llround(double(taken_samples_) / takes_));
  taken_samples_ = 0;
  takes_ = 0;
  return samples;
}

void SyncQueues::take_gradient(int c, int op) {
  const int v = graphs_[size_t(c)]->ops[size_t(op)].variable;
  if (accumulated_[size_t(v)] < replicas_to_aggregate_) {
    waiting_take_[size_t(v)] = {c, op};
    return;
  }
  accumulated_[size_t(v)] = 0;
  taken_samples_ += accumulated_samples_[size_t(v)];
  ++takes_;
  accumulated_samples_[size_t(v)] = 0;
  ++accumulator_step_[size_t(v)];
  host_.sync_complete(c, op);
}

void SyncQueues::arrive_at_barrier(int c, int op) {
  if (host_.client_dead(c)) return;
  const int b = barrier_of_op_[size_t(c)][size_t(op)];
  std::vector<int>& tokens = barrier_tokens_[size_t(b)];
  for (size_t j = 0; j < tokens.size(); ++j) tokens[j] += int(j) != c;
  barrier_waiting_[size_t(b)][size_t(c)] = op;
  release_barrier(b, c);  // this worker first, as its own dequeue runs right after its enqueues
  for (size_t j = 0; j < tokens.size(); ++j) {
    if (int(j) != c) release_barrier(b, int(j));
  }
}

// Worker c's dequeue_many(workers - 1) at barrier b, if it waits and its tokens are in.
void SyncQueues::release_barrier(int b, int c) {
  int& waiting = barrier_waiting_[size_t(b)][size_t(c)];
  int& tokens = barrier_tokens_[size_t(b)][size_t(c)];
  const int needed = int(graphs_.size()) - 1;
  if (waiting < 0 || tokens < needed || host_.client_dead(c)) return;
  tokens -= needed;
  const int op = waiting;
  waiting = -1;
  host_.sync_complete(c, op);
}

bool SyncQueues::any_waiting() const {
  for (const std::vector<int>& waiting : barrier_waiting_) {
    for (int op : waiting) {
      if (op >= 0) return true;
    }
  }
  return false;
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

StallRecord SyncQueues::barrier_stall(const std::vector<bool>& finished,
                                      const std::vector<bool>& dead, double last_update_s,
                                      double now) const {
  int live = 0, died = 0, gone = 0;
  for (size_t c = 0; c < finished.size(); ++c) {
    live += !finished[c];
    died += dead[c];
    gone += finished[c] || dead[c];
  }
  std::string cause;
  for (size_t b = 0; b < barrier_names_.size() && cause.empty(); ++b) {
    int waiting = 0;
    for (size_t c = 0; c < finished.size(); ++c) waiting += barrier_waiting_[b][c] >= 0;
    if (waiting == 0) continue;
    const std::string at = std::to_string(waiting) + " of " + std::to_string(live) +
                           " live workers wait at barrier \"" + barrier_names_[b] + "\"";
    if (gone == 0) {
      cause = at + " with no worker gone: the workers' barriers wait for each other (a deadlock)";
    } else {
      cause =
          at + " for " +
          (died > 0 ? std::to_string(died) + " dead worker(s)" : "workers that ran out of data") +
          ", which will never reach it";
    }
  }
  if (cause.empty()) cause = "every worker ran out of data (training.data_steps_per_worker)";
  return {last_update_s, host_.global_step(), live, now, cause};
}

StallRecord SyncQueues::stall(const std::vector<bool>& finished, const std::vector<bool>& dead,
                              double last_update_s, double now) const {
  if (barriers()) return barrier_stall(finished, dead, last_update_s, now);
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
