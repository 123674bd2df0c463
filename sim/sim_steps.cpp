// The step engine: ops dispatched when their inputs are in (core::StepState), one compute op at a
// time per core of a device, transfers handed to the network, instant ops completed at once,
// steps looped per client with their input pipeline running ahead.
#include <algorithm>
#include <climits>

#include "core/base/random.h"
#include "sim/sim_engine.h"

namespace replisim::sim::detail {

void SimRun::wake_compute(int d) {
  DeviceState& device = devices_[size_t(d)];
  if (!device.idle_compute.empty()) {
    const int core = device.idle_compute.back();
    device.idle_compute.pop_back();
    device.compute_actors[size_t(core)]->resume();
  }
}

double SimRun::jitter_factor(int c, int device, int64_t step) const {
  if (plan_.compute_jitter_fraction <= 0) return 1.0;
  const double u = core::uniform01(plan_.seed, uint64_t(c) + 2, uint64_t(device), uint64_t(step));
  return 1.0 + plan_.compute_jitter_fraction * (2.0 * u - 1.0);
}

// One core of a device: runs the ops of its queue one after the other, suspended while it has
// none (resume/suspend: fewer simcalls per op than a mailbox).
void SimRun::compute_loop(int d, int core) {
  DeviceState& device = devices_[size_t(d)];
  for (;;) {
    if (device.compute_queue.empty()) {
      // Nothing runs between these two lines: the flag and the suspension are one step for
      // everyone else (actors only switch at simcalls).
      device.idle_compute.push_back(core);
      sg4::this_actor::suspend();
      continue;
    }
    const ComputeItem item = device.compute_queue.front();
    device.compute_queue.pop_front();
    // Its client (or the role it runs for) died while the op was queued.
    if (void_item(item.client, item.incarnation, item.op)) continue;
    const Op& op = clients_[size_t(item.client)].graph->ops[size_t(item.op)];
    const double flop =
        op.compute_flop * (op.jittered ? jitter_factor(item.client, d, item.step) : 1.0);
    const double start_s = sg4::Engine::get_clock();
    sg4::this_actor::execute(flop);
    recorder_.compute(item.client, item.op, item.step, start_s, sg4::Engine::get_clock(), flop);
    if (void_item(item.client, item.incarnation, item.op)) continue;  // died while it ran
    if (item.production) {
      finish_production(item.client);
      drain();
    } else {
      complete(item.client, item.op);
    }
  }
}

bool SimRun::void_item(int c, int incarnation, int op) const {
  const ClientState& s = clients_[size_t(c)];
  if (s.dead || incarnation != s.incarnation) return true;
  return recovery_.kills(*s.graph, s.graph->ops[size_t(op)]);
}

void SimRun::dispatch(int c, int op_index) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  const Op& op = s.graph->ops[size_t(op_index)];
  // An op of a role a job fault killed never runs, nor a tensor to or from it: the step hangs
  // until the failure is detected.
  if (recovery_.kills(*s.graph, op)) return;
  switch (op.kind) {
    case OpKind::kRecv:
      return;  // completes when the network delivers the tensor
    case OpKind::kTakeGradient:
    case OpKind::kTokenDequeue:
    case OpKind::kTokenEnqueue:
    case OpKind::kBarrier:
      sync_.dispatch(c, op_index, op.kind);
      return;
    case OpKind::kSend:
      network_.send(c, op_index, s.incarnation);
      return;
    default:
      break;
  }
  if (op.compute_flop > 0) {
    devices_[size_t(op.device)].compute_queue.push_back(
        {c, op_index, false, s.step, s.incarnation});
    wake_compute(op.device);
    return;
  }
  complete(c, op_index);
}

void SimRun::copied(const PendingSend& send, int cpu, bool receiving, double start_s, double flop) {
  if (void_send(send)) return;
  recorder_.copy(send.client, send.op, clients_[size_t(send.client)].step, cpu, receiving, start_s,
                 sg4::Engine::get_clock(), flop);
}

void SimRun::delivered(const PendingSend& send, double start_s, int64_t message_id,
                       const std::string& bound) {
  ClientState& s = clients_[size_t(send.client)];
  recorder_.transfer(send.client, send.op, s.step, start_s, sg4::Engine::get_clock(), message_id,
                     bound);
  pending_.emplace_back(send.client, send.op);
  pending_.emplace_back(send.client, s.graph->ops[size_t(send.op)].peer);
  drain();
}

// Completions are queued and propagated iteratively, never recursively: a chain of instant ops
// (or of whole instant steps) must not grow the actor's stack.
void SimRun::complete(int c, int op) {
  pending_.emplace_back(c, op);
  drain();
}

void SimRun::drain() {
  if (draining_) return;
  draining_ = true;
  while (!pending_.empty()) {
    const auto [c, op] = pending_.front();
    pending_.pop_front();
    complete_now(c, op);
  }
  draining_ = false;
}

void SimRun::complete_now(int c, int op_index) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  const double now = sg4::Engine::get_clock();
  if (op_index == s.graph->global_step_op) {
    ++global_step_;
    last_update_s_ = now;
    recorder_.update(c, op_index, s.step, now, s.global_step_read, global_step_);
    if (steady_.update(now, recorder_.samples_per_step(c), global_step_)) {
      steps_limit_ = global_step_;  // synchronous: this update is the last
    }
  }
  if (s.graph->ops[size_t(op_index)].kind == OpKind::kAccumulate) {
    sync_.accumulate(c, op_index, s.step, now);
  }
  if (s.steps.complete(op_index, [this, c](int next) { dispatch(c, next); })) finish_step(c);
}

void SimRun::finish_step(int c) {
  ClientState& s = clients_[size_t(c)];
  const double end_s = sg4::Engine::get_clock();
  const double start_s = s.step_start_s;
  if (s.loop != StepLoop::kChiefSyncOp) {
    recorder_.step(c, s.step, start_s, end_s, s.global_step_read);
    const bool stopping = stop_requested_;
    stop_requested_ |= steady_.step_ended(c, s.step, start_s, end_s, global_step_);
    if (stop_requested_ && !stopping && sync_.barriers()) {
      // Workers meeting at barriers stop together: each runs up to the furthest step any of
      // them is in (or has been let into), or that one would wait at a barrier forever.
      for (const ClientState& o : clients_) {
        last_barrier_step_ = std::max(last_barrier_step_, int64_t(o.step));
      }
    }
  }
  ++s.step;
  report_progress();
  // The chief's hooks run after its step: a checkpoint or summaries delay its next step.
  const double pause_s = c == recovery_.chief_client() && more_steps(s)
                             ? recovery_.chief_duties(end_s, global_step_, client_steps())
                             : 0.0;
  if (s.loop == StepLoop::kChiefSyncOp && more_steps(s)) {
    start_step(c);  // the chief's queue runner runs the sync op again at once
    return;
  }
  if (more_steps(s)) {
    // Host-side noise between steps (session.run dispatch, the training loop): the next step
    // starts after U[0, f] x the client's typical step, the median of its last few
    // (docs/scenario-format.md, jitter.step).
    const double delay =
        plan_.step_jitter_fraction > 0
            ? plan_.step_jitter_fraction * typical_step_s(s, end_s - start_s) *
                  core::uniform01(plan_.seed, uint64_t(c) + 2, 0xD1A7, uint64_t(s.step))
            : 0.0;
    if (delay + pause_s <= 0) {
      start_step(c);
    } else {
      schedule_step(c, end_s + pause_s + delay);
    }
    return;
  }
  // The chief's checkpoint hook saves once more when its session ends.
  if (c == recovery_.chief_client() && plan_.checkpoints.every_s > 0 && !recovery_.job_down()) {
    const double write_s = recovery_.write_checkpoint(end_s, global_step_, client_steps());
    timers_.push({end_s + write_s, c, TimerKind::kFinish, c, s.incarnation});
    driver_wake_->notify_all();
    return;
  }
  mark_finished(c);
}

double SimRun::typical_step_s(ClientState& s, double step_s) {
  constexpr size_t kRecent = std::tuple_size<decltype(s.recent_step_s)>::value;
  s.recent_step_s[size_t(s.recent_steps) % kRecent] = step_s;
  ++s.recent_steps;
  const size_t n = std::min(size_t(s.recent_steps), kRecent);
  double sorted[kRecent];
  std::copy(s.recent_step_s.begin(), s.recent_step_s.begin() + long(n), sorted);
  std::sort(sorted, sorted + n);
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

void SimRun::mark_finished(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.finished) return;
  s.finished = true;
  if (++finished_clients_ == int(clients_.size())) driver_wake_->notify_all();
  // A chief out of data stops training itself but its process, and the sync op its queue runner
  // runs, stay up (only its death stops them; docs/scenario-format.md).
}

// A client's first step of an incarnation. The chief first saves a checkpoint (the hook's save
// at session creation) when checkpoints are on.
void SimRun::start_client(int c) {
  if (clients_[size_t(c)].dead) return;
  clients_[size_t(c)].awaiting_restart = false;
  if (!more_steps(clients_[size_t(c)])) {  // restored past its last step
    mark_finished(c);
    return;
  }
  maybe_produce(c);
  if (c == recovery_.chief_client() && plan_.checkpoints.every_s > 0) {
    const double now = sg4::Engine::get_clock();
    schedule_step(c, now + recovery_.write_checkpoint(now, global_step_, client_steps()));
    return;
  }
  start_step(c);
}

void SimRun::start_step(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  s.steps.begin_step();
  s.step_start_s = sg4::Engine::get_clock();
  s.global_step_read = s.loop == StepLoop::kSyncWorker ? s.next_local_step : global_step_;
  for (int op : s.steps.roots()) {
    if (op != s.graph->input_op) dispatch(c, op);
  }
  if (s.graph->input_op < 0) return;
  if (s.batches_ready > 0) {
    --s.batches_ready;
    complete(c, s.graph->input_op);
    maybe_produce(c);
  } else {
    s.waiting_for_input = true;
  }
}

// The input pipeline runs ahead of the steps, up to Plan::input_prefetch_batches batches.
void SimRun::maybe_produce(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.graph->input_op < 0 || s.producing) return;
  if (s.loop == StepLoop::kFixedSteps && s.produced >= plan_.steps) return;
  if (s.graph->data_steps > 0 && s.produced >= s.graph->data_steps) return;
  if (s.batches_ready >= plan_.input_prefetch_batches && !s.waiting_for_input) return;
  const Op& input = s.graph->ops[size_t(s.graph->input_op)];
  s.producing = true;
  if (input.compute_flop <= 0) {
    finish_production(c);
    return;
  }
  devices_[size_t(input.device)].compute_queue.push_back(
      {c, s.graph->input_op, true, s.produced, s.incarnation});
  wake_compute(input.device);
}

void SimRun::finish_production(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
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

void SimRun::schedule_step(int c, double at_s) {
  timers_.push({at_s, c, TimerKind::kStep, c, clients_[size_t(c)].incarnation});
  driver_wake_->notify_all();
}

bool SimRun::more_steps(const ClientState& s) const {
  if (s.graph->data_steps > 0 && s.step >= s.graph->data_steps) return false;  // out of data
  switch (s.loop) {
    case StepLoop::kFixedSteps:
      return s.step < plan_.steps && (!stop_requested_ || s.step <= last_barrier_step_);
    case StepLoop::kSyncWorker:
      return s.next_local_step < steps_limit_ && s.step < INT_MAX;
    case StepLoop::kChiefSyncOp:
      return global_step_ < steps_limit_;
  }
  return false;
}

std::vector<int> SimRun::client_steps() const {
  std::vector<int> steps;
  for (const ClientState& s : clients_) steps.push_back(s.step);
  return steps;
}

}  // namespace replisim::sim::detail
