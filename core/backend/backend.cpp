#include "core/backend/backend.h"

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {
namespace {

std::vector<BackendEntry>& registry() {
  static std::vector<BackendEntry> entries;
  return entries;
}

}  // namespace

void register_backend(BackendEntry entry) {
  for (BackendEntry& existing : registry()) {
    if (existing.name == entry.name) {
      existing = std::move(entry);
      return;
    }
  }
  registry().push_back(std::move(entry));
}

const std::vector<BackendEntry>& registered_backends() {
  return registry();
}

std::unique_ptr<Backend> create_backend(const std::string& name) {
  std::vector<std::string> names;
  for (const BackendEntry& entry : registry()) {
    if (entry.name == name) return entry.create();
    names.push_back(entry.name);
  }
  throw InputError("", "--backend",
                   "unknown backend \"" + name + "\"; valid: " + join_names(names));
}

void Backend::run(const Plan& plan, TraceSink& sink, const RunOptions& options) {
  validate_plan(plan, "<plan>");
  const BackendInfo about = info();
  nlohmann::json provenance =
      options.provenance.is_object() ? options.provenance : nlohmann::json::object();
  provenance.update(about.provenance);
  provenance.update(settings_provenance(options));  // refuses bad settings before the start
  start_run(plan, options);
  try {
    TraceMeta meta = trace_meta_from_plan(plan);
    meta.backend = about.name;
    if (!records_objective(plan)) {
      meta.objective_target.clear();
      meta.objective_target_value = 0;
    }
    meta.provenance = std::move(provenance);
    sink.begin(meta);
  } catch (...) {
    abandon_run();
    throw;
  }
  const RunOutcome outcome = do_run(plan, sink, options);
  sink.end(outcome);
}

void Backend::start_run(const Plan&, const RunOptions&) {}

bool Backend::records_objective(const Plan& plan) const {
  return objective_computed_by_simulator(plan);
}

void Backend::abandon_run() noexcept {}

nlohmann::json Backend::settings_provenance(const RunOptions&) const {
  return nlohmann::json::object();
}

Trace run_to_trace(Backend& backend, const Plan& plan, const RunOptions& options) {
  TraceBuilder builder;
  backend.run(plan, builder, options);
  return std::move(builder.traces().front());
}

TraceMeta trace_meta_from_plan(const Plan& plan) {
  TraceMeta meta;
  meta.scenario = plan.scenario_name;
  meta.strategy = plan.strategy;
  meta.sync = plan.sync;
  meta.forward_only = plan.forward_only;
  if (plan.sync == "sync") {
    meta.sync_replicas = {plan.sync_replicas.replicas_to_aggregate,
                          plan.sync_replicas.total_num_replicas, plan.sync_replicas.variant};
  }
  meta.steps = plan.steps;
  meta.warmup_steps = plan.warmup_steps;
  meta.batch_per_replica = plan.batch_per_replica;
  meta.seed = plan.seed;
  meta.plan_hash = plan_hash(plan);
  meta.platform = plan.platform;
  for (const Role& r : plan.roles) {
    meta.roles.push_back({r.name, r.kind, plan.platform.devices[size_t(r.device)].name, r.chief});
  }
  for (const ClientGraph& c : plan.clients) {
    meta.clients.push_back(
        {plan.roles[size_t(c.role)].name, c.samples_per_step, c.start_offset_s, c.data_steps});
  }
  for (int role : plan.ps_roles) meta.ps.push_back(plan.roles[size_t(role)].name);
  meta.granularity = plan.granularity;
  meta.notes = plan.notes;
  if (objective_computed_by_simulator(plan)) {
    meta.objective_target = plan.objective.target;
    meta.objective_target_value = plan.objective.target_value;
  }
  for (const MemoryCheck& m : memory_checks(plan)) {
    meta.memory.push_back({m.device, m.need.total_bytes(), m.capacity_bytes, m.need.weights_bytes,
                           m.need.gradients_bytes, m.need.optimizer_bytes,
                           m.need.activations_bytes});
  }
  for (const Variable& v : plan.variables) meta.variables.push_back({v.name, v.bytes, v.ps});
  if (plan.op_count() > kMaxTraceGraphOps) {
    meta.notes.push_back("no critical path (\"bound by\"): the plan's " +
                         std::to_string(plan.op_count()) + " ops are more than the trace keeps (" +
                         std::to_string(kMaxTraceGraphOps) + "); see the utilisation rows");
    return meta;
  }
  for (const ClientGraph* graph : step_graphs(plan)) {
    TraceGraph& g = meta.graphs.emplace_back();
    g.role = plan.roles[size_t(graph->role)].name;
    for (const Op& op : graph->ops) {
      g.ops.push_back({op.name, op.kind, op.role, op.device, op.variable, op.inputs});
    }
  }
  return meta;
}

}  // namespace replisim::core
