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

Processes plan_processes(const Plan& plan) {
  Processes out;
  out.of_role.assign(plan.roles.size(), -1);

  auto machine_of = [&](const Role& role) {
    return plan.platform.devices[size_t(role.device)].machine;
  };
  auto add = [&](const std::string& name, int machine) {
    out.names.push_back(name);
    out.machine.push_back(machine);
    return int(out.names.size()) - 1;
  };
  int client = -1, chief_process = -1;
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    const Role& role = plan.roles[r];
    if (role.kind != RoleKind::kClient && role.kind != RoleKind::kWorker) continue;
    out.of_role[r] = add(role.name, machine_of(role));
    if (role.kind == RoleKind::kClient) client = int(r);
    if (role.chief) chief_process = out.of_role[r];
  }
  const Role* client_role = client >= 0 ? &plan.roles[size_t(client)] : nullptr;
  std::vector<int> task_of_machine(plan.platform.machines.size(), -1);
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    const Role& role = plan.roles[r];
    if (out.of_role[r] >= 0) continue;
    if (role.kind == RoleKind::kParameterServer) {
      // In-graph variables kept on the client's machine (variables_on "client" or one of its
      // GPUs) live in its process, as the towers there do.
      const bool on_client = client_role != nullptr && machine_of(role) == machine_of(*client_role);
      out.of_role[r] = on_client ? out.of_role[size_t(client)] : add(role.name, machine_of(role));
    } else if (role.kind == RoleKind::kSyncQueueRunner) {
      out.of_role[r] = chief_process >= 0 ? chief_process : add(role.name, machine_of(role));
    } else {  // kTower
      const int m = machine_of(role);
      if (client_role != nullptr && m == machine_of(*client_role)) {
        out.of_role[r] = out.of_role[size_t(client)];
        continue;
      }
      int& task = task_of_machine[size_t(m)];
      if (task < 0) task = add(plan.platform.machines[size_t(m)].name + " task", m);
      out.of_role[r] = task;
    }
  }
  return out;
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

bool clients_are_workers(const Plan& plan) {
  return !plan.clients.empty() &&
         plan.roles[size_t(plan.clients.front().role)].kind == RoleKind::kWorker;
}

const char* plan_fault_kind_name(PlanFaultKind kind) {
  switch (kind) {
    case PlanFaultKind::kRole:
      return "role";
    case PlanFaultKind::kJob:
      return "job";
    case PlanFaultKind::kSlowdown:
      return "slowdown";
    case PlanFaultKind::kLink:
      return "link";
  }
  return "role";
}

}  // namespace replisim::core
