// The step protocol: a graph's client starts each step (RUN to every task with ops in it), each
// task runs its part as its inputs come in (core::StepState), reports DONE, and the client's
// step ends when every part is done (a TF session.run returns when every op of the step has
// run). The client's loop is core::ClientLoop, as in the simulation; this task is its StepHost.
#include "real/node/runtime.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

// StepHost: the loop's hooks on this task's clock and sockets.
void Node::begin_step(int g) {
  Part& p = parts_[size_t(g)];
  const core::LoopClient& loop = loop_->client(g);
  p.done_parts = 0;
  p.local_done = false;
  p.read_seen = -1;
  const int64_t local = loop.loop == core::LoopKind::kSyncWorker ? loop.next_local_step : 0;
  for (uint32_t t : p.participants) {
    send_frame(t, FrameType::kRun, loop.step, uint64_t(g), pack_i64({local}));
  }
  begin_part(p, loop.step, local);
}

void Node::begin_part(Part& p, int64_t step, int64_t local_step) {
  p.step = step;
  p.active = true;
  p.local_step = local_step;
  p.global_step_read = vars_->global_step_here();
  p.steps.begin_step();
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  std::fill(p.tensor_in.begin(), p.tensor_in.end(), 0);
  if (p.steps.op_count() == 0) {  // the chief's sync op: every op on the parameter servers
    part_done(p);
    return;
  }
  for (int op : p.steps.roots()) {
    if (op != p.graph->input_op || !p.owner) loop_->dispatch(p.index, op);
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

void Node::recv(int g, int op) {
  if (parts_[size_t(g)].tensor_in[size_t(op)]) complete(g, op);
  // otherwise it completes when its tensor arrives
}

void Node::complete_now(int g, int op) {
  Part& p = parts_[size_t(g)];
  if (graph_dead_[size_t(g)]) return;  // its client died: nothing follows
  if (!p.active) throw std::logic_error("an op completed outside its step");
  if (p.steps.mine(op)) notify_remote(p, op);
  if (p.steps.complete(op, [this, g](int next) { loop_->dispatch(g, next); })) part_done(p);
}

void Node::part_done(Part& p) {
  if (p.owner) {
    p.local_done = true;
    maybe_finish_step(p);
    return;
  }
  p.active = false;
  const int64_t now = vars_->global_step_here();
  send_frame(p.owner_task, FrameType::kDone, p.step, uint64_t(p.index),
             pack_i64({p.global_step_read, now}));
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
}

void Node::maybe_finish_step(Part& p) {
  if (p.local_done && p.done_parts == p.participants.size()) finish_step(p);
}

// Every part of the owner's step is done: the step is over.
void Node::finish_step(Part& p) {
  p.active = false;
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  if (p.global_step_read >= 0) p.read_seen = p.global_step_read;
  loop_->step_done(p.index);
}

void Node::step_ended(int g, int step, double start_s, double end_s) {
  const Part& p = parts_[size_t(g)];
  const int64_t read =
      loop_->client(g).loop == core::LoopKind::kSyncWorker ? p.local_step : p.read_seen;
  recorder_->step(g, step, start_s, end_s, read);
}

void Node::step_counted(int g, double start_s, double end_s) {
  const int steps_done = loop_->client(g).step;
  if (coordinator()) {
    on_progress(g, steps_done, global_step_seen_, start_s, end_s);
  } else if (progress_ || steady_stop_->reports_steps()) {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kProgress, steps_done, uint64_t(g),
               pack_i64({global_step_seen_}) + pack_f64({start_s, end_s}));
  }
}

bool Node::is_chief(int g) const {
  return g < int(plan_.clients.size()) && plan_.roles[size_t(graphs_[size_t(g)]->role)].chief;
}

bool Node::session_checkpoint(int g, bool, std::function<void(double)> then) {
  if (!chief() || !is_chief(g) || plan_.checkpoints.every_s <= 0) return false;
  saver_->save(saver_->next_name(), [this, g, then = std::move(then)](double start_s, double bytes,
                                                                      int64_t global_step) {
    recorder_->checkpoint(g, loop_->client(g).step, start_s, now_s(), bytes, global_step, false);
    then(now_s());
  });
  return true;
}

void Node::chief_duties(int g, double, std::function<void(double)> then) {
  chief_duties(parts_[size_t(g)], [then = std::move(then)] { then(0); });
}

void Node::start_step_at(int g, double at_s) {
  if (at_s <= now_s()) {
    loop_->start_step(g);
    return;
  }
  at_run_time(at_s, true, [this, g] { loop_->start_step(g); });
}

void Node::finish_at(int g, double at_s) {
  if (at_s <= now_s()) {
    loop_->mark_finished(g);
    return;
  }
  at_run_time(at_s, true, [this, g] { loop_->mark_finished(g); });
}

void Node::finished(int g) {
  if (coordinator()) {
    on_finished(g);
  } else {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kFinished, -1, uint64_t(g));
  }
}

// The input pipeline's batch on the input op's device.
void Node::produce(int g, int64_t batch) {
  const Op& input = parts_[size_t(g)].graph->ops[size_t(parts_[size_t(g)].graph->input_op)];
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
      loop_->batch_produced(g);
    });
  });
}

}  // namespace replisim::real::detail
