// The step engine's side of faults: timers for every fault of the plan, role faults that kill
// clients (a dead client's queued ops are dropped; an op already running on a device finishes,
// its device is not failed, but nothing follows from it), job failures and the restarts that
// JobRecovery decides.
#include <algorithm>
#include <climits>

#include "core/base/units.h"
#include "core/runtime/recovery_timeline.h"
#include "sim/sim_engine.h"

namespace replisim::sim::detail {

void SimRun::schedule_faults() {
  // At one time, faults come before first starts and steps: orders below -clients.
  const int base = -1 - int(clients_.size());
  for (size_t f = 0; f < plan_.faults.size(); ++f) {
    const core::PlanFault& fault = plan_.faults[f];
    const int order = base - 2 * int(f);
    if (fault.is_death()) {
      timers_.push({fault.at_s, order, TimerKind::kFault, int(f)});
    }
    if (fault.kind == core::PlanFaultKind::kLink) {
      timers_.push({fault.from_s, order, TimerKind::kFault, int(f)});
      timers_.push({fault.until_s, order - 1, TimerKind::kFaultEnd, int(f)});
    }
  }
}

void SimRun::inject_fault(int fault, bool window_end) {
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  if (f.kind == core::PlanFaultKind::kLink) {
    links_.change(fault, !window_end, network_);
    return;
  }
  if (f.kind == core::PlanFaultKind::kJob) {
    fail_job(fault);
    return;
  }
  const double now = sg4::Engine::get_clock();
  if (recovery_.job_down()) {
    outcome_.notes.push_back("fault \"" + f.description + "\" struck while the job was down (" +
                             core::format_quantity(now, core::Dimension::kTime) +
                             "): the restart brings every task back");
    return;
  }
  for (int c : f.clients) {
    ClientState& s = clients_[size_t(c)];
    if (s.dead || loop_.client(c).finished) continue;  // already gone: nothing to kill
    // A worker still waiting for a restart to bring it back was running no step: -1.
    const bool awaiting_restart = s.awaiting_restart;
    recorder_.client_death(c, f.description, awaiting_restart ? -1 : loop_.client(c).step, now);
    kill_client(c);
    // The chief's sync op runs in the chief's process: it dies with worker 0.
    if (c == 0 && sync_.enabled()) kill_client(int(clients_.size()) - 1);
    if (awaiting_restart) note_lost_before_back(c);
  }
}

void SimRun::kill_client(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  s.dead = true;
  if (size_t(c) < plan_.clients.size()) steady_.client_died(c);
  const double resume_s = collectives_ ? collectives_->client_died(c) : -1;
  if (values_ && resume_s >= 0) values_->rank_gone(c);  // elastic: the job goes on without it
  if (!loop_.client(c).finished) {
    loop_.client(c).finished = true;
    ++finished_clients_;
  }
  if (resume_s >= 0) roll_back_survivors(resume_s);
  driver_wake_->notify_all();
}

// Horovod Elastic: every survivor's step in progress failed (its work is lost: the new
// incarnation drops what is still under way), each restores its last commit, and at the
// rendezvous's end state.sync() gives every survivor rank 0's (here the lowest live rank's): its
// steps done, its global_step. A survivor that was a step ahead trains that step again; one a
// step behind takes the root's and skips it. A second death during the rendezvous moves the
// resumption (the earlier timers belong to an older incarnation).
void SimRun::roll_back_survivors(double resume_s) {
  const int root = collectives_->counting_client();
  if (clients_[size_t(root)].dead) return;  // no survivor
  const int step = loop_.client(root).step;
  if (values_) values_->roll_back(step);
  if (global_step_ != step) {
    global_step_ = step;
    recorder_.global_step(sg4::Engine::get_clock(), global_step_);
  }
  for (size_t c = 0; c < clients_.size(); ++c) {
    ClientState& s = clients_[c];
    if (s.dead) continue;
    ++s.incarnation;
    if (loop_.client(int(c)).finished) --finished_clients_;
    loop_.resume(int(c), step, global_step_);
    s.awaiting_restart = true;
    s.restart_start_s = resume_s;
    timers_.push({resume_s, -1 - int(c), TimerKind::kRollback, int(c), s.incarnation});
  }
}

void SimRun::fail_job(int fault) {
  const double detect_s = recovery_.fail(fault, sg4::Engine::get_clock(), global_step_);
  if (detect_s >= 0) timers_.push({detect_s, INT_MIN, TimerKind::kDetect, fault});
}

void SimRun::detect_job_failure() {
  const double restart_s = recovery_.detect(sg4::Engine::get_clock(), global_step_);
  for (size_t c = 0; c < clients_.size(); ++c) kill_client(int(c));
  if (restart_s >= 0) timers_.push({restart_s, INT_MIN, TimerKind::kRestart, -1});
}

// Worker `c` died before its restart brought it back: the restart record names it, and "every
// worker back" becomes the last of the others.
void SimRun::note_lost_before_back(int c) {
  if (!recovery_.restarted()) return;
  clients_[size_t(c)].lost_before_back = true;
  double others_back_s = 0;
  for (const ClientState& s : clients_) {
    if (!s.lost_before_back) others_back_s = std::max(others_back_s, s.restart_start_s);
  }
  recovery_.lost_before_back(plan_.roles[size_t(clients_[size_t(c)].graph->role)].name,
                             others_back_s);
}

void SimRun::restart_job() {
  const double now = sg4::Engine::get_clock();
  const JobRecovery::Restart restart = recovery_.restart(now);
  global_step_ = restart.global_step;
  if (values_) values_->restore(restart.global_step);
  recorder_.global_step(now, global_step_);
  steady_.restarted(restart.checkpoint_start_s, now);
  // The launcher brings the tasks up one by one, in the order and spacing of the first start
  // (core::relaunch_offset_s after the chief); a non-chief worker checks for a ready model
  // as soon as it is up, then every recovery_wait (SessionManager.wait_for_session).
  const core::RecoveryTimeline timeline(plan_.recovery);
  const std::vector<int64_t> client_steps(restart.client_steps.begin(), restart.client_steps.end());
  double workers_resumed_s = restart.chief_ready_s;
  for (size_t c = 0; c < clients_.size(); ++c) {
    ClientState& s = clients_[c];
    ++s.incarnation;
    s.dead = false;
    if (loop_.client(int(c)).finished) --finished_clients_;
    loop_.resume(int(c), int(core::RecoveryTimeline::resumed_step(plan_, client_steps, c)),
                 global_step_);
    const bool with_chief = int(c) == recovery_.chief_client() ||
                            loop_.client(int(c)).loop == core::LoopKind::kChiefSyncOp;
    double start_s = restart.chief_ready_s;
    if (!with_chief) {
      start_s = timeline.worker_back_s(now + core::relaunch_offset_s(plan_, *s.graph),
                                       restart.chief_ready_s);
      workers_resumed_s = std::max(workers_resumed_s, start_s);
    }
    s.restart_start_s = start_s;
    s.awaiting_restart = true;
    s.lost_before_back = false;
    timers_.push({start_s, -1 - int(c), TimerKind::kStart, int(c), s.incarnation});
  }
  if (sync_.enabled() || sync_.barriers()) sync_.reset();
  if (collectives_) collectives_->reset();
  recovery_.record_restart(restart, now, workers_resumed_s);
  // Before the chief's start at the same time: its recovery slice ends as training resumes.
  timers_.push({restart.chief_ready_s, INT_MIN + 1, TimerKind::kResumed, -1});
  driver_wake_->notify_all();
}

}  // namespace replisim::sim::detail
