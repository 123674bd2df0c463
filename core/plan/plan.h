// The plan: what a strategy compiler produces and every backend consumes. Per client, one step
// graph of placed ops (send/recv already inserted at device boundaries), the platform, the
// roles, the variables and their parameter server shards. Plain data; round-trips JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware/platform.h"
#include "core/plan/kinds.h"
#include "core/plan/plan_objective.h"

namespace replisim::core {

// A task of the distributed job. Trace events name their role ("client", "worker3", "ps0").
struct Role {
  std::string name;
  RoleKind kind = RoleKind::kWorker;
  int device = -1;     // main device: a worker's or tower's compute device, a client's or PS's CPU
  bool chief = false;  // between-graph worker 0 (initialisation, checkpoints, summaries)
};

// One GEMM of a layer group's forward or backward pass, for one sample (Layer::gemm):
// C[m x n] = A[m x k] B[k x n]. `batch_dim` is the dimension that grows with the op's batch: 'm'
// for a forward product and a backward pass's input gradient (dX[m x k] = dY[m x n] W^T[n x k]),
// 'k' for its weight gradient (dW[k x n] = X^T[k x m] dY[m x n], a sum over the batch's rows). A
// real run's engine multiplies it so that the GEMMs total the op's compute_flop
// (real/compute/gemm_shapes.h).
struct PlanGemm {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  char batch_dim = 'm';  // 'm' or 'k'
  double flop() const { return 2.0 * double(m) * double(n) * double(k); }
};

// One op of a step graph, placed on a device. `inputs` index earlier ops of the same graph
// (ops are stored in topological order). A kSend's `peer` is its kRecv and vice versa.
struct Op {
  std::string name;
  OpKind kind = OpKind::kForward;
  int device = -1;
  int role = -1;
  double compute_flop = 0;  // 0 = completes at once, occupying nothing
  double bytes = 0;         // kSend/kRecv: tensor bytes carried
  double overhead_s = 0;    // kSend: fixed software cost before the transfer starts
  int peer = -1;
  int variable = -1;      // kReadVariable/kApply: index into Plan::variables
  bool jittered = false;  // forward/backward compute scaled by the step's jitter factor
  // kForward/kBackward: index into Plan::gemm_lists (the GEMMs its compute_flop stands for);
  // -1: not known (a layer given by its totals: a real run runs square SGEMMs of its FLOP).
  int gemms = -1;
  std::vector<int> inputs;
};

struct Variable {
  std::string name;
  double bytes = 0;
  int ps = -1;     // index into Plan::ps_roles; -1 in an all-reduce plan (every worker holds it)
  int layer = -1;  // the model layer it belongs to (a partition of it, or all of it); -1: none
};

// One client and the step graph it runs `steps` times, one step after the other (a TF
// session.run returns only when every op of the step, on every device, is done).
struct ClientGraph {
  int role = -1;              // the client / worker role (owner of the step events)
  double start_offset_s = 0;  // when its first step starts: launch, plus the session barrier
  // When its task is launched (seeded start-up stagger, or training.start_times): a non-chief
  // worker launched before the chief's model is ready polls for it (first_model_poll_s), so its
  // start_offset_s may be later. A restart launches the tasks with these offsets again.
  double launch_offset_s = 0;
  int samples_per_step = 0;  // samples whose gradients one step applies (forward-only: infers)
  int data_steps = 0;        // steps of data it holds, then it exits; 0 = no limit
  int input_op = -1;         // the kInput op (runs ahead of the step, see Plan); -1: none
  int global_step_op = -1;   // the kGlobalStepIncrement op; its completion is an update;
                             // -1: none (synchronous workers: the chief's sync op increments)
  std::vector<Op> ops;
};

// TF 1.x's SessionManager.wait_for_session (tensorflow/python/training/session_manager.py): a
// non-chief worker up at `up_s` checks for a ready model at once, then every `recovery_wait_s`
// (recovery_wait_secs); the chief's model is ready at `ready_s`. Returns when it first sees it.
double first_model_poll_s(double up_s, double ready_s, double recovery_wait_s);

// Memory one device needs for the plan (bytes): used to check GPU capacity.
struct DeviceMemory {
  int device = -1;
  double weights_bytes = 0;      // variables it holds or reads
  double gradients_bytes = 0;    // gradients it computes
  double optimizer_bytes = 0;    // optimizer slots of the variables it holds (PS)
  double activations_bytes = 0;  // layer outputs kept for the backward pass, and the input batch
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes;
  }
};

// Between-graph synchronous training as tf_cnn_benchmarks' variable_update=distributed_replicated
// with cross_replica_sync (scripts/tf_cnn_benchmarks, tensorflow/benchmarks 9165a70, 2017-05):
// each worker applies its own gradient to the PS variable, waits at a barrier of all workers
// (OpKind::kBarrier) and reads the value back into its towers' copies; every worker increments
// global_step after its step. No chief sync op: its plan has sync == kDistributedReplicated
// (core/plan/kinds.h).

// Synchronous between-graph training (plan.sync == "sync"): TF's SyncReplicasOptimizer.
// Workers' step graphs end with kAccumulate per slice, then kTokenDequeue and kLocalStep; the
// chief's sync op (`chief_graph`, run once per global step until global_step reaches
// Plan::steps) takes every slice's gradients, applies them, increments global_step and enqueues
// the tokens. Source: tensorflow/python/training/sync_replicas_optimizer.py (TF 1.x).
struct SyncReplicas {
  int replicas_to_aggregate = 0;  // R: fresh gradients each take needs
  int total_num_replicas = 0;     // T: workers
  std::string variant = "tf";     // "tf" (shared token queue) or "strict" (one per worker)
  // tf: tokens in the queue at the start (get_init_tokens_op's default: R) and enqueued per
  // global step (max(T, R)). strict: 0 and 0 (each worker waits for a newer global_step).
  int initial_tokens = 0;
  int tokens_per_step = 0;
  ClientGraph chief_graph;  // the sync op; its role is the kSyncQueueRunner
};

// The chief's checkpoints and summaries (training.checkpoint, training.summaries; CheckpointSpec
// and SummarySpec in scenario.h). The chief is the role with `chief` set: worker 0 in
// between-graph, the client in in-graph.
struct CheckpointPolicy {
  double every_s = 0;  // 0: no checkpoints
  double bytes = 0;    // every variable and optimizer slot (TF's Saver saves both)
  double disk_bandwidth_bytes_per_s = 0;
  int max_to_keep = 5;          // real runs: the newest kept on disk (TF's Saver; 0: all)
  int summary_every_steps = 0;  // 0: no summaries
  double summary_bytes = 0;
  double summary_disk_bandwidth_bytes_per_s = 0;
};

// What follows a job failure (training.recovery; RecoverySpec in scenario.h).
struct RecoveryPolicy {
  bool enabled = false;  // false: a job failure ends the run
  double detect_timeout_s = 0;
  double restart_delay_s = 0;
  double recovery_wait_s = 30;
};

// What a plan's fault does (its JSON: "role", "job", "slowdown", "link").
enum class PlanFaultKind {
  kRole,      // clients die at at_s
  kJob,       // roles the job cannot lose (a parameter server, the in-graph client or a tower)
              // die at at_s, failing every client (RecoveryPolicy)
  kSlowdown,  // a device's speed scaled over [from_s, until_s)
  kLink,      // a link's bandwidth scaled, both directions (factor 0 cuts it)
};
const char* plan_fault_kind_name(PlanFaultKind kind);

// A fault the backend injects (from the scenario's "faults", resolved against the plan).
struct PlanFault {
  PlanFaultKind kind = PlanFaultKind::kRole;
  // A death (role or job): it strikes at at_s; otherwise a window [from_s, until_s).
  bool is_death() const { return kind == PlanFaultKind::kRole || kind == PlanFaultKind::kJob; }
  // When it strikes: at_s for a death, from_s for a window.
  double strikes_s() const { return is_death() ? at_s : from_s; }
  std::vector<int> clients;  // role: indices into Plan::clients (worker 0 takes the chief's sync
                             // op with it)
  std::vector<int> roles;    // job: indices into Plan::roles that die
  int device = -1;           // slowdown
  int link = -1;             // link: index into Platform::links
  double at_s = 0;           // role
  double from_s = 0;         // slowdown, link: [from_s, until_s)
  double until_s = 0;
  // slowdown, link: the scenario gave no `until` (until_s then lies past the end of any run);
  // traces record it and reports say "on" rather than a time.
  bool open_ended = false;
  double factor = 1;  // slowdown: speed multiplier in (0, 1]; link: bandwidth multiplier in [0, 1]
  std::string description;  // "machine w3 dies", "w3/gpu0 at 0.5x", ... (reports, trace)
};

// The update rule of the applies (training.optimizer, training.learning_rate), as TF's Apply* ops
// compute it: sgd w -= lr g; momentum a = m a + g, w -= lr a; adam with bias correction
// (tensorflow/core/kernels/training_ops.cc). Constants are TF's defaults: momentum 0.9 (the
// usual choice; TF requires it), beta1 0.9, beta2 0.999, epsilon 1e-8. The simulator charges the
// applies' FLOP only; the real backend computes them.
struct OptimizerRule {
  std::string name = "sgd";  // "sgd", "momentum", "adam"
  double learning_rate = 0.0625;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  int slots = 0;  // optimizer state per parameter (momentum 1, adam 2)
  bool is_default() const { return name == "sgd" && learning_rate == 0.0625; }
};

// All-reduce training (Plan::sync kAllReduceSync; training.allreduce in the scenario), as Horovod
// runs it (horovod/common/operations.cc, controller.cc): each worker (a rank, one per replica
// device) marks a gradient ready as backward produces it (kAllReduce); every `cycle_time_s` the
// coordinator (rank 0) takes the tensors every live rank has marked, packs them in readiness
// order into fusion buffers of at most `fusion_threshold_bytes` (a tensor larger than it goes
// alone), and the ranks all-reduce the buffers one after the other with `algorithm`. Values and
// their sources: core/hardware/collective_transport.cpp, docs/allreduce.md.
struct CollectiveSpec {
  std::string preset = "horovod";         // the settings' origin ("horovod", "horovod_0.x")
  std::string algorithm = "ring";         // "ring", "tree", "hierarchical"
  double fusion_threshold_bytes = 128e6;  // HOROVOD_FUSION_THRESHOLD (0: no fusion)
  double cycle_time_s = 1e-3;             // HOROVOD_CYCLE_TIME
  std::string transport = "nccl_socket";  // "nccl_socket", "nccl_rdma", "mpi", "gloo"
  // Latency each step of an algorithm pays before its bytes (s): between machines, and between
  // two ranks of one machine (NCCL's tuner, hwLat NET and PCI, Ring/Simple).
  double step_latency_s = 14e-6;
  double local_step_latency_s = 5.7e-6;
  // Fixed cost of one collective before its first step (s): NCCL's baseLat Ring/Simple.
  double launch_s = 8.4e-6;
  int streams_per_peer = 1;  // NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD (at most 64)
  // Horovod Elastic: a dead rank is dropped and the others go on with N - 1 after the
  // rendezvous (s); otherwise a death stalls the ring and fails the job (training.recovery).
  bool elastic = false;
  double rendezvous_s = 0;
  std::vector<int> ranks;  // rank -> index into Plan::clients (every client, rank order)
};

struct Plan {
  std::string scenario_name;
  std::string strategy;  // the strategy's registry name ("in_graph", "between_graph")
  // "async", "sync" (between_graph; see sync_replicas), kDistributedReplicated or kAllReduceSync
  // (see collective).
  std::string sync = "async";
  SyncReplicas sync_replicas;  // when sync == "sync"
  CollectiveSpec collective;   // when sync == kAllReduceSync
  // Forward-only steps (inference; training.forward_only): every client's step reads the
  // variables and runs input, forward and loss ops only; no graph has a backward, aggregate,
  // apply or global_step increment (global_step_op -1), so no update happens: metrics count the
  // clients' steps instead (docs/metrics.md). sync is "async". Written to JSON only when true.
  bool forward_only = false;
  Platform platform;
  std::vector<Role> roles;
  std::vector<int> ps_roles;        // role index of each PS shard
  std::vector<Variable> variables;  // creation order; variables[0] is global_step
  std::vector<ClientGraph> clients;
  // The per-sample GEMMs of each layer group's forward and of its backward pass (Op::gemms), in
  // the layers' order (a backward list runs them last layer first, dX then dW of each).
  std::vector<std::vector<PlanGemm>> gemm_lists;
  std::vector<PlanFault> faults;
  CheckpointPolicy checkpoints;
  RecoveryPolicy recovery;
  OptimizerRule optimizer;
  // training.objective: the SGD arithmetic a backend computes (not enabled: rates only).
  PlanObjective objective;
  int steps = 0;  // steady_state: at most this many (training.max_steps)
  int warmup_steps = 0;
  // training.steps "auto": stop once the throughput's 95% interval is within +-tolerance
  // (core/runtime/steady_state.h); 0 = run all the steps.
  double steady_tolerance = 0;
  int batch_per_replica = 0;  // the first replica's, and every replica's unless replica_batches
  // training.batch_per_replica as a list (per-replica batches, in training.replicas order: an
  // all-reduce rank's index); empty when every replica takes batch_per_replica.
  std::vector<int> replica_batches;
  int batch_of_replica(size_t k) const {
    return replica_batches.empty() ? batch_per_replica : replica_batches[k];
  }
  // Input pipeline prefetch depth (tf.data prefetch / queue runners): the next batch is prepared
  // while the current step runs, up to this many batches ahead.
  int input_prefetch_batches = 1;
  std::string granularity = "layer";   // "layer", or "<N> groups" (training.granularity)
  std::vector<DeviceMemory> memory;    // per device that holds anything
  std::vector<std::string> notes;      // caveats from compiling, shown with the report
  double compute_jitter_fraction = 0;  // see Jitter in scenario.h
  double step_jitter_fraction = 0;     // see Jitter in scenario.h
  uint64_t seed = 1;

  int role_index(const std::string& name) const;
  size_t op_count() const;
};

// The step graphs a backend runs, in this order: each client's (Plan::clients), then, when the
// plan is synchronous, the chief's sync op (SyncReplicas::chief_graph). Backends and traces
// number graphs by their index here. Pointers into `plan`.
std::vector<const ClientGraph*> step_graphs(const Plan& plan);

// What the death of roles `roles` (indices into Plan::roles: a task's, or a machine's) does to
// training, as the plan's faults have it (TF's semantics): the clients of the between-graph
// workers among them die (kind kRole, PlanFault::clients: the others train on, or wait for them
// when synchronous); a role the job cannot lose among them — a PS that holds a variable or runs a
// step's op, the in-graph client, a tower — fails the job (kind kJob, PlanFault::roles). A PS that
// no step uses changes nothing: it goes into `idle_ps` when given. A sync queue runner dies with
// its chief (not listed). In an all-reduce plan a worker's death fails the job unless the job is
// elastic (CollectiveSpec::elastic). at_s and description are the fault's.
PlanFault death_of_roles(const Plan& plan, const std::vector<int>& roles, double at_s,
                         std::string description, std::vector<int>* idle_ps = nullptr);
// Whether a real run computes the plan's objective (real/node/objective_values.h), in its worker,
// PS and all-reduce rank processes: every between-graph plan (async, sync, distributed_replicated)
// and all-reduce plan with one, and an in-graph plan whose towers each receive every variable
// (data parallelism; not a model split across processes). And whether it evaluates it too (the
// trace's "loss" and "accuracy" counters): the process that holds global_step (a parameter
// server's, the chief rank's) evaluates the values at the updates, with the other parameter
// servers' slices when there are several (real/node/objective_gather.h): whenever it computes.
bool objective_computed_by_real_run(const Plan& plan);
bool objective_evaluated_by_real_run(const Plan& plan);

// Whether the plan's clients are workers (between-graph), whose training has a sync mode; an
// in-graph client (RoleKind::kClient) is synchronous by construction.
bool clients_are_workers(const Plan& plan);
// Whether the simulator computes the plan's objective (Plan::objective; sim/sim_values.cpp): any
// plan with one (core/values/value_engine.h gives every strategy's ops their meaning).
bool objective_computed_by_simulator(const Plan& plan);

// The operating-system processes of the job: TF 1.x runs one server per task, and a tensor
// between two tasks goes through gRPC even on one machine (Transport::between_processes).
// A worker and its towers (and the chief's sync-queue runner, a thread of worker 0) are one
// process; each PS is its own (in-graph: but one on the client's
// machine is in the client's process); in-graph towers on the client's machine run in the
// client's process and those on another machine in that machine's worker task (one per
// machine). An op runs in its role's process: the ops on a PS's variables (reads, applies,
// accumulators, the sync op's takes and tokens) are the PS's role's, as TF runs an op in the task
// that owns its device.
struct Processes {
  std::vector<int> of_role;        // per Plan::roles: its process
  std::vector<std::string> names;  // per process: its first role's name, or "<machine> task"
  std::vector<int> machine;        // per process: index into Platform::machines

  // Whether a tensor from op `from` to op `to` (ops of one step graph) leaves its process.
  bool crosses(const Op& from, const Op& to) const {
    return of_role[size_t(from.role)] != of_role[size_t(to.role)];
  }
};
Processes plan_processes(const Plan& plan);

// A GPU whose capacity is known, against what the plan needs on it.
struct MemoryCheck {
  std::string device;
  DeviceMemory need;
  double capacity_bytes = 0;
  bool fits() const { return need.total_bytes() <= capacity_bytes; }
};

// One entry per device with a known capacity (GPUs whose "memory" the scenario gives) that the
// plan uses, in device order.
std::vector<MemoryCheck> memory_checks(const Plan& plan);

// When client graph `g` of `plan` is launched again at a job restart, after the launcher starts
// the chief (the first client): the first start's spacing after the chief's launch, at least 0
// (a worker launched before the chief comes up with it).
double relaunch_offset_s(const Plan& plan, const ClientGraph& g);

nlohmann::json plan_to_json(const Plan& plan);
// The text dump_json(plan_to_json(plan), indent) gives, as the value at `depth` of an enclosing
// document (0: the document itself), handed to `write` in pieces without ever holding the whole
// document: the client graphs (nearly all of a large plan) are built and serialised one at a time
// (a 256-machine plan's document took 4.6 GB). `indent` < 0: compact.
void write_plan_json(const Plan& plan, int indent,
                     const std::function<void(const std::string&)>& write, int depth = 0);
// Validates structure and indices (ops in topological order, send/recv pairs consistent).
// Throws InputError naming `file` and the JSON path.
Plan plan_from_json(const nlohmann::json& j, const std::string& file);

// 64-bit FNV-1a (core/base/hash.h) of the plan's canonical JSON (compact), as 16 hex digits: how
// traces and provenance name a plan. Streamed (write_plan_json).
std::string plan_hash(const Plan& plan);

// Checks plan invariants; throws InputError(file, path, ...) on the first violation.
void validate_plan(const Plan& plan, const std::string& file);

}  // namespace replisim::core
