#include "core/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace replisim::core {

double first_model_poll_s(double up_s, double ready_s, double recovery_wait_s) {
  return up_s + std::ceil(std::max(0.0, ready_s - up_s) / recovery_wait_s) * recovery_wait_s;
}

double relaunch_offset_s(const Plan& plan, const ClientGraph& g) {
  const double chief_s = plan.clients.empty() ? 0.0 : plan.clients.front().launch_offset_s;
  return std::max(0.0, g.launch_offset_s - chief_s);
}

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

namespace {

// Whether PS role `r` holds a variable (global_step, whose PS also holds the sync queues, is
// one) or runs an op of some step (a distributed_replicated barrier may be all it runs).
bool ps_used_by_steps(const Plan& plan, int r) {
  for (const Variable& v : plan.variables) {
    if (v.ps >= 0 && plan.ps_roles[size_t(v.ps)] == r) return true;
  }
  for (const ClientGraph* graph : step_graphs(plan)) {
    for (const Op& op : graph->ops) {
      if (op.role == r) return true;
    }
  }
  return false;
}

}  // namespace

PlanFault death_of_roles(const Plan& plan, const std::vector<int>& roles, double at_s,
                         std::string description, std::vector<int>* idle_ps) {
  PlanFault f;
  f.kind = PlanFaultKind::kRole;
  f.at_s = at_s;
  f.description = std::move(description);
  for (int r : roles) {
    const Role& role = plan.roles[size_t(r)];
    if (role.kind == RoleKind::kSyncQueueRunner) continue;  // dies with the chief
    // All-reduce: a dead rank stalls every ring it is in, and Horovod (before Elastic) fails the
    // job; Horovod Elastic re-forms the ring without it.
    const bool ring_fails = plan.sync == kAllReduceSync && !plan.collective.elastic;
    if (role.kind == RoleKind::kWorker && !ring_fails) {
      for (size_t c = 0; c < plan.clients.size(); ++c) {
        if (plan.clients[c].role == r) f.clients.push_back(int(c));
      }
    } else if (role.kind == RoleKind::kParameterServer && !ps_used_by_steps(plan, r)) {
      // A task no step touches (a PS left without variables): no RPC to it fails.
      if (idle_ps != nullptr) idle_ps->push_back(r);
    } else {
      f.kind = PlanFaultKind::kJob;
      f.roles.push_back(r);
    }
  }
  return f;
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

namespace {

// The variable a parameter server's read sends into op `k` of `ops` (a kRecv whose send carries
// the read, or the read itself), or -1.
int ps_read_into(const Plan& plan, const std::vector<Op>& ops, const Op& op) {
  const Op* read = &op;
  if (op.kind == OpKind::kRecv && op.peer >= 0 && size_t(op.peer) < ops.size()) {
    const Op& send = ops[size_t(op.peer)];
    if (send.inputs.empty()) return -1;
    read = &ops[size_t(send.inputs.front())];
  }
  if (read->kind != OpKind::kReadVariable || read->role < 0) return -1;
  if (plan.roles[size_t(read->role)].kind != RoleKind::kParameterServer) return -1;
  return read->variable;
}

// In-graph: whether every role that runs a backward op of the client's graph receives every
// variable the graph reads from its parameter servers (data parallelism: each tower's process
// computes the proxy's gradient from the values it received) — through a recv, or a read its op
// takes directly (a parameter server on the tower's machine). A model split across roles leaves
// a tower's process without the other parts' values.
bool towers_read_every_variable(const Plan& plan) {
  for (const ClientGraph& graph : plan.clients) {
    std::set<int> all;
    std::map<int, std::set<int>> by_role;
    std::set<int> backward_roles;
    for (const Op& op : graph.ops) {
      if (op.kind == OpKind::kBackward) backward_roles.insert(op.role);
      const int v = ps_read_into(plan, graph.ops, op);
      if (v > 0) {
        all.insert(v);
        by_role[op.role].insert(v);
      }
      for (int in : op.inputs) {
        const Op& input = graph.ops[size_t(in)];
        if (input.kind != OpKind::kReadVariable) continue;
        const int direct = ps_read_into(plan, graph.ops, input);
        if (direct > 0) by_role[op.role].insert(direct);
      }
    }
    for (int role : backward_roles) {
      if (by_role[role] != all) return false;
    }
  }
  return true;
}

}  // namespace

bool objective_computed_by_real_run(const Plan& plan) {
  if (!plan.objective.enabled) return false;
  // Between-graph (async, sync, distributed_replicated) and all-reduce: each worker computes its
  // gradient at the values it read or holds.
  if (clients_are_workers(plan) || plan.sync == kAllReduceSync) return true;
  return towers_read_every_variable(plan);
}

bool objective_evaluated_by_real_run(const Plan& plan) {
  return objective_computed_by_real_run(plan) && !plan.variables.empty();
}

bool objective_computed_by_simulator(const Plan& plan) {
  return plan.objective.enabled;
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
