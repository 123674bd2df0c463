// Which op of a step graph carries which variable's gradient: what a real run's backward ops
// fill (gradient_fill.h) and what sends, aggregates, applies and accumulates hand on.
#pragma once

#include <vector>

#include "core/plan/plan.h"

namespace replisim::core {

struct GradientFlow {
  // Per op: the variable (Plan::variables index) whose gradient its output is: an apply's or
  // accumulate's own variable, and for an aggregate, send, recv or all-reduce the one variable its
  // consumers take; -1 for every other op (and for one whose consumers take several).
  std::vector<int> variable;
  // Per op: for a backward op, the variables whose gradients it produces (its consumers'
  // `variable`, in consumer order, each once); empty for every other op.
  std::vector<std::vector<int>> produces;
};

GradientFlow gradient_flow(const ClientGraph& graph);

}  // namespace replisim::core
