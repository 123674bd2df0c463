#include "core/values/parameter_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/values/optimizer.h"

namespace replisim::core {

ParameterStore::ParameterStore(const Plan& plan, int ps)
    : plan_(plan), ps_(ps), index_of_(plan.variables.size(), -1) {
  const OptimizerRule& rule = plan.optimizer;
  for (size_t v = 0; v < plan.variables.size(); ++v) {
    if (plan.variables[v].ps != ps) continue;
    if (v == 0) {
      holds_global_step_ = true;
      continue;
    }
    auto state = std::make_unique<State>();
    state->variable = int(v);
    const size_t n = float_count(plan.variables[v].bytes);
    state->value.assign(n, 0.0f);
    if (rule.name == "momentum" || rule.name == "adam") state->slot1.assign(n, 0.0f);
    if (rule.name == "adam") {
      state->slot2.assign(n, 0.0f);
      state->beta1_power = float(rule.beta1);
      state->beta2_power = float(rule.beta2);
    }
    index_of_[v] = int(states_.size());
    states_.push_back(std::move(state));
  }
}

const ParameterStore::State* ParameterStore::find(int variable) const {
  if (variable < 0 || size_t(variable) >= index_of_.size() || index_of_[size_t(variable)] < 0) {
    return nullptr;
  }
  return states_[size_t(index_of_[size_t(variable)])].get();
}

bool ParameterStore::holds(int variable) const {
  return find(variable) != nullptr || (variable == 0 && holds_global_step_);
}

std::shared_ptr<Bytes> ParameterStore::read(int variable) const {
  const State* s = find(variable);
  auto out = std::make_shared<Bytes>();
  if (s == nullptr) return out;
  std::lock_guard<std::mutex> lock(s->mutex);
  out->resize(s->value.size() * 4);
  if (s->home != nullptr) {
    s->home->load(variable, reinterpret_cast<float*>(out->data()), s->value.size());
  } else {
    std::memcpy(out->data(), s->value.data(), out->size());
  }
  return out;
}

void ParameterStore::place(int variable, ValueHome* home) {
  State* s = find(variable);
  if (s == nullptr || home == nullptr) {
    throw std::logic_error("place of variable " + std::to_string(variable) +
                           ", which this store does not hold");
  }
  if (plan_.optimizer.name != "sgd") {
    throw std::logic_error("place of a variable under " + plan_.optimizer.name +
                           ", whose slots stay in host memory");
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  home->store(variable, s->value.data(), s->value.size());
  s->home = home;
}

bool ParameterStore::placed(int variable) const {
  const State* s = find(variable);
  return s != nullptr && s->home != nullptr;
}

void ParameterStore::apply_placed(int variable, const std::function<void()>& update) {
  State* s = find(variable);
  if (s == nullptr || s->home == nullptr) {
    throw std::logic_error("apply_placed of variable " + std::to_string(variable) +
                           ", which is not placed");
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  update();
  ++s->applies;
}

// A placed variable's update on the host (a caller that does not update it in its home): loaded,
// updated, stored back.
void ParameterStore::apply(int variable, const float* gradient, size_t n) {
  State* s = find(variable);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->home != nullptr) s->home->load(variable, s->value.data(), s->value.size());
  apply_locked(*s, gradient, 0, std::min(n, s->value.size()));
  if (s->home != nullptr) s->home->store(variable, s->value.data(), s->value.size());
}

void ParameterStore::apply_objective(int variable, const float* gradient, size_t n, size_t front,
                                     float front_rate) {
  State* s = find(variable);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->home != nullptr) throw std::logic_error("the objective's update of a placed variable");
  n = std::min(n, s->value.size());
  front = std::min(front, n);
  float* value = s->value.data();
  // As sgd_apply (objective_model.cpp) and the simulator's value engine compute it.
  for (size_t i = 0; i < front; ++i) value[i] -= front_rate * gradient[i];
  apply_locked(*s, gradient, front, n);
}

void ParameterStore::apply_locked(State& s, const float* gradient, size_t from, size_t n) {
  const OptimizerRule& rule = plan_.optimizer;
  const float lr = float(rule.learning_rate);
  const size_t m = n > from ? n - from : 0;
  if (rule.name == "momentum") {
    apply_momentum(s.value.data() + from, s.slot1.data() + from, gradient + from, m, lr,
                   float(rule.momentum));
  } else if (rule.name == "adam") {
    apply_adam(s.value.data() + from, s.slot1.data() + from, s.slot2.data() + from, gradient + from,
               m, lr, float(rule.beta1), float(rule.beta2), float(rule.epsilon), s.beta1_power,
               s.beta2_power);
    s.beta1_power *= float(rule.beta1);
    s.beta2_power *= float(rule.beta2);
  } else {
    apply_gradient_descent(s.value.data() + from, gradient + from, m, lr);
  }
  ++s.applies;
}

void ParameterStore::write_front(int variable, const float* values, size_t n) {
  State* s = find(variable);
  if (s == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->home != nullptr) throw std::logic_error("write_front of a placed variable");
  std::copy_n(values, std::min(n, s->value.size()), s->value.begin());
}

size_t ParameterStore::read_front(int variable, float* values, size_t n) const {
  const State* s = find(variable);
  if (s == nullptr) return 0;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->home != nullptr) throw std::logic_error("read_front of a placed variable");
  n = std::min(n, s->value.size());
  std::copy_n(s->value.begin(), n, values);
  return n;
}

CheckpointShard ParameterStore::snapshot(const std::string& plan_hash,
                                         int64_t global_step_value) const {
  CheckpointShard shard;
  shard.plan_hash = plan_hash;
  shard.ps = uint32_t(ps_);
  shard.global_step = holds_global_step_ ? global_step_value : -1;
  const std::string& rule = plan_.optimizer.name;
  for (const auto& s : states_) {
    std::lock_guard<std::mutex> lock(s->mutex);
    const std::string& name = plan_.variables[size_t(s->variable)].name;
    if (s->home != nullptr) s->home->load(s->variable, s->value.data(), s->value.size());
    shard.tensors.push_back({name, s->variable, 0, s->applies, s->value});
    if (rule == "momentum")
      shard.tensors.push_back({name + "/Momentum", s->variable, 1, s->applies, s->slot1});
    if (rule == "adam") {
      shard.tensors.push_back({name + "/Adam", s->variable, 1, s->applies, s->slot1});
      shard.tensors.push_back({name + "/Adam_1", s->variable, 2, s->applies, s->slot2});
      shard.tensors.push_back(
          {name + "/beta_powers", s->variable, 3, s->applies, {s->beta1_power, s->beta2_power}});
    }
  }
  return shard;
}

void ParameterStore::restore(const CheckpointShard& shard) {
  for (const auto& s : states_) {
    const std::string& name = plan_.variables[size_t(s->variable)].name;
    std::lock_guard<std::mutex> lock(s->mutex);
    bool value = false;
    for (const CheckpointTensor& t : shard.tensors) {
      if (t.variable != s->variable) continue;
      std::vector<float>* into = t.slot == 0   ? &s->value
                                 : t.slot == 1 ? &s->slot1
                                 : t.slot == 2 ? &s->slot2
                                               : nullptr;
      if (into == nullptr) {  // adam's beta1^t, beta2^t
        if (t.values.size() != 2) throw std::runtime_error(name + "'s beta powers are not two");
        s->beta1_power = t.values[0];
        s->beta2_power = t.values[1];
        continue;
      }
      if (t.values.size() != into->size()) {
        throw std::runtime_error(t.name + " holds " + std::to_string(t.values.size()) +
                                 " values where the plan has " + std::to_string(into->size()));
      }
      *into = t.values;
      s->applies = t.applies;
      value |= t.slot == 0;
    }
    if (!value) throw std::runtime_error("no value of " + name);
    if (s->home != nullptr) s->home->store(s->variable, s->value.data(), s->value.size());
  }
}

double ParameterStore::bytes() const {
  double total = 0;
  for (const auto& s : states_)
    total += 4.0 * double(s->value.size() + s->slot1.size() + s->slot2.size());
  return total;
}

}  // namespace replisim::core
