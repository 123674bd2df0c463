#include "core/runtime/step_state.h"

namespace replisim::core {

StepState::StepState(const ClientGraph& graph)
    : dependents_(graph.ops.size()), in_degree_(graph.ops.size(), 0) {
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    in_degree_[k] = int(graph.ops[k].inputs.size());
    for (int in : graph.ops[k].inputs) dependents_[size_t(in)].push_back(int(k));
    if (in_degree_[k] == 0) roots_.push_back(int(k));
  }
  mine_count_ = graph.ops.size();
}

StepState::StepState(const ClientGraph& graph, const std::vector<bool>& mine)
    : dependents_(graph.ops.size()), in_degree_(graph.ops.size(), 0), mine_(mine) {
  mine_.resize(graph.ops.size(), false);
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    if (!mine_[k]) continue;
    ++mine_count_;
    in_degree_[k] = int(graph.ops[k].inputs.size());
    for (int in : graph.ops[k].inputs) dependents_[size_t(in)].push_back(int(k));
    if (in_degree_[k] == 0) roots_.push_back(int(k));
  }
}

void StepState::begin_step() {
  remaining_inputs_ = in_degree_;
  remaining_ops_ = mine_count_;
}

}  // namespace replisim::core
