// The plan's JSON form (format "replisim-plan", version 1) and its hash: what `replisim plan
// --json` prints, what a backend may read from a file, and what every trace names its plan by.
#include <cstring>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/hardware/collective_transport.h"
#include "core/plan/plan.h"

namespace replisim::core {
namespace {

template <typename Enum>
Enum enum_from_name(const JsonCursor& c, const std::vector<Enum>& all,
                    const char* (*name_of)(Enum)) {
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
  // An all-reduce's bytes are its gradient's (what a plan file's reader reduces and moves).
  if (op.kind == OpKind::kAllReduce) j["bytes"] = op.bytes;
  if (op.overhead_s != 0) j["overhead_s"] = op.overhead_s;
  if (op.variable >= 0) j["variable"] = op.variable;
  if (op.jittered) j["jittered"] = true;
  if (op.gemms >= 0) j["gemms"] = op.gemms;
  return j;
}

Op op_from_json(const JsonCursor& c, const Plan& plan, int index) {
  c.check_keys({"name", "kind", "device", "role", "inputs", "compute_flop", "bytes", "peer",
                "overhead_s", "variable", "jittered", "gemms"});
  Op op;
  op.name = c.at("name").as_string();
  op.kind = enum_from_name(c.at("kind"), all_op_kinds(), op_kind_name);
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
  if (c.has("gemms")) {
    if (plan.gemm_lists.empty()) c.at("gemms").fail("the plan has no gemm_lists");
    op.gemms = int(c.at("gemms").as_int(0, int64_t(plan.gemm_lists.size()) - 1));
    if (op.kind != OpKind::kForward && op.kind != OpKind::kBackward) {
      c.at("gemms").fail("only a forward or backward op has GEMMs");
    }
  }
  return op;
}

}  // namespace

namespace {

nlohmann::json client_to_json(const ClientGraph& c) {
  nlohmann::json cj = {{"role", c.role},
                       {"start_offset_s", c.start_offset_s},
                       {"samples_per_step", c.samples_per_step},
                       {"input_op", c.input_op},
                       {"global_step_op", c.global_step_op},
                       {"ops", nlohmann::json::array()}};
  if (c.data_steps > 0) cj["data_steps"] = c.data_steps;
  // Absent when it is the start (no session barrier delayed it): older plans' hashes hold.
  if (c.launch_offset_s != c.start_offset_s) cj["launch_offset_s"] = c.launch_offset_s;
  for (const Op& op : c.ops) cj["ops"].push_back(op_to_json(op));
  return cj;
}

// The scalar settings, the notes and the memory table.
void settings_to_json(const Plan& plan, nlohmann::json& j) {
  j["format"] = "replisim-plan";
  j["format_version"] = 1;
  j["scenario"] = plan.scenario_name;
  j["strategy"] = plan.strategy;
  j["sync"] = plan.sync;
  if (plan.forward_only) j["forward_only"] = true;  // absent when false: older plans' hashes hold
  j["steps"] = plan.steps;
  j["warmup_steps"] = plan.warmup_steps;
  if (plan.steady_tolerance > 0) j["steady_tolerance"] = plan.steady_tolerance;
  j["batch_per_replica"] = plan.batch_per_replica;
  // Absent when every replica takes batch_per_replica: older plans' hashes hold.
  if (!plan.replica_batches.empty()) j["replica_batches"] = plan.replica_batches;
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
}

// The platform, roles, PS shards, variables and client graphs.
void job_to_json(const Plan& plan, nlohmann::json& j) {
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
  if (!plan.gemm_lists.empty()) {
    j["gemm_lists"] = nlohmann::json::array();
    for (const std::vector<PlanGemm>& list : plan.gemm_lists) {
      nlohmann::json& out = j["gemm_lists"].emplace_back(nlohmann::json::array());
      for (const PlanGemm& g : list) {
        out.push_back(
            {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch_dim", std::string(1, g.batch_dim)}});
      }
    }
  }
  j["clients"] = nlohmann::json::array();
  for (const ClientGraph& c : plan.clients) j["clients"].push_back(client_to_json(c));
}

// Stands in for the clients in the document write_plan_json serialises around them ("\u0001"
// cannot be in a plan's text otherwise: dump_json escapes control characters in strings).
constexpr const char* kClientsPlaceholder =
    "\x01"
    "clients"
    "\x01";
constexpr const char* kClientsPlaceholderText = "\"\\u0001clients\\u0001\"";

// `text` with `spaces` more spaces after each line break (dump_json's lines of a nested value).
std::string indented(const std::string& text, int spaces) {
  if (spaces <= 0) return text;
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(size_t(spaces), ' ');
  }
  return out;
}

// What only some plans have: faults, checkpoints, recovery, synchronous replicas.
void options_to_json(const Plan& plan, nlohmann::json& j) {
  if (!plan.faults.empty()) {
    j["faults"] = nlohmann::json::array();
    for (const PlanFault& f : plan.faults) {
      j["faults"].push_back({{"kind", plan_fault_kind_name(f.kind)},
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
    // Written only when not TF's default, so plans of the default read and hash as before.
    if (cp.max_to_keep != 5) j["checkpoints"]["max_to_keep"] = cp.max_to_keep;
  }
  // Written only when not sgd at 1/16, so plans of the default read as before.
  if (!plan.optimizer.is_default()) {
    const OptimizerRule& o = plan.optimizer;
    j["optimizer"] = {{"name", o.name},         {"learning_rate", o.learning_rate},
                      {"momentum", o.momentum}, {"beta1", o.beta1},
                      {"beta2", o.beta2},       {"epsilon", o.epsilon},
                      {"slots", o.slots}};
  }
  if (plan.recovery.enabled) {
    j["recovery"] = {{"detect_timeout_s", plan.recovery.detect_timeout_s},
                     {"restart_delay_s", plan.recovery.restart_delay_s},
                     {"recovery_wait_s", plan.recovery.recovery_wait_s}};
  }
  // Written only when enabled, so plans without an objective read and hash as before.
  if (plan.objective.enabled) j["objective"] = plan_objective_to_json(plan.objective);
  if (plan.sync == kAllReduceSync) {
    const CollectiveSpec& cs = plan.collective;
    j["collective"] = {{"preset", cs.preset},
                       {"algorithm", cs.algorithm},
                       {"fusion_threshold_bytes", cs.fusion_threshold_bytes},
                       {"cycle_time_s", cs.cycle_time_s},
                       {"transport", cs.transport},
                       {"step_latency_s", cs.step_latency_s},
                       {"local_step_latency_s", cs.local_step_latency_s},
                       {"launch_s", cs.launch_s},
                       {"streams_per_peer", cs.streams_per_peer},
                       {"elastic", cs.elastic},
                       {"rendezvous_s", cs.rendezvous_s},
                       {"ranks", cs.ranks}};
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
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
  nlohmann::json j;
  settings_to_json(plan, j);
  job_to_json(plan, j);
  options_to_json(plan, j);
  return j;
}

void write_plan_json(const Plan& plan, int indent,
                     const std::function<void(const std::string&)>& write, int depth) {
  nlohmann::json j;
  settings_to_json(plan, j);
  Plan empty_job;  // the job's parts but its clients, which are written one by one below
  empty_job.platform = plan.platform;
  empty_job.roles = plan.roles;
  empty_job.ps_roles = plan.ps_roles;
  empty_job.variables = plan.variables;
  empty_job.gemm_lists = plan.gemm_lists;
  job_to_json(empty_job, j);
  j["clients"] = kClientsPlaceholder;
  options_to_json(plan, j);
  const bool pretty = indent >= 0;
  const std::string text = indented(dump_json(j, indent), depth * indent);
  const size_t at = text.find(kClientsPlaceholderText);
  REPLISIM_ASSERT(at != std::string::npos, "the clients' place in the plan's JSON");
  write(text.substr(0, at));
  if (plan.clients.empty()) {
    write("[]");
  } else {
    // As nlohmann lays out an array at depth + 1 of elements at depth + 2.
    const int element_spaces = pretty ? (depth + 2) * indent : 0;
    write(pretty ? "[\n" : "[");
    for (size_t i = 0; i < plan.clients.size(); ++i) {
      std::string element =
          std::string(size_t(element_spaces), ' ') +
          indented(dump_json(client_to_json(plan.clients[i]), indent), element_spaces);
      const bool last = i + 1 == plan.clients.size();
      element += last ? (pretty ? "\n" + std::string(size_t((depth + 1) * indent), ' ') + "]" : "]")
                      : (pretty ? ",\n" : ",");
      write(element);
    }
  }
  write(text.substr(at + std::strlen(kClientsPlaceholderText)));
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
  role.kind = enum_from_name(r.at("kind"), all_role_kinds(), role_kind_name);
  role.device = int(r.at("device").as_int(0, int64_t(plan.platform.devices.size()) - 1));
  role.chief = r.at("chief").as_bool();
  return role;
}

ClientGraph client_from_json(const JsonCursor& cc, const Plan& plan) {
  cc.check_keys({"role", "start_offset_s", "launch_offset_s", "samples_per_step", "data_steps",
                 "input_op", "global_step_op", "ops"});
  ClientGraph graph;
  graph.role = int(cc.at("role").as_int(0, int64_t(plan.roles.size()) - 1));
  graph.start_offset_s = cc.at("start_offset_s").as_number();
  if (graph.start_offset_s < 0) cc.at("start_offset_s").fail("must not be negative");
  graph.launch_offset_s = graph.start_offset_s;
  if (cc.has("launch_offset_s")) {
    graph.launch_offset_s = cc.at("launch_offset_s").as_number_in(0, graph.start_offset_s);
  }
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
  const std::string kind = c.at("kind").as_string();
  bool known = false;
  for (PlanFaultKind k : {PlanFaultKind::kRole, PlanFaultKind::kJob, PlanFaultKind::kSlowdown,
                          PlanFaultKind::kLink}) {
    if (kind == plan_fault_kind_name(k)) f.kind = k, known = true;
  }
  if (!known) c.at("kind").fail("expected role, job, slowdown or link");
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
  if (f.kind == PlanFaultKind::kJob && f.roles.empty())
    c.at("roles").fail("a job fault needs the roles that die");
  f.device = int(c.at("device").as_int(-1, int64_t(plan.platform.devices.size()) - 1));
  if (f.kind == PlanFaultKind::kSlowdown && f.device < 0)
    c.at("device").fail("a slowdown needs its device");
  f.link = int(c.at("link").as_int(-1, int64_t(plan.platform.links.size()) - 1));
  if (f.kind == PlanFaultKind::kLink && f.link < 0)
    c.at("link").fail("a link fault needs its link");
  f.at_s = c.at("at_s").as_number_in(0, 1e12);
  f.from_s = c.at("from_s").as_number_in(0, 1e12);
  f.until_s = c.at("until_s").as_number_in(f.from_s, 1e12);
  if (c.has("open_ended")) f.open_ended = c.at("open_ended").as_bool();
  f.factor = c.at("factor").as_number_in(f.kind == PlanFaultKind::kLink ? 0 : 1e-6, 1);
  f.description = c.at("description").as_string();
  return f;
}

CheckpointPolicy checkpoints_from_json(const JsonCursor& c) {
  c.check_keys({"every_s", "bytes", "disk_bandwidth_bytes_per_s", "summary_every_steps",
                "summary_bytes", "summary_disk_bandwidth_bytes_per_s", "max_to_keep"});
  CheckpointPolicy cp;
  cp.every_s = c.at("every_s").as_number_in(0, 1e12);
  cp.bytes = c.at("bytes").as_number_in(0, 1e18);
  cp.disk_bandwidth_bytes_per_s = c.at("disk_bandwidth_bytes_per_s").as_number_in(0, 1e18);
  if (cp.every_s > 0 && cp.disk_bandwidth_bytes_per_s <= 0) {
    c.at("disk_bandwidth_bytes_per_s").fail("checkpoints need a positive disk bandwidth");
  }
  if (c.has("max_to_keep")) cp.max_to_keep = int(c.at("max_to_keep").as_int(0, 1 << 20));
  cp.summary_every_steps = int(c.at("summary_every_steps").as_int(0, 1 << 30));
  cp.summary_bytes = c.at("summary_bytes").as_number_in(0, 1e18);
  cp.summary_disk_bandwidth_bytes_per_s =
      c.at("summary_disk_bandwidth_bytes_per_s").as_number_in(0, 1e18);
  if (cp.summary_every_steps > 0 && cp.summary_disk_bandwidth_bytes_per_s <= 0) {
    c.at("summary_disk_bandwidth_bytes_per_s").fail("summaries need a positive disk bandwidth");
  }
  return cp;
}

OptimizerRule optimizer_from_json(const JsonCursor& c) {
  c.check_keys({"name", "learning_rate", "momentum", "beta1", "beta2", "epsilon", "slots"});
  OptimizerRule o;
  o.name = c.at("name").as_string();
  if (o.name != "sgd" && o.name != "momentum" && o.name != "adam") {
    c.at("name").fail("unknown optimizer \"" + o.name + "\"; valid: sgd, momentum, adam");
  }
  o.learning_rate = c.at("learning_rate").as_number_in(1e-12, 1e6);
  o.momentum = c.at("momentum").as_number_in(0, 1);
  o.beta1 = c.at("beta1").as_number_in(0, 1);
  o.beta2 = c.at("beta2").as_number_in(0, 1);
  o.epsilon = c.at("epsilon").as_number_in(0, 1);
  o.slots = int(c.at("slots").as_int(0, 2));
  return o;
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

CollectiveSpec collective_from_json(const JsonCursor& c, const Plan& plan) {
  c.check_keys({"preset", "algorithm", "fusion_threshold_bytes", "cycle_time_s", "transport",
                "step_latency_s", "local_step_latency_s", "launch_s", "streams_per_peer", "elastic",
                "rendezvous_s", "ranks"});
  CollectiveSpec cs;
  cs.preset = c.at("preset").as_string();
  cs.algorithm = c.at("algorithm").as_string();
  if (!is_collective_algorithm(cs.algorithm)) {
    c.at("algorithm")
        .fail("unknown all-reduce algorithm \"" + cs.algorithm.substr(0, 100) +
              "\"; valid: ring, tree, hierarchical");
  }
  cs.fusion_threshold_bytes = c.at("fusion_threshold_bytes").as_number_in(0, 1e15);
  cs.cycle_time_s = c.at("cycle_time_s").as_number_in(0, 3600);
  cs.transport = c.at("transport").as_string();
  cs.step_latency_s = c.at("step_latency_s").as_number_in(0, 60);
  cs.local_step_latency_s = c.at("local_step_latency_s").as_number_in(0, 60);
  cs.launch_s = c.at("launch_s").as_number_in(0, 60);
  cs.streams_per_peer = int(c.at("streams_per_peer").as_int(1, 64));
  cs.elastic = c.at("elastic").as_bool();
  cs.rendezvous_s = c.at("rendezvous_s").as_number_in(0, 1e6);
  const JsonCursor ranks = c.at("ranks");
  std::vector<bool> seen(plan.clients.size(), false);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int client = int(ranks.at(i).as_int(0, int64_t(plan.clients.size()) - 1));
    if (seen[size_t(client)]) ranks.at(i).fail("names a client twice");
    seen[size_t(client)] = true;
    cs.ranks.push_back(client);
  }
  if (cs.ranks.size() != plan.clients.size()) {
    ranks.fail("expected every client once (" + std::to_string(plan.clients.size()) + ")");
  }
  if (!plan.replica_batches.empty() && plan.replica_batches.size() != cs.ranks.size()) {
    ranks.fail("expected as many ranks as replica_batches has entries (" +
               std::to_string(plan.replica_batches.size()) + ")");
  }
  return cs;
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
  if (!is_strategy_name_spelling(plan.strategy)) {
    c.at("strategy")
        .fail("\"" + plan.strategy.substr(0, 100) +
              "\" is no strategy's name (lowercase letters, digits and _, at most "
              "64, such as in_graph or between_graph)");
  }
  plan.sync = c.at("sync").as_string();
  if (plan.sync != "async" && plan.sync != "sync" && plan.sync != kDistributedReplicated &&
      plan.sync != kAllReduceSync) {
    c.at("sync").fail("unknown sync mode \"" + plan.sync.substr(0, 100) +
                      "\"; valid: async, sync, distributed_replicated, allreduce");
  }
  if (c.has("forward_only")) plan.forward_only = c.at("forward_only").as_bool();
  plan.steps = int(c.at("steps").as_int(1, 100000000));
  plan.warmup_steps = int(c.at("warmup_steps").as_int(0, plan.steps - 1));
  if (c.has("steady_tolerance")) {
    plan.steady_tolerance = c.at("steady_tolerance").as_number_in(1e-9, 0.999999);
  }
  plan.batch_per_replica = int(c.at("batch_per_replica").as_int(1, 1 << 24));
  if (c.has("replica_batches")) {
    const JsonCursor batches = c.at("replica_batches");
    for (size_t i = 0; i < batches.size(); ++i) {
      plan.replica_batches.push_back(int(batches.at(i).as_int(1, 1 << 24)));
    }
    if (plan.replica_batches.empty() || plan.replica_batches.front() != plan.batch_per_replica) {
      batches.fail("expected the first replica's batch to be batch_per_replica (" +
                   std::to_string(plan.batch_per_replica) + ")");
    }
  }
  plan.input_prefetch_batches = int(c.at("input_prefetch_batches").as_int(0, 1024));
  plan.granularity = c.at("granularity").as_string();
  plan.compute_jitter_fraction = fraction_from_json(c.at("compute_jitter_fraction"));
  plan.step_jitter_fraction = fraction_from_json(c.at("step_jitter_fraction"));
  plan.seed = uint64_t(c.at("seed").as_int(0, INT64_MAX));
}

// One PlanGemm: dimensions from 1 to 2^31 (a GEMM's dimensions are BLAS ints).
PlanGemm gemm_from_json(const JsonCursor& c) {
  c.check_keys({"m", "n", "k", "batch_dim"});
  PlanGemm g;
  g.m = c.at("m").as_int(1, INT32_MAX);
  g.n = c.at("n").as_int(1, INT32_MAX);
  g.k = c.at("k").as_int(1, INT32_MAX);
  const std::string dim = c.at("batch_dim").as_string();
  if (dim != "m" && dim != "k") c.at("batch_dim").fail("must be \"m\" or \"k\"");
  g.batch_dim = dim[0];
  return g;
}

// The roles, PS shards and variables (after the platform, which they index).
void job_from_json(const JsonCursor& c, Plan& plan) {
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
                 int(v.at("ps").as_int(plan.sync == kAllReduceSync ? -1 : 0,
                                       int64_t(plan.ps_roles.size()) - 1)),
                 v.has("layer") ? int(v.at("layer").as_int(0, 1 << 30)) : -1};
    if (var.bytes < 0) v.at("bytes").fail("must not be negative");
    plan.variables.push_back(var);
  }
  if (c.has("gemm_lists")) {
    const JsonCursor lists = c.at("gemm_lists");
    for (size_t i = 0; i < lists.size(); ++i) {
      if (lists.at(i).size() == 0) lists.at(i).fail("a layer group has at least one GEMM");
      std::vector<PlanGemm>& list = plan.gemm_lists.emplace_back();
      for (size_t k = 0; k < lists.at(i).size(); ++k)
        list.push_back(gemm_from_json(lists.at(i).at(k)));
    }
  }
}

// Faults, checkpoints, recovery and synchronous replicas (after the clients, which they index).
void options_from_json(const JsonCursor& c, Plan& plan) {
  if (c.has("faults")) {
    const JsonCursor faults = c.at("faults");
    for (size_t i = 0; i < faults.size(); ++i) {
      plan.faults.push_back(fault_from_json(faults.at(i), plan));
    }
  }
  if (c.has("checkpoints")) plan.checkpoints = checkpoints_from_json(c.at("checkpoints"));
  if (c.has("recovery")) plan.recovery = recovery_from_json(c.at("recovery"));
  if (c.has("optimizer")) plan.optimizer = optimizer_from_json(c.at("optimizer"));
  if (c.has("objective")) plan.objective = plan_objective_from_json(c.at("objective"));
  if (plan.sync == "sync") {
    plan.sync_replicas = sync_replicas_from_json(c.at("sync_replicas"), plan);
  } else if (c.has("sync_replicas")) {
    c.at("sync_replicas").fail("only a plan with \"sync\": \"sync\" has sync_replicas");
  }
  if (plan.sync == kAllReduceSync) {
    plan.collective = collective_from_json(c.at("collective"), plan);
  } else if (c.has("collective")) {
    c.at("collective").fail("only a plan with \"sync\": \"allreduce\" has collective");
  }
}

}  // namespace

Plan plan_from_json(const nlohmann::json& j, const std::string& file) {
  const JsonCursor c(j, file);
  c.check_keys({"format",
                "format_version",
                "scenario",
                "strategy",
                "sync",
                "forward_only",
                "steps",
                "warmup_steps",
                "steady_tolerance",
                "batch_per_replica",
                "replica_batches",
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
                "gemm_lists",
                "clients",
                "sync_replicas",
                "collective",
                "faults",
                "checkpoints",
                "recovery",
                "optimizer",
                "objective"});
  Plan plan;
  settings_from_json(c, plan);
  const JsonCursor notes = c.at("notes");
  for (size_t i = 0; i < notes.size(); ++i) plan.notes.push_back(notes.at(i).as_string());
  const JsonCursor memory = c.at("memory");
  for (size_t i = 0; i < memory.size(); ++i) plan.memory.push_back(memory_from_json(memory.at(i)));
  plan.platform = platform_from_json(c.at("platform").value(), file, "/platform");
  job_from_json(c, plan);
  const JsonCursor clients = c.at("clients");
  for (size_t i = 0; i < clients.size(); ++i) {
    plan.clients.push_back(client_from_json(clients.at(i), plan));
  }
  // Outside all-reduce (whose ranks options_from_json checks) the per-replica batches are the
  // clients' towers': each client's step takes its towers' batches, at least one tower each.
  if (!plan.replica_batches.empty() && plan.sync != kAllReduceSync) {
    const JsonCursor batches = c.at("replica_batches");
    int64_t listed = 0;
    int64_t taken = 0;
    for (int b : plan.replica_batches) listed += b;
    for (const ClientGraph& g : plan.clients) taken += g.samples_per_step;
    if (plan.replica_batches.size() < plan.clients.size() || listed != taken) {
      batches.fail(
          "expected at least one entry per client (" + std::to_string(plan.clients.size()) +
          ") summing to the clients' samples_per_step (" + std::to_string(taken) + "), not " +
          std::to_string(plan.replica_batches.size()) + " summing to " + std::to_string(listed));
    }
  }
  options_from_json(c, plan);
  validate_plan(plan, file);
  return plan;
}

std::string plan_hash(const Plan& plan) {
  uint64_t hash = kFnv1aBasis;
  write_plan_json(plan, -1, [&hash](const std::string& piece) {
    hash = fnv1a(hash, piece.data(), piece.size());
  });
  return hex64(hash);
}

}  // namespace replisim::core
