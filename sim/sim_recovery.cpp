#include "sim/sim_recovery.h"

#include "core/runtime/recovery_timeline.h"

#include <algorithm>

#include "core/base/units.h"

namespace replisim::sim::detail {

JobRecovery::JobRecovery(const core::Plan& plan, core::TraceRecorder& recorder,
                         std::vector<std::string>& notes)
    : plan_(plan), recorder_(recorder), notes_(notes), role_dead_(plan.roles.size(), false) {
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    if (plan.roles[size_t(plan.clients[c].role)].chief) chief_client_ = int(c);
  }
}

double JobRecovery::write_checkpoint(double now, int64_t global_step,
                                     const std::vector<int>& client_steps) {
  // With a role of the job dead, the save cannot read its variables: it fails with the job.
  if (job_down_) return 0;
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const double duration_s = policy.bytes / policy.disk_bandwidth_bytes_per_s;
  checkpoints_.push_back({now, now + duration_s, global_step, client_steps});
  last_checkpoint_s_ = now;
  recorder_.checkpoint(chief_client_, client_steps[size_t(chief_client_)], now, now + duration_s,
                       policy.bytes, global_step, false);
  return duration_s;
}

double JobRecovery::chief_duties(double now, int64_t global_step,
                                 const std::vector<int>& client_steps) {
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const int step = client_steps[size_t(chief_client_)];
  double pause_s = 0;
  if (policy.every_s > 0 && now - last_checkpoint_s_ >= policy.every_s) {
    pause_s += write_checkpoint(now, global_step, client_steps);
  }
  if (policy.summary_every_steps > 0 && step % policy.summary_every_steps == 0) {
    const double duration_s = policy.summary_bytes / policy.summary_disk_bandwidth_bytes_per_s;
    recorder_.checkpoint(chief_client_, step, now + pause_s, now + pause_s + duration_s,
                         policy.summary_bytes, global_step, true);
    pause_s += duration_s;
  }
  return pause_s;
}

double JobRecovery::fail(int fault, double now, int64_t global_step) {
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  if (job_down_) {  // already failed: the restart brings every task back
    notes_.push_back("fault \"" + f.description + "\" struck while the job was down (" +
                     core::format_quantity(now, core::Dimension::kTime) + "): it changed nothing");
    return -1;
  }
  // The last restart had not brought every worker back yet (or the chief was still restoring:
  // its recovery slice ends here).
  if (!restarts_.empty() && restarts_.back().workers_resumed_s > now) {
    restarts_.back().interrupted_s = now;
    if (pending_) emit_pending_recovery(std::min(pending_->end_s, now));
  }
  // A checkpoint still being written never completes.
  while (!checkpoints_.empty() && checkpoints_.back().end_s > now) checkpoints_.pop_back();
  std::vector<int> dying = f.roles;
  // Workers on a machine that died stop with it (their ops no longer run).
  for (int c : f.clients) dying.push_back(plan_.clients[size_t(c)].role);
  for (int r : dying) {
    role_dead_[size_t(r)] = true;
    recorder_.role_death(r, f.description, now);
  }
  job_down_ = true;
  failure_ = {fault, now, now, global_step};
  return core::RecoveryTimeline(plan_.recovery).detected_s(now);
}

double JobRecovery::detect(double now, int64_t global_step) {
  failure_.detected_s = now;
  failure_.global_step = global_step;
  if (!plan_.recovery.enabled) {
    job_down_ = false;  // for good: the run ends here
    return -1;
  }
  return core::RecoveryTimeline(plan_.recovery).restart_s(now);
}

JobRecovery::Restart JobRecovery::restart(double now) {
  role_dead_.assign(role_dead_.size(), false);
  job_down_ = false;
  restored_ = nullptr;
  for (const Checkpoint& k : checkpoints_) {
    if (core::RecoveryTimeline::restorable(k.end_s, failure_.fault_s)) restored_ = &k;
  }
  Restart r;
  if (restored_ != nullptr) {
    r.global_step = restored_->global_step;
    r.client_steps = restored_->client_steps;
    r.restore_s = plan_.checkpoints.bytes / plan_.checkpoints.disk_bandwidth_bytes_per_s;
    r.checkpoint_start_s = restored_->start_s;
  }
  r.chief_ready_s = now + r.restore_s;
  return r;
}

void JobRecovery::record_restart(const Restart& r, double now, double workers_resumed_s) {
  const core::PlanFault& f = plan_.faults[size_t(failure_.fault)];
  const int64_t from_step = r.global_step;
  // Training time thrown away: since the checkpoint's save, or since training last resumed.
  double work_from_s = restored_ != nullptr ? restored_->start_s : 0.0;
  if (!restarts_.empty()) work_from_s = std::max(work_from_s, restarts_.back().resumed_s);
  core::RestartRecord k;
  k.cause = f.description;
  k.fault_s = failure_.fault_s;
  k.detected_s = failure_.detected_s;
  k.restart_s = now;
  k.resumed_s = r.chief_ready_s;
  k.workers_resumed_s = workers_resumed_s;
  k.restore_s = r.restore_s;
  k.checkpoint_start_s = restored_ != nullptr ? restored_->start_s : 0.0;
  k.checkpoint_global_step = from_step;
  k.lost_work_s = std::max(0.0, failure_.fault_s - work_from_s);
  k.global_step_at_failure = failure_.global_step;
  k.lost_global_steps = failure_.global_step - from_step;
  restarts_.push_back(std::move(k));
  pending_ = PendingRecovery{
      f.roles.empty() ? std::string("job") : plan_.roles[size_t(f.roles.front())].name,
      f.description + ": restart from global_step " + std::to_string(from_step),
      failure_.fault_s,
      r.chief_ready_s,
      from_step,
      failure_.global_step};
}

void JobRecovery::resumed() {
  if (pending_) emit_pending_recovery(pending_->end_s);
}

void JobRecovery::emit_pending_recovery(double end_s) {
  const PendingRecovery p = *pending_;
  pending_.reset();
  recorder_.recovery(p.actor, p.label, p.start_s, end_s, p.restored, p.at_failure);
}

void JobRecovery::lost_before_back(const std::string& worker, double others_back_s) {
  if (restarts_.empty()) return;
  core::RestartRecord& k = restarts_.back();
  k.workers_lost.push_back(worker);
  k.workers_resumed_s = std::max(k.resumed_s, others_back_s);
}

void JobRecovery::finish(core::RunOutcome& outcome) {
  if (pending_) emit_pending_recovery(pending_->end_s);
  outcome.restarts = restarts_;
  if (failure_.fault >= 0 && !plan_.recovery.enabled) {
    outcome.job_failure =
        core::JobFailureRecord{failure_.fault_s, failure_.detected_s, failure_.global_step,
                               plan_.faults[size_t(failure_.fault)].description +
                                   "; training.recovery is not set, so the job is not restarted"};
  }
}

}  // namespace replisim::sim::detail
