// Synchronous between-graph training, as every backend keeps it: TF's
// SyncReplicasOptimizer (tensorflow/python/training/sync_replicas_optimizer.py, TF 1.x) and its
// ConditionalAccumulator (tensorflow/core/kernels/conditional_accumulator_base.cc):
// - apply_grad drops a gradient whose local_step is older than the accumulator's global step;
// - take_grad(R) waits for R gradients, then resets the accumulator and bumps its global step;
// - the chief's sync op applies the aggregates, increments global_step and enqueues
//   max(T, R) tokens holding the new global_step (R tokens at the start); a worker dequeues one
//   after each step and uses its value as its next local_step.
// The "strict" variant gives each worker one token per global step instead (a worker waits for a
// global_step newer than its local_step).
// A distributed_replicated plan (kDistributedReplicated) has barriers instead: tf_cnn_benchmarks'
// add_sync_queues_and_barrier (tensorflow/benchmarks 9165a70) gives each barrier one FIFO queue
// per worker; a worker reaching it enqueues a token into every other worker's queue, then
// dequeue_many(workers - 1) from its own.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/trace/trace_meta.h"

namespace replisim::core {

// What the sync queues need from the step engine.
class SyncHost {
 public:
  virtual ~SyncHost() = default;
  // `op` of client `c` is done (a take or a dequeue that had to wait, or an enqueue).
  virtual void sync_complete(int c, int op) = 0;
  virtual int64_t global_step() const = 0;
  virtual bool client_dead(int c) const = 0;
  // The local_step the client computed its step's gradients from (the token it holds).
  virtual int64_t local_step(int c) const = 0;
  // The token the client dequeued: its next step's local_step.
  virtual void set_next_local_step(int c, int64_t value) = 0;
};

// The accumulators (one per slice, keyed by the slice's first variable) and the token queue.
class SyncQueues {
 public:
  SyncQueues(const Plan& plan, TraceRecorder& recorder, SyncHost& host);
  // SyncReplicasOptimizer's accumulators and tokens (plan.sync == "sync").
  bool enabled() const { return enabled_; }
  // distributed_replicated's barriers.
  bool barriers() const { return !barrier_of_op_.empty(); }
  // Whether a worker waits at one of the barriers.
  bool any_waiting() const;
  // Empty accumulators at global_step and the chief's initial tokens (get_init_tokens_op), as a
  // new session (the first, or after a restart) starts them.
  void reset();
  // Runs a take, dequeue, enqueue or barrier op (`kind`: its kind); false when it is none of
  // them. A barrier completes (SyncHost::sync_complete) once every other worker has reached it.
  bool dispatch(int c, int op, OpKind kind);
  // An accumulate op of client `c` finished (at `now`, in its local step `step`): its gradient
  // counts (true: the backend adds it to the accumulator's value, if it keeps values), or is
  // dropped as stale (false; recorded).
  bool accumulate(int c, int op, int64_t step, double now);
  // The samples the update being made applies: the mean over the takes made here since the last
  // call of the samples of the gradients each took (every fresh gradient in, R or more, as
  // ConditionalAccumulator::TryTakeGrad averages them all), each gradient its worker's
  // samples_per_step; nullopt when no take was made here (a task that holds global_step but no
  // accumulator: its caller counts the chief graph's samples_per_step, R workers of the mean
  // batch). Workers of different batches (training.batch_per_replica as a list) make it differ.
  std::optional<int> take_update_samples();
  // Whether accumulate(c, op, ...) would count the gradient now (a backend that keeps values
  // adds it to the accumulator first, since counting it may let a waiting take complete).
  bool fresh(int c, int op) const;
  // Why training stopped short of Plan::steps. `finished` and `dead`: per client graph (the
  // chief's sync op last); `last_update_s`: when global_step last moved.
  StallRecord stall(const std::vector<bool>& finished, const std::vector<bool>& dead,
                    double last_update_s, double now) const;

 private:
  void take_gradient(int c, int op);
  void arrive_at_barrier(int c, int op);
  void release_barrier(int barrier, int c);
  StallRecord barrier_stall(const std::vector<bool>& finished, const std::vector<bool>& dead,
                            double last_update_s, double now) const;
  void dequeue_token(int c, int op);
  void enqueue_tokens();

  const Plan& plan_;
  std::vector<const ClientGraph*> graphs_;  // step_graphs(plan_)
  TraceRecorder& recorder_;
  SyncHost& host_;
  bool enabled_ = false;
  bool strict_ = false;
  int replicas_to_aggregate_ = 0;
  int tokens_per_step_ = 0;
  std::vector<int64_t> accumulator_step_;     // the accumulator's global step (bumped by each take)
  std::vector<int> accumulated_;              // fresh gradients in since the last take
  std::vector<int64_t> accumulated_samples_;  // their workers' samples
  int64_t taken_samples_ = 0;                 // since the last take_update_samples: the takes'
  int takes_ = 0;                             // samples, and how many takes
  std::vector<std::pair<int, int>> waiting_take_;  // (client, op) of a take waiting; (-1, -1)
  std::deque<int64_t> tokens_;
  std::deque<std::pair<int, int>> waiting_dequeue_;  // (client, op), in arrival order
  bool done_ = false;  // global_step reached Plan::steps: dequeues return at once
  // Barriers, numbered by name in worker 0's graph: per graph and op, its barrier or -1; per
  // barrier and worker, the tokens in the worker's queue and the op waiting on it (-1: none).
  std::vector<std::vector<int>> barrier_of_op_;
  std::vector<std::string> barrier_names_;
  std::vector<std::vector<int>> barrier_tokens_;
  std::vector<std::vector<int>> barrier_waiting_;
};

}  // namespace replisim::core
