#include "sim/sim_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/random.h"
#include "core/base/units.h"
#include "sim/sim_platform.h"
#include "sim/sim_run_state.h"

namespace replisim::sim {
namespace detail {

// Which plan devices run at least one op.
std::vector<bool> devices_used(const core::Plan& plan) {
  std::vector<bool> used(plan.platform.devices.size(), false);
  for (const core::ClientGraph& graph : plan.clients) {
    for (const Op& op : graph.ops) used[size_t(op.device)] = true;
  }
  for (const Op& op : plan.sync_replicas.chief_graph.ops) used[size_t(op.device)] = true;
  return used;
}

void SimRun::prepare_clients() {
  // (source, destination, slot) -> connection; a pair of devices on different machines has
  // transport.connections_per_peer slots, which its tensors take in turn.
  std::map<std::tuple<int, int, int>, int> connection_of;
  std::map<std::pair<int, int>, int> sends_of_pair;
  const core::Transport& transport = plan_.platform.transport;
  std::vector<const core::ClientGraph*> graphs;
  for (const core::ClientGraph& graph : plan_.clients) graphs.push_back(&graph);
  const bool sync = plan_.sync == "sync";
  if (sync) graphs.push_back(&plan_.sync_replicas.chief_graph);
  clients_.resize(graphs.size());
  for (size_t c = 0; c < graphs.size(); ++c) {
    ClientState& s = clients_[c];
    s.graph = graphs[c];
    s.loop = !sync                      ? StepLoop::kFixedSteps
             : c < plan_.clients.size() ? StepLoop::kSyncWorker
                                        : StepLoop::kChiefSyncOp;
    const std::vector<Op>& ops = s.graph->ops;
    s.dependents.assign(ops.size(), {});
    s.in_degree.assign(ops.size(), 0);
    for (size_t k = 0; k < ops.size(); ++k) {
      s.in_degree[k] = int(ops[k].inputs.size());
      for (int in : ops[k].inputs) s.dependents[size_t(in)].push_back(int(k));
      s.label.push_back(trace_.intern(ops[k].name));
      s.actor.push_back(trace_.intern(plan_.roles[size_t(ops[k].role)].name));
      s.device_name.push_back(trace_.intern(plan_.platform.devices[size_t(ops[k].device)].name));
      s.connection.push_back(-1);
      if (ops[k].kind != OpKind::kSend) continue;
      const int source = ops[k].device, destination = ops[size_t(ops[k].peer)].device;
      const bool network = plan_.platform.devices[size_t(source)].machine !=
                           plan_.platform.devices[size_t(destination)].machine;
      const int slot = network ? sends_of_pair[{source, destination}]++ %
                                     std::max(1, transport.connections_per_peer)
                               : 0;
      auto [it, added] = connection_of.emplace(std::make_tuple(source, destination, slot),
                                               int(connections_.size()));
      if (added) {
        Connection connection;
        connection.source = source;
        connection.destination = destination;
        connection.latency_s =
            latency_factor_ * plan_.platform.route_latency_s(source, destination);
        for (const core::Hop& hop : plan_.platform.route(source, destination)) {
          connection.links.push_back(hop.link);
        }
        if (network) {
          connection.wire_bytes_per_byte = 1 + transport.header_overhead_fraction;
          connection.rate_limit_bytes_per_s = transport.flow_rate_limit_bytes_per_s;
        }
        connections_.push_back(std::move(connection));
      }
      s.connection.back() = it->second;
    }
    const core::Role& role = plan_.roles[size_t(s.graph->role)];
    s.role_name = trace_.intern(role.name);
    s.role_device = role.device;
  }
}

void SimRun::dispatch(int c, int op_index) {
  if (clients_[size_t(c)].dead) return;
  const Op& op = clients_[size_t(c)].graph->ops[size_t(op_index)];
  // An op of a role a job fault killed never runs, nor a tensor to or from it: the step hangs
  // until the failure is detected.
  if (job_down_ && (role_dead_[size_t(op.role)] ||
                    (op.kind == OpKind::kSend &&
                     role_dead_[size_t(clients_[size_t(c)].graph->ops[size_t(op.peer)].role)]))) {
    return;
  }
  DeviceState& device = devices_[size_t(op.device)];
  switch (op.kind) {
    case OpKind::kRecv:
      return;  // completes when the receiver actor gets the tensor
    case OpKind::kTakeGradient:
    case OpKind::kTokenDequeue:
    case OpKind::kTokenEnqueue:
      dispatch_sync(c, op_index);
      return;
    case OpKind::kSend: {
      const int id = clients_[size_t(c)].connection[size_t(op_index)];
      Connection& connection = connections_[size_t(id)];
      connection.waiting.push_back({c, op_index, clients_[size_t(c)].incarnation});
      if (!connection.active) activate(id);
      return;
    }
    default:
      break;
  }
  if (op.compute_flop > 0) {
    device.compute_queue.push_back(
        {c, op_index, false, clients_[size_t(c)].step, clients_[size_t(c)].incarnation});
    wake_compute(op.device);
    return;
  }
  complete(c, op_index);
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
    core::TraceEvent update;
    update.kind = core::EventKind::kUpdate;
    update.actor = s.role_name;
    update.client = s.role_name;
    update.device = s.device_name[size_t(op_index)];
    update.label = s.label[size_t(op_index)];
    update.step = s.step;
    update.start_s = update.end_s = now;
    update.global_step_read = s.global_step_read;
    update.global_step_after = global_step_;
    update.samples = s.graph->samples_per_step;
    trace_.events.push_back(update);
    trace_.counters.push_back({global_step_counter_, now, double(global_step_)});
  }
  if (s.graph->ops[size_t(op_index)].kind == OpKind::kAccumulate) accumulate(c, op_index);
  for (int next : s.dependents[size_t(op_index)]) {
    if (--s.remaining_inputs[size_t(next)] == 0) dispatch(c, next);
  }
  if (--s.remaining_ops == 0) finish_step(c);
}

void SimRun::finish_step(int c) {
  ClientState& s = clients_[size_t(c)];
  core::TraceEvent step;
  step.kind = core::EventKind::kStep;
  step.actor = s.role_name;
  step.client = s.role_name;
  step.device = trace_.intern(plan_.platform.devices[size_t(s.role_device)].name);
  step.label = trace_.intern("step");
  step.step = s.step;
  step.start_s = s.step_start_s;
  step.end_s = sg4::Engine::get_clock();
  step.global_step_read = s.global_step_read;
  if (s.loop != StepLoop::kChiefSyncOp) trace_.events.push_back(step);
  ++s.step;
  // The chief's hooks run after its step: a checkpoint or summaries delay its next step.
  const double pause_s = c == chief_client_ && more_steps(s) ? chief_duties(c, step.end_s) : 0.0;
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
            ? plan_.step_jitter_fraction * typical_step_s(s, step.end_s - step.start_s) *
                  core::uniform01(plan_.seed, uint64_t(c) + 2, 0xD1A7, uint64_t(s.step))
            : 0.0;
    if (delay + pause_s <= 0) {
      start_step(c);
    } else {
      schedule_step(c, step.end_s + pause_s + delay);
    }
    return;
  }
  // The chief's checkpoint hook saves once more when its session ends.
  if (c == chief_client_ && plan_.checkpoints.every_s > 0 && !job_down_) {
    const double write_s = write_checkpoint(step.end_s, "checkpoint");
    timers_.push({step.end_s + write_s, c, TimerKind::kFinish, c, s.incarnation});
    driver_wake_->notify_all();
    return;
  }
  mark_finished(c);
}

double SimRun::typical_step_s(ClientState& s, double step_s) {
  s.recent_step_s[size_t(s.recent_steps % int(s.recent_step_s.size()))] = step_s;
  ++s.recent_steps;
  const size_t n = std::min(size_t(s.recent_steps), s.recent_step_s.size());
  std::array<double, 5> sorted = s.recent_step_s;
  std::sort(sorted.begin(), sorted.begin() + long(n));
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

void SimRun::start_step(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  s.remaining_inputs = s.in_degree;
  s.remaining_ops = s.graph->ops.size();
  s.step_start_s = sg4::Engine::get_clock();
  s.global_step_read = s.loop == StepLoop::kSyncWorker ? s.next_local_step : global_step_;
  for (size_t k = 0; k < s.graph->ops.size(); ++k) {
    if (s.in_degree[k] == 0 && int(k) != s.graph->input_op) dispatch(c, int(k));
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
  DeviceState& device = devices_[size_t(input.device)];
  device.compute_queue.push_back({c, s.graph->input_op, true, s.produced, s.incarnation});
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

// Starts every client at its start-up offset, then serves delayed step starts, faults and
// restarts until all clients have finished with no restart pending (the only non-daemon actor:
// the simulation ends when it returns).
void SimRun::driver() {
  for (size_t c = 0; c < clients_.size(); ++c) {
    timers_.push({clients_[c].graph->start_offset_s, -1 - int(c), TimerKind::kStart, int(c), 0});
  }
  schedule_faults();
  std::unique_lock<sg4::Mutex> lock(*driver_mutex_);
  while (finished_clients_ < int(clients_.size()) || job_down_) {
    if (timers_.empty()) {
      driver_wake_->wait(lock);
      continue;
    }
    const Timer timer = timers_.top();
    if (timer.at_s > sg4::Engine::get_clock()) {
      driver_wake_->wait_until(lock, timer.at_s);
      continue;
    }
    timers_.pop();
    switch (timer.kind) {
      case TimerKind::kStart:
      case TimerKind::kStep:
      case TimerKind::kFinish:
        if (clients_[size_t(timer.index)].incarnation != timer.incarnation) break;
        if (timer.kind == TimerKind::kStart) {
          start_client(timer.index);
        } else if (timer.kind == TimerKind::kStep) {
          start_step(timer.index);
        } else if (!clients_[size_t(timer.index)].dead) {
          mark_finished(timer.index);
        }
        break;
      case TimerKind::kFault:
      case TimerKind::kFaultEnd:
        inject_fault(2 * timer.index + (timer.kind == TimerKind::kFaultEnd));
        break;
      case TimerKind::kDetect:
        detect_job_failure();
        break;
      case TimerKind::kRestart:
        restart_job();
        break;
    }
    drain();
  }
}

void SimRun::create_actors() {
  const std::vector<bool> used = devices_used(plan_);
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!used[d]) continue;
    DeviceState& device = devices_[d];
    const int index = int(d);
    for (int core = 0; core < plan_.platform.devices[d].cores; ++core) {
      device.compute_actors.push_back(
          sg4::Actor::create(plan_.platform.devices[d].name + "/compute." + std::to_string(core),
                             device.host, [this, index, core] { compute_loop(index, core); }));
      device.compute_actors.back()->daemonize();
    }
    device.sink = sg4::Actor::create(plan_.platform.devices[d].name + "/receive", device.host, [] {
      const sg4::MutexPtr mutex = sg4::Mutex::create();
      const sg4::ConditionVariablePtr never = sg4::ConditionVariable::create();
      std::unique_lock<sg4::Mutex> lock(*mutex);
      for (;;) never->wait(lock);
    });
    device.sink->daemonize();
  }
  for (size_t id = 0; id < connections_.size(); ++id) {
    Connection& connection = connections_[id];
    connection.mailbox = sg4::Mailbox::by_name("connection." + std::to_string(id));
    connection.mailbox->set_receiver(devices_[size_t(connection.destination)].sink);
  }
  // The driver runs on the service host: a fault on a device must not stop the step loop.
  sg4::Actor::create("driver", service_host_, [this] { driver(); });
}

// The network model, and the platform's hosts and links for the devices the plan uses.
void SimRun::build_platform() {
  configure_network_model(plan_.platform.network_model);
  bool degraded_links = false, switch_fault = false;
  for (const core::PlanFault& f : plan_.faults) {
    degraded_links |= f.kind == "link" && f.factor > 0;
    link_faults_ |= f.kind == "link";
    switch_fault |= f.kind == "link" && f.link == plan_.platform.switch_link;
  }
  const bool no_crosstraffic =
      degraded_links && plan_.platform.network_model == core::NetworkModel::kLv08;
  if (no_crosstraffic) {
    // SimGrid 3.32's update of flow penalties on a bandwidth change assumes each flow saw the
    // link's previous bandwidth when it started, which LV08's reverse traffic breaks (negative
    // penalty, abort): with a link degraded at run time, the reverse-traffic term is off.
    sg4::Engine::set_config("network/crosstraffic:0");
  }
  const SimPlatform platform =
      build_sim_platform(plan_.platform, devices_used(plan_), switch_fault);
  latency_factor_ = network_latency_factor();
  devices_.resize(platform.hosts.size());
  for (size_t d = 0; d < platform.hosts.size(); ++d) devices_[d].host = platform.hosts[d];
  service_host_ = platform.service_host;
  trace_.meta = core::trace_meta_from_plan(plan_);
  if (no_crosstraffic) {
    trace_.meta["notes"].push_back(
        "a link fault changes a bandwidth at run time, so LV08's reverse-traffic term (5% of each "
        "flow on the opposite direction) is off in this run");
  }
}

// Room for every event up front: steps x (ops that leave an event), plus steps and updates.
void SimRun::reserve_events() {
  size_t events_per_step = 0;
  for (const core::ClientGraph& graph : plan_.clients) {
    for (const Op& op : graph.ops) {
      events_per_step += op.compute_flop > 0 || op.kind == OpKind::kSend;
    }
    events_per_step += 2;
  }
  trace_.events.reserve(events_per_step * size_t(plan_.steps));
}

// How the run ended (restarts, a job failure, a sync stall; a deadlock is a backend error) and
// the faults that struck after it, into the trace's metadata.
void SimRun::record_outcome() {
  if (!restarts_.empty()) trace_.meta["restarts"] = restarts_;
  if (failure_.fault >= 0 && !plan_.recovery.enabled) {
    trace_.meta["job_failure"] = {
        {"time_s", failure_.fault_s},
        {"detected_s", failure_.detected_s},
        {"global_step", failure_.global_step},
        {"cause", plan_.faults[size_t(failure_.fault)].description +
                      "; training.recovery is not set, so the job is not restarted"}};
  } else if (sync_.enabled && global_step_ < plan_.steps) {
    // Synchronous training stopped: SimGrid found every actor blocked (a take waiting for
    // gradients no live worker will send, workers waiting for tokens).
    trace_.meta["stall"] = sync_stall();
  } else if (finished_clients_ < int(clients_.size())) {
    throw core::BackendError(
        "the simulation deadlocked at t=" + std::to_string(sg4::Engine::get_clock()) + " s with " +
        std::to_string(clients_.size() - size_t(finished_clients_)) + " client(s) unfinished");
  }
  const double end_s = sg4::Engine::get_clock();
  for (const core::PlanFault& f : plan_.faults) {
    const double strikes_s = f.kind == "role" || f.kind == "job" ? f.at_s : f.from_s;
    if (strikes_s <= end_s) continue;
    trace_.meta["notes"].push_back(
        "fault \"" + f.description + "\" at " +
        core::format_quantity(strikes_s, core::Dimension::kTime) + " comes after the run's end (" +
        core::format_quantity(end_s, core::Dimension::kTime) + "): it changed nothing");
  }
  trace_.meta["simulated_time_s"] = end_s;
}

core::Trace SimRun::run() {
  sg4::Engine engine("replisim");
  xbt_log_control_set("xbt_cfg.thres:warning");
  build_platform();
  global_step_counter_ = trace_.intern("global_step");
  prepare_clients();
  prepare_sync();
  role_dead_.assign(plan_.roles.size(), false);
  for (size_t c = 0; c < plan_.clients.size(); ++c) {
    if (plan_.roles[size_t(plan_.clients[c].role)].chief) chief_client_ = int(c);
  }
  apply_slowdowns();
  reserve_events();
  driver_mutex_ = sg4::Mutex::create();
  driver_wake_ = sg4::ConditionVariable::create();
  links_mutex_ = sg4::Mutex::create();
  links_restored_ = sg4::ConditionVariable::create();
  create_actors();
  const auto start = std::chrono::steady_clock::now();
  engine.run();
  engine_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record_outcome();
  return std::move(trace_);
}

}  // namespace detail

core::Trace run_plan_in_this_process(const core::Plan& plan, double* engine_wall_s) {
  detail::SimRun run(plan);
  core::Trace trace = run.run();
  if (engine_wall_s != nullptr) *engine_wall_s = run.engine_wall_s();
  return trace;
}

}  // namespace replisim::sim
