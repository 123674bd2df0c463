// The variables of one parameter server shard as real float32 buffers, with the optimizer's slots
// (TF's Apply* kernels, optimizer.h), zero when the job starts (the chief's init op). Reads copy a
// variable, applies update it in place, a checkpoint snapshots them: each under the variable's
// own lock, so compute threads and the network thread may use it at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/values/checkpoint.h"

namespace replisim::core {

using Bytes = std::vector<uint8_t>;

// Float32 elements of a variable or gradient of `bytes` bytes.
inline size_t float_count(double bytes) {
  return bytes > 0 ? size_t(bytes / 4) : 0;
}

// Where a variable's value lives when it is not this store's host memory: a GPU's memory (real
// runs: real/node/device_values.h). The store calls it under the variable's lock, so that a read,
// a snapshot and an update of one variable never interleave.
class ValueHome {
 public:
  virtual ~ValueHome() = default;
  // The variable's n floats from its home into `values` (a read, a snapshot), or from `values`
  // to its home (placing it, a restore). Throw std::runtime_error when the device fails.
  virtual void load(int variable, float* values, size_t n) = 0;
  virtual void store(int variable, const float* values, size_t n) = 0;
};

class ParameterStore {
 public:
  // The variables of shard `ps` (Plan::ps_roles index) of `plan` (which must outlive it).
  ParameterStore(const Plan& plan, int ps);

  bool holds(int variable) const;
  // global_step (Plan::variables[0]) is an int64 here, not a buffer.
  bool holds_global_step() const { return holds_global_step_; }
  int64_t global_step = 0;  // network thread only

  // A copy of the value (float32, little-endian), of the variable's bytes. Thread-safe.
  std::shared_ptr<Bytes> read(int variable) const;
  // Places a variable this store holds in `home` (not owned; outlives the store's use of it):
  // its value is stored there now, and from then on reads, snapshots and restores go through it,
  // and its updates are the caller's, on the home (apply_placed). Only for the plan's "sgd"
  // optimizer (no slots to keep beside it); throws std::logic_error otherwise or when the store
  // does not hold the variable.
  void place(int variable, ValueHome* home);
  bool placed(int variable) const;
  // One update of a placed variable: `update` runs under the variable's lock (it changes the
  // value in its home), and the update is counted (checkpoints record the applies).
  void apply_placed(int variable, const std::function<void()>& update);
  // One update with `gradient` (the first min(n, size) elements count). Thread-safe.
  void apply(int variable, const float* gradient, size_t n);
  // The training objective's values (Plan::objective) ride in the first floats of a variable's
  // buffer (real/node/objective_values.h). apply_objective: one update whose first `front`
  // floats (at most min(n, size)) get plain SGD, value -= front_rate * gradient (the proxy's
  // arithmetic, core/model/objective_model.h sgd_apply), and the rest the plan's optimizer, as
  // apply(). write_front / read_front: the first min(n, size) floats set from / copied to
  // `values`. Thread-safe.
  void apply_objective(int variable, const float* gradient, size_t n, size_t front,
                       float front_rate);
  void write_front(int variable, const float* values, size_t n);
  size_t read_front(int variable, float* values, size_t n) const;
  // Every variable and slot, for a checkpoint, with `global_step_value` when this shard holds
  // global_step (the caller reads it on the network thread). Thread-safe.
  CheckpointShard snapshot(const std::string& plan_hash, int64_t global_step_value) const;
  // Float32 bytes held (values and slots).
  double bytes() const;
  // Every variable and slot this shard holds, from `shard` (the inverse of snapshot; global_step
  // is the caller's). Throws std::runtime_error naming the variable for a tensor missing or of
  // another size. Thread-safe.
  void restore(const CheckpointShard& shard);

 private:
  struct State {
    int variable = -1;
    std::vector<float> value;
    std::vector<float> slot1, slot2;  // momentum: accum; adam: m, v
    float beta1_power = 1, beta2_power = 1;
    int64_t applies = 0;
    ValueHome* home = nullptr;  // place(): the value lives there, `value` is a staging copy
    mutable std::mutex mutex;
  };
  const State* find(int variable) const;
  // The plan's optimizer over elements [from, n) of s (its mutex held); counts one apply.
  void apply_locked(State& s, const float* gradient, size_t from, size_t n);
  State* find(int variable) { return const_cast<State*>(std::as_const(*this).find(variable)); }

  const Plan& plan_;
  int ps_;
  bool holds_global_step_ = false;
  std::vector<int> index_of_;  // per plan variable: its State, or -1
  std::vector<std::unique_ptr<State>> states_;
};

}  // namespace replisim::core
