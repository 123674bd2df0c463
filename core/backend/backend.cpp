#include "core/backend/backend.h"

#include "core/base/error.h"
#include "core/base/json_cursor.h"

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

nlohmann::json trace_meta_from_plan(const Plan& plan) {
  nlohmann::json meta;
  meta["format"] = "replisim-trace-meta";
  meta["scenario"] = plan.scenario_name;
  meta["strategy"] = plan.strategy;
  meta["sync"] = plan.sync;
  if (plan.sync == "sync") {
    meta["sync_replicas"] = {{"replicas_to_aggregate", plan.sync_replicas.replicas_to_aggregate},
                             {"total_num_replicas", plan.sync_replicas.total_num_replicas},
                             {"variant", plan.sync_replicas.variant}};
  }
  meta["steps"] = plan.steps;
  meta["warmup_steps"] = plan.warmup_steps;
  meta["batch_per_replica"] = plan.batch_per_replica;
  meta["seed"] = plan.seed;
  meta["plan_hash"] = plan_hash(plan);
  meta["platform"] = platform_to_json(plan.platform);
  meta["roles"] = nlohmann::json::array();
  for (const Role& r : plan.roles) {
    meta["roles"].push_back({{"name", r.name},
                             {"kind", role_kind_name(r.kind)},
                             {"device", plan.platform.devices[size_t(r.device)].name},
                             {"chief", r.chief}});
  }
  meta["clients"] = nlohmann::json::array();
  for (const ClientGraph& c : plan.clients) {
    meta["clients"].push_back({{"role", plan.roles[size_t(c.role)].name},
                               {"samples_per_step", c.samples_per_step},
                               {"start_offset_s", c.start_offset_s}});
    if (c.data_steps > 0) meta["clients"].back()["data_steps"] = c.data_steps;
  }
  meta["ps"] = nlohmann::json::array();
  for (int role : plan.ps_roles) meta["ps"].push_back(plan.roles[size_t(role)].name);
  meta["granularity"] = plan.granularity;
  meta["notes"] = plan.notes;
  meta["memory"] = nlohmann::json::array();
  for (const MemoryCheck& m : memory_checks(plan)) {
    meta["memory"].push_back({{"device", m.device},
                              {"needed_bytes", m.need.total_bytes()},
                              {"capacity_bytes", m.capacity_bytes},
                              {"weights_bytes", m.need.weights_bytes},
                              {"gradients_bytes", m.need.gradients_bytes},
                              {"optimizer_bytes", m.need.optimizer_bytes},
                              {"activations_bytes", m.need.activations_bytes}});
  }
  meta["variables"] = nlohmann::json::array();
  for (const Variable& v : plan.variables) {
    meta["variables"].push_back({{"name", v.name}, {"bytes", v.bytes}, {"ps", v.ps}});
  }
  return meta;
}

}  // namespace replisim::core
