// The training objective in a real run (issue 40; internal to real/node/): each worker and
// parameter-server process computes the proxy's real SGD arithmetic as its ops run, as the
// simulator's value engine does (core/values/value_engine.h), from the same ObjectiveSetup and
// seeds. The proxy's values ride in the first floats of each variable's real buffer: a PS holds
// them in its ParameterStore, a read sends them with the variable, a worker's backward pass puts
// the proxy's gradient in the first floats of each variable's gradient (the rest of every buffer
// keeps what a run without an objective computes: the plan optimizer's values of
// core::fill_gradient's pattern). docs/real-runs.md ("Training objective").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/values/objective_setup.h"
#include "core/values/parameter_store.h"
#include "core/values/value_engine.h"  // proportional_slices
#include "real/node/part.h"

namespace replisim::real::detail {

// Where the proxy's parameters live among the plan's variables. Variable v (global_step
// excluded) holds slice(v) of the proxy's flat vector (core::proportional_slices): its first
// slice(v).size floats. A slice op (kReadVariable, kApply, kAccumulate on a PS) names only the
// first variable of the layer group's slice it stands for (core/strategy/step_graph_parts.cpp):
// variable w belongs to key(w), the greatest variable <= w that such an op names and that lives
// on w's PS (w itself when none does). A key's tensor (what its read sends, what its gradient
// carries) is its members' buffers end to end, in variable order: members(k) in order, member
// m at float offset_in_tensor(m).
class ObjectiveLayout {
 public:
  // `parameters`: the proxy's parameter count. `plan` must outlive the layout.
  ObjectiveLayout(const core::Plan& plan, size_t parameters);
  const core::ValueSlice& slice(int v) const { return slices_[size_t(v)]; }
  int key(int v) const { return key_[size_t(v)]; }
  const std::vector<int>& members(int key) const { return members_[size_t(key)]; }
  size_t offset_in_tensor(int v) const { return offset_[size_t(v)]; }
  size_t tensor_floats(int key) const { return tensor_floats_[size_t(key)]; }
  size_t parameters() const { return parameters_; }

 private:
  std::vector<core::ValueSlice> slices_;
  std::vector<int> key_;
  std::vector<std::vector<int>> members_;
  std::vector<size_t> offset_;
  std::vector<size_t> tensor_floats_;
  size_t parameters_ = 0;
};

class ObjectiveValues {
 public:
  // Whether a real run computes the plan's objective, and evaluates it
  // (core::objective_computed_by_real_run, objective_evaluated_by_real_run; the evaluations:
  // objective_gather.h).
  static bool computed(const core::Plan& plan);
  static bool evaluated(const core::Plan& plan);
  // Checks, without reading the data, that each variable's buffer holds its slice of the proxy
  // (slice(v).size <= its floats). Throws core::InputError(file, "/training/objective/model",
  // ...) naming the first variable too small, the proxy's parameter count and the plan's floats.
  static void check(const core::Plan& plan, const std::string& file);

  // Makes or reads the data and builds the model (core::ObjectiveSetup, one shard per worker);
  // `graphs`: the client graphs (Plan::clients indexes) whose gradients this process computes,
  // each given its batches (objective.batch samples, times the towers of an in-graph client:
  // core::objective_sub_batches). An in-graph client's graph is computed in every process that
  // runs one of its towers' backward ops, each at the values its own reads brought and on the
  // same batches: every tower's process computes the towers' average, as the simulator does, so
  // the aggregation's average of these equal gradients is that average again. Throws
  // core::InputError for data that cannot be read.
  ObjectiveValues(const core::Plan& plan, const std::vector<int>& graphs);
  ObjectiveValues(const ObjectiveValues&) = delete;
  ObjectiveValues& operator=(const ObjectiveValues&) = delete;

  const ObjectiveLayout& layout() const { return layout_; }
  const core::ObjectiveSetup& setup() const { return *setup_; }

  // A PS, or an all-reduce rank's copy: its variables' first floats from
  // ObjectiveSetup::initial_values().
  void initialise(core::ParameterStore& store) const;
  // An all-reduce rank: its gradients are computed at the values of `store` (the rank's own copy,
  // which outlives this object), read at the step's first backward op; there are no reads.
  void compute_at(const core::ParameterStore* store) { replica_ = store; }
  // A PS's read of `key`: its members' buffers end to end (thread-safe).
  std::shared_ptr<core::Bytes> read_tensor(const core::ParameterStore& store, int key) const;
  // The learning rate of an apply at `global_step` of a gradient read at `global_step_read`
  // (< 0: not known here, staleness 0).
  double learning_rate(int64_t global_step, int64_t global_step_read) const;
  // A PS's apply of `key`'s tensor `gradient` (n floats): each member's first slice floats by
  // plain SGD at `rate`, the rest by the plan's optimizer (thread-safe).
  void apply(core::ParameterStore& store, int key, const float* gradient, size_t n,
             float rate) const;
  // The task holding every variable: the values evaluated on the test set.
  core::ValueEvaluation evaluate(const core::ParameterStore& store, int64_t global_step) const;

  // A worker: the proxy's gradient of graph g's step in progress, computed at its first call in
  // the step (its first backward op), at the snapshot that step's reads brought (the values of
  // variables no read brought stay those of the last read; an all-reduce rank's: its copy's
  // values, compute_at), on the worker's next batch. Network thread only.
  std::shared_ptr<const std::vector<float>> step_gradient(const Part& p);
  // Graph g's step ends here: the values its reads brought since the backward pass (a
  // distributed_replicated worker refreshes its copies after the applies) stay the snapshot for
  // the next step's gradient. Network thread only; nothing for a graph not computed here.
  void keep_reads(const Part& p);
  // Key `key`'s gradient tensor of backward op `op` of graph g at `step` into out[0,
  // tensor_floats(key)): core::fill_gradient's pattern with each member's slice of `gradient`
  // in its first floats (thread-safe).
  void fill_tensor(float* out, const std::vector<float>& gradient, int key, int g, int64_t step,
                   int op) const;

 private:
  struct Worker {
    int sub_batches = 1;
    std::vector<float> snapshot;
    std::shared_ptr<const std::vector<float>> gradient;
    int64_t gradient_step = -1;
    std::optional<core::BatchIterator> batches;
  };
  void take_reads(const Part& p, Worker& w) const;

  const core::Plan& plan_;
  std::unique_ptr<core::ObjectiveSetup> setup_;
  ObjectiveLayout layout_;
  std::vector<Worker> workers_;  // per plan client (only this process's have batches)
  const core::ParameterStore* replica_ = nullptr;
};

}  // namespace replisim::real::detail
