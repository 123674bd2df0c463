// The "ready when its inputs are in" bookkeeping of one step graph, shared by every backend: which
// ops consume each op's output, and during a step how many inputs each op still waits for. The
// backend decides what running an op means (a simulated execution, a real GEMM, a transfer);
// this decides which ops may run next and when the step is over.
#pragma once

#include <cstddef>
#include <vector>

#include "core/plan/plan.h"

namespace replisim::core {

class StepState {
 public:
  // `graph` must be valid (validate_plan: inputs name earlier ops) and outlive this object.
  explicit StepState(const ClientGraph& graph);
  // The part of `graph` that one process runs (a backend whose ops are spread over processes):
  // `mine[k]` says whether op k is in it (one entry per op). Only its ops are roots, become ready
  // and count towards the step's end; an op of another part that one of them waits for is
  // passed to complete() when it is known to be done (a tensor or a notice arrived).
  StepState(const ClientGraph& graph, const std::vector<bool>& mine);

  // Starts a step: every op waits for all of its inputs again and none is done.
  void begin_step();
  // The ops without inputs, which a step starts with, in op order (the graph's input op among
  // them: a backend feeds it from its input pipeline).
  const std::vector<int>& roots() const { return roots_; }
  bool is_root(int op) const { return in_degree_[size_t(op)] == 0; }

  // Marks `op` done in the current step: calls ready(next) for each op (of this part) whose last
  // missing input it was, in the order the graph lists them as consumers, then returns true when
  // `op` was the step's (this part's) last op; an op of another part only readies its consumers
  // here and returns false. Each op completes once per step (not checked here, for speed).
  template <typename Ready>
  bool complete(int op, Ready&& ready) {
    for (int next : dependents_[size_t(op)]) {
      if (--remaining_inputs_[size_t(next)] == 0) ready(next);
    }
    if (!mine_.empty() && !mine_[size_t(op)]) return false;
    return --remaining_ops_ == 0;
  }
  size_t remaining_ops() const { return remaining_ops_; }
  // Whether op k belongs to this part (always true for a whole graph).
  bool mine(int op) const { return mine_.empty() || mine_[size_t(op)]; }
  size_t op_count() const { return mine_count_; }

 private:
  std::vector<std::vector<int>> dependents_;
  std::vector<int> in_degree_;
  std::vector<int> roots_;
  std::vector<int> remaining_inputs_;
  std::vector<bool> mine_;  // empty: the whole graph
  size_t mine_count_ = 0;
  size_t remaining_ops_ = 0;
};

}  // namespace replisim::core
