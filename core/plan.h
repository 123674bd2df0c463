// The plan: what a strategy compiler produces and every backend consumes. Per client, one step
// graph of placed ops (send/recv already inserted at device boundaries), the platform, the
// roles, the variables and their parameter server shards. Plain data; round-trips JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/platform.h"

namespace replisim::core {

enum class OpKind {
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
};
const char* op_kind_name(OpKind kind);

enum class RoleKind { kClient, kWorker, kTower, kParameterServer };
const char* role_kind_name(RoleKind kind);

// A task of the distributed job. Trace events name their role ("client", "worker3", "ps0").
struct Role {
  std::string name;
  RoleKind kind = RoleKind::kWorker;
  int device = -1;     // main device: a worker's or tower's compute device, a client's or PS's CPU
  bool chief = false;  // between-graph worker 0 (initialisation, checkpoints, summaries)
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
  std::vector<int> inputs;
};

struct Variable {
  std::string name;
  double bytes = 0;
  int ps = -1;  // index into Plan::ps_roles
};

// One client and the step graph it runs `steps` times, one step after the other (a TF
// session.run returns only when every op of the step, on every device, is done).
struct ClientGraph {
  int role = -1;              // the client / worker role (owner of the step events)
  double start_offset_s = 0;  // seeded start-up stagger
  int samples_per_step = 0;   // samples whose gradients one step applies
  int input_op = -1;          // the kInput op (runs ahead of the step, see Plan)
  int global_step_op = -1;    // the kGlobalStepIncrement op; its completion is an update
  std::vector<Op> ops;
};

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

struct Plan {
  std::string scenario_name;
  std::string strategy;  // "in_graph" or "between_graph"
  std::string sync = "async";
  Platform platform;
  std::vector<Role> roles;
  std::vector<int> ps_roles;        // role index of each PS shard
  std::vector<Variable> variables;  // creation order; variables[0] is global_step
  std::vector<ClientGraph> clients;
  int steps = 0;
  int warmup_steps = 0;
  int batch_per_replica = 0;
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

nlohmann::json plan_to_json(const Plan& plan);
// Validates structure and indices (ops in topological order, send/recv pairs consistent).
// Throws InputError naming `file` and the JSON path.
Plan plan_from_json(const nlohmann::json& j, const std::string& file);

// 64-bit FNV-1a of the plan's canonical JSON, as 16 hex digits (provenance).
std::string plan_hash(const Plan& plan);
std::string fnv1a_hex(const std::string& bytes);

// Checks plan invariants; throws InputError(file, path, ...) on the first violation.
void validate_plan(const Plan& plan, const std::string& file);

}  // namespace replisim::core
