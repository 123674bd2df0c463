// The scenario's faults resolved against a plan (PlanFault), with the chief's checkpoints and the
// recovery policy they bring into play: which clients a role or machine fault kills, which deaths
// fail the whole job (a parameter server holding variables, the in-graph client or a tower), and
// notes for faults that hit nothing the plan runs.
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/strategy/strategy.h"

namespace replisim::core::strategy_detail {

namespace {

void add_checkpoints_and_recovery(const Scenario& scenario, Plan& plan) {
  const TrainingSpec& t = scenario.training;
  CheckpointPolicy& c = plan.checkpoints;
  if (t.checkpoint.enabled) {
    double variable_bytes = 0;
    for (const Variable& v : plan.variables) variable_bytes += v.bytes;
    c.every_s = t.checkpoint.every_s;
    c.bytes = variable_bytes * (1 + t.optimizer.slots_per_param);
    c.disk_bandwidth_bytes_per_s = t.checkpoint.disk_bandwidth_bytes_per_s;
    c.max_to_keep = t.checkpoint.max_to_keep;
  }
  c.summary_every_steps = t.summaries.every_steps;
  c.summary_bytes = t.summaries.bytes;
  c.summary_disk_bandwidth_bytes_per_s = t.summaries.disk_bandwidth_bytes_per_s;
  plan.recovery.enabled = t.recovery.enabled;
  plan.recovery.detect_timeout_s = t.recovery.detect_timeout_s;
  plan.recovery.restart_delay_s = t.recovery.restart_delay_s;
  plan.recovery.recovery_wait_s = t.recovery.recovery_wait_s;
}

// A role or machine fault: the workers that die (kind "role"), or, when a role the job cannot
// lose dies (a PS, the in-graph client or a tower), a job failure (kind "job").
// `idle_ps` gets the PS roles that die without variables (their deaths change nothing).
PlanFault death_fault(const FaultSpec& spec, const Plan& plan, const TrainingSpec& t,
                      std::vector<std::string>& idle_ps) {
  PlanFault f;
  f.at_s = spec.at_s;
  std::vector<int> dying;  // role indices
  if (spec.kind == FaultKind::kRole) {
    const int r = plan.role_index(spec.role);
    if (r >= 0) dying.push_back(r);
    f.description = spec.role + " dies";
  } else {
    for (size_t r = 0; r < plan.roles.size(); ++r) {
      const Role& role = plan.roles[r];
      if (role.kind == RoleKind::kSyncQueueRunner) continue;  // dies with the chief
      bool on_machine =
          plan.platform.machines[size_t(plan.platform.devices[size_t(role.device)].machine)].name ==
          spec.machine;
      if (role.kind == RoleKind::kWorker) {
        // A multi-tower worker dies with any of its towers' machines.
        const int w = numbered_name(role.name, "worker");
        for (int replica : t.workers[size_t(w)]) {
          on_machine |= t.replicas[size_t(replica)].machine == spec.machine;
        }
      }
      if (on_machine) dying.push_back(int(r));
    }
    f.description = "machine " + spec.machine + " dies";
  }
  std::vector<int> idle;
  f = death_of_roles(plan, dying, spec.at_s, std::move(f.description), &idle);
  for (int r : idle) idle_ps.push_back(plan.roles[size_t(r)].name);
  return f;
}

}  // namespace

void add_faults(const Scenario& scenario, Plan& plan) {
  add_checkpoints_and_recovery(scenario, plan);
  const TrainingSpec& t = scenario.training;
  for (const FaultSpec& spec : scenario.faults) {
    PlanFault f;
    if (spec.kind == FaultKind::kSlowdown) {
      f.kind = PlanFaultKind::kSlowdown;
      f.device = plan.platform.find_device(spec.device);
      REPLISIM_ASSERT(f.device >= 0, "validated fault device not found");
      f.from_s = spec.from_s;
      f.until_s = spec.until_s;
      f.open_ended = spec.open_ended;
      f.factor = spec.factor;
      f.description =
          spec.device.str() + " slowed to " + dump_json(nlohmann::json(spec.factor)) + "x";
      plan.faults.push_back(std::move(f));
      continue;
    }
    if (spec.kind == FaultKind::kLink) {
      f.kind = PlanFaultKind::kLink;
      // By name ("switch" is the switch, the core with racks); a NIC by its machine.
      f.link = spec.link == "switch" ? plan.platform.switch_link : -1;
      for (size_t l = 0; l < plan.platform.links.size() && f.link < 0; ++l) {
        if (plan.platform.links[l].name == spec.link) f.link = int(l);
      }
      for (const PlatformMachine& m : plan.platform.machines) {
        if (!spec.machine.empty() && m.name == spec.machine) f.link = m.nic_links[size_t(spec.nic)];
      }
      REPLISIM_ASSERT(f.link >= 0, "validated fault link not found");
      f.from_s = spec.from_s;
      f.until_s = spec.until_s;
      f.open_ended = spec.open_ended;
      f.factor = spec.factor;
      // Its platform name: "switch" with racks is the core.
      const std::string& link = plan.platform.links[size_t(f.link)].name;
      f.description = spec.factor == 0
                          ? link + " cut"
                          : link + " at " + dump_json(nlohmann::json(spec.factor)) + "x";
      plan.faults.push_back(std::move(f));
      continue;
    }
    std::vector<std::string> idle_ps;
    f = death_fault(spec, plan, t, idle_ps);
    if (!idle_ps.empty()) {
      const bool one = idle_ps.size() == 1;
      plan.notes.push_back("fault " + spec.json_path + " (" + f.description +
                           "): " + join_names(idle_ps) + (one ? " holds" : " hold") +
                           " no variables, so no step uses " + (one ? "it" : "them") +
                           " and nothing fails there");
    }
    if (f.clients.empty() && f.roles.empty()) {
      if (idle_ps.empty()) {
        plan.notes.push_back("fault " + spec.json_path + " (" + f.description +
                             ") hits no role of this " + plan.strategy +
                             " plan: it changes nothing");
      }
      continue;
    }
    plan.faults.push_back(std::move(f));
  }
}

}  // namespace replisim::core::strategy_detail
