#include "core/plan/plan.h"

#include <algorithm>

namespace replisim::core {

int Plan::role_index(const std::string& name) const {
  for (size_t i = 0; i < roles.size(); ++i) {
    if (roles[i].name == name) return int(i);
  }
  return -1;
}

size_t Plan::op_count() const {
  size_t n = 0;
  for (const ClientGraph& c : clients) n += c.ops.size();
  return n;
}

std::vector<const ClientGraph*> step_graphs(const Plan& plan) {
  std::vector<const ClientGraph*> graphs;
  for (const ClientGraph& graph : plan.clients) graphs.push_back(&graph);
  if (plan.sync == "sync") graphs.push_back(&plan.sync_replicas.chief_graph);
  return graphs;
}

std::vector<MemoryCheck> memory_checks(const Plan& plan) {
  std::vector<MemoryCheck> out;
  for (const DeviceMemory& m : plan.memory) {
    const PlatformDevice& d = plan.platform.devices[size_t(m.device)];
    if (d.memory_bytes > 0) out.push_back({d.name, m, d.memory_bytes});
  }
  std::sort(out.begin(), out.end(), [&](const MemoryCheck& a, const MemoryCheck& b) {
    return plan.platform.find_device(a.device) < plan.platform.find_device(b.device);
  });
  return out;
}

}  // namespace replisim::core
