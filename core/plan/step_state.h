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

  // Starts a step: every op waits for all of its inputs again and none is done.
  void begin_step();
  // The ops without inputs, which a step starts with, in op order (the graph's input op among
  // them: a backend feeds it from its input pipeline).
  const std::vector<int>& roots() const { return roots_; }
  bool is_root(int op) const { return in_degree_[size_t(op)] == 0; }

  // Marks `op` done in the current step: calls ready(next) for each op whose last missing input
  // it was, in the order the graph lists them as consumers, then returns true when `op` was the
  // step's last op. Each op completes once per step (not checked here, for speed).
  template <typename Ready>
  bool complete(int op, Ready&& ready) {
    for (int next : dependents_[size_t(op)]) {
      if (--remaining_inputs_[size_t(next)] == 0) ready(next);
    }
    return --remaining_ops_ == 0;
  }
  size_t remaining_ops() const { return remaining_ops_; }

 private:
  std::vector<std::vector<int>> dependents_;
  std::vector<int> in_degree_;
  std::vector<int> roots_;
  std::vector<int> remaining_inputs_;
  size_t remaining_ops_ = 0;
};

}  // namespace replisim::core
