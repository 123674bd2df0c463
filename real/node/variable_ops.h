// The ops on values a task runs (the client loop's per-op-kind `values` hook, core::StepHost):
// variables read and updated on their parameter server, gradients averaged, SyncReplicas'
// accumulators and tokens, and global_step. One part of a task's runtime (internal to
// real/node/): it owns this task's parameter-server state — its shard of the variables (a
// ParameterStore), the sync queues of synchronous training (core::SyncQueues, whose host it is),
// the accumulators' sums, each sync worker's token, and, on the task that holds global_step, how
// many steps of each client reached it (what checkpoints record).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/sync_queues.h"
#include "core/trace/trace_meta.h"
#include "core/values/parameter_store.h"
#include "real/compute/cpu_engine.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class DeviceValues;
class ObjectiveValues;

class VariableOps : public core::SyncHost {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double now_s() const = 0;  // the run's clock
    virtual core::TraceRecorder& recorder() = 0;
    virtual DeviceEngine& engine(int device) = 0;
    // Runs `work` on `engine`'s threads, then `done` on the node's thread unless the node stops or
    // graph g's step `step` ended meanwhile; both count as work under way (quiescence).
    virtual void run_for_step(DeviceEngine& engine, int g, int64_t step, std::function<void()> work,
                              std::function<void()> done) = 0;
    virtual DeviceEngine& copier() = 0;  // copies and files
    // global_step as this task knows it; an update made it `global_step`.
    virtual int64_t global_step_seen() const = 0;
    virtual void saw_global_step(int64_t global_step) = 0;
    // An update of graph g made global_step `global_step` at `at_s` (training.steps "auto").
    virtual void update_made(int g, double at_s, int64_t global_step, int samples) = 0;
    // The samples an update of graph g applies: its samples per step, or an elastic all-reduce
    // job's live ranks' batches.
    virtual int update_samples(int g) const = 0;
    virtual bool client_dead(int g) const = 0;
    // The objective's values are due an evaluation: the update that made global_step
    // `global_step` at `at_s` (objective_gather.h).
    virtual void evaluation_due(int64_t global_step, double at_s) = 0;
  };

  // `ps_shard`: the index into Plan::ps_roles of the parameter server this task runs (-1: none).
  // `replica`: the task runs a rank of an all-reduce plan, which holds its own copy of every
  // variable and global_step (no parameter server: Variable::ps is -1 for all of them) and
  // applies the averaged gradients to it. `plan`, `host`, `loop` and `parts` outlive it.
  VariableOps(Host& host, const core::Plan& plan, core::ClientLoop& loop, std::vector<Part>& parts,
              int ps_shard, bool replica = false);
  // SyncReplicas' queues live with the PS tasks' variables; distributed_replicated's barriers on
  // whichever PS task each is placed (every task keeps the table; only those tasks use theirs).
  // Opened once the trace records (before any worker's step can reach this task).
  void open_sync_queues(core::TraceRecorder& recorder);

  // The client loop's hooks: runs op `op` of graph g when it is an op on values (true), else
  // false; a sync queue op (token dequeue, take, barrier) through the queues.
  bool values(int g, int op);
  void sync(int g, int op);

  // The training objective (objective_values.h; not owned, outlives this): a PS's variables
  // start from the proxy's initial values, its reads send a key's members end to end, its
  // applies update the proxy's floats by the objective's learning rule. `evaluates`: the run
  // evaluates the objective (ObjectiveValues::evaluated); this task does when it holds
  // global_step (an all-reduce plan's: the chief rank's task), every evaluate_every_steps global
  // steps (Host::evaluation_due).
  void set_objective(ObjectiveValues* objective, bool evaluates);
  bool evaluates() const { return evaluates_; }

  // After the engines open (and the objective is set): the variables this task holds on a device
  // with a memory of its own live there (DeviceValues::place_variables; not with a training
  // objective, whose proxy values ride in the host's floats). `values` (may be null) outlives
  // this. Returns how many were placed.
  int place_on_devices(DeviceValues* values);

  core::ParameterStore* store() { return store_.get(); }
  int ps_shard() const { return ps_shard_; }
  // global_step when this task holds it, else -1; global_step as this task knows it (what it holds,
  // else Host::global_step_seen).
  int64_t global_step_here() const;
  int64_t global_step() const override;
  // The task holding global_step: each client's steps that reached it (checkpoints record them).
  const std::vector<int64_t>& client_steps() const { return client_steps_; }
  // This task's shard was read back from a checkpoint: global_step and the clients' steps are the
  // checkpoint's; the sync queues start a new session (empty accumulators, initial tokens).
  void restored(int64_t global_step, const std::vector<int64_t>& client_steps);
  // What this task says to a quiescence wave: the stall its sync queues would report now
  // (`finished` per graph '1' or '0'; nullopt when none holds a worker), and where global_step
  // stands ({value, updated_s}, null when this task does not hold it). `last_global_step`: where
  // the chief's sync op stops.
  std::optional<core::StallRecord> stall(const std::string& finished, const std::vector<bool>& dead,
                                         int64_t last_global_step) const;
  nlohmann::json global_step_status() const;

 private:
  // core::SyncHost
  void sync_complete(int c, int op) override;
  bool client_dead(int c) const override { return host_.client_dead(c); }
  int64_t local_step(int c) const override { return parts_[size_t(c)].local_step; }
  void set_next_local_step(int c, int64_t value) override { tokens_[size_t(c)] = value; }

  void read(int g, int op);
  void aggregate(int g, int op);
  void apply(int g, int op);
  void accumulate(int g, int op);
  void local_step_from_token(int g, int op);
  void increment_global_step(int g, int op);
  // The floats of variable v's gradient tensor (a key's members end to end with an objective).
  size_t gradient_floats(int v) const;

  Host& host_;
  const core::Plan& plan_;
  core::ClientLoop& loop_;
  std::vector<Part>& parts_;
  int ps_shard_ = -1;
  bool replica_ = false;  // an all-reduce rank's own copy
  std::unique_ptr<core::ParameterStore> store_;
  std::optional<core::SyncQueues> sync_;
  std::vector<std::vector<float>> accumulator_;  // per variable: the fresh gradients' sum
  std::vector<int> accumulated_;                 // per variable: how many
  std::vector<int64_t> tokens_;  // per graph: the token its dequeue took (set_next_local_step)
  // The global_step PS: per client graph, the steps that reached it (the global_step increment
  // of an async or in-graph step, a synchronous worker's token dequeue): checkpoints record them.
  std::vector<int64_t> client_steps_;
  double last_update_s_ = 0;
  ObjectiveValues* objective_ = nullptr;
  bool evaluates_ = false;
  DeviceValues* device_values_ = nullptr;  // when a variable is placed on a device
};

}  // namespace replisim::real::detail
