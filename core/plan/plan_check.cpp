// Plan invariants (validate_plan): what every backend may rely on, whatever made the plan and
// whichever strategy it follows. A strategy's own rules (a parameter server, every async client
// incrementing global_step, which sync modes it has) are its registry entry's check_plan
// (core/strategy/plan_rules.h).
#include <optional>
#include <set>

#include "core/base/error.h"
#include "core/plan/plan.h"

namespace replisim::core {

namespace {

// Ops that compute, move or apply gradients, or count updates: none in a forward-only plan.
bool training_only(OpKind kind) {
  return kind == OpKind::kBackward || kind == OpKind::kAggregate || kind == OpKind::kApply ||
         kind == OpKind::kGlobalStepIncrement || kind == OpKind::kAllReduce;
}

bool sync_only(OpKind kind) {
  return kind == OpKind::kAccumulate || kind == OpKind::kTokenDequeue ||
         kind == OpKind::kLocalStep || kind == OpKind::kTakeGradient ||
         kind == OpKind::kTokenEnqueue;
}

// One step graph: topological order, send/recv pairs, the named input and global_step ops.
// `chief_sync_op`: the chief's sync op of synchronous training (no input op).
// `processes`: when the transport charges between processes (else null), a send and its recv
// may share a device if they cross processes.
void validate_graph(const Plan& plan, const ClientGraph& graph, const std::string& base,
                    const std::string& file, bool chief_sync_op, const Processes* processes) {
  auto fail = [&](size_t op, const std::string& message) {
    throw InputError(file, base + "/ops/" + std::to_string(op), message);
  };
  if (graph.ops.empty()) throw InputError(file, base + "/ops", "a step graph needs ops");
  const bool sync = plan.sync == "sync";
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const Op& op = graph.ops[k];
    for (int in : op.inputs) {
      if (in < 0 || size_t(in) >= k) fail(k, "inputs must name earlier ops");
    }
    if (sync_only(op.kind) && !sync) fail(k, "a synchronous-training op in an async plan");
    if (plan.forward_only && training_only(op.kind)) {
      fail(k, std::string("a forward-only plan has no ") + op_kind_name(op.kind) + " op");
    }
    if (op.kind == OpKind::kBarrier && plan.sync != kDistributedReplicated) {
      fail(k, "a barrier outside a distributed_replicated plan");
    }
    if (op.kind == OpKind::kAllReduce && plan.sync != kAllReduceSync) {
      fail(k, "an all-reduce outside an allreduce plan");
    }
    if (op.kind == OpKind::kAllReduce && !(op.bytes >= 0)) fail(k, "an all-reduce needs its bytes");
    if ((op.kind == OpKind::kAccumulate || op.kind == OpKind::kTakeGradient) && op.variable < 0) {
      fail(k, "an accumulator op needs its variable");
    }
    const bool transfer = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
    if (!transfer) {
      for (int in : op.inputs) {
        if (graph.ops[size_t(in)].device != op.device) {
          fail(k, "an input on another device needs a send/recv pair");
        }
      }
      continue;
    }
    if (op.peer < 0 || size_t(op.peer) >= graph.ops.size()) fail(k, "peer out of range");
    const Op& peer = graph.ops[size_t(op.peer)];
    const OpKind expected = op.kind == OpKind::kSend ? OpKind::kRecv : OpKind::kSend;
    if (peer.kind != expected || peer.peer != int(k) || peer.bytes != op.bytes) {
      fail(k, "send/recv pair is inconsistent");
    }
    if (peer.device == op.device && (processes == nullptr || !processes->crosses(op, peer))) {
      fail(k, "send and recv on the same device (and in the same process)");
    }
    if (op.kind == OpKind::kRecv && (op.inputs.size() != 1 || op.inputs[0] != op.peer)) {
      fail(k, "a recv has exactly its send as input");
    }
  }
  if (chief_sync_op
          ? graph.input_op != -1
          : graph.input_op < 0 || graph.ops[size_t(graph.input_op)].kind != OpKind::kInput) {
    throw InputError(
        file, base + "/input_op",
        chief_sync_op ? "the sync op has no input op (-1)" : "does not name an input op");
  }
  // The graph that increments global_step names the op (the backends count steps by it): the
  // chief's sync op always does, a synchronous worker never (its token says the step), any other
  // graph when its strategy says so.
  const int increment = graph.global_step_op;
  if (increment >= 0 && graph.ops[size_t(increment)].kind != OpKind::kGlobalStepIncrement) {
    throw InputError(file, base + "/global_step_op", "does not name a global step increment");
  }
  if (chief_sync_op && increment < 0) {
    throw InputError(file, base + "/global_step_op", "does not name a global step increment");
  }
  if (sync && !chief_sync_op && increment != -1) {
    throw InputError(file, base + "/global_step_op",
                     "a synchronous worker does not increment global_step (-1)");
  }
}

// distributed_replicated: every worker passes the same barriers (by name), each once per step;
// a barrier some worker never reaches would hold the others forever.
void validate_barriers(const Plan& plan, const std::string& file) {
  // Worker 0's barriers, in graph order, with the role (task) each runs on.
  std::vector<std::pair<std::string, int>> first;
  for (size_t ci = 0; ci < plan.clients.size(); ++ci) {
    std::set<std::string> names;
    std::vector<std::pair<std::string, int>> order;
    const std::vector<Op>& ops = plan.clients[ci].ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kind != OpKind::kBarrier) continue;
      if (!names.insert(ops[k].name).second) {
        throw InputError(file, "/clients/" + std::to_string(ci) + "/ops/" + std::to_string(k),
                         "barrier \"" + ops[k].name + "\" appears twice in one step graph");
      }
      order.emplace_back(ops[k].name, ops[k].role);
    }
    if (ci == 0) {
      first = std::move(order);
    } else if (order != first) {
      throw InputError(file, "/clients/" + std::to_string(ci),
                       "passes other barriers than worker 0, or in another order, or on other "
                       "tasks: every worker must pass the same ones, in the same order, on the "
                       "same tasks");
    }
  }
}

// allreduce: every rank all-reduces the same tensors (by bytes), in the same order, as Horovod
// requires of its ranks (a tensor one rank never submits stalls the others); no variable has a PS.
void validate_collectives(const Plan& plan, const std::string& file) {
  std::vector<double> first;
  for (size_t ci = 0; ci < plan.clients.size(); ++ci) {
    std::vector<double> order;
    for (const Op& op : plan.clients[ci].ops) {
      if (op.kind == OpKind::kAllReduce) order.push_back(op.bytes);
    }
    if (order.empty()) {
      throw InputError(file, "/clients/" + std::to_string(ci),
                       "an allreduce plan's worker all-reduces no tensor");
    }
    if (ci == 0) {
      first = std::move(order);
    } else if (order != first) {
      throw InputError(file, "/clients/" + std::to_string(ci),
                       "all-reduces other tensors than worker 0, or in another order: every "
                       "rank must submit the same ones");
    }
  }
  for (size_t v = 0; v < plan.variables.size(); ++v) {
    if (plan.variables[v].ps != -1) {
      throw InputError(file, "/variables/" + std::to_string(v) + "/ps",
                       "an allreduce plan has no parameter server (-1)");
    }
  }
}

}  // namespace

void validate_plan(const Plan& plan, const std::string& file) {
  if (plan.clients.empty()) throw InputError(file, "/clients", "a plan needs at least one client");
  if (plan.forward_only && plan.sync != "async") {
    throw InputError(
        file, "/forward_only",
        "forward-only steps send no gradient: their sync is \"async\", not \"" + plan.sync + "\"");
  }
  for (size_t i = 0; i < plan.memory.size(); ++i) {
    if (plan.memory[i].device < 0 ||
        size_t(plan.memory[i].device) >= plan.platform.devices.size()) {
      throw InputError(file, "/memory/" + std::to_string(i) + "/device", "unknown device");
    }
  }
  std::optional<Processes> processes;
  if (plan.platform.transport.between_processes) processes = plan_processes(plan);
  const Processes* by_process = processes ? &*processes : nullptr;
  for (size_t ci = 0; ci < plan.clients.size(); ++ci) {
    validate_graph(plan, plan.clients[ci], "/clients/" + std::to_string(ci), file, false,
                   by_process);
  }
  if (plan.sync == kAllReduceSync) validate_collectives(plan, file);
  if (plan.sync == kDistributedReplicated) {
    validate_barriers(plan, file);
    return;
  }
  if (plan.sync != "sync") return;
  const SyncReplicas& sr = plan.sync_replicas;
  if (plan.ps_roles.empty()) {
    throw InputError(file, "/ps_roles",
                     "synchronous replicas need a parameter server (it holds their queues)");
  }
  if (sr.total_num_replicas != int(plan.clients.size())) {
    throw InputError(
        file, "/sync_replicas/total_num_replicas",
        "must equal the number of workers (" + std::to_string(plan.clients.size()) + ")");
  }
  // TF's token queue (sync_replicas_optimizer.py): the chief enqueues tokens_per_step tokens per
  // global step for the workers to dequeue; none would stall every worker after its first step.
  // The strict variant hands out no tokens (each worker waits for a newer global_step).
  if (sr.variant == "tf" && sr.tokens_per_step < 1) {
    throw InputError(file, "/sync_replicas/tokens_per_step",
                     "the tf variant enqueues at least one token per global step (TF: max(T, R))");
  }
  if (sr.variant == "strict" && (sr.tokens_per_step != 0 || sr.initial_tokens != 0)) {
    throw InputError(file, "/sync_replicas/tokens_per_step",
                     "the strict variant hands out no tokens (0 initial, 0 per step)");
  }
  if (sr.variant == "strict" && sr.replicas_to_aggregate > sr.total_num_replicas) {
    throw InputError(file, "/sync_replicas/replicas_to_aggregate",
                     "cannot exceed total_num_replicas with variant strict");
  }
  validate_graph(plan, sr.chief_graph, "/sync_replicas/chief_graph", file, true, by_process);
}

}  // namespace replisim::core
