// The objective's shared set-up (objective_setup.h).
#include "core/values/objective_setup.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/error.h"
#include "core/base/random.h"

namespace replisim::core {
namespace {

constexpr uint64_t kShardTag = 0x7368617264730000ULL;  // "shards"
constexpr uint64_t kBatchTag = 0x6261746368657300ULL;  // "batches"

TrainTestSets load_objective_data(const PlanObjective& o) {
  if (o.set == "synthetic") {
    SyntheticSetSpec spec;
    spec.train_samples = o.train_samples;
    spec.test_samples = o.test_samples;
    spec.features = o.features;
    spec.classes = o.classes;
    spec.seed = o.data_seed;
    return make_teacher_student_set(spec);
  }
  return load_fashion_mnist(o.dir, size_t(o.subset));
}

ObjectiveModel objective_model(const PlanObjective& o, const TrainTestSets& data) {
  if (o.hidden_widths.empty()) {
    return ObjectiveModel::softmax_regression(data.train.features, data.train.classes);
  }
  return ObjectiveModel::mlp(data.train.features, o.hidden_widths, data.train.classes);
}

LearningRateSchedule objective_schedule(const PlanObjective& o) {
  LearningRateSchedule schedule;
  if (o.schedule == "step_decay") {
    schedule.kind = LearningRateSchedule::Kind::kStepDecay;
    schedule.decay_steps = o.decay_steps;
    schedule.decay_rate = o.decay_rate;
  }
  return schedule;
}

}  // namespace

bool ValueEvaluation::finite() const {
  return std::isfinite(result.loss) && std::isfinite(result.accuracy);
}

std::string diverged_note(int64_t global_step) {
  return "training.objective diverged: at global step " + std::to_string(global_step) +
         " the test loss is no longer a finite number (the learning rate is too high for the "
         "proxy); no evaluation is recorded from there on";
}

ObjectiveModel objective_model_of(const PlanObjective& o) {
  const bool synthetic = o.set == "synthetic";
  const int features = synthetic ? o.features : kFashionMnistFeatures;
  const int classes = synthetic ? o.classes : kFashionMnistClasses;
  return o.hidden_widths.empty() ? ObjectiveModel::softmax_regression(features, classes)
                                 : ObjectiveModel::mlp(features, o.hidden_widths, classes);
}

int objective_sub_batches(const Plan& plan, const ClientGraph& graph) {
  if (clients_are_workers(plan) || plan.batch_per_replica <= 0 ||
      graph.samples_per_step % plan.batch_per_replica != 0) {
    return 1;
  }
  return std::max(1, graph.samples_per_step / plan.batch_per_replica);
}

ObjectiveSetup::ObjectiveSetup(const PlanObjective& objective, int shards)
    : objective_(objective),
      shards_(shards),
      data_(load_objective_data(objective)),
      model_(objective_model(objective, data_)),
      schedule_(objective_schedule(objective)) {
  REPLISIM_ASSERT(shards >= 1, "an objective cut into no shards");
  if (size_t(shards) > data_.train.samples()) {
    throw InputError("", "/training/objective/data",
                     std::to_string(shards) + " workers but only " +
                         std::to_string(data_.train.samples()) +
                         " training samples: each worker needs a shard of one sample or more");
  }
}

std::vector<float> ObjectiveSetup::initial_values() const {
  return model_.initial_parameters(objective_.seed);
}

BatchIterator ObjectiveSetup::batches(int shard, int samples_per_batch) const {
  return BatchIterator(
      data_.train,
      shard_indices(data_.train.samples(), shards_, shard, shard_seed(objective_.seed)),
      samples_per_batch, batch_seed(objective_.seed, shard));
}

double ObjectiveSetup::learning_rate(int64_t global_step, int64_t staleness) const {
  const double rate = schedule_.at(objective_.learning_rate, global_step);
  return objective_.staleness_aware ? staleness_aware_learning_rate(rate, staleness) : rate;
}

ValueEvaluation ObjectiveSetup::evaluate(const std::vector<float>& values,
                                         int64_t global_step) const {
  return {global_step, model_.evaluate(values, whole(data_.test))};
}

uint64_t ObjectiveSetup::shard_seed(uint64_t seed) {
  return splitmix64(seed ^ kShardTag);
}

uint64_t ObjectiveSetup::batch_seed(uint64_t seed, int shard) {
  return splitmix64(splitmix64(seed ^ kBatchTag) ^ uint64_t(shard));
}

}  // namespace replisim::core
