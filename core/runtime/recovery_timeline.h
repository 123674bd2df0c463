// TF 1.x's timing rules for a job failure and its restart, written once for every backend: the
// simulator's JobRecovery and step engine, the real node and run's launcher apply them.
// Sources: tensorflow/python/training/session_manager.py (wait_for_session polls for a ready
// model every recovery_wait_secs; the chief's prepare_session restores Saver.latest_checkpoint),
// monitored_session.py (a session whose RPCs fail raises; the launcher starts the tasks again),
// and the scenario's training.recovery (docs/scenario-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace replisim::core {

class RecoveryTimeline {
 public:
  explicit RecoveryTimeline(const RecoveryPolicy& policy) : policy_(policy) {}

  // When the clients find out that a task the job cannot lose died at fault_s: its RPCs time out
  // after detect_timeout (at once without training.recovery: the run ends there).
  double detected_s(double fault_s) const {
    return fault_s + (policy_.enabled ? policy_.detect_timeout_s : 0.0);
  }
  // When the launcher starts every task again after a failure detected at detected_s.
  double restart_s(double detected_s) const { return detected_s + policy_.restart_delay_s; }
  // When a non-chief worker up at up_s first sees the chief's restored model, ready at
  // chief_ready_s: it checks as soon as it is up, then every recovery_wait.
  double worker_back_s(double up_s, double chief_ready_s) const;
  // Whether a checkpoint whose index was on disk at written_s is one a restart may restore
  // after a death at fault_s (TF's latest_checkpoint: nothing completes after the death).
  static bool restorable(double written_s, double fault_s) {
    return written_s >= 0 && written_s <= fault_s;
  }
  // The step client graph `c` resumes from, given each graph's completed steps in the restored
  // checkpoint (`client_steps`; empty: a fresh start). Workers meeting at
  // distributed_replicated's barriers resume together from the smallest: the checkpoint may have
  // caught some just past a step's end and others not yet. All-reduce ranks resume with the
  // chief's step (every rank meets every collective).
  static int64_t resumed_step(const Plan& plan, const std::vector<int64_t>& client_steps, size_t c);

 private:
  RecoveryPolicy policy_;
};

// One note per fault of `plan` that strikes after the run's end at end_s (and not before
// from_s: an incarnation's run leaves an earlier one's faults alone): it changed nothing.
void note_faults_after_the_end(const Plan& plan, double end_s, double from_s,
                               std::vector<std::string>& notes);

}  // namespace replisim::core
