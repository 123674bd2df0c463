// The value engine (value_engine.h): the objective's data, model and values, and the meaning of
// each op kind at its completion.
#include "core/values/value_engine.h"

#include <algorithm>
#include <cmath>

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

std::vector<ValueSlice> proportional_slices(const std::vector<Variable>& variables,
                                            size_t parameters) {
  std::vector<ValueSlice> slices(variables.size());
  double total = 0;
  for (size_t v = 1; v < variables.size(); ++v) total += variables[v].bytes;
  if (!(total > 0)) return slices;
  double before = 0;
  size_t begin = 0;
  for (size_t v = 1; v < variables.size(); ++v) {
    before += variables[v].bytes;
    const size_t end =
        v + 1 == variables.size()
            ? parameters
            : std::min(parameters, size_t(std::floor(double(parameters) * (before / total))));
    slices[v] = {begin, std::max(end, begin) - begin};
    begin = std::max(end, begin);
  }
  return slices;
}

uint64_t ValueEngine::shard_seed(uint64_t seed) {
  return splitmix64(seed ^ kShardTag);
}

uint64_t ValueEngine::batch_seed(uint64_t seed, int c) {
  return splitmix64(splitmix64(seed ^ kBatchTag) ^ uint64_t(c));
}

ValueEngine::ValueEngine(const Plan& plan)
    : plan_(plan),
      data_(load_objective_data(plan.objective)),
      model_(objective_model(plan.objective, data_)),
      schedule_(objective_schedule(plan.objective)) {
  const PlanObjective& o = plan.objective;
  REPLISIM_ASSERT(o.enabled, "a value engine for a plan without an objective");
  const int workers = int(plan.clients.size());
  if (size_t(workers) > data_.train.samples()) {
    throw InputError("", "/training/objective/data",
                     std::to_string(workers) + " workers but only " +
                         std::to_string(data_.train.samples()) +
                         " training samples: each worker needs a shard of one sample or more");
  }
  values_ = model_.initial_parameters(o.seed);
  slices_ = proportional_slices(plan.variables, model_.parameter_count());
  clients_.resize(size_t(workers));
  for (int c = 0; c < workers; ++c) {
    Client& client = clients_[size_t(c)];
    client.snapshot = values_;
    client.batches.emplace(data_.train,
                           shard_indices(data_.train.samples(), workers, c, shard_seed(o.seed)),
                           o.batch, batch_seed(o.seed, c));
  }
}

std::optional<ValueEvaluation> ValueEngine::op_completed(int c, int op_index, int64_t step,
                                                         int64_t global_step,
                                                         int64_t global_step_read) {
  const Op& op = plan_.clients[size_t(c)].ops[size_t(op_index)];
  Client& client = clients_[size_t(c)];
  switch (op.kind) {
    case OpKind::kReadVariable: {
      const ValueSlice& s = slices_[size_t(op.variable)];
      std::copy_n(values_.begin() + long(s.offset), s.size,
                  client.snapshot.begin() + long(s.offset));
      return std::nullopt;
    }
    case OpKind::kBackward:
      if (client.gradient_step != step) {  // the step's first backward op
        client.gradient =
            model_.loss_and_gradient(client.snapshot, client.batches->next()).gradient;
        client.gradient_step = step;
        ++client.gradients;
      }
      return std::nullopt;
    case OpKind::kApply: {
      REPLISIM_ASSERT(client.gradient_step == step, "an apply before its step's backward pass");
      const int64_t staleness = std::max<int64_t>(global_step - global_step_read, 0);
      double rate = schedule_.at(plan_.objective.learning_rate, global_step);
      if (plan_.objective.staleness_aware) rate = staleness_aware_learning_rate(rate, staleness);
      const float scaled = float(rate);  // as sgd_apply: params[i] -= float(lr) * g[i]
      const ValueSlice& s = slices_[size_t(op.variable)];
      for (size_t i = s.offset; i < s.offset + s.size; ++i) {
        values_[i] -= scaled * client.gradient[i];
      }
      if (record_applies_) applied_.push_back({c, step, op.variable, staleness, rate});
      return std::nullopt;
    }
    case OpKind::kGlobalStepIncrement:
      if ((global_step + 1) % plan_.objective.evaluate_every_steps == 0) {
        return evaluate_now(global_step + 1);
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

ValueEvaluation ValueEngine::evaluate_now(int64_t global_step) const {
  return {global_step, model_.evaluate(values_, whole(data_.test))};
}

}  // namespace replisim::core
