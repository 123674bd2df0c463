// The plan's faults for real. A role or machine fault kills its tasks' processes at its time:
// each node arms its own death, records it, writes its part of the trace and SIGKILLs itself,
// so that to its peers it is a crash (connections reset, no STOP). A slowdown scales a device's
// compute for its window. The others see a killed peer as a lost connection: a worker's death
// leaves the rest training (async) or stalls them (sync, as the simulation says); a death the job
// cannot survive (a parameter server holding variables, the in-graph client or a tower) fails
// every client at its detection time — training.recovery.detect_timeout after the death when the
// plan has recovery, else as soon as the loss is seen (at once for a killed process, after the
// silence deadline for a machine that vanished) — and, with training.recovery, the launcher
// starts every task again (restorer.h).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <set>

#include <unistd.h>

#include "core/base/units.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

namespace {

// A lost peer counts as killed by a fault that struck up to this long after the loss is seen
// here: the peer's clock and this one differ by their offsets' uncertainty (microseconds on one
// machine, about half a round trip between machines). A peer lost earlier than that before its
// fault's time died otherwise: a failure.
constexpr double kDeathSlackS = 0.05;

bool is_death(const core::PlanFault& f) {
  return f.is_death();
}

std::string time_text(double s) {
  return core::format_quantity(s, core::Dimension::kTime);
}

}  // namespace

std::vector<uint32_t> Node::victims(const core::PlanFault& f) const {
  std::set<uint32_t> tasks;
  for (int r : f.roles) tasks.insert(uint32_t(map_.task_of_role[size_t(r)]));
  for (int c : f.clients) {
    tasks.insert(uint32_t(map_.task_of_role[size_t(plan_.clients[size_t(c)].role)]));
  }
  return {tasks.begin(), tasks.end()};
}

// At the run's start (or restart): this task's deaths on timers, its devices' slowdowns in their
// engines. A fault that struck an earlier incarnation is not armed again.
void Node::arm_faults() {
  for (size_t f = 0; f < plan_.faults.size(); ++f) {
    const core::PlanFault& fault = plan_.faults[f];
    if (fault.kind == core::PlanFaultKind::kSlowdown) {
      auto found = steps_->engines().find(fault.device);
      if (found != steps_->engines().end()) {
        found->second->add_slowdown(fault.from_s, fault.until_s, fault.factor);
        // Its window in the trace, once (as the simulation records it).
        if (!resume_) recorder_->fault_window(fault);
      }
      continue;
    }
    if (fault.kind == core::PlanFaultKind::kLink) {
      // Played on the shaped links by the launcher; its window in the trace once, by the
      // coordinator (as the simulation records it).
      if (coordinator() && !resume_) recorder_->fault_window(fault);
      continue;
    }
    if (!is_death(fault) || fault.at_s < incarnation_start_s_) continue;
    const std::vector<uint32_t> tasks = victims(fault);
    if (std::find(tasks.begin(), tasks.end(), self_) == tasks.end()) continue;
    // A death is no work under way (quiescence does not wait for it).
    at_run_time(fault.at_s, false, [this, f] { die(int(f)); });
  }
  for (auto& [device, engine] : steps_->engines()) engine->set_clock_origin(origin_local_s_);
}

// This task dies by fault `fault`: the death is recorded as the simulation records it, the part
// of the trace is written, and the process kills itself with SIGKILL (no STOP, no ERROR: its peers
// see the connections reset, as after a crash). A worker whose steps were all done is already
// gone, as in the simulation: nothing happens.
void Node::die(int fault) {
  if (stopping_) return;
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  const double now = now_s();
  if (job_fault_ >= 0) {
    note_struck_while_down(f);  // every task starts again anyway (the simulation's note)
    return;
  }
  // Recorded at the fault's time (a machine's tasks all at the same one), the kill follows
  // within milliseconds.
  if (f.kind == core::PlanFaultKind::kRole) {
    bool running = false;
    for (int c : f.clients) {
      const Part& p = steps_->parts()[size_t(c)];
      if (!p.owner || steps_->loop().client(c).finished) continue;
      // A restarted worker still waiting for the model was running no step.
      const bool waiting = restorer_ && restorer_->awaiting_model(c);
      recorder_->client_death(c, f.description,
                              waiting ? -1 : int64_t(steps_->loop().client(c).step), f.at_s);
      running = true;
    }
    if (!running) return;
  } else {
    std::vector<int> roles = f.roles;
    for (int c : f.clients) roles.push_back(plan_.clients[size_t(c)].role);
    for (int r : roles) {
      if (uint32_t(map_.task_of_role[size_t(r)]) == self_) {
        recorder_->role_death(r, f.description, f.at_s);
      }
    }
  }
  std::fprintf(stderr, "replisim node %s: killed at %s by the plan's fault \"%s\" (SIGKILL)\n",
               spec_.tasks[self_].name().c_str(), time_text(now).c_str(), f.description.c_str());
  stopping_ = true;
  end_s_ = now;
  outcome_.killed_s = f.at_s;  // the plan's time, as the death's events
  write_trace_end();
  const auto kill_self = [] {
    std::fflush(nullptr);
    ::kill(::getpid(), SIGKILL);
  };
  // Started by a cluster's launcher: the part goes to the coordinator first (it merges the run).
  if (gather_ && !coordinator() && live(uint32_t(map_.coordinator_task))) {
    gather_->send_part(kill_self);
    return;
  }
  kill_self();
}

// The fault of the plan that killed `peer` (its connection just broke): the latest death fault
// of this incarnation with `peer` among its victims that has struck by now. -1: none, so the
// loss is a failure.
int Node::planned_death(uint32_t peer) const {
  if (!job_->started()) return -1;
  const double now = now_s();
  int found = -1;
  for (size_t f = 0; f < plan_.faults.size(); ++f) {
    const core::PlanFault& fault = plan_.faults[f];
    if (!is_death(fault) || fault.at_s < incarnation_start_s_ || fault.at_s > now + kDeathSlackS) {
      continue;
    }
    const std::vector<uint32_t> tasks = victims(fault);
    if (std::find(tasks.begin(), tasks.end(), peer) == tasks.end()) continue;
    if (found < 0 || fault.at_s >= plan_.faults[size_t(found)].at_s) found = int(f);
  }
  return found;
}

void Node::note_struck_while_down(const core::PlanFault& f) {
  const std::string note =
      "fault \"" + f.description + "\" struck while the job was down (" + time_text(f.at_s) +
      "): " +
      (f.kind == core::PlanFaultKind::kJob ? "it changed nothing"
                                           : "the restart brings every task back");
  if (std::find(outcome_.notes.begin(), outcome_.notes.end(), note) == outcome_.notes.end()) {
    outcome_.notes.push_back(note);
  }
}

void Node::on_peer_lost(uint32_t peer, const std::string& why) {
  if (stopping_ || job_fault_ >= 0) {
    // The run is over here, or the job is down and every task stops at its detection: a peer
    // that goes first is no news.
    task_dead_[peer] = true;
    mesh_->drop_peer(peer);
    return;
  }
  const int fault = planned_death(peer);
  if (fault < 0) {
    unplanned_death(peer, why);
    return;
  }
  task_dead_[peer] = true;
  mesh_->drop_peer(peer);
  if (plan_.faults[size_t(fault)].kind == core::PlanFaultKind::kJob) {
    job_down(fault);
    return;
  }
  lose_graphs_of(peer);
}

// A peer died without a fault of the plan (killed from outside: kill -9, the OOM killer), with
// TF's semantics. Before the job started it is a failure to start. After, it is what the same
// death written as a role fault would be (core::death_of_roles): a worker's clients are lost and
// the others train on (async) or wait for them (sync), the coordinator recording the death with
// the step it interrupted; a task the job cannot lose (a PS, the in-graph client, a tower) fails
// the job, as a TF session fails: each task that saw it records the failure and stops, and the
// run ends with what it measured up to there (run's launcher reports it, then fails). A PS that
// no step uses changes nothing.
void Node::unplanned_death(uint32_t peer, const std::string& why) {
  if (!job_->started()) {
    fail(why);
    return;
  }
  // START gives t = 0 a little ahead: a death seen before it is at the run's start.
  const double now = std::max(0.0, now_s());
  const std::string task = spec_.tasks[peer].name();
  std::string who = task;  // its first role (a tower's task is a worker's), task and host
  for (int r : map_.roles_of_task[peer]) {
    if (plan_.roles[size_t(r)].kind == core::RoleKind::kSyncQueueRunner) continue;
    who = plan_.roles[size_t(r)].name;
    break;
  }
  who += " (task " + task + " on " + spec_.tasks[peer].host + ")";
  core::PlanFault death = core::death_of_roles(plan_, map_.roles_of_task[peer], now,
                                               who + " died, no fault of the plan");
  // An elastic all-reduce job loses no rank it can go on without but rank 0, whose task runs the
  // job's control and Horovod's coordinator (check_faults refuses the plan's own such deaths).
  if (collectives_ && death.kind != core::PlanFaultKind::kJob && !plan_.collective.ranks.empty() &&
      collectives_->task_of_rank(0) == peer) {
    death.kind = core::PlanFaultKind::kJob;
    death.roles = map_.roles_of_task[peer];
    death.clients.clear();
    death.description += " (rank 0: the job's control and the all-reduce coordinator)";
  }
  task_dead_[peer] = true;
  mesh_->drop_peer(peer);
  const bool job = death.kind == core::PlanFaultKind::kJob;
  std::fprintf(stderr, "replisim node %s: task %s died at %s, no fault of the plan (%s): %s\n",
               spec_.tasks[self_].name().c_str(), task.c_str(), time_text(now).c_str(), why.c_str(),
               !job ? "the others go on without it, as TF's workers do"
               : plan_.recovery.enabled && options_.launched
                   ? "the job cannot lose it and fails, as TF's sessions do; training.recovery: "
                     "the tasks start again"
                   : "the job cannot lose it and fails, as TF's sessions do");
  if (job) {
    // Recorded also when run's launcher restarts the job (training.recovery): it reads the
    // failure's time and cause from the parts, and a restarted run's outcome is its last start's.
    // global_step as this task knows it: a PS holds it, a worker has seen it, and an in-graph
    // client's steps are the global steps.
    int64_t global_step = std::max(vars_->global_step(), global_step_seen_);
    if (!core::clients_are_workers(plan_)) {
      for (const Part& p : steps_->parts()) {
        if (p.owner && p.index < int(plan_.clients.size())) {
          global_step = std::max(global_step, int64_t(steps_->loop().client(p.index).step));
        }
      }
    }
    outcome_.job_failure = core::JobFailureRecord{now, now, global_step, death.description, true};
    if (coordinator()) {
      for (int r : death.roles) recorder_->role_death(r, death.description, now, true);
    }
    end_s_ = now;
    stop();
    return;
  }
  if (coordinator()) {
    for (int c : death.clients) {
      if (job_->finished(c)) continue;
      recorder_->client_death(c, death.description, job_->progress() ? job_->steps_seen(c) : -1,
                              now, true);
    }
  }
  lose_graphs_of(peer);
}

// A worker died: its graphs end here (their steps in progress are dropped, as the simulation
// drops a dead client's queued ops); for the coordinator they are finished.
void Node::lose_graphs_of(uint32_t peer) {
  for (Part& p : steps_->parts()) {
    if (p.owner_task != peer) continue;
    graph_dead_[size_t(p.index)] = true;
    steps_->abandon(p.index);
    if (coordinator()) job_->set_finished(p.index);
    steady_stop_->client_died(p.index);
    // A worker the restart never brought back (the restart's record names it).
    if (restorer_ && p.index < int(plan_.clients.size()) &&
        !plan_.roles[size_t(p.graph->role)].chief) {
      restorer_->client_lost(size_t(p.index), plan_.roles[size_t(p.graph->role)].name);
    }
  }
  steps_->transfers().drop_from(peer);
  // Elastic all-reduce: a save in flight (the final one, a checkpoint) no longer waits for the
  // dead rank's shard; the job goes on (a job that fails restores from an earlier, whole one).
  if (saver_ && plan_.collective.elastic) saver_->task_died(peer);
  // Elastic all-reduce: the survivors re-form the ring without its ranks (Horovod Elastic).
  if (collectives_) collectives_->task_died(peer);
  if (objective_gather_) objective_gather_->task_died(peer);
  // A restarted chief that dies before it restored the model: no worker will find one ready
  // (TF's wait_for_session would wait until its max_wait_secs); their clients end here.
  if (coordinator() && job_->started() && restorer_ && !restorer_->model_ready() &&
      peer == uint32_t(map_.chief_task)) {
    outcome_.notes.push_back(
        "the chief died before it restored the model after the restart: the other workers never "
        "found a ready model and trained no more (TF's wait_for_session waits up to its "
        "max_wait_secs)");
    for (size_t c = 0; c < steps_->parts().size(); ++c) {
      if (!restorer_->resumed(c)) job_->set_finished(int(c));
    }
    job_->end_job();
    return;
  }
  if (coordinator() && job_->started()) {
    steady_stop_->maybe_set_limits();  // a dead client answers no stop question
    job_->maybe_end_job();
    quiescence_->task_died();
  }
}

// A task the job cannot lose died: nothing it held can be read or updated any more, so every
// step waits; the clients find out at the detection time and the run ends there (or restarts).
void Node::job_down(int fault) {
  job_fault_ = fault;
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  // Every task the fault kills is gone (or going): nothing is sent to it any more, nothing
  // waited for (its connections may break later than the first one's).
  for (uint32_t t : victims(f)) {
    if (t != self_) task_dead_[t] = true;
  }
  // Without training.recovery at once (the fault's time has passed), as the simulator has it.
  at_run_time(core::RecoveryTimeline(plan_.recovery).detected_s(f.at_s), false,
              [this] { detect_job_failure(); });
}

// The detection time: this task stops, as a TF client whose session failed. Without
// training.recovery the run ends here (the report's job failure row); with it, the launcher
// starts every task again after restart_delay (the next incarnation records the restart).
void Node::detect_job_failure() {
  if (stopping_) return;
  const core::PlanFault& f = plan_.faults[size_t(job_fault_)];
  const double now = now_s();
  // Deaths planned between the failure and its detection struck a job that was down already.
  for (const core::PlanFault& other : plan_.faults) {
    if (is_death(other) && &other != &f && other.at_s > f.at_s && other.at_s <= now) {
      note_struck_while_down(other);
    }
  }
  std::string dead;
  for (uint32_t t : victims(f)) {
    dead += (dead.empty() ? "" : ", ") + spec_.tasks[t].name();
  }
  // Only run's launcher starts tasks again; nodes a cluster's launcher started end here.
  const bool restarts = plan_.recovery.enabled && options_.launched;
  if (!restarts) {
    outcome_.job_failure = core::JobFailureRecord{
        f.at_s, now, vars_->global_step(),
        f.description + (plan_.recovery.enabled
                             ? "; training.recovery needs replisim run's launcher to start the "
                               "tasks again, so the job is not restarted"
                             : "; training.recovery is not set, so the job is not restarted")};
  }
  std::fprintf(stderr,
               "replisim node %s: the job failed: %s (task %s died at %s), detected at %s; %s\n",
               spec_.tasks[self_].name().c_str(), f.description.c_str(), dead.c_str(),
               time_text(f.at_s).c_str(), time_text(now).c_str(),
               restarts ? "training.recovery: the tasks start again" : "not restarted");
  end_s_ = now;
  stop(job_fault_);
}

}  // namespace replisim::real::detail
