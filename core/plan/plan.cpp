#include "core/plan/plan.h"

#include <algorithm>
#include <cstdio>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

constexpr OpKind kAllOpKinds[] = {
    OpKind::kInput,        OpKind::kSplit,     OpKind::kReadVariable,
    OpKind::kForward,      OpKind::kLoss,      OpKind::kBackward,
    OpKind::kAggregate,    OpKind::kApply,     OpKind::kGlobalStepIncrement,
    OpKind::kSend,         OpKind::kRecv,      OpKind::kAccumulate,
    OpKind::kTokenDequeue, OpKind::kLocalStep, OpKind::kTakeGradient,
    OpKind::kTokenEnqueue};
constexpr RoleKind kAllRoleKinds[] = {RoleKind::kClient, RoleKind::kWorker, RoleKind::kTower,
                                      RoleKind::kParameterServer, RoleKind::kSyncQueueRunner};

template <typename Enum, size_t N>
Enum enum_from_name(const JsonCursor& c, const Enum (&all)[N], const char* (*name_of)(Enum)) {
  const std::string text = c.as_string();
  std::vector<std::string> names;
  for (Enum e : all) {
    if (text == name_of(e)) return e;
    names.push_back(name_of(e));
  }
  c.fail("unknown value \"" + text + "\"; valid: " + join_names(names));
}

nlohmann::json op_to_json(const Op& op) {
  nlohmann::json j = {{"name", op.name},
                      {"kind", op_kind_name(op.kind)},
                      {"device", op.device},
                      {"role", op.role},
                      {"inputs", op.inputs}};
  if (op.compute_flop != 0) j["compute_flop"] = op.compute_flop;
  if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
    j["bytes"] = op.bytes;
    j["peer"] = op.peer;
  }
  if (op.overhead_s != 0) j["overhead_s"] = op.overhead_s;
  if (op.variable >= 0) j["variable"] = op.variable;
  if (op.jittered) j["jittered"] = true;
  return j;
}

Op op_from_json(const JsonCursor& c, const Plan& plan, int index) {
  c.check_keys({"name", "kind", "device", "role", "inputs", "compute_flop", "bytes", "peer",
                "overhead_s", "variable", "jittered"});
  Op op;
  op.name = c.at("name").as_string();
  op.kind = enum_from_name(c.at("kind"), kAllOpKinds, op_kind_name);
  op.device = int(c.at("device").as_int(0, int64_t(plan.platform.devices.size()) - 1));
  op.role = int(c.at("role").as_int(0, int64_t(plan.roles.size()) - 1));
  const JsonCursor inputs = c.at("inputs");
  for (size_t k = 0; k < inputs.size(); ++k) {
    op.inputs.push_back(int(inputs.at(k).as_int(0, index - 1)));
  }
  auto non_negative = [&](const char* key, double* out) {
    if (!c.has(key)) return;
    *out = c.at(key).as_number();
    if (*out < 0) c.at(key).fail("must not be negative");
  };
  non_negative("compute_flop", &op.compute_flop);
  non_negative("bytes", &op.bytes);
  non_negative("overhead_s", &op.overhead_s);
  if (c.has("peer")) op.peer = int(c.at("peer").as_int(0, 1 << 30));
  if (c.has("variable")) {
    op.variable = int(c.at("variable").as_int(0, int64_t(plan.variables.size()) - 1));
  }
  if (c.has("jittered")) op.jittered = c.at("jittered").as_bool();
  return op;
}

}  // namespace

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kInput:
      return "input";
    case OpKind::kSplit:
      return "split";
    case OpKind::kReadVariable:
      return "read_variable";
    case OpKind::kForward:
      return "forward";
    case OpKind::kLoss:
      return "loss";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kAggregate:
      return "aggregate";
    case OpKind::kApply:
      return "apply";
    case OpKind::kGlobalStepIncrement:
      return "global_step_increment";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kAccumulate:
      return "accumulate";
    case OpKind::kTokenDequeue:
      return "token_dequeue";
    case OpKind::kLocalStep:
      return "local_step";
    case OpKind::kTakeGradient:
      return "take_gradient";
    case OpKind::kTokenEnqueue:
      return "token_enqueue";
  }
  return "?";
}

const char* role_kind_name(RoleKind kind) {
  switch (kind) {
    case RoleKind::kClient:
      return "client";
    case RoleKind::kWorker:
      return "worker";
    case RoleKind::kTower:
      return "tower";
    case RoleKind::kParameterServer:
      return "ps";
    case RoleKind::kSyncQueueRunner:
      return "sync_queue_runner";
  }
  return "?";
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

namespace {

nlohmann::json client_to_json(const ClientGraph& c) {
  nlohmann::json cj = {{"role", c.role},
                       {"start_offset_s", c.start_offset_s},
                       {"samples_per_step", c.samples_per_step},
                       {"input_op", c.input_op},
                       {"global_step_op", c.global_step_op},
                       {"ops", nlohmann::json::array()}};
  if (c.data_steps > 0) cj["data_steps"] = c.data_steps;
  for (const Op& op : c.ops) cj["ops"].push_back(op_to_json(op));
  return cj;
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
  nlohmann::json j;
  j["format"] = "replisim-plan";
  j["format_version"] = 1;
  j["scenario"] = plan.scenario_name;
  j["strategy"] = plan.strategy;
  j["sync"] = plan.sync;
  j["steps"] = plan.steps;
  j["warmup_steps"] = plan.warmup_steps;
  j["batch_per_replica"] = plan.batch_per_replica;
  j["input_prefetch_batches"] = plan.input_prefetch_batches;
  j["granularity"] = plan.granularity;
  j["notes"] = plan.notes;
  j["memory"] = nlohmann::json::array();
  for (const DeviceMemory& m : plan.memory) {
    j["memory"].push_back({{"device", m.device},
                           {"weights_bytes", m.weights_bytes},
                           {"gradients_bytes", m.gradients_bytes},
                           {"optimizer_bytes", m.optimizer_bytes},
                           {"activations_bytes", m.activations_bytes}});
  }
  j["compute_jitter_fraction"] = plan.compute_jitter_fraction;
  j["step_jitter_fraction"] = plan.step_jitter_fraction;
  j["seed"] = plan.seed;
  j["platform"] = platform_to_json(plan.platform);
  j["roles"] = nlohmann::json::array();
  for (const Role& r : plan.roles) {
    j["roles"].push_back({{"name", r.name},
                          {"kind", role_kind_name(r.kind)},
                          {"device", r.device},
                          {"chief", r.chief}});
  }
  j["ps_roles"] = plan.ps_roles;
  j["variables"] = nlohmann::json::array();
  for (const Variable& v : plan.variables) {
    j["variables"].push_back({{"name", v.name}, {"bytes", v.bytes}, {"ps", v.ps}});
    if (v.layer >= 0) j["variables"].back()["layer"] = v.layer;
  }
  j["clients"] = nlohmann::json::array();
  for (const ClientGraph& c : plan.clients) j["clients"].push_back(client_to_json(c));
  if (!plan.faults.empty()) {
    j["faults"] = nlohmann::json::array();
    for (const PlanFault& f : plan.faults) {
      j["faults"].push_back({{"kind", f.kind},
                             {"clients", f.clients},
                             {"roles", f.roles},
                             {"device", f.device},
                             {"link", f.link},
                             {"at_s", f.at_s},
                             {"from_s", f.from_s},
                             {"until_s", f.until_s},
                             {"factor", f.factor},
                             {"description", f.description}});
      if (f.open_ended) j["faults"].back()["open_ended"] = true;
    }
  }
  const CheckpointPolicy& cp = plan.checkpoints;
  if (cp.every_s > 0 || cp.summary_every_steps > 0) {
    j["checkpoints"] = {
        {"every_s", cp.every_s},
        {"bytes", cp.bytes},
        {"disk_bandwidth_bytes_per_s", cp.disk_bandwidth_bytes_per_s},
        {"summary_every_steps", cp.summary_every_steps},
        {"summary_bytes", cp.summary_bytes},
        {"summary_disk_bandwidth_bytes_per_s", cp.summary_disk_bandwidth_bytes_per_s}};
  }
  if (plan.recovery.enabled) {
    j["recovery"] = {{"detect_timeout_s", plan.recovery.detect_timeout_s},
                     {"restart_delay_s", plan.recovery.restart_delay_s},
                     {"recovery_wait_s", plan.recovery.recovery_wait_s}};
  }
  if (plan.sync == "sync") {
    const SyncReplicas& sr = plan.sync_replicas;
    j["sync_replicas"] = {{"replicas_to_aggregate", sr.replicas_to_aggregate},
                          {"total_num_replicas", sr.total_num_replicas},
                          {"variant", sr.variant},
                          {"initial_tokens", sr.initial_tokens},
                          {"tokens_per_step", sr.tokens_per_step},
                          {"chief_graph", client_to_json(sr.chief_graph)}};
  }
  return j;
}

namespace {

DeviceMemory memory_from_json(const JsonCursor& m) {
  m.check_keys(
      {"device", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes"});
  DeviceMemory entry;
  entry.device = int(m.at("device").as_int(0, 1 << 30));
  entry.weights_bytes = m.at("weights_bytes").as_number_in(0, 1e18);
  entry.gradients_bytes = m.at("gradients_bytes").as_number_in(0, 1e18);
  entry.optimizer_bytes = m.at("optimizer_bytes").as_number_in(0, 1e18);
  entry.activations_bytes = m.at("activations_bytes").as_number_in(0, 1e18);
  return entry;
}

Role role_from_json(const JsonCursor& r, const Plan& plan) {
  r.check_keys({"name", "kind", "device", "chief"});
  Role role;
  role.name = r.at("name").as_string();
  role.kind = enum_from_name(r.at("kind"), kAllRoleKinds, role_kind_name);
  role.device = int(r.at("device").as_int(0, int64_t(plan.platform.devices.size()) - 1));
  role.chief = r.at("chief").as_bool();
  return role;
}

ClientGraph client_from_json(const JsonCursor& cc, const Plan& plan) {
  cc.check_keys({"role", "start_offset_s", "samples_per_step", "data_steps", "input_op",
                 "global_step_op", "ops"});
  ClientGraph graph;
  graph.role = int(cc.at("role").as_int(0, int64_t(plan.roles.size()) - 1));
  graph.start_offset_s = cc.at("start_offset_s").as_number();
  if (graph.start_offset_s < 0) cc.at("start_offset_s").fail("must not be negative");
  graph.samples_per_step = int(cc.at("samples_per_step").as_int(0, 1 << 30));
  if (cc.has("data_steps")) graph.data_steps = int(cc.at("data_steps").as_int(1, 1 << 30));
  const JsonCursor ops = cc.at("ops");
  for (size_t k = 0; k < ops.size(); ++k)
    graph.ops.push_back(op_from_json(ops.at(k), plan, int(k)));
  const int64_t last_op = int64_t(graph.ops.size()) - 1;
  graph.input_op = int(cc.at("input_op").as_int(-1, last_op));
  graph.global_step_op = int(cc.at("global_step_op").as_int(-1, last_op));
  return graph;
}

PlanFault fault_from_json(const JsonCursor& c, const Plan& plan) {
  c.check_keys({"kind", "clients", "roles", "device", "link", "at_s", "from_s", "until_s", "factor",
                "description", "open_ended"});
  PlanFault f;
  f.kind = c.at("kind").as_string();
  if (f.kind != "role" && f.kind != "job" && f.kind != "slowdown" && f.kind != "link") {
    c.at("kind").fail("expected role, job, slowdown or link");
  }
  const JsonCursor clients = c.at("clients");
  for (size_t i = 0; i < clients.size(); ++i) {
    f.clients.push_back(int(clients.at(i).as_int(0, int64_t(plan.clients.size()) - 1)));
  }
  if (c.has("roles")) {
    const JsonCursor roles = c.at("roles");
    for (size_t i = 0; i < roles.size(); ++i) {
      f.roles.push_back(int(roles.at(i).as_int(0, int64_t(plan.roles.size()) - 1)));
    }
  }
  if (f.kind == "job" && f.roles.empty())
    c.at("roles").fail("a job fault needs the roles that die");
  f.device = int(c.at("device").as_int(-1, int64_t(plan.platform.devices.size()) - 1));
  if (f.kind == "slowdown" && f.device < 0) c.at("device").fail("a slowdown needs its device");
  f.link = int(c.at("link").as_int(-1, int64_t(plan.platform.links.size()) - 1));
  if (f.kind == "link" && f.link < 0) c.at("link").fail("a link fault needs its link");
  f.at_s = c.at("at_s").as_number_in(0, 1e12);
  f.from_s = c.at("from_s").as_number_in(0, 1e12);
  f.until_s = c.at("until_s").as_number_in(f.from_s, 1e12);
  if (c.has("open_ended")) f.open_ended = c.at("open_ended").as_bool();
  f.factor = c.at("factor").as_number_in(f.kind == "link" ? 0 : 1e-6, 1);
  f.description = c.at("description").as_string();
  return f;
}

CheckpointPolicy checkpoints_from_json(const JsonCursor& c) {
  c.check_keys({"every_s", "bytes", "disk_bandwidth_bytes_per_s", "summary_every_steps",
                "summary_bytes", "summary_disk_bandwidth_bytes_per_s"});
  CheckpointPolicy cp;
  cp.every_s = c.at("every_s").as_number_in(0, 1e12);
  cp.bytes = c.at("bytes").as_number_in(0, 1e18);
  cp.disk_bandwidth_bytes_per_s = c.at("disk_bandwidth_bytes_per_s").as_number_in(0, 1e18);
  if (cp.every_s > 0 && cp.disk_bandwidth_bytes_per_s <= 0) {
    c.at("disk_bandwidth_bytes_per_s").fail("checkpoints need a positive disk bandwidth");
  }
  cp.summary_every_steps = int(c.at("summary_every_steps").as_int(0, 1 << 30));
  cp.summary_bytes = c.at("summary_bytes").as_number_in(0, 1e18);
  cp.summary_disk_bandwidth_bytes_per_s =
      c.at("summary_disk_bandwidth_bytes_per_s").as_number_in(0, 1e18);
  if (cp.summary_every_steps > 0 && cp.summary_disk_bandwidth_bytes_per_s <= 0) {
    c.at("summary_disk_bandwidth_bytes_per_s").fail("summaries need a positive disk bandwidth");
  }
  return cp;
}

RecoveryPolicy recovery_from_json(const JsonCursor& c) {
  c.check_keys({"detect_timeout_s", "restart_delay_s", "recovery_wait_s"});
  RecoveryPolicy r;
  r.enabled = true;
  r.detect_timeout_s = c.at("detect_timeout_s").as_number_in(0, 1e12);
  r.restart_delay_s = c.at("restart_delay_s").as_number_in(0, 1e12);
  r.recovery_wait_s = c.at("recovery_wait_s").as_number_in(1e-6, 1e12);
  return r;
}

SyncReplicas sync_replicas_from_json(const JsonCursor& c, const Plan& plan) {
  c.check_keys({"replicas_to_aggregate", "total_num_replicas", "variant", "initial_tokens",
                "tokens_per_step", "chief_graph"});
  SyncReplicas sr;
  sr.replicas_to_aggregate = int(c.at("replicas_to_aggregate").as_int(1, 1 << 30));
  sr.total_num_replicas = int(c.at("total_num_replicas").as_int(1, 1 << 30));
  sr.variant = c.at("variant").as_string();
  if (sr.variant != "tf" && sr.variant != "strict") {
    c.at("variant").fail("unknown sync variant \"" + sr.variant + "\"; valid: tf, strict");
  }
  sr.initial_tokens = int(c.at("initial_tokens").as_int(0, 1 << 30));
  sr.tokens_per_step = int(c.at("tokens_per_step").as_int(0, 1 << 30));
  sr.chief_graph = client_from_json(c.at("chief_graph"), plan);
  return sr;
}

double fraction_from_json(const JsonCursor& c) {
  const double f = c.as_number();
  if (f < 0 || f >= 1) c.fail("expected a fraction in [0, 1)");
  return f;
}

// The scalar settings of a plan (everything but the platform and the lists).
void settings_from_json(const JsonCursor& c, Plan& plan) {
  if (c.at("format").as_string() != "replisim-plan") c.at("format").fail("not a replisim plan");
  if (c.at("format_version").as_int(0, 1000) != 1) {
    c.at("format_version").fail("unsupported plan format version (this replisim reads 1)");
  }
  plan.scenario_name = c.at("scenario").as_string();
  plan.strategy = c.at("strategy").as_string();
  plan.sync = c.at("sync").as_string();
  if (plan.sync != "async" && plan.sync != "sync") {
    c.at("sync").fail("unknown sync mode \"" + plan.sync + "\"; valid: async, sync");
  }
  plan.steps = int(c.at("steps").as_int(1, 100000000));
  plan.warmup_steps = int(c.at("warmup_steps").as_int(0, plan.steps - 1));
  plan.batch_per_replica = int(c.at("batch_per_replica").as_int(1, 1 << 24));
  plan.input_prefetch_batches = int(c.at("input_prefetch_batches").as_int(0, 1024));
  plan.granularity = c.at("granularity").as_string();
  plan.compute_jitter_fraction = fraction_from_json(c.at("compute_jitter_fraction"));
  plan.step_jitter_fraction = fraction_from_json(c.at("step_jitter_fraction"));
  plan.seed = uint64_t(c.at("seed").as_int(0, INT64_MAX));
}

}  // namespace

Plan plan_from_json(const nlohmann::json& j, const std::string& file) {
  const JsonCursor c(j, file);
  c.check_keys({"format",
                "format_version",
                "scenario",
                "strategy",
                "sync",
                "steps",
                "warmup_steps",
                "batch_per_replica",
                "input_prefetch_batches",
                "granularity",
                "notes",
                "memory",
                "compute_jitter_fraction",
                "step_jitter_fraction",
                "seed",
                "platform",
                "roles",
                "ps_roles",
                "variables",
                "clients",
                "sync_replicas",
                "faults",
                "checkpoints",
                "recovery"});
  Plan plan;
  settings_from_json(c, plan);
  const JsonCursor notes = c.at("notes");
  for (size_t i = 0; i < notes.size(); ++i) plan.notes.push_back(notes.at(i).as_string());
  const JsonCursor memory = c.at("memory");
  for (size_t i = 0; i < memory.size(); ++i) plan.memory.push_back(memory_from_json(memory.at(i)));
  plan.platform = platform_from_json(c.at("platform").value(), file, "/platform");
  const JsonCursor roles = c.at("roles");
  for (size_t i = 0; i < roles.size(); ++i) plan.roles.push_back(role_from_json(roles.at(i), plan));
  const JsonCursor ps_roles = c.at("ps_roles");
  for (size_t i = 0; i < ps_roles.size(); ++i) {
    plan.ps_roles.push_back(int(ps_roles.at(i).as_int(0, int64_t(plan.roles.size()) - 1)));
  }
  const JsonCursor variables = c.at("variables");
  for (size_t i = 0; i < variables.size(); ++i) {
    const JsonCursor v = variables.at(i);
    v.check_keys({"name", "bytes", "ps", "layer"});
    Variable var{v.at("name").as_string(), v.at("bytes").as_number(),
                 int(v.at("ps").as_int(0, int64_t(plan.ps_roles.size()) - 1)),
                 v.has("layer") ? int(v.at("layer").as_int(0, 1 << 30)) : -1};
    if (var.bytes < 0) v.at("bytes").fail("must not be negative");
    plan.variables.push_back(var);
  }
  const JsonCursor clients = c.at("clients");
  for (size_t i = 0; i < clients.size(); ++i) {
    plan.clients.push_back(client_from_json(clients.at(i), plan));
  }
  if (c.has("faults")) {
    const JsonCursor faults = c.at("faults");
    for (size_t i = 0; i < faults.size(); ++i) {
      plan.faults.push_back(fault_from_json(faults.at(i), plan));
    }
  }
  if (c.has("checkpoints")) plan.checkpoints = checkpoints_from_json(c.at("checkpoints"));
  if (c.has("recovery")) plan.recovery = recovery_from_json(c.at("recovery"));
  if (plan.sync == "sync") {
    plan.sync_replicas = sync_replicas_from_json(c.at("sync_replicas"), plan);
  } else if (c.has("sync_replicas")) {
    c.at("sync_replicas").fail("only a plan with \"sync\": \"sync\" has sync_replicas");
  }
  validate_plan(plan, file);
  return plan;
}

namespace {

bool sync_only(OpKind kind) {
  return kind == OpKind::kAccumulate || kind == OpKind::kTokenDequeue ||
         kind == OpKind::kLocalStep || kind == OpKind::kTakeGradient ||
         kind == OpKind::kTokenEnqueue;
}

// One step graph: topological order, send/recv pairs, the named input and global_step ops.
// `chief_sync_op`: the chief's sync op of synchronous training (no input op).
void validate_graph(const Plan& plan, const ClientGraph& graph, const std::string& base,
                    const std::string& file, bool chief_sync_op) {
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
    if (peer.device == op.device) fail(k, "send and recv on the same device");
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
  const bool needs_increment = chief_sync_op || !sync;
  if (needs_increment ? graph.global_step_op < 0 || graph.ops[size_t(graph.global_step_op)].kind !=
                                                        OpKind::kGlobalStepIncrement
                      : graph.global_step_op != -1) {
    throw InputError(file, base + "/global_step_op",
                     needs_increment ? "does not name a global step increment"
                                     : "a synchronous worker does not increment global_step (-1)");
  }
}

}  // namespace

void validate_plan(const Plan& plan, const std::string& file) {
  if (plan.clients.empty()) throw InputError(file, "/clients", "a plan needs at least one client");
  if (plan.ps_roles.empty()) throw InputError(file, "/ps_roles", "a plan needs a parameter server");
  for (size_t i = 0; i < plan.memory.size(); ++i) {
    if (plan.memory[i].device < 0 ||
        size_t(plan.memory[i].device) >= plan.platform.devices.size()) {
      throw InputError(file, "/memory/" + std::to_string(i) + "/device", "unknown device");
    }
  }
  for (size_t ci = 0; ci < plan.clients.size(); ++ci) {
    validate_graph(plan, plan.clients[ci], "/clients/" + std::to_string(ci), file, false);
  }
  if (plan.sync != "sync") return;
  const SyncReplicas& sr = plan.sync_replicas;
  if (plan.strategy != "between_graph") {
    throw InputError(file, "/sync", "synchronous replicas are a between_graph mode");
  }
  if (sr.total_num_replicas != int(plan.clients.size())) {
    throw InputError(
        file, "/sync_replicas/total_num_replicas",
        "must equal the number of workers (" + std::to_string(plan.clients.size()) + ")");
  }
  if (sr.variant == "strict" && sr.replicas_to_aggregate > sr.total_num_replicas) {
    throw InputError(file, "/sync_replicas/replicas_to_aggregate",
                     "cannot exceed total_num_replicas with variant strict");
  }
  validate_graph(plan, sr.chief_graph, "/sync_replicas/chief_graph", file, true);
}

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis (0xcbf29ce484222325)
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV-1a 64-bit prime
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

std::string plan_hash(const Plan& plan) {
  return fnv1a_hex(dump_json(plan_to_json(plan)));
}

}  // namespace replisim::core
