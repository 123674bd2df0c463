#include "core/trace/trace_meta.h"

#include <algorithm>
#include <climits>
#include <set>

#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

// Bounds a trace's times and sizes are held to (as plans hold theirs): far beyond any run, yet
// small enough that a report prints them as numbers a person can read.
constexpr double kMaxTimeS = 1e12;
constexpr double kMaxBytes = 1e18;
constexpr int64_t kMaxSteps = 100000000;

nlohmann::json roles_to_json(const std::vector<TraceRole>& roles) {
  nlohmann::json out = nlohmann::json::array();
  for (const TraceRole& r : roles) {
    out.push_back({{"name", r.name},
                   {"kind", role_kind_name(r.kind)},
                   {"device", r.device},
                   {"chief", r.chief}});
  }
  return out;
}

nlohmann::json clients_to_json(const std::vector<TraceClient>& clients) {
  nlohmann::json out = nlohmann::json::array();
  for (const TraceClient& c : clients) {
    out.push_back({{"role", c.role},
                   {"samples_per_step", c.samples_per_step},
                   {"start_offset_s", c.start_offset_s}});
    if (c.data_steps > 0) out.back()["data_steps"] = c.data_steps;
  }
  return out;
}

nlohmann::json memory_to_json(const std::vector<TraceMemory>& memory) {
  nlohmann::json out = nlohmann::json::array();
  for (const TraceMemory& m : memory) {
    out.push_back({{"device", m.device},
                   {"needed_bytes", m.needed_bytes},
                   {"capacity_bytes", m.capacity_bytes},
                   {"weights_bytes", m.weights_bytes},
                   {"gradients_bytes", m.gradients_bytes},
                   {"optimizer_bytes", m.optimizer_bytes},
                   {"activations_bytes", m.activations_bytes}});
  }
  return out;
}

// Each graph as {"role", "ops": [[name, kind, role, device, variable, [inputs...]], ...]}: arrays,
// not objects, since a large plan has tens of thousands of ops.
nlohmann::json graphs_to_json(const std::vector<TraceGraph>& graphs) {
  nlohmann::json out = nlohmann::json::array();
  for (const TraceGraph& g : graphs) {
    nlohmann::json ops = nlohmann::json::array();
    for (const TraceOp& op : g.ops) {
      ops.push_back({op.name, op_kind_name(op.kind), op.role, op.device, op.variable, op.inputs});
    }
    out.push_back({{"role", g.role}, {"ops", std::move(ops)}});
  }
  return out;
}

std::vector<TraceGraph> graphs_from_json(const JsonCursor& c, int roles, int devices,
                                         int variables) {
  std::vector<TraceGraph> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor g = c.at(i);
    g.check_keys({"role", "ops"});
    TraceGraph graph;
    graph.role = g.at("role").as_string();
    const JsonCursor ops = g.at("ops");
    for (size_t k = 0; k < ops.size(); ++k) {
      const JsonCursor o = ops.at(k);
      if (o.size() != 6) o.fail("expected [name, kind, role, device, variable, inputs]");
      TraceOp op;
      op.name = o.at(0).as_string();
      if (!op_kind_from_name(o.at(1).as_string(), &op.kind)) o.at(1).fail("unknown op kind");
      op.role = int(o.at(2).as_int(0, roles - 1));
      op.device = int(o.at(3).as_int(0, devices - 1));
      op.variable = int(o.at(4).as_int(-1, variables - 1));
      const JsonCursor inputs = o.at(5);
      for (size_t n = 0; n < inputs.size(); ++n) {
        // Topological order: an input is an earlier op.
        op.inputs.push_back(int(inputs.at(n).as_int(0, int64_t(k) - 1)));
      }
      graph.ops.push_back(std::move(op));
    }
    out.push_back(std::move(graph));
  }
  return out;
}

// A string that must be one of `valid`.
std::string one_of(const JsonCursor& c, const std::vector<std::string>& valid) {
  const std::string text = c.as_string();
  if (std::find(valid.begin(), valid.end(), text) == valid.end()) {
    c.fail("unknown value \"" + text + "\"; valid: " + join_names(valid));
  }
  return text;
}

// A strategy's name as the registry spells them (core/strategy/strategy.h: "in_graph",
// "between_graph", ...): a trace names whichever strategy compiled its plan, one this replisim
// knows or not, so any such name reads.
std::string strategy_name(const JsonCursor& c) {
  const std::string text = c.as_string();
  if (!is_strategy_name_spelling(text)) {
    c.fail("\"" + text.substr(0, 100) +
           "\" is no strategy's name (lowercase letters, digits and _, at most 64, such as "
           "in_graph or between_graph)");
  }
  return text;
}

std::vector<std::string> strings_from_json(const JsonCursor& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(c.at(i).as_string());
  return out;
}

std::vector<TraceRole> roles_from_json(const JsonCursor& c) {
  std::vector<TraceRole> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor r = c.at(i);
    TraceRole role;
    role.name = r.at("name").as_string();
    const std::string kind = r.at("kind").as_string();
    if (!role_kind_from_name(kind, &role.kind)) {
      r.at("kind").fail("unknown role kind \"" + kind + "\"");
    }
    if (r.has("device")) role.device = r.at("device").as_string();
    if (r.has("chief")) role.chief = r.at("chief").as_bool();
    out.push_back(std::move(role));
  }
  return out;
}

std::vector<TraceClient> clients_from_json(const JsonCursor& c) {
  std::vector<TraceClient> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor k = c.at(i);
    TraceClient client;
    client.role = k.at("role").as_string();
    client.samples_per_step = int(k.at("samples_per_step").as_int(0, 1 << 30));
    if (k.has("start_offset_s")) {
      client.start_offset_s = k.at("start_offset_s").as_number_in(0, kMaxTimeS);
    }
    if (k.has("data_steps")) client.data_steps = int(k.at("data_steps").as_int(1, 1 << 30));
    out.push_back(std::move(client));
  }
  return out;
}

std::vector<TraceMemory> trace_memory_from_json(const JsonCursor& c) {
  std::vector<TraceMemory> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor m = c.at(i);
    TraceMemory entry;
    entry.device = m.at("device").as_string();
    entry.needed_bytes = m.at("needed_bytes").as_number_in(0, kMaxBytes);
    entry.capacity_bytes = m.at("capacity_bytes").as_number_in(1, kMaxBytes);
    auto optional = [&m](const char* key, double* out) {
      if (m.has(key)) *out = m.at(key).as_number_in(0, kMaxBytes);
    };
    optional("weights_bytes", &entry.weights_bytes);
    optional("gradients_bytes", &entry.gradients_bytes);
    optional("optimizer_bytes", &entry.optimizer_bytes);
    optional("activations_bytes", &entry.activations_bytes);
    out.push_back(std::move(entry));
  }
  return out;
}

// Steps, warm-up, batch, seed, plan hash, granularity and the sync settings.
void settings_from_json(const JsonCursor& c, TraceMeta& m) {
  m.steps = int(c.at("steps").as_int(1, kMaxSteps));
  m.warmup_steps = int(c.at("warmup_steps").as_int(0, m.steps - 1));
  if (c.has("batch_per_replica")) {
    m.batch_per_replica = int(c.at("batch_per_replica").as_int(0, 1 << 30));
  }
  if (c.has("seed")) m.seed = uint64_t(c.at("seed").as_int(0, INT64_MAX));
  if (c.has("plan_hash")) m.plan_hash = c.at("plan_hash").as_string();
  if (c.has("granularity")) m.granularity = c.at("granularity").as_string();
  if (c.has("forward_only")) m.forward_only = c.at("forward_only").as_bool();
  if (c.has("sync"))
    m.sync = one_of(c.at("sync"), {"async", "sync", "distributed_replicated", "allreduce"});
  if (m.synchronous()) {
    const JsonCursor s = c.at("sync_replicas");
    m.sync_replicas.replicas_to_aggregate = int(s.at("replicas_to_aggregate").as_int(1, 1 << 30));
    m.sync_replicas.total_num_replicas = int(s.at("total_num_replicas").as_int(1, 1 << 30));
    m.sync_replicas.variant = one_of(s.at("variant"), {"tf", "strict"});
    if (m.sync_replicas.variant == "strict" &&
        m.sync_replicas.replicas_to_aggregate > m.sync_replicas.total_num_replicas) {
      s.at("replicas_to_aggregate").fail("cannot exceed total_num_replicas with variant strict");
    }
  }
}

nlohmann::json restart_to_json(const RestartRecord& k) {
  nlohmann::json j = {{"cause", k.cause},
                      {"fault_s", k.fault_s},
                      {"detected_s", k.detected_s},
                      {"restart_s", k.restart_s},
                      {"resumed_s", k.resumed_s},
                      {"workers_resumed_s", k.workers_resumed_s},
                      {"restore_s", k.restore_s},
                      {"checkpoint_start_s", k.checkpoint_start_s},
                      {"checkpoint_global_step", k.checkpoint_global_step},
                      {"lost_work_s", k.lost_work_s},
                      {"global_step_at_failure", k.global_step_at_failure},
                      {"lost_global_steps", k.lost_global_steps}};
  if (k.interrupted_s >= 0) j["interrupted_s"] = k.interrupted_s;
  if (!k.workers_lost.empty()) j["workers_lost"] = k.workers_lost;
  return j;
}

RestartRecord restart_from_json(const JsonCursor& k) {
  RestartRecord r;
  r.cause = k.at("cause").as_string();
  r.fault_s = k.at("fault_s").as_number_in(0, kMaxTimeS);
  r.detected_s = k.at("detected_s").as_number_in(r.fault_s, kMaxTimeS);
  r.resumed_s = k.at("resumed_s").as_number_in(r.detected_s, kMaxTimeS);
  r.workers_resumed_s = k.at("workers_resumed_s").as_number_in(r.detected_s, kMaxTimeS);
  if (k.has("restart_s")) r.restart_s = k.at("restart_s").as_number_in(r.detected_s, kMaxTimeS);
  if (k.has("restore_s")) r.restore_s = k.at("restore_s").as_number_in(0, kMaxTimeS);
  if (k.has("workers_lost")) r.workers_lost = strings_from_json(k.at("workers_lost"));
  if (k.has("interrupted_s")) {
    r.interrupted_s = k.at("interrupted_s").as_number_in(r.detected_s, r.workers_resumed_s);
  }
  r.checkpoint_start_s = k.at("checkpoint_start_s").as_number_in(0, r.fault_s);
  r.lost_work_s = k.at("lost_work_s").as_number_in(0, r.fault_s);
  r.checkpoint_global_step = k.at("checkpoint_global_step").as_int(0, INT64_MAX);
  r.global_step_at_failure =
      k.at("global_step_at_failure").as_int(r.checkpoint_global_step, INT64_MAX);
  r.lost_global_steps = r.global_step_at_failure - r.checkpoint_global_step;
  return r;
}

// Roles have distinct names, and every client and PS shard names one of them, once.
void check_names(const JsonCursor& c, const TraceMeta& m) {
  std::set<std::string> roles, clients, ps;
  for (size_t i = 0; i < m.roles.size(); ++i) {
    if (!roles.insert(m.roles[i].name).second) c.at("roles").at(i).at("name").fail("repeated role");
  }
  for (size_t i = 0; i < m.clients.size(); ++i) {
    const JsonCursor role = c.at("clients").at(i).at("role");
    if (roles.count(m.clients[i].role) == 0) role.fail("names no role of the trace");
    if (!clients.insert(m.clients[i].role).second) role.fail("a second client of this role");
  }
  for (size_t i = 0; i < m.ps.size(); ++i) {
    if (roles.count(m.ps[i]) == 0) c.at("ps").at(i).fail("names no role of the trace");
    if (!ps.insert(m.ps[i]).second) c.at("ps").at(i).fail("a second PS shard of this role");
  }
}

}  // namespace

const TraceRole* TraceMeta::find_role(const std::string& name) const {
  for (const TraceRole& r : roles) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const TraceGraph* TraceMeta::find_graph(const std::string& role) const {
  for (const TraceGraph& g : graphs) {
    if (g.role == role) return &g;
  }
  return nullptr;
}

nlohmann::json trace_meta_to_json(const TraceMeta& m) {
  nlohmann::json j;
  j["format"] = "replisim-trace-meta";
  j["scenario"] = m.scenario;
  j["strategy"] = m.strategy;
  j["sync"] = m.sync;
  if (m.synchronous()) {
    j["sync_replicas"] = {{"replicas_to_aggregate", m.sync_replicas.replicas_to_aggregate},
                          {"total_num_replicas", m.sync_replicas.total_num_replicas},
                          {"variant", m.sync_replicas.variant}};
  }
  if (m.forward_only) j["forward_only"] = true;
  j["steps"] = m.steps;
  j["warmup_steps"] = m.warmup_steps;
  j["batch_per_replica"] = m.batch_per_replica;
  j["seed"] = m.seed;
  j["plan_hash"] = m.plan_hash;
  j["platform"] = platform_to_json(m.platform);
  j["roles"] = roles_to_json(m.roles);
  j["clients"] = clients_to_json(m.clients);
  j["ps"] = m.ps;
  j["granularity"] = m.granularity;
  j["notes"] = m.notes;
  j["memory"] = memory_to_json(m.memory);
  j["variables"] = nlohmann::json::array();
  for (const TraceVariable& v : m.variables) {
    j["variables"].push_back({{"name", v.name}, {"bytes", v.bytes}, {"ps", v.ps}});
  }
  if (!m.graphs.empty()) j["graphs"] = graphs_to_json(m.graphs);
  if (!m.objective_target.empty()) {
    j["objective_target"] = {{"kind", m.objective_target}, {"value", m.objective_target_value}};
  }
  j["backend"] = m.backend;
  j["provenance"] = m.provenance;
  return j;
}

TraceMeta trace_meta_from_json(const nlohmann::json& json, const std::string& source,
                               const std::string& path) {
  const JsonCursor c(json, source, path);
  c.expect_object();
  if (c.at("format").as_string() != "replisim-trace-meta") {
    c.at("format").fail("expected \"replisim-trace-meta\"");
  }
  TraceMeta m;
  m.scenario = c.at("scenario").as_string();
  m.strategy = strategy_name(c.at("strategy"));
  settings_from_json(c, m);
  m.platform = platform_from_json(c.at("platform").value(), source, path + "/platform");
  m.roles = roles_from_json(c.at("roles"));
  m.clients = clients_from_json(c.at("clients"));
  m.ps = strings_from_json(c.at("ps"));
  check_names(c, m);
  if (c.has("notes")) m.notes = strings_from_json(c.at("notes"));
  if (c.has("objective_target")) {
    const JsonCursor t = c.at("objective_target");
    t.check_keys({"kind", "value"});
    m.objective_target = one_of(t.at("kind"), {"accuracy", "loss"});
    m.objective_target_value = t.at("value").as_number_in(0, 1e6);
  }
  if (c.has("memory")) m.memory = trace_memory_from_json(c.at("memory"));
  const JsonCursor variables = c.at("variables");
  for (size_t i = 0; i < variables.size(); ++i) {
    const JsonCursor v = variables.at(i);
    m.variables.push_back(
        {v.at("name").as_string(), v.at("bytes").as_number_in(0, kMaxBytes),
         int(v.at("ps").as_int(m.ps.empty() ? -1 : 0, int64_t(m.ps.size()) - 1))});
  }
  if (c.has("graphs")) {
    m.graphs = graphs_from_json(c.at("graphs"), int(m.roles.size()), int(m.platform.devices.size()),
                                int(m.variables.size()));
    std::set<std::string> seen;
    for (size_t g = 0; g < m.graphs.size(); ++g) {
      const JsonCursor role = c.at("graphs").at(g).at("role");
      if (m.find_role(m.graphs[g].role) == nullptr) role.fail("names no role of the trace");
      if (!seen.insert(m.graphs[g].role).second) role.fail("a second graph of this role");
    }
  }
  if (c.has("backend")) m.backend = c.at("backend").as_string();
  if (c.has("provenance")) m.provenance = c.at("provenance").value();
  return m;
}

namespace {

SteadyStateRecord steady_state_from_json(const JsonCursor& c) {
  c.expect_object();
  c.check_keys({"tolerance", "max_steps", "converged", "stop_s", "stop_global_step",
                "throughput_samples_per_s", "half_width_fraction", "updates"});
  SteadyStateRecord r;
  r.tolerance = c.at("tolerance").as_number_in(0, 1);
  r.max_steps = int(c.at("max_steps").as_int(1, kMaxSteps));
  r.converged = c.at("converged").as_bool();
  r.stop_s = c.at("stop_s").as_number_in(0, kMaxTimeS);
  r.stop_global_step = c.at("stop_global_step").as_int(0, INT64_MAX);
  r.throughput_samples_per_s = c.at("throughput_samples_per_s").as_number_in(0, 1e300);
  r.half_width_fraction = c.at("half_width_fraction").as_number_in(0, 1e300);
  r.updates = int(c.at("updates").as_int(0, INT_MAX));
  return r;
}

}  // namespace

nlohmann::json steady_state_to_json(const SteadyStateRecord& r) {
  return {{"tolerance", r.tolerance},
          {"max_steps", r.max_steps},
          {"converged", r.converged},
          {"stop_s", r.stop_s},
          {"stop_global_step", r.stop_global_step},
          {"throughput_samples_per_s", r.throughput_samples_per_s},
          {"half_width_fraction", r.half_width_fraction},
          {"updates", r.updates}};
}

nlohmann::json run_outcome_to_json(const RunOutcome& o) {
  nlohmann::json j;
  j["simulated_time_s"] = o.end_s;
  if (!o.restarts.empty()) {
    j["restarts"] = nlohmann::json::array();
    for (const RestartRecord& k : o.restarts) j["restarts"].push_back(restart_to_json(k));
  }
  if (o.job_failure) {
    j["job_failure"] = {{"time_s", o.job_failure->time_s},
                        {"detected_s", o.job_failure->detected_s},
                        {"global_step", o.job_failure->global_step},
                        {"cause", o.job_failure->cause}};
    if (o.job_failure->unplanned) j["job_failure"]["unplanned"] = true;
  }
  if (o.stall) {
    j["stall"] = {{"time_s", o.stall->time_s},
                  {"global_step", o.stall->global_step},
                  {"live_workers", o.stall->live_workers},
                  {"detected_s", o.stall->detected_s},
                  {"cause", o.stall->cause}};
  }
  if (o.steady_state) j["steady_state"] = steady_state_to_json(*o.steady_state);
  j["notes"] = o.notes;
  if (o.killed_s) j["killed_s"] = *o.killed_s;
  if (!o.clock_offsets.empty()) {
    j["clock_offsets"] = nlohmann::json::array();
    for (const ClockOffset& k : o.clock_offsets) {
      j["clock_offsets"].push_back(
          {{"task", k.task}, {"offset_s", k.offset_s}, {"uncertainty_s", k.uncertainty_s}});
    }
  }
  return j;
}

RunOutcome run_outcome_from_json(const nlohmann::json& json, const std::string& source,
                                 const std::string& path) {
  const JsonCursor c(json, source, path);
  c.expect_object();
  RunOutcome o;
  if (c.has("simulated_time_s")) o.end_s = c.at("simulated_time_s").as_number_in(0, kMaxTimeS);
  if (c.has("restarts")) {
    const JsonCursor restarts = c.at("restarts");
    for (size_t i = 0; i < restarts.size(); ++i) {
      o.restarts.push_back(restart_from_json(restarts.at(i)));
    }
  }
  if (c.has("job_failure")) {
    const JsonCursor f = c.at("job_failure");
    JobFailureRecord failure;
    failure.time_s = f.at("time_s").as_number_in(0, kMaxTimeS);
    if (f.has("detected_s")) failure.detected_s = f.at("detected_s").as_number_in(0, kMaxTimeS);
    if (f.has("global_step")) failure.global_step = f.at("global_step").as_int(0, INT64_MAX);
    failure.cause = f.at("cause").as_string();
    if (f.has("unplanned")) failure.unplanned = f.at("unplanned").as_bool();
    o.job_failure = failure;
  }
  if (c.has("stall")) {
    const JsonCursor s = c.at("stall");
    StallRecord stall;
    stall.time_s = s.at("time_s").as_number_in(0, kMaxTimeS);
    stall.detected_s = s.at("detected_s").as_number_in(stall.time_s, kMaxTimeS);
    stall.global_step = s.at("global_step").as_int(0, INT64_MAX);
    if (s.has("live_workers")) stall.live_workers = int(s.at("live_workers").as_int(0, INT_MAX));
    stall.cause = s.at("cause").as_string();
    o.stall = stall;
  }
  if (c.has("steady_state")) o.steady_state = steady_state_from_json(c.at("steady_state"));
  if (c.has("notes")) o.notes = strings_from_json(c.at("notes"));
  if (c.has("killed_s")) o.killed_s = c.at("killed_s").as_number_in(-1e9, kMaxTimeS);
  if (c.has("clock_offsets")) {
    const JsonCursor offsets = c.at("clock_offsets");
    offsets.expect_array();
    for (size_t i = 0; i < offsets.size(); ++i) {
      const JsonCursor k = offsets.at(i);
      k.expect_object();
      k.check_keys({"task", "offset_s", "uncertainty_s"});
      o.clock_offsets.push_back({k.at("task").as_string(), k.at("offset_s").as_number_in(-1e9, 1e9),
                                 k.at("uncertainty_s").as_number_in(0, 1e9)});
    }
  }
  return o;
}

bool clients_are_workers(const TraceMeta& meta) {
  for (const TraceClient& c : meta.clients) {
    for (const TraceRole& r : meta.roles) {
      if (r.name == c.role) return r.kind == RoleKind::kWorker;
    }
  }
  return false;
}

}  // namespace replisim::core
