// The vocabulary of ops and roles: what each op of a step graph does and what each task of a job
// is. Plans are made of them, and traces record them per event, so that metrics, reports and
// views recognise an apply or a parameter server by its kind, never by a name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replisim::core {

enum class OpKind : uint8_t {
  kInput,                // input pipeline: produces one batch on a CPU (prefetched, see Plan)
  kSplit,                // in-graph: split the big batch into sub-batches (no compute)
  kReadVariable,         // read a variable on its PS (no compute; its output is sent on)
  kForward,              // forward pass of one layer on a tower / worker device
  kLoss,                 // loss (and summary) ops
  kBackward,             // backward pass of one layer
  kAggregate,            // in-graph: sum the towers' gradients of one variable on the client
  kApply,                // optimizer update of one variable on its PS
  kGlobalStepIncrement,  // global_step += 1 on the PS holding global_step (after the applies)
  kSend,                 // sending half of a cross-device edge (inserted by partitioning)
  kRecv,                 // receiving half; completes when the tensor has arrived
  // Synchronous between-graph training (SyncReplicasOptimizer; Plan::sync_replicas):
  kAccumulate,    // worker: apply_grad of one slice into its accumulator on the PS; dropped when
                  // the worker's local_step is older than the accumulator's global step
  kTokenDequeue,  // worker: take a token from the sync token queue (on global_step's PS); waits
                  // while there is none; the token's value becomes the worker's next local_step
  kLocalStep,     // worker: local_step = token (its step ends here)
  kTakeGradient,  // chief's sync op: take_grad(replicas_to_aggregate) of one slice; waits until
                  // that many fresh gradients are in, then resets the accumulator and bumps its
                  // global step
  kTokenEnqueue,  // chief's sync op: enqueue the tokens of the new global_step
  // Between-graph "distributed_replicated" (tf_cnn_benchmarks' add_sync_queues_and_barrier):
  kBarrier,  // on a PS: enqueue a token into every other worker's queue of this barrier, then
             // dequeue one per other worker from this worker's; waits until they are in
  // All-reduce (Plan::collective; core/runtime/collectives.h):
  kAllReduce,  // worker: its gradient tensor (`bytes`) is ready; completes when every rank's is
               // reduced (averaged) into it by the plan's algorithm (Horovod's allreduce)
};
const char* op_kind_name(OpKind kind);

// The sync mode of a between-graph plan and trace ("sync" field) whose workers meet at kBarrier
// ops: tf_cnn_benchmarks' variable_update=distributed_replicated with cross_replica_sync.
inline constexpr const char* kDistributedReplicated = "distributed_replicated";
// The sync mode of an all-reduce plan (Plan::collective): every worker keeps its own variables and
// averages its gradients with every other worker's each step (Horovod). No parameter server.
inline constexpr const char* kAllReduceSync = "allreduce";
// The all-reduce algorithms' names: core/hardware/collective_transport.h.

// kSyncQueueRunner: the chief's thread that runs the sync op of synchronous between-graph
// training once per global step (TF's chief_queue_runner).
enum class RoleKind : uint8_t { kClient, kWorker, kTower, kParameterServer, kSyncQueueRunner };
const char* role_kind_name(RoleKind kind);

// Whether `name` is spelled as the strategy registry spells names (core/strategy/strategy.h:
// "in_graph", "between_graph"): a lowercase letter, then lowercase letters, digits and _, at most
// 64 in all. Plans and traces name their strategy so; one this replisim does not know still reads.
bool is_strategy_name_spelling(const std::string& name);

// Every kind, in declaration order.
const std::vector<OpKind>& all_op_kinds();
const std::vector<RoleKind>& all_role_kinds();

// The kind called `name` (op_kind_name / role_kind_name); false, leaving `out`, when none is.
bool op_kind_from_name(const std::string& name, OpKind* out);
bool role_kind_from_name(const std::string& name, RoleKind* out);

}  // namespace replisim::core
