// The step protocol: a graph's client starts each step (RUN to every task with ops in it), each
// task runs its part as its inputs come in (core::StepState), reports DONE, and the client's
// step ends when every part is done (a TF session.run returns when every op of the step has
// run). The input pipeline runs ahead of the steps, as in the simulation.
#include "real/node/runtime.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

void Node::start_client(int g) {
  Part& p = parts_[size_t(g)];
  if (!more_steps(p)) {
    mark_finished(p);
    return;
  }
  if (held_for_stop_limit(p)) return;
  maybe_produce(p);
  if (chief() && g < int(plan_.clients.size()) && plan_.checkpoints.every_s > 0 &&
      plan_.roles[size_t(p.graph->role)].chief) {
    // The chief's checkpoint hook saves once when its session is created.
    save_checkpoint("model.ckpt-" + std::to_string(checkpoints_++),
                    [this, g](double start_s, double bytes, int64_t global_step) {
                      recorder_->checkpoint(g, parts_[size_t(g)].steps_done, start_s, now_s(),
                                            bytes, global_step, false);
                      start_step(g);
                    });
    return;
  }
  start_step(g);
}

void Node::start_step(int g) {
  Part& p = parts_[size_t(g)];
  if (stopping_) return;
  p.step_start_s = now_s();
  p.done_parts = 0;
  p.local_done = false;
  p.read_seen = -1;
  const int64_t local = p.loop == Loop::kSyncWorker ? p.next_local_step : 0;
  for (uint32_t t : p.participants) {
    send_frame(t, FrameType::kRun, p.steps_done, uint64_t(g), pack_i64({local}));
  }
  begin_part(p, p.steps_done, local);
  const int input = p.graph->input_op;
  if (input < 0) return;
  if (p.batches_ready > 0) {
    --p.batches_ready;
    complete(g, input);
    maybe_produce(p);
  } else {
    p.waiting_for_input = true;
  }
}

void Node::begin_part(Part& p, int64_t step, int64_t local_step) {
  p.step = step;
  p.active = true;
  p.local_step = local_step;
  p.global_step_read = store_ && store_->holds_global_step() ? store_->global_step : -1;
  p.steps.begin_step();
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  std::fill(p.tensor_in.begin(), p.tensor_in.end(), 0);
  if (p.steps.op_count() == 0) {  // the chief's sync op: every op on the parameter servers
    part_done(p);
    return;
  }
  for (int op : p.steps.roots()) {
    if (op != p.graph->input_op || !p.owner) dispatch(p.index, op);
  }
  replay_early(p);
}

void Node::replay_early(Part& p) {
  auto found = p.early.find(p.step);
  if (found == p.early.end()) return;
  std::vector<Early> early = std::move(found->second);
  p.early.erase(found);
  for (Early& e : early) {
    if (e.tensor) {
      arrive_tensor(p, e.op, std::move(e.data), e.start_s);
    } else {
      arrive_control(p, e.op, std::move(e.data));
    }
  }
}

void Node::arrive_tensor(Part& p, int send_op, BufferPtr data, double start_s) {
  const int recv = p.graph->ops[size_t(send_op)].peer;
  const int device = p.graph->ops[size_t(recv)].device;
  DeviceEngine& target = engine(device);
  if (target.gpu() != nullptr && p.graph->ops[size_t(send_op)].device != device) {
    // The tensor reaches a GPU: its bytes cross PCIe into device memory (the transfer ends when
    // they are there).
    const int g = p.index;
    const int64_t step = p.step;
    const size_t bytes = data ? data->size() : 0;
    ++work_pending_;
    target.submit([this, g, send_op, step, start_s, bytes, data, gpu = target.gpu()]() mutable {
      gpu->to_device(bytes);
      post([this, g, send_op, step, start_s, data = std::move(data)]() mutable {
        --work_pending_;
        Part& part = parts_[size_t(g)];
        if (stopping_ || !part.active || part.step != step) return;
        tensor_in_place(part, send_op, std::move(data), start_s);
      });
    });
    return;
  }
  tensor_in_place(p, send_op, std::move(data), start_s);
}

void Node::tensor_in_place(Part& p, int send_op, BufferPtr data, double start_s) {
  const int recv = p.graph->ops[size_t(send_op)].peer;
  p.out[size_t(recv)] = std::move(data);
  p.tensor_in[size_t(recv)] = 1;
  recorder_->transfer(p.index, send_op, p.step, start_s, std::max(start_s, now_s()),
                      (int64_t(self_) << 40) | next_message_++, "");  // bound: not known
  complete(p.index, send_op);
}

void Node::arrive_control(Part& p, int op, BufferPtr data) {
  if (data) p.out[size_t(op)] = std::move(data);
  complete(p.index, op);
}

void Node::dispatch(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  switch (op.kind) {
    case OpKind::kRecv:
      if (p.tensor_in[size_t(op_index)]) complete(g, op_index);
      return;  // otherwise it completes when its tensor arrives
    case OpKind::kTakeGradient:
    case OpKind::kTokenDequeue:
    case OpKind::kTokenEnqueue:
    case OpKind::kBarrier:
      if (!sync_) throw std::logic_error("a sync queue op on a task without the sync queues");
      // A synchronous worker's step ends with its token: the step reached global_step's PS.
      if (op.kind == OpKind::kTokenDequeue && g < int(graph_steps_.size()))
        ++graph_steps_[size_t(g)];
      sync_->dispatch(g, op_index, op.kind);
      return;
    case OpKind::kSend:
      run_send(g, op_index);
      return;
    case OpKind::kReadVariable:
      run_read(g, op_index);
      return;
    case OpKind::kAggregate:
      run_aggregate(g, op_index);
      return;
    case OpKind::kApply:
      run_apply(g, op_index);
      return;
    case OpKind::kAccumulate:
      run_accumulate(g, op_index);
      return;
    case OpKind::kLocalStep:
      run_local_step(g, op_index);
      return;
    case OpKind::kGlobalStepIncrement:
      run_global_step_increment(g, op_index);
      return;
    default:
      break;
  }
  if (op.compute_flop > 0) {
    run_compute(g, op_index);
  } else {
    complete(g, op_index);
  }
}

// Completions are queued and propagated iteratively, never recursively (a chain of instant ops
// must not grow the stack).
void Node::complete(int g, int op) {
  pending_.emplace_back(g, op);
  drain();
}

void Node::drain() {
  if (draining_) return;
  draining_ = true;
  while (!pending_.empty() && !stopping_) {
    const auto [g, op] = pending_.front();
    pending_.pop_front();
    complete_now(g, op);
  }
  draining_ = false;
}

void Node::complete_now(int g, int op) {
  Part& p = parts_[size_t(g)];
  if (graph_dead_[size_t(g)]) return;  // its client died: nothing follows
  if (!p.active) throw std::logic_error("an op completed outside its step");
  if (p.steps.mine(op)) notify_remote(p, op);
  if (p.steps.complete(op, [this, g](int next) { dispatch(g, next); })) part_done(p);
}

void Node::part_done(Part& p) {
  if (p.owner) {
    p.local_done = true;
    maybe_finish_step(p);
    return;
  }
  p.active = false;
  const int64_t now = store_ && store_->holds_global_step() ? store_->global_step : -1;
  send_frame(p.owner_task, FrameType::kDone, p.step, uint64_t(p.index),
             pack_i64({p.global_step_read, now}));
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
}

void Node::maybe_finish_step(Part& p) {
  if (p.local_done && p.done_parts == p.participants.size()) finish_step(p);
}

void Node::finish_step(Part& p) {
  p.active = false;
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  if (p.global_step_read >= 0) p.read_seen = p.global_step_read;
  const double end_s = now_s();
  if (p.loop != Loop::kChiefSyncOp) {
    const int64_t read = p.loop == Loop::kSyncWorker ? p.local_step : p.read_seen;
    recorder_->step(p.index, p.steps_done, p.step_start_s, end_s, read);
  }
  ++p.steps_done;
  if (coordinator()) {
    on_progress(p.index, p.steps_done, global_step_seen_, p.step_start_s, end_s);
  } else if (progress_ || steady_rule_) {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kProgress, p.steps_done,
               uint64_t(p.index),
               pack_i64({global_step_seen_}) + pack_f64({p.step_start_s, end_s}));
  }
  const bool chief_client =
      p.index < int(plan_.clients.size()) && plan_.roles[size_t(p.graph->role)].chief;
  if (chief_client && more_steps(p)) {
    const int g = p.index;
    chief_duties(p, [this, g] { next_step(parts_[size_t(g)]); });
    return;
  }
  next_step(p);
}

void Node::next_step(Part& p) {
  if (more_steps(p)) {
    if (!held_for_stop_limit(p)) start_step(p.index);
    return;
  }
  const bool chief_client =
      p.index < int(plan_.clients.size()) && plan_.roles[size_t(p.graph->role)].chief;
  if (chief_client && plan_.checkpoints.every_s > 0) {
    // The checkpoint hook saves once more when the chief's session ends.
    const int g = p.index;
    save_checkpoint("model.ckpt-" + std::to_string(checkpoints_++),
                    [this, g](double start_s, double bytes, int64_t global_step) {
                      Part& part = parts_[size_t(g)];
                      recorder_->checkpoint(g, part.steps_done, start_s, now_s(), bytes,
                                            global_step, false);
                      mark_finished(part);
                    });
    return;
  }
  mark_finished(p);
}

void Node::mark_finished(Part& p) {
  if (p.finished) return;
  p.finished = true;
  if (coordinator()) {
    on_finished(p.index);
  } else {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kFinished, -1, uint64_t(p.index));
  }
}

bool Node::more_steps(const Part& p) const {
  if (p.graph->data_steps > 0 && p.steps_done >= p.graph->data_steps) return false;
  // training.steps "auto": up to the coordinator's limit (node_steady.cpp).
  if (p.stop_limit) {
    const int64_t position = stop_position(p);
    if (p.loop == Loop::kFixedSteps ? position > *p.stop_limit : position >= *p.stop_limit)
      return false;
  }
  switch (p.loop) {
    case Loop::kFixedSteps:
      return p.steps_done < plan_.steps;
    case Loop::kSyncWorker:
      return p.next_local_step < plan_.steps;
    case Loop::kChiefSyncOp:
      return global_step_seen_ < plan_.steps;
  }
  return false;
}

// The input pipeline runs ahead of the steps, up to Plan::input_prefetch_batches batches.
void Node::maybe_produce(Part& p) {
  if (p.graph->input_op < 0 || p.producing) return;
  if (p.loop == Loop::kFixedSteps && p.produced >= plan_.steps) return;
  if (p.graph->data_steps > 0 && p.produced >= p.graph->data_steps) return;
  if (p.batches_ready >= plan_.input_prefetch_batches && !p.waiting_for_input) return;
  const Op& input = p.graph->ops[size_t(p.graph->input_op)];
  p.producing = true;
  if (input.compute_flop <= 0) {
    finish_production(p.index);
    return;
  }
  const int g = p.index;
  const int64_t batch = p.produced;
  const double flop = input.compute_flop;
  const int threads = options_.threads;
  ++work_pending_;
  DeviceEngine* device = &engine(input.device);
  device->submit([this, device, g, batch, flop, threads] {
    const double start_s = now_s();
    const double done = device->execute(flop, threads);
    const double end_s = now_s();
    post([this, g, batch, start_s, end_s, done] {
      --work_pending_;
      recorder_->compute(g, parts_[size_t(g)].graph->input_op, batch, start_s, end_s, done);
      finish_production(g);
    });
  });
}

void Node::finish_production(int g) {
  Part& p = parts_[size_t(g)];
  if (stopping_) return;
  p.producing = false;
  ++p.produced;
  if (p.waiting_for_input) {
    p.waiting_for_input = false;
    complete(g, p.graph->input_op);
  } else {
    ++p.batches_ready;
  }
  maybe_produce(p);
}

}  // namespace replisim::real::detail
