// The chief's checkpoints and summaries, and job failures with their restarts, in the simulation
// (internal to sim/). JobRecovery owns what they leave behind — the checkpoints on disk, the
// failure in progress, which roles are dead, the restart records — and decides what a restart
// resumes from; the step engine applies it to its clients.
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
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/trace/trace_meta.h"

namespace replisim::sim::detail {

class JobRecovery {
 public:
  // `notes` receives what the run finds out (a fault that struck while the job was down).
  JobRecovery(const core::Plan& plan, core::TraceRecorder& recorder,
              std::vector<std::string>& notes);

  // The client graph of the chief role (-1: none).
  int chief_client() const { return chief_client_; }
  // A job failure happened and its restart has not (yet) brought the tasks back.
  bool job_down() const { return job_down_; }
  // Whether `op` of `graph` cannot run because its role, or a send's receiving role, died with
  // the job (always false while the job is up).
  bool kills(const core::ClientGraph& graph, const core::Op& op) const {
    return job_down_ &&
           (role_dead_[size_t(op.role)] || (op.kind == core::OpKind::kSend &&
                                            role_dead_[size_t(graph.ops[size_t(op.peer)].role)]));
  }

  // The chief saves a checkpoint at `now` (`client_steps`: every graph's completed steps, the
  // chief's among them). Returns how long it pauses (0 while the job is down: the save fails).
  double write_checkpoint(double now, int64_t global_step, const std::vector<int>& client_steps);
  // Checkpoints written so far (a save while the job was down writes none).
  size_t checkpoints_written() const { return checkpoints_.size(); }
  // After a chief step: its checkpoint and summaries, if due. Returns the pause (s).
  double chief_duties(double now, int64_t global_step, const std::vector<int>& client_steps);

  // Job fault `fault` kills its roles at `now`. Returns when every client finds out (the detect
  // timeout later), or -1 when the job was already down (the fault changes nothing, noted).
  double fail(int fault, double now, int64_t global_step);
  // Every client finds out at `now`. Returns when the launcher restarts the tasks, or -1 when
  // training.recovery is not set (the run ends).
  double detect(double now, int64_t global_step);

  // What a restart resumes from: the last checkpoint on disk when the role died (none: a fresh
  // start from global_step 0).
  struct Restart {
    int64_t global_step = 0;
    std::vector<int> client_steps;  // per graph; empty: 0 for all
    double restore_s = 0;           // the chief's restore
    double chief_ready_s = 0;       // when the chief trains again
    // When the restored checkpoint's save read the variables (0: none): the updates after it are
    // rolled back.
    double checkpoint_start_s = 0;
  };
  // The launcher restarts every task at `now`: the dead roles come back.
  Restart restart(double now);
  // Records that restart, every other worker back at `workers_resumed_s`.
  void record_restart(const Restart& restart, double now, double workers_resumed_s);
  // The chief finished restoring (at Restart::chief_ready_s): the restart's recovery slice is
  // recorded, unless a failure cut it short first.
  void resumed();
  // Whether the job restarted at least once.
  bool restarted() const { return !restarts_.empty(); }
  // `worker` died before the last restart brought it back; the other workers came back by
  // `others_back_s` (every worker back: that, or the chief's resumption if later).
  void lost_before_back(const std::string& worker, double others_back_s);

  // The restarts and an unrecovered job failure, into `outcome`.
  void finish(core::RunOutcome& outcome);

 private:
  // A checkpoint the chief wrote: the state a restart resumes from.
  struct Checkpoint {
    double start_s = 0;  // when the save read the variables
    double end_s = 0;    // when it was on disk
    int64_t global_step = 0;
    std::vector<int> client_steps;  // each client's completed steps at start_s
  };
  // A job failure in progress.
  struct JobFailure {
    int fault = -1;
    double fault_s = 0;
    double detected_s = 0;
    int64_t global_step = 0;  // at detection
  };
  // The last restart's recovery slice, recorded once training resumes (or a failure ends it).
  struct PendingRecovery {
    std::string actor, label;
    double start_s = 0, end_s = 0;
    int64_t restored = 0, at_failure = 0;
  };
  void emit_pending_recovery(double end_s);

  const core::Plan& plan_;
  core::TraceRecorder& recorder_;
  std::vector<std::string>& notes_;
  int chief_client_ = -1;
  double last_checkpoint_s_ = 0;
  std::vector<Checkpoint> checkpoints_;
  const Checkpoint* restored_ = nullptr;  // the last restart's, between restart and its record
  std::vector<bool> role_dead_;           // roles a job fault killed, until the restart
  bool job_down_ = false;                 // failed, not yet restarted
  JobFailure failure_;
  std::vector<core::RestartRecord> restarts_;
  std::optional<PendingRecovery> pending_;
};

}  // namespace replisim::sim::detail
