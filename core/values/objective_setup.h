// What every place that computes the training objective (issue 40) builds the same way from the
// plan's objective: the data set, the proxy model, its initial values, the learning-rate rule
// and each worker's shard and batch order. The simulator's ValueEngine holds one; so can each
// process of a real run, so that both compute the same arithmetic from the same seeds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/data_set.h"
#include "core/model/objective_model.h"
#include "core/plan/plan.h"
#include "core/plan/plan_objective.h"

namespace replisim::core {

// One evaluation of a set of values on the test set.
struct ValueEvaluation {
  int64_t global_step = 0;
  ObjectiveEvaluation result;  // loss (mean cross-entropy, nats) and accuracy (fraction)
  // Whether both are finite numbers: a diverged proxy (a learning rate too high for it) gives an
  // infinite or NaN loss, which a trace counter cannot hold. Backends record no evaluation from
  // the first that is not, and say so (diverged_note).
  bool finite() const;
};
// The run's note for a proxy that diverged at `global_step`.
std::string diverged_note(int64_t global_step);

// The proxy model's shape from the plan alone, without reading the data: the synthetic set's
// features and classes, or Fashion-MNIST's (28 x 28, 10). What a process that checks a plan, or
// holds values but no data, needs.
ObjectiveModel objective_model_of(const PlanObjective& objective);

// The sub-batches of one gradient of `graph` (a client graph of `plan`): an in-graph client's
// towers (samples_per_step / batch_per_replica: one sub-batch each, objective.batch samples per
// tower; loss_and_gradient averages them), 1 for any other graph.
int objective_sub_batches(const Plan& plan, const ClientGraph& graph);

class ObjectiveSetup {
 public:
  // Makes or reads the data (the synthetic set from objective.data_seed; Fashion-MNIST from
  // objective.dir) and builds the model. `shards`: how many workers the training set is cut
  // into (>= 1). Throws InputError for data that cannot be read (naming the file), a model too
  // large, or more shards than training samples (JSON path /training/objective/data).
  ObjectiveSetup(const PlanObjective& objective, int shards);
  ObjectiveSetup(const ObjectiveSetup&) = delete;  // batch iterators point into data()
  ObjectiveSetup& operator=(const ObjectiveSetup&) = delete;

  const PlanObjective& objective() const { return objective_; }
  const TrainTestSets& data() const { return data_; }
  const ObjectiveModel& model() const { return model_; }
  int shards() const { return shards_; }

  // initial_parameters(objective.seed): bitwise the same in every process.
  std::vector<float> initial_values() const;
  // Worker `shard`'s batches of `samples_per_batch` samples: shard_indices(samples, shards,
  // shard, shard_seed(seed)) visited in the order seeded by batch_seed(seed, shard). The
  // iterator points into data(): this setup must outlive it.
  BatchIterator batches(int shard, int samples_per_batch) const;
  // The rate of an update applied at `global_step` from a gradient `staleness` updates old: the
  // schedule's rate at global_step, divided by max(staleness, 1) when staleness_aware.
  double learning_rate(int64_t global_step, int64_t staleness) const;
  // Loss and accuracy of `values` on the whole test set.
  ValueEvaluation evaluate(const std::vector<float>& values, int64_t global_step) const;

  // SplitMix64 mixes of the seed with a tag (and the shard): the seeds of the shards and of
  // each shard's batch order (tests recompute the batches from them).
  static uint64_t shard_seed(uint64_t seed);
  static uint64_t batch_seed(uint64_t seed, int shard);

 private:
  PlanObjective objective_;
  int shards_ = 1;
  TrainTestSets data_;
  ObjectiveModel model_;
  LearningRateSchedule schedule_;
};

}  // namespace replisim::core
