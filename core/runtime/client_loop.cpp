#include "core/runtime/client_loop.h"

#include <climits>
#include <string>

#include "core/base/error.h"

namespace replisim::core {

LoopKind loop_kind(const Plan& plan, size_t graph) {
  if (plan.sync != "sync") return LoopKind::kFixedSteps;
  return graph < plan.clients.size() ? LoopKind::kSyncWorker : LoopKind::kChiefSyncOp;
}

ClientLoop::ClientLoop(const Plan& plan, const std::vector<const ClientGraph*>& graphs,
                       StepHost& host)
    : plan_(plan), host_(host) {
  clients_.resize(graphs.size());
  for (size_t c = 0; c < graphs.size(); ++c) {
    clients_[c].graph = graphs[c];
    clients_[c].loop = loop_kind(plan, c);
  }
}

void ClientLoop::start_client(int c) {
  if (host_.client_gone(c)) return;
  if (!more_steps(c)) {  // restored past its last step
    mark_finished(c);
    return;
  }
  if (host_.hold_step(c)) return;
  maybe_produce(c);
  if (host_.session_checkpoint(c, false,
                               [this, c](double ready_s) { host_.start_step_at(c, ready_s); })) {
    return;
  }
  start_step(c);
}

void ClientLoop::start_step(int c) {
  if (host_.client_gone(c)) return;
  LoopClient& s = clients_[size_t(c)];
  s.step_start_s = host_.now_s();
  host_.begin_step(c);
  const int input = s.graph->input_op;
  if (input < 0) return;
  if (s.batches_ready > 0) {
    --s.batches_ready;
    complete(c, input);
    maybe_produce(c);
  } else {
    s.waiting_for_input = true;
  }
}

void ClientLoop::step_done(int c) {
  LoopClient& s = clients_[size_t(c)];
  const double end_s = host_.now_s();
  const double start_s = s.step_start_s;
  if (s.loop != LoopKind::kChiefSyncOp) host_.step_ended(c, s.step, start_s, end_s);
  ++s.step;
  host_.step_counted(c, start_s, end_s);
  // The chief's hooks run after its step: a checkpoint or summaries delay its next step.
  if (host_.is_chief(c) && more_steps(c)) {
    host_.chief_duties(c, end_s, [this, c, end_s, start_s](double pause_s) {
      after_duties(c, end_s, end_s - start_s, pause_s);
    });
    return;
  }
  after_duties(c, end_s, end_s - start_s, 0);
}

void ClientLoop::after_duties(int c, double end_s, double step_s, double pause_s) {
  if (!more_steps(c)) {
    end_session(c);
    return;
  }
  if (host_.hold_step(c)) return;
  if (clients_[size_t(c)].loop == LoopKind::kChiefSyncOp) {
    start_step(c);  // the chief's queue runner runs the sync op again at once
    return;
  }
  const double gap_s = host_.step_gap_s(c, step_s);
  if (gap_s + pause_s <= 0) {
    start_step(c);
  } else {
    host_.start_step_at(c, end_s + pause_s + gap_s);
  }
}

void ClientLoop::next_step(int c) {
  if (!more_steps(c)) {
    end_session(c);
    return;
  }
  if (!host_.hold_step(c)) start_step(c);
}

// The chief's checkpoint hook saves once more when its session ends.
void ClientLoop::end_session(int c) {
  if (host_.session_checkpoint(c, true,
                               [this, c](double ready_s) { host_.finish_at(c, ready_s); })) {
    return;
  }
  mark_finished(c);
}

void ClientLoop::mark_finished(int c) {
  LoopClient& s = clients_[size_t(c)];
  if (s.finished) return;
  s.finished = true;
  host_.finished(c);
}

bool ClientLoop::more_steps(int c) const {
  const LoopClient& s = clients_[size_t(c)];
  if (s.graph->data_steps > 0 && s.step >= s.graph->data_steps) return false;  // out of data
  if (!host_.within_stop_limit(c)) return false;
  switch (s.loop) {
    case LoopKind::kFixedSteps:
      return s.step < plan_.steps;
    case LoopKind::kSyncWorker:
      return s.next_local_step < plan_.steps && s.step < INT_MAX;
    case LoopKind::kChiefSyncOp:
      return host_.global_step_seen() < plan_.steps;
  }
  return false;
}

// The input pipeline runs ahead of the steps, up to Plan::input_prefetch_batches batches.
void ClientLoop::maybe_produce(int c) {
  LoopClient& s = clients_[size_t(c)];
  if (s.graph->input_op < 0 || s.producing) return;
  if (s.loop == LoopKind::kFixedSteps && s.produced >= plan_.steps) return;
  if (s.graph->data_steps > 0 && s.produced >= s.graph->data_steps) return;
  if (s.batches_ready >= plan_.input_prefetch_batches && !s.waiting_for_input) return;
  s.producing = true;
  if (s.graph->ops[size_t(s.graph->input_op)].compute_flop <= 0) {
    batch_produced(c);
    return;
  }
  host_.produce(c, s.produced);
}

void ClientLoop::batch_produced(int c) {
  if (host_.client_gone(c)) return;
  LoopClient& s = clients_[size_t(c)];
  s.producing = false;
  ++s.produced;
  if (s.waiting_for_input) {
    s.waiting_for_input = false;
    complete(c, s.graph->input_op);
  } else {
    ++s.batches_ready;
  }
  maybe_produce(c);
}

void ClientLoop::resume(int c, int step, int64_t next_local_step) {
  LoopClient& s = clients_[size_t(c)];
  s.step = step;
  s.produced = step;
  s.batches_ready = 0;
  s.producing = false;
  s.waiting_for_input = false;
  s.next_local_step = next_local_step;
  s.finished = false;
}

void ClientLoop::resume_steps(int c) {
  if (host_.client_gone(c)) return;
  if (!more_steps(c)) {
    mark_finished(c);
    return;
  }
  if (host_.hold_step(c)) return;
  maybe_produce(c);
  start_step(c);
}

void StepHost::collective(int /*c*/, int op) {
  throw InternalError("an all-reduce op (#" + std::to_string(op) +
                      ") reached a backend that runs no collective");
}

void ClientLoop::dispatch(int c, int op_index) {
  const Op& op = clients_[size_t(c)].graph->ops[size_t(op_index)];
  switch (op.kind) {
    case OpKind::kRecv:
      host_.recv(c, op_index);
      return;
    case OpKind::kTakeGradient:
    case OpKind::kTokenDequeue:
    case OpKind::kTokenEnqueue:
    case OpKind::kBarrier:
      host_.sync(c, op_index);
      return;
    case OpKind::kSend:
      host_.send(c, op_index);
      return;
    case OpKind::kAllReduce:
      host_.collective(c, op_index);
      return;
    case OpKind::kReadVariable:
    case OpKind::kAggregate:
    case OpKind::kApply:
    case OpKind::kAccumulate:
    case OpKind::kLocalStep:
    case OpKind::kGlobalStepIncrement:
      if (host_.values(c, op_index)) return;
      break;
    default:
      break;
  }
  if (op.compute_flop > 0) {
    host_.compute(c, op_index);
  } else {
    complete(c, op_index);
  }
}

void ClientLoop::complete(int c, int op) {
  pending_.emplace_back(c, op);
  drain();
}

void ClientLoop::drain() {
  if (draining_) return;
  draining_ = true;
  while (!pending_.empty() && !host_.completions_stopped()) {
    const auto [c, op] = pending_.front();
    pending_.pop_front();
    host_.complete_now(c, op);
  }
  draining_ = false;
}

}  // namespace replisim::core
