// The chief's checkpoints and summaries, and job failures with their restarts.
//
// TF 1.x behaviour modelled (tensorflow/python/training/basic_session_run_hooks.py,
// session_manager.py, monitored_session.py):
// - CheckpointSaverHook saves once the session is created, then after the first chief step
//   ending save_checkpoint_secs or more after the last save; the save blocks the chief's loop.
// - SummarySaverHook writes summaries every save_summaries_steps chief steps.
// - When a parameter server (or, in-graph, the client or a tower) dies, every client's session
//   fails once its RPCs to the dead task fail; the launcher restarts the tasks; the chief's
//   SessionManager restores the last checkpoint; the other workers' wait_for_session polls for
//   a ready model every recovery_wait_secs.
#include <algorithm>
#include <climits>
#include <cmath>

#include "core/base/units.h"
#include "sim/sim_run_state.h"

namespace replisim::sim::detail {

bool SimRun::void_item(int c, int incarnation, int op_index) const {
  const ClientState& s = clients_[size_t(c)];
  if (s.dead || incarnation != s.incarnation) return true;
  if (!job_down_) return false;
  const Op& op = s.graph->ops[size_t(op_index)];
  return role_dead_[size_t(op.role)] ||
         (op.kind == OpKind::kSend && role_dead_[size_t(s.graph->ops[size_t(op.peer)].role)]);
}

double SimRun::write_checkpoint(double now, const char* label) {
  // With a role of the job dead, the save cannot read its variables: it fails with the job.
  if (job_down_) return 0;
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const double duration_s = policy.bytes / policy.disk_bandwidth_bytes_per_s;
  Checkpoint checkpoint;
  checkpoint.start_s = now;
  checkpoint.end_s = now + duration_s;
  checkpoint.global_step = global_step_;
  for (const ClientState& s : clients_) checkpoint.client_steps.push_back(s.step);
  checkpoints_.push_back(std::move(checkpoint));
  last_checkpoint_s_ = now;
  const ClientState& chief = clients_[size_t(chief_client_)];
  core::TraceEvent event;
  event.kind = core::EventKind::kCheckpoint;
  event.actor = event.client = chief.role_name;
  event.device = trace_.intern(plan_.platform.devices[size_t(chief.role_device)].name);
  event.label = trace_.intern(label);
  event.step = chief.step;
  event.start_s = now;
  event.end_s = now + duration_s;
  event.bytes = policy.bytes;
  event.global_step_after = global_step_;
  trace_.events.push_back(event);
  return duration_s;
}

double SimRun::chief_duties(int c, double now) {
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const ClientState& s = clients_[size_t(c)];
  double pause_s = 0;
  if (policy.every_s > 0 && now - last_checkpoint_s_ >= policy.every_s) {
    pause_s += write_checkpoint(now, "checkpoint");
  }
  if (policy.summary_every_steps > 0 && s.step % policy.summary_every_steps == 0) {
    const double duration_s = policy.summary_bytes / policy.summary_disk_bandwidth_bytes_per_s;
    core::TraceEvent event;
    event.kind = core::EventKind::kCheckpoint;
    event.actor = event.client = s.role_name;
    event.device = trace_.intern(plan_.platform.devices[size_t(s.role_device)].name);
    event.label = trace_.intern("summaries");
    event.step = s.step;
    event.start_s = now + pause_s;
    event.end_s = now + pause_s + duration_s;
    event.bytes = policy.summary_bytes;
    event.global_step_after = global_step_;
    trace_.events.push_back(event);
    pause_s += duration_s;
  }
  return pause_s;
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
  if (c == chief_client_ && plan_.checkpoints.every_s > 0) {
    const double now = sg4::Engine::get_clock();
    schedule_step(c, now + write_checkpoint(now, "checkpoint"));
    return;
  }
  start_step(c);
}

void SimRun::fail_job(int fault) {
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  const double now = sg4::Engine::get_clock();
  if (job_down_) {  // already failed: the restart brings every task back
    trace_.meta["notes"].push_back(
        "fault \"" + f.description + "\" struck while the job was down (" +
        core::format_quantity(now, core::Dimension::kTime) + "): it changed nothing");
    return;
  }
  // The last restart had not brought every worker back yet (or the chief was still restoring:
  // its recovery slice ends here).
  if (!restarts_.empty() && restarts_.back()["workers_resumed_s"].get<double>() > now) {
    restarts_.back()["interrupted_s"] = now;
    for (auto e = trace_.events.rbegin(); e != trace_.events.rend(); ++e) {
      if (e->kind != core::EventKind::kRecovery) continue;
      e->end_s = std::min(e->end_s, now);
      break;
    }
  }
  // A checkpoint still being written never completes.
  while (!checkpoints_.empty() && checkpoints_.back().end_s > now) checkpoints_.pop_back();
  std::vector<int> dying = f.roles;
  // Workers on a machine that died stop with it (their ops no longer run).
  for (int c : f.clients) dying.push_back(plan_.clients[size_t(c)].role);
  for (int r : dying) {
    role_dead_[size_t(r)] = true;
    core::TraceEvent event;
    event.kind = core::EventKind::kFault;
    event.actor = trace_.intern(plan_.roles[size_t(r)].name);
    event.device =
        trace_.intern(plan_.platform.devices[size_t(plan_.roles[size_t(r)].device)].name);
    event.label = trace_.intern(f.description);
    event.start_s = event.end_s = now;
    trace_.events.push_back(event);
  }
  job_down_ = true;
  failure_ = {fault, now, now, global_step_};
  const double detect_s = plan_.recovery.enabled ? plan_.recovery.detect_timeout_s : 0.0;
  timers_.push({now + detect_s, INT_MIN, TimerKind::kDetect, fault});
}

void SimRun::detect_job_failure() {
  failure_.detected_s = sg4::Engine::get_clock();
  failure_.global_step = global_step_;
  for (size_t c = 0; c < clients_.size(); ++c) kill_client(int(c));
  if (!plan_.recovery.enabled) {
    job_down_ = false;  // for good: the run ends here
    return;
  }
  timers_.push({failure_.detected_s + plan_.recovery.restart_delay_s, INT_MIN, TimerKind::kRestart,
                failure_.fault});
}

// The restart's record (trace metadata "restarts") and its trace event.
void SimRun::record_restart(const Checkpoint* checkpoint, double restore_s,
                            double workers_resumed_s) {
  const double now = sg4::Engine::get_clock();
  const double chief_ready_s = now + restore_s;
  const core::PlanFault& f = plan_.faults[size_t(failure_.fault)];
  const int64_t from_step = checkpoint != nullptr ? checkpoint->global_step : 0;
  // Training time thrown away: since the checkpoint's save, or since training last resumed.
  double work_from_s = checkpoint != nullptr ? checkpoint->start_s : 0.0;
  if (!restarts_.empty()) {
    work_from_s = std::max(work_from_s, restarts_.back()["resumed_s"].get<double>());
  }
  restarts_.push_back({{"cause", f.description},
                       {"fault_s", failure_.fault_s},
                       {"detected_s", failure_.detected_s},
                       {"restart_s", now},
                       {"resumed_s", chief_ready_s},
                       {"workers_resumed_s", workers_resumed_s},
                       {"restore_s", restore_s},
                       {"checkpoint_start_s", checkpoint != nullptr ? checkpoint->start_s : 0.0},
                       {"checkpoint_global_step", from_step},
                       {"lost_work_s", std::max(0.0, failure_.fault_s - work_from_s)},
                       {"global_step_at_failure", failure_.global_step},
                       {"lost_global_steps", failure_.global_step - from_step}});
  core::TraceEvent event;
  event.kind = core::EventKind::kRecovery;
  event.actor = trace_.intern(f.roles.empty() ? std::string("job")
                                              : plan_.roles[size_t(f.roles.front())].name);
  event.label =
      trace_.intern(f.description + ": restart from global_step " + std::to_string(from_step));
  event.start_s = failure_.fault_s;
  event.end_s = chief_ready_s;
  event.global_step_read = from_step;
  event.global_step_after = failure_.global_step;
  trace_.events.push_back(event);
}

// Worker `c` died before its restart brought it back: the restart record names it, and "every
// worker back" becomes the last of the others.
void SimRun::note_lost_before_back(int c) {
  if (restarts_.empty()) return;
  clients_[size_t(c)].lost_before_back = true;
  nlohmann::json& k = restarts_.back();
  k["workers_lost"].push_back(trace_.str(clients_[size_t(c)].role_name));
  double back_s = k["resumed_s"].get<double>();
  for (const ClientState& s : clients_) {
    if (!s.lost_before_back) back_s = std::max(back_s, s.restart_start_s);
  }
  k["workers_resumed_s"] = back_s;
}

void SimRun::restart_job() {
  const double now = sg4::Engine::get_clock();
  role_dead_.assign(role_dead_.size(), false);
  job_down_ = false;
  // The last checkpoint on disk before the failure; none: a fresh start from global_step 0.
  const Checkpoint* checkpoint = nullptr;
  for (const Checkpoint& k : checkpoints_) {
    if (k.end_s <= failure_.fault_s) checkpoint = &k;
  }
  global_step_ = checkpoint != nullptr ? checkpoint->global_step : 0;
  trace_.counters.push_back({global_step_counter_, now, double(global_step_)});
  const double restore_s =
      checkpoint != nullptr ? plan_.checkpoints.bytes / plan_.checkpoints.disk_bandwidth_bytes_per_s
                            : 0.0;
  const double chief_ready_s = now + restore_s;
  // The launcher brings the tasks up one by one, in the order and spacing of the first start
  // (each client's start_offset_s, 0 for the chief); a non-chief worker checks for a ready model
  // as soon as it is up, then every recovery_wait (SessionManager.wait_for_session).
  const double wait_s = plan_.recovery.recovery_wait_s;
  double workers_resumed_s = chief_ready_s;
  for (size_t c = 0; c < clients_.size(); ++c) {
    ClientState& s = clients_[c];
    ++s.incarnation;
    s.dead = false;
    if (s.finished) {
      s.finished = false;
      --finished_clients_;
    }
    s.step = checkpoint != nullptr ? checkpoint->client_steps[c] : 0;
    s.produced = s.step;
    s.batches_ready = 0;
    s.producing = false;
    s.waiting_for_input = false;
    s.next_local_step = global_step_;
    const bool with_chief = int(c) == chief_client_ || s.loop == StepLoop::kChiefSyncOp;
    double start_s = chief_ready_s;
    if (!with_chief) {
      const double up_s = now + s.graph->start_offset_s;
      start_s = up_s + std::ceil(std::max(0.0, chief_ready_s - up_s) / wait_s) * wait_s;
      workers_resumed_s = std::max(workers_resumed_s, start_s);
    }
    s.restart_start_s = start_s;
    s.awaiting_restart = true;
    s.lost_before_back = false;
    timers_.push({start_s, -1 - int(c), TimerKind::kStart, int(c), s.incarnation});
  }
  if (sync_.enabled) reset_sync();
  record_restart(checkpoint, restore_s, workers_resumed_s);
  driver_wake_->notify_all();
}

}  // namespace replisim::sim::detail
