// The value engine (issue 40; docs/architecture-next.md §7): the training objective's real SGD
// arithmetic (core/model/objective_model.h) computed as a run's ops complete, so that every
// gradient is taken at the values its worker read and every update lands in the order the run
// applies it. A backend calls it at each op's completion, in zero time of its own clock; the
// engine keeps the parameter servers' values, each client's snapshot and gradient, and records
// an evaluation on the test set every Plan::objective.evaluate_every_steps global steps.
//
// Today: between-graph asynchronous plans (objective_computed_by_simulator in plan.h): the ops
// that carry meaning are kReadVariable, kBackward, kApply and kGlobalStepIncrement.
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

// One apply the engine ran: what a test checks the staleness and the snapshot against.
struct AppliedUpdate {
  int client = 0;
  int64_t step = 0;
  int variable = 0;
  // global_step at the apply - global_step the worker read. The trace's staleness of the update
  // (docs/metrics.md) takes global_step at its increment instead, so it is larger when other
  // workers' increments land between this apply and its own increment.
  int64_t staleness = 0;
  double learning_rate = 0;  // the rate used (schedule, then staleness-aware scaling)
};

class ValueEngine {
 public:
  // `plan` (outliving the engine) must have an enabled objective. Makes or reads the data
  // (seeded), builds the model and its initial parameters (initial_parameters(objective.seed)),
  // cuts the training set into one shard per client (shard_indices(samples, clients, c,
  // shard_seed(seed))) and gives client c a BatchIterator over its shard seeded by
  // batch_seed(seed, c) (both SplitMix64 mixes of the seed with a tag, and c). Throws InputError
  // for data that cannot be read (naming the file), a model too large, or more clients than
  // training samples.
  explicit ValueEngine(const Plan& plan);
  ValueEngine(const ValueEngine&) = delete;  // the batch iterators point into data_
  ValueEngine& operator=(const ValueEngine&) = delete;

  // Op `op` of client `c`'s graph (Plan::clients[c]) completed in the client's local step
  // `step`. `global_step` is the job's global step now, before the op (for an increment, before
  // it), `global_step_read` the one the worker read at the start of its step (the trace's
  // update event's). kReadVariable copies its variable's slice of the values into the client's
  // snapshot; the step's first kBackward computes the client's gradient at its snapshot on its
  // next mini-batch; kApply subtracts the variable's slice of that gradient times the learning
  // rate (the schedule's at global_step; staleness-aware: divided by max(global_step -
  // global_step_read, 1)); kGlobalStepIncrement evaluates when global_step + 1 is a multiple of
  // evaluate_every_steps and returns the evaluation. Other ops mean nothing here.
  std::optional<ValueEvaluation> op_completed(int c, int op, int64_t step, int64_t global_step,
                                              int64_t global_step_read);

  // The evaluation of the initial values (global step 0).
  ValueEvaluation evaluate_now(int64_t global_step) const;

  const std::vector<float>& values() const { return values_; }
  const std::vector<ValueSlice>& slices() const { return slices_; }
  const ObjectiveModel& model() const { return model_; }
  const TrainTestSets& data() const { return data_; }
  // The applies so far, once record_applies(true) asked for them (off by default: a run of 1,024
  // workers would keep millions).
  void record_applies(bool on) { record_applies_ = on; }
  const std::vector<AppliedUpdate>& applied() const { return applied_; }
  // Gradients client c has computed so far (one per step that reached its backward pass).
  int64_t gradients_computed(int c) const { return clients_[size_t(c)].gradients; }

  // The seeds of client c's shard and batch order (tests recompute the batches from them).
  static uint64_t shard_seed(uint64_t seed);
  static uint64_t batch_seed(uint64_t seed, int c);

 private:
  struct Client {
    std::vector<float> snapshot;  // the values its reads saw (each variable's slice)
    std::vector<float> gradient;  // at the snapshot, of `gradient_step`
    int64_t gradient_step = -1;
    int64_t gradients = 0;  // gradients computed so far
    std::optional<BatchIterator> batches;
  };

  const Plan& plan_;
  TrainTestSets data_;
  ObjectiveModel model_;
  LearningRateSchedule schedule_;
  std::vector<float> values_;  // the parameter servers' values
  std::vector<ValueSlice> slices_;
  std::vector<Client> clients_;
  std::vector<AppliedUpdate> applied_;
  bool record_applies_ = false;
};

}  // namespace replisim::core
