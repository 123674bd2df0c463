// The value engine (issue 40; docs/architecture-next.md §7): the training objective's real SGD
// arithmetic (core/model/objective_model.h) computed as a run's ops complete, so that every
// gradient is taken at the values its worker read and every update lands in the order the run
// applies it. A backend calls it at each op's completion, in zero time of its own clock; the
// engine keeps the variables' values, each graph's snapshot and gradient, the sync accumulators,
// and evaluates on the test set every Plan::objective.evaluate_every_steps global steps.
//
// The meaning of each op kind, per strategy (objective_computed_by_simulator in plan.h):
// - every plan: a kReadVariable on a parameter server copies its slice's values into the graph's
//   snapshot (a read fed by another read, "local/" or "assign/", copies what that one sent);
//   the step's first kBackward computes the graph's gradient at its snapshot on its next batch;
// - between-graph async and distributed_replicated: kApply subtracts the slice of the worker's
//   own gradient times the learning rate;
// - sync (SyncReplicasOptimizer): a fresh kAccumulate keeps the slice of the worker's gradient
//   (a stale one is dropped); the chief's kTakeGradient averages what was kept, in arrival order
//   (average_gradients), and its kApply applies that average;
// - in-graph: one client whose batch is objective.batch samples per tower, cut into one
//   sub-batch per tower (loss_and_gradient's sub_batches: the towers' average, bitwise);
// - all-reduce: no parameter server and no read: every rank computes at the values, which every
//   rank holds alike; the step's first kApply of any rank averages the live ranks' gradients of
//   the step in rank order (Horovod's average), and each slice is applied once per step.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/model/data_set.h"
#include "core/model/objective_model.h"
#include "core/plan/plan.h"
#include "core/values/objective_setup.h"

namespace replisim::core {

// The slice of the proxy's flat parameter vector that a plan variable stands for: [offset,
// offset + size).
struct ValueSlice {
  size_t offset = 0;
  size_t size = 0;
};

// The proportional rule: the plan's variables but global_step (Plan::variables[0]) share the
// proxy's `parameters` in creation order, each a contiguous slice whose size is proportional to
// its bytes. With B_i the bytes of the variables before variable i (global_step excluded) and B
// all of them, variable i gets [floor(P B_i / B), floor(P (B_i + bytes_i) / B)): the slices
// partition [0, P) exactly (the last ends at P), a variable of no bytes gets none, and a plan of
// more variables than parameters leaves some variables empty. global_step gets an empty slice.
// One slice per plan variable. Every variable's bytes must be >= 0; B == 0 gives empty slices.
std::vector<ValueSlice> proportional_slices(const std::vector<Variable>& variables,
                                            size_t parameters);

// The variables each slice op stands for. A strategy's read, apply, accumulate and take ops name
// only the first variable of their slice (the variables of one layer group on one shard,
// core/strategy/step_graph_parts.h): variable w belongs to the named variable k <= w of the
// same ps nearest below it (groups are consecutive layers, and variables are numbered in layer
// order). Per plan variable: the members it names (itself first), or empty when no op names it.
std::vector<std::vector<int>> slice_members(const Plan& plan);

// One apply the engine ran: what a test checks the staleness and the snapshot against.
struct AppliedUpdate {
  int client = 0;  // the graph (step_graphs order: a sync plan's chief is last)
  int64_t step = 0;
  int variable = 0;
  // global_step at the apply - global_step the worker read. The trace's staleness of the update
  // (docs/metrics.md) takes global_step at its increment instead, so it is larger when other
  // workers' increments land between this apply and its own increment.
  int64_t staleness = 0;
  double learning_rate = 0;  // the rate used (schedule, then staleness-aware scaling)
  // Sync: the workers whose gradients the chief's take averaged, in arrival order.
  std::vector<int> averaged_from;
};

// One step's increment of global_step by a graph: the global_step at which its values were read
// (the first read of the step that took values; -1 when the graph read none) and global_step
// before the increment, as the trace's update event has them.
struct IncrementRecord {
  int client = 0;
  int64_t step = 0;
  int64_t read_global_step = -1;
  int64_t global_step = 0;
};

// When an op completed, as the backend's clock and counters have it.
struct OpMoment {
  int64_t step = 0;              // the graph's local step
  int64_t global_step = 0;       // the job's global step now, before the op
  int64_t global_step_read = 0;  // what the worker read at its step's start (the update's)
  bool fresh = true;             // kAccumulate: the accumulator counts it (false: dropped)
};

class ValueEngine {
 public:
  // `plan` (outliving the engine) must have an enabled objective. Builds the objective
  // (ObjectiveSetup: the training set cut into one shard per worker, one for an in-graph
  // client) and gives graph c the batches of shard c. Throws InputError as ObjectiveSetup.
  explicit ValueEngine(const Plan& plan);
  ValueEngine(const ValueEngine&) = delete;  // the batch iterators point into setup_
  ValueEngine& operator=(const ValueEngine&) = delete;

  // Op `op` of graph `c` (step_graphs(plan) order) completed: see the header's table.
  void op_completed(int c, int op, const OpMoment& at);
  // global_step became `global_step` (an update: the trace's update event): the evaluation
  // when it is a multiple of evaluate_every_steps.
  std::optional<ValueEvaluation> updated(int64_t global_step);
  // All-reduce: rank c is gone (an elastic job goes on without it): later averages leave it out.
  void rank_gone(int c);
  // The chief's checkpoint at `global_step` read the values (TF's Saver): a restart may restore
  // them. The engine keeps the last kKeptCheckpoints.
  void checkpoint(int64_t global_step);
  // A restart restored the checkpoint of `global_step` (0 with none: the initial values): the
  // values become its, every task starts afresh (no snapshot, gradient or accumulated gradient
  // survives) and each worker's input pipeline starts its shard from the beginning, as a
  // restarted TF 1.x process's does. Throws InternalError for a global step never checkpointed.
  void restore(int64_t global_step);
  static constexpr size_t kKeptCheckpoints = 16;
  // Elastic all-reduce: the survivors go back to the commit after `steps_done` steps (Horovod
  // Elastic's restore): the values become those after step steps_done - 1's applies, and the
  // steps from steps_done on are computed again.
  void roll_back(int64_t steps_done);

  // The evaluation of the current values.
  ValueEvaluation evaluate_now(int64_t global_step) const;

  const std::vector<float>& values() const { return values_; }
  const std::vector<ValueSlice>& slices() const { return slices_; }
  const ObjectiveModel& model() const { return setup_.model(); }
  const TrainTestSets& data() const { return setup_.data(); }
  const ObjectiveSetup& setup() const { return setup_; }
  // The applies and increments so far, once record_applies(true) asked for them (off by
  // default: a run of 1,024 workers would keep millions).
  void record_applies(bool on) { record_applies_ = on; }
  const std::vector<AppliedUpdate>& applied() const { return applied_; }
  const std::vector<IncrementRecord>& increments() const { return increments_; }
  // Gradients graph c has computed so far (one per step that reached its backward pass).
  int64_t gradients_computed(int c) const { return graphs_[size_t(c)].gradients; }
  // Samples in one gradient of graph c (objective.batch, times the towers in in-graph).
  int samples_per_gradient(int c) const { return graphs_[size_t(c)].samples; }

  // The seeds of a shard and its batch order (ObjectiveSetup's).
  static uint64_t shard_seed(uint64_t seed) { return ObjectiveSetup::shard_seed(seed); }
  static uint64_t batch_seed(uint64_t seed, int c) { return ObjectiveSetup::batch_seed(seed, c); }

 private:
  struct Graph {
    const ClientGraph* graph = nullptr;
    std::vector<bool> takes_values;  // per op: a read that copies the values (on a PS)
    std::vector<float> snapshot;     // the values its reads saw (each variable's slice)
    std::vector<float> gradient;     // at the snapshot, of `gradient_step`
    int64_t gradient_step = -1;
    int64_t gradients = 0;
    int64_t read_step = -1;  // the step of read_global_step
    int64_t read_global_step = -1;
    int samples = 0;
    int sub_batches = 1;
    bool live = true;
    std::optional<BatchIterator> batches;
  };
  // A sync accumulator (per named variable): the kept gradients' members, packed, and whose.
  struct Accumulator {
    std::vector<std::vector<float>> kept;
    std::vector<int> from;
    std::vector<float> taken;  // the last take's average, packed
    std::vector<int> taken_from;
  };

  void read(Graph& g, int c, const Op& op, const OpMoment& at);
  void backward(Graph& g, const OpMoment& at);
  void apply(int c, const Op& op, const OpMoment& at);
  void accumulate(Graph& g, int c, const Op& op);
  void take(const Op& op);
  void all_reduce_apply(int c, const Op& op, const OpMoment& at);
  // values_ -= float(rate) * gradient over variable v's members; `packed`: the gradient holds
  // only the members' floats, in member order (else it is a whole vector).
  void subtract(int v, const std::vector<float>& gradient, bool packed, double rate);
  std::vector<float> pack(int v, const std::vector<float>& whole) const;
  void record(int c, const Op& op, const OpMoment& at, int64_t staleness, double rate,
              std::vector<int> from = {});

  const Plan& plan_;
  ObjectiveSetup setup_;
  std::vector<float> values_;
  std::vector<ValueSlice> slices_;
  std::vector<std::vector<int>> members_;
  std::vector<Graph> graphs_;
  std::vector<Accumulator> accumulators_;
  bool all_reduce_ = false;
  std::vector<int64_t> applied_step_;  // all-reduce: per named variable, the last step applied
  int64_t reduced_step_ = -1;          // all-reduce: the step `reduced_` averages
  std::vector<float> reduced_;
  int applies_per_step_ = 0;  // all-reduce: the slices each step applies
  int applies_in_step_ = 0;
  std::vector<float> committed_;  // all-reduce: the values after step committed_step_
  int64_t committed_step_ = -1;
  std::vector<std::pair<int64_t, std::vector<float>>> checkpoints_;  // oldest first
  std::vector<AppliedUpdate> applied_;
  std::vector<IncrementRecord> increments_;
  bool record_applies_ = false;
};

}  // namespace replisim::core
