// All-reduce on a real run (Plan::sync kAllReduceSync; docs/allreduce.md): this task's ranks of
// core::Collectives over the authenticated mesh, reducing real values. One part of a task's
// runtime (internal to real/node/): it owns the task's Collectives (Horovod's coordinator when
// rank 0 is here), the fused buffers of its ranks, the chunks arriving and the frames
// kCollectiveReady, kCollectiveResponse and kCollectiveChunk (FrameRouter).
//
// Values: a rank's fused buffer is its tensors' gradients (what its backward ops produced for the
// kAllReduce ops' variables, zero-padded to each op's bytes) concatenated in
// CollectiveResponse::tensors order, as float32; the algorithm's chunks are
// core::collective_chunk's element ranges of it. Each received step's chunks are added to the
// rank's own (a reduce) or replace them (a gather or broadcast) in the program's order, so every
// rank ends with bitwise the same sums; once the rank's part is done the sums are divided by the
// number of ranks taking part (Horovod's average, horovod/common/ops: the postscale 1/size) and
// each tensor's kAllReduce op completes with its averaged gradient, which the rank's kApply then
// applies to its own copy of the variable (VariableOps).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/collectives.h"
#include "real/cluster.h"
#include "real/node/frame_router.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class ObjectiveValues;

// The tensor field of a chunk frame (core::CollectiveChunk but its id and bytes): ranks below
// 2^16, channels below 2^6, steps below 2^13. Throws std::logic_error beyond them.
uint64_t collective_chunk_tag(const core::CollectiveChunk& chunk);
core::CollectiveChunk collective_chunk_of_tag(int64_t id, uint64_t tag);

class CollectiveOps final : public core::CollectiveHost {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double now_s() const = 0;  // the run's clock
    virtual bool stopping() const = 0;
    // Runs `work` on the node's thread soon (never inside the caller).
    virtual void post(std::function<void()> work) = 0;
    // Runs `work` at the run's time `at_s` (counted as work under way: quiescence waits).
    virtual void at_run_time(double at_s, std::function<void()> work) = 0;
    // An application frame to `peer` (counted for quiescence).
    virtual void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                            const std::string& payload) = 0;
    // A chunk frame to `peer` over connection `slot` (Mesh::send; counted), `data` kept alive by
    // `keep`, `written` (may be empty) once its last byte left.
    virtual int next_slot(uint32_t peer) = 0;
    virtual void send_chunk(uint32_t peer, const FrameHeader& header, const uint8_t* data,
                            size_t size, std::shared_ptr<const void> keep,
                            std::function<void()> written, int slot) = 0;
    // Elastic: graph g's step in progress failed (StepRunner::roll_back), and later trains again
    // from step `step` with global_step `global_step` (StepRunner::resume_after_rollback).
    virtual void roll_back_client(int g) = 0;
    virtual void resume_client(int g, int step, int64_t global_step) = 0;
    // Runs `then` once no compute, copy or apply begun here is under way: at once when none is
    // (StepRunner::after_work). A rollback's restore waits for it, or an apply of the failed
    // attempt could land on the restored state.
    virtual void after_step_work(std::function<void()> then) = 0;
    // This task's copy of the variables (an all-reduce rank's), or null.
    virtual core::ParameterStore* store() = 0;
    virtual const std::string& plan_hash() const = 0;
  };

  struct Setup {
    const core::Plan* plan = nullptr;
    const TaskMap* map = nullptr;
    uint32_t self = 0;
  };
  // `host`, `loop`, `parts` and what `setup` points to outlive it. Nothing runs before open().
  CollectiveOps(Host& host, Setup setup, core::ClientLoop& loop, std::vector<Part>& parts);
  void own_frames(FrameRouter& router);
  // Builds the task's Collectives once the trace records (before any step). Throws
  // core::InputError as core::Collectives does (a hierarchical plan of uneven machines).
  void open(core::TraceRecorder& recorder);
  // The training objective (objective_values.h; null: none): a reduced tensor carries its slice
  // group's floats (ObjectiveLayout::tensor_floats) instead of its variable's. Not owned.
  void set_objective(const ObjectiveValues* objective) { objective_ = objective; }

  // Graph g's kAllReduce op `op` is ready (the client loop's dispatch).
  void ready(int g, int op);
  // Graph g's client ended a step, `steps_done` steps done: an elastic job's rank 0 commits its
  // state (Horovod's CommitStateCallback, every batch by default: batches_per_commit = 1).
  void step_done(int g, int64_t steps_done);
  // Task `task` died and the plan is elastic: its ranks leave the collectives, and Horovod
  // Elastic's recovery begins (docs/allreduce.md, "Deaths"): every local rank's step in progress
  // fails; rank 0's task waits out the rendezvous, restores its last commit (its state when its
  // step in progress began: Horovod commits after every batch) and sends it to every survivor's
  // task, which takes it; all train again from the commit's step.
  void task_died(uint32_t task);
  // The collective waiting, and for which ranks ("" when none waits).
  std::string waiting_for() const;
  // The ranks not known dead here (an elastic job's survivors).
  int live_samples_per_step() const {
    return collectives_ ? collectives_->live_samples_per_step() : 0;
  }
  // The task running rank `rank`.
  uint32_t task_of_rank(int rank) const;

  // core::CollectiveHost
  double now_s() const override { return host_.now_s(); }
  void at(double at_s, std::function<void()> work) override;
  void send_chunk(const core::CollectiveResponse& r, const core::CollectiveChunk& chunk) override;
  void apply_chunk(const core::CollectiveResponse& r, int rank, int channel, int step) override;
  void reduced(int rank, const core::CollectiveResponse& r) override;
  bool distributed() const override { return true; }
  void tell_coordinator(int rank, int64_t step, int tensor) override;
  void announce(const core::CollectiveResponse& r) override;

 private:
  // One rank's fused buffer of one response.
  struct Buffer {
    std::vector<float> values;
    std::vector<int64_t> offset;  // per tensor of the response: its first element
  };
  using ChunkKey = std::tuple<int64_t, int, int, int>;  // (id, to rank, channel, recv step)
  struct Received {
    std::shared_ptr<core::Bytes> data;
    int from = -1;
    double start_s = 0, end_s = 0;  // its first bytes' send, its last bytes' arrival (run clock)
  };

  void on_ready(uint32_t peer, const FrameHeader& header);
  // Elastic recovery (task_died).
  void roll_back_local();
  void forget_below(int64_t first_id);
  void send_sync();
  void on_sync(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void take_sync(const core::Bytes& message, int64_t round);
  // `work` on the node's thread soon, unless a rollback comes first.
  void post_in_attempt(std::function<void()> work);
  void on_response(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void on_chunk(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void start(const core::CollectiveResponse& r);
  void chunk_in(const core::CollectiveChunk& chunk, Received in);
  Buffer& buffer(const core::CollectiveResponse& r, int rank);
  // The program the response's ranks run (core::Collectives runs the same): over every rank, or,
  // after an elastic death, over the survivors (a ring where the algorithm cannot run on them).
  const core::CollectiveProgram& program_of(const core::CollectiveResponse& r);
  // Step `step` of `rank`'s channel `channel` in `r`'s program (rank: its number in the job).
  const core::CollectiveStep& program_step(const core::CollectiveResponse& r, int rank, int channel,
                                           int step);
  // Elements [first, end) of the chunks one step moves.
  std::pair<int64_t, int64_t> step_range(const core::CollectiveProgram& program, int64_t elements,
                                         int first, int count) const;

  Host& host_;
  Setup setup_;
  const core::Plan& plan_;
  const ObjectiveValues* objective_ = nullptr;
  core::ClientLoop& loop_;
  std::vector<Part>& parts_;
  std::optional<core::Collectives> collectives_;
  core::TraceRecorder* recorder_ = nullptr;
  std::vector<uint32_t> task_of_rank_;
  std::vector<std::vector<int>> allreduce_ops_;  // per graph: its kAllReduce ops in graph order
  uint32_t coordinator_task_ = 0;                // rank 0's
  // The responses this task has begun (their ids), and chunks that came before their response.
  std::map<int64_t, core::CollectiveResponse> responses_;
  std::map<int64_t, int> local_left_;  // per response begun: its ranks here not done yet
  int64_t next_id_ = 0;                // responses come in id order
  int64_t max_id_seen_ = -1;           // of the responses and chunks here
  int64_t abandoned_below_ = 0;        // ids a death abandoned (their late chunks are ignored)
  std::map<std::pair<int64_t, int>, Buffer> buffers_;  // (id, rank)
  std::map<ChunkKey, Received> received_;
  // Chunk frames arriving in pieces: (peer, id, tag) -> bytes so far.
  std::map<std::tuple<uint32_t, int64_t, uint64_t>, Received> incoming_;
  int64_t next_message_ = 0;  // the trace's message ids of the chunks received here
  // Elastic. Rank 0's commit (its task): the state when its step `steps` began.
  struct Commit {
    bool taken = false;
    int64_t steps = 0;
    int64_t global_step = 0;
    core::CheckpointShard state;
  };
  Commit commit_;
  uint64_t epoch_ = 0;           // local rollbacks so far (posted work of an earlier is dropped)
  uint64_t sync_round_ = 0;      // rank 0's task: its deaths so far (the latest one's sync goes)
  std::set<uint32_t> unsynced_;  // rank 0's task: survivors whose readiness is stale until synced
  bool awaiting_sync_ = false;   // a survivor's task: rolled back, waiting for the commit
  std::map<std::pair<uint32_t, int64_t>, std::shared_ptr<core::Bytes>> sync_in_;  // arriving syncs
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the mesh's callbacks
};

}  // namespace replisim::real::detail
