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
      loop_.batch_produced(item.client);
      loop_.drain();
    } else {
      loop_.complete(item.client, item.op);
    }
  }
}

bool SimRun::void_item(int c, int incarnation, int op) const {
  const ClientState& s = clients_[size_t(c)];
  if (s.dead || incarnation != s.incarnation) return true;
  return recovery_.kills(*s.graph, s.graph->ops[size_t(op)]);
}

// StepHost: dispatch by kind (core::ClientLoop::dispatch). An op of a role a job fault killed
// never runs, nor a tensor to or from it: the step hangs until the failure is detected.
void SimRun::dispatch(int c, int op_index) {
  const ClientState& s = clients_[size_t(c)];
  if (s.dead || recovery_.kills(*s.graph, s.graph->ops[size_t(op_index)])) return;
  loop_.dispatch(c, op_index);
}

void SimRun::sync(int c, int op) {
  sync_.dispatch(c, op, clients_[size_t(c)].graph->ops[size_t(op)].kind);
}

void SimRun::collective(int c, int op) {
  collectives_->ready(c, op, loop_.client(c).step);
}

void SimRun::send(int c, int op) {
  network_.send(c, op, clients_[size_t(c)].incarnation);
}

void SimRun::compute(int c, int op) {
  ClientState& s = clients_[size_t(c)];
  const int device = s.graph->ops[size_t(op)].device;
  devices_[size_t(device)].compute_queue.push_back(
      {c, op, false, loop_.client(c).step, s.incarnation});
  wake_compute(device);
}

void SimRun::copied(const PendingSend& send, int cpu, bool receiving, double start_s, double flop) {
  if (void_send(send)) return;
  recorder_.copy(send.client, send.op, loop_.client(send.client).step, cpu, receiving, start_s,
                 sg4::Engine::get_clock(), flop);
}

void SimRun::delivered(const PendingSend& send, double start_s, int64_t message_id,
                       const std::string& bound) {
  if (send.chunk >= 0) {
    collectives_->delivered(send, start_s, message_id, bound);
    return;
  }
  ClientState& s = clients_[size_t(send.client)];
  recorder_.transfer(send.client, send.op, loop_.client(send.client).step, start_s,
                     sg4::Engine::get_clock(), message_id, bound);
  loop_.enqueue(send.client, send.op);
  loop_.enqueue(send.client, s.graph->ops[size_t(send.op)].peer);
  loop_.drain();
}

void SimRun::complete_now(int c, int op_index) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  const double now = sg4::Engine::get_clock();
  compute_values(c, op_index);
  // All-reduce: every rank increments its own global_step; the lowest live rank's counts the
  // job's steps (rank 0's, or after an elastic job lost it, the next: Horovod Elastic's new
  // rank 0).
  const bool update =
      collectives_ ? s.graph->ops[size_t(op_index)].kind == core::OpKind::kGlobalStepIncrement &&
                         c == collectives_->counting_client()
                   : op_index == s.graph->global_step_op;
  if (update) {
    ++global_step_;
    last_update_s_ = now;
    // An elastic all-reduce job applies the live ranks' batches; a synchronous one the
    // gradients its takes averaged.
    int samples =
        collectives_ ? collectives_->live_samples_per_step() : recorder_.samples_per_step(c);
    if (sync_.enabled()) samples = sync_.take_update_samples().value_or(samples);
    recorder_.update(c, op_index, loop_.client(c).step, now, s.global_step_read, global_step_,
                     samples);
    if (steady_.update(now, samples, global_step_)) {
      steps_limit_ = global_step_;  // synchronous: this update is the last
    }
    values_updated(now);
  }
  if (s.graph->ops[size_t(op_index)].kind == OpKind::kAccumulate) {
    sync_.accumulate(c, op_index, loop_.client(c).step, now);
  }
  if (s.steps.complete(op_index, [this, c](int next) { dispatch(c, next); })) loop_.step_done(c);
}

// StepHost: the loop's hooks on the simulated clock.
void SimRun::begin_step(int c) {
  ClientState& s = clients_[size_t(c)];
  s.steps.begin_step();
  s.global_step_read = loop_.client(c).loop == core::LoopKind::kSyncWorker
                           ? loop_.client(c).next_local_step
                           : global_step_;
  for (int op : s.steps.roots()) {
    if (op != s.graph->input_op) dispatch(c, op);
  }
}

void SimRun::produce(int c, int64_t batch) {
  const int input = clients_[size_t(c)].graph->input_op;
  const int device = clients_[size_t(c)].graph->ops[size_t(input)].device;
  devices_[size_t(device)].compute_queue.push_back(
      {c, input, true, batch, clients_[size_t(c)].incarnation});
  wake_compute(device);
}

void SimRun::step_ended(int c, int step, double start_s, double end_s) {
  recorder_.step(c, step, start_s, end_s, clients_[size_t(c)].global_step_read);
  const bool stopping = stop_requested_;
  stop_requested_ |= steady_.step_ended(c, step, start_s, end_s, global_step_);
  if (stop_requested_ && !stopping && sync_.barriers()) {
    // Workers meeting at barriers stop together: each runs up to the furthest step any of them
    // is in (or has been let into), or that one would wait at a barrier forever.
    for (size_t o = 0; o < loop_.size(); ++o) {
      last_barrier_step_ = std::max(last_barrier_step_, int64_t(loop_.client(int(o)).step));
    }
  }
}

bool SimRun::within_stop_limit(int c) const {
  const core::LoopClient& s = loop_.client(c);
  switch (s.loop) {
    case core::LoopKind::kFixedSteps:
      return !stop_requested_ || s.step <= last_barrier_step_;
    case core::LoopKind::kSyncWorker:
      return s.next_local_step < steps_limit_;
    case core::LoopKind::kChiefSyncOp:
      return global_step_ < steps_limit_;
  }
  return false;
}

bool SimRun::session_checkpoint(int c, bool at_end, std::function<void(double)> then) {
  if (c != recovery_.chief_client() || plan_.checkpoints.every_s <= 0) return false;
  if (at_end && recovery_.job_down()) return false;
  const double now = sg4::Engine::get_clock();
  const size_t written = recovery_.checkpoints_written();
  const double pause_s = recovery_.write_checkpoint(now, global_step_, client_steps());
  if (values_ && recovery_.checkpoints_written() > written) values_->checkpoint(global_step_);
  then(now + pause_s);
  return true;
}

void SimRun::chief_duties(int, double end_s, std::function<void(double)> then) {
  const size_t written = recovery_.checkpoints_written();
  const double pause_s = recovery_.chief_duties(end_s, global_step_, client_steps());
  if (values_ && recovery_.checkpoints_written() > written) values_->checkpoint(global_step_);
  then(pause_s);
}

// Host-side noise between steps (session.run dispatch, the training loop): the next step starts
// after U[0, f] x the client's typical step, the median of its last few
// (docs/scenario-format.md, jitter.step).
double SimRun::step_gap_s(int c, double step_s) {
  if (plan_.step_jitter_fraction <= 0) return 0;
  return plan_.step_jitter_fraction * typical_step_s(clients_[size_t(c)], step_s) *
         core::uniform01(plan_.seed, uint64_t(c) + 2, 0xD1A7, uint64_t(loop_.client(c).step));
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

void SimRun::start_step_at(int c, double at_s) {
  timers_.push({at_s, c, TimerKind::kStep, c, clients_[size_t(c)].incarnation});
  driver_wake_->notify_all();
}

void SimRun::finish_at(int c, double at_s) {
  timers_.push({at_s, c, TimerKind::kFinish, c, clients_[size_t(c)].incarnation});
  driver_wake_->notify_all();
}

// A chief out of data stops training itself but its process, and the sync op its queue runner
// runs, stay up (only its death stops them; docs/scenario-format.md).
void SimRun::finished(int) {
  if (++finished_clients_ == int(clients_.size())) driver_wake_->notify_all();
}

std::vector<int> SimRun::client_steps() const {
  std::vector<int> steps;
  for (size_t c = 0; c < loop_.size(); ++c) steps.push_back(loop_.client(int(c)).step);
  return steps;
}

}  // namespace replisim::sim::detail
