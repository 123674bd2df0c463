#include "core/values/gradient_flow.h"

#include <algorithm>

namespace replisim::core {

GradientFlow gradient_flow(const ClientGraph& g) {
  const size_t n = g.ops.size();
  std::vector<std::vector<int>> consumers(n);
  for (size_t k = 0; k < n; ++k) {
    for (int in : g.ops[k].inputs) consumers[size_t(in)].push_back(int(k));
  }
  GradientFlow flow;
  flow.variable.assign(n, -1);
  // Ops come in topological order: walking back, every consumer is decided first.
  for (size_t k = n; k-- > 0;) {
    const Op& op = g.ops[k];
    if (op.kind == OpKind::kApply || op.kind == OpKind::kAccumulate) {
      flow.variable[k] = op.variable;
      continue;
    }
    if (op.kind != OpKind::kAggregate && op.kind != OpKind::kSend && op.kind != OpKind::kRecv &&
        op.kind != OpKind::kAllReduce) {
      continue;
    }
    int v = -2;  // -2: no consumer with a gradient yet
    for (int c : consumers[k]) {
      const int w = flow.variable[size_t(c)];
      if (w < 0) continue;
      v = v == -2 ? w : (v == w ? v : -1);
    }
    flow.variable[k] = std::max(v, -1);
  }
  flow.produces.assign(n, {});
  for (size_t k = 0; k < n; ++k) {
    if (g.ops[k].kind != OpKind::kBackward) continue;
    for (int c : consumers[k]) {
      const int v = flow.variable[size_t(c)];
      std::vector<int>& of = flow.produces[k];
      if (v >= 0 && std::find(of.begin(), of.end(), v) == of.end()) of.push_back(v);
    }
  }
  return flow;
}

}  // namespace replisim::core
