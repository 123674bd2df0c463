// A restart after a job failure (training.recovery), as TF 1.x's MonitoredTrainingSession
// recovers: the launcher starts every task again on the run's clock (NodeOptions::resume_path);
// the chief restores the last checkpoint that was complete when the role died (each parameter
// server loads its shard, global_step included: training resumes from it), then saves its
// session-start checkpoint and trains; every other worker, once up (spaced as at the first start),
// asks for the restored model every recovery_wait (SessionManager.wait_for_session) and trains from
// the checkpoint's global_step. The coordinator records the restart as the simulation does.
//
// One part of a restarted task's runtime (internal to real/node/): it owns the restore in flight,
// the model's state as the coordinator knows it, when each client trained again, and the frames
// kRestore, kRestored, kModelQuery, kModelReady and kResumed (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/trace/trace_meta.h"
#include "core/values/checkpoint.h"
#include "core/values/parameter_store.h"
#include "real/node/checkpoint_saver.h"
#include "real/node/frame_router.h"
#include "real/node/part.h"

namespace replisim::real::detail {

// A restart, as the launcher describes it (NodeOptions::resume_path, JSON with these members): the
// tasks start again on the run's clock, the chief restores the last checkpoint complete at the
// fault, the other workers poll for the restored model.
struct Resume {
  int incarnation = 0;        // k after the k-th restart
  double origin_clock_s = 0;  // the run's t = 0 on this machine's monotonic clock
  int fault = -1;             // the plan's job fault that failed the last incarnation; -1: a
                              // death from outside (cause, actor)
  std::string cause;          // a death from outside: what died ("ps0 (task ps0 on ...) died, ...")
  std::string actor;          // and the role the job could not lose
  double fault_s = 0;         // when it struck
  double detected_s = 0;      // when the clients found out
  double restart_s = 0;       // when the launcher started the tasks again
  int64_t global_step_at_failure = 0;
  double previous_resumed_s = 0;  // when training last resumed before (0: the first start)
};
// Throws core::InputError naming the file and the member.
Resume read_resume_file(const std::string& path);
// What failed the last incarnation (the fault's description, or the death from outside), and the
// role that died ("job" when the fault names none).
std::string restart_cause(const core::Plan& plan, const Resume& resume);
std::string restart_actor(const core::Plan& plan, const Resume& resume);

class Restorer {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double now_s() const = 0;  // the run's clock
    virtual bool stopping() const = 0;
    // Runs `work` on the node's thread once `delay_s` has passed (counted as work under way).
    virtual void after(double delay_s, bool busy, std::function<void()> work) = 0;
    // Runs `work` on the copies' thread, then `done` on the node's thread (CheckpointSaver::Host).
    virtual void background(std::function<void()> work, std::function<void()> done) = 0;
    // An application frame to `peer` (counted for quiescence).
    virtual void send_restore_frame(uint32_t peer, FrameType type, uint64_t tensor,
                                    const std::string& payload, double time_s) = 0;
    // This task's shard holds global_step and was read back: global_step is `global_step` again,
    // each client's steps `client_steps` (a new session: the sync queues start afresh).
    virtual void global_step_restored(int64_t global_step,
                                      const std::vector<int64_t>& client_steps) = 0;
    // A client trains again from `global_step`: the task has seen it.
    virtual void saw_global_step(int64_t global_step) = 0;
    // A death planned between the detection and the restart (the coordinator's note).
    virtual void note_struck_while_down(const core::PlanFault& fault) = 0;
    virtual core::TraceRecorder& recorder() = 0;
  };

  struct Setup {
    const core::Plan* plan = nullptr;
    Resume resume;
    std::string checkpoint_dir;  // "" when none was given: nothing to restore
    std::string plan_hash;
    core::ParameterStore* store = nullptr;  // this task's shard (null on a task without one)
    int ps_shard = -1;
    uint32_t self = 0;
    uint32_t chief = 0;
    uint32_t coordinator = 0;
    std::vector<uint32_t> ps_tasks;  // the tasks holding shards
    int rank = -1;  // an all-reduce rank: its shard is "<name>.rank<r>" (CheckpointSaver's)
  };
  // `host`, `loop`, `parts`, `saver` and what `setup` points to outlive it.
  Restorer(Host& host, core::ClientLoop& loop, const std::vector<Part>& parts,
           CheckpointSaver& saver, Setup setup);
  void own_frames(FrameRouter& router);

  // The restarted incarnation's t = 0: the chief restores the model; every other client polls for
  // it after its start-up stagger; the chief's sync op starts with the chief.
  void begin();
  // Graph g's client was restarted and does not train yet (it runs no step).
  bool awaiting_model(int g) const { return awaiting_model_[size_t(g)]; }
  // The coordinator's view: the chief restored the model; client c trained again.
  bool model_ready() const { return model_ready_; }
  bool resumed(size_t c) const { return resumed_s_[c] >= 0; }
  // The coordinator: worker `name` (client c) died; before it trained again, the restart's record
  // names it.
  void client_lost(size_t c, const std::string& name);
  // The coordinator's record of the restart (the simulation's JobRecovery::record_restart) at the
  // incarnation's end `end_s`: `interrupted_s` a job failure that ended it (this task's death or
  // the next job fault, nullopt for none), `next_fault_s` the next job fault's time (or nullopt),
  // `dead` per graph whether its client died.
  core::RestartRecord record(double end_s, std::optional<double> interrupted_s,
                             std::optional<double> next_fault_s, const std::vector<bool>& dead);

 private:
  // The last checkpoint whose index was written by the time the job's role died (none: nullopt),
  // and every checkpoint of the run so far by number (`earlier`, when asked).
  std::optional<core::CheckpointIndex> checkpoint_to_restore(
      std::map<int, core::CheckpointIndex>* earlier) const;
  void restore_model();
  void on_restore(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void on_restored();
  void model_restored();
  void poll_model(int g);
  nlohmann::json model_state() const;
  void on_model_ready(const FrameHeader& header, const uint8_t* payload);
  void resume_client(int g, int64_t global_step, const std::vector<int64_t>& client_steps);
  void on_resumed(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void record_recovery_slice(int64_t from_step, double end_s);
  bool coordinator() const { return setup_.self == setup_.coordinator; }
  bool chief() const { return setup_.self == setup_.chief; }
  bool with_chief(int g) const;  // the chief's client or its sync op

  Host& host_;
  core::ClientLoop& loop_;
  const std::vector<Part>& parts_;
  CheckpointSaver& saver_;
  Setup setup_;
  std::set<uint32_t> restoring_;  // the chief: the PS tasks whose shard is not back yet
  double restore_start_s_ = 0;
  nlohmann::json restored_;   // {checkpoint, start_s, global_step, client_steps, bytes}
  bool model_ready_ = false;  // coordinator: the chief restored the model
  double chief_ready_s_ = 0;
  std::vector<double> resumed_s_;  // coordinator: per graph, when its client trained again
  std::vector<std::string> lost_before_back_;  // coordinator: workers dead before they resumed
  std::vector<bool> awaiting_model_;           // per owned graph: restarted, not training yet
};

}  // namespace replisim::real::detail
