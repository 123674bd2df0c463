#include "core/strategy/strategy.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/model/placement.h"

namespace replisim::core {

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> kStrategies = {
      {"in_graph",
       "one client, one graph over all towers; the client splits the batch, gathers, computes "
       "the loss and aggregates gradients; every step waits for every tower",
       compile_in_graph},
      {"between_graph",
       "one client per worker with a full graph copy; variables on parameter servers; workers "
       "pull, compute and push on their own (async) or aggregate through the chief's sync op "
       "(sync); worker 0 is the chief",
       compile_between_graph},
  };
  return kStrategies;
}

const Strategy* find_strategy(const std::string& name) {
  for (const Strategy& s : strategies()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Strategy& s : strategies()) names.push_back(s.name);
  return names;
}

Plan compile_plan(const Scenario& scenario, const std::string& strategy,
                  const CompileOptions& options, const std::string& flag) {
  const Strategy* s = find_strategy(strategy);
  if (s == nullptr) {
    throw InputError(
        "", flag, "unknown strategy \"" + strategy + "\"; valid: " + join_names(strategy_names()));
  }
  Plan plan = s->compile(scenario, options);
  validate_plan(plan, "<compiled plan>");
  return plan;
}

double estimated_round_time_s(const Plan& plan) {
  const Platform& p = plan.platform;
  std::vector<double> channel_bytes(size_t(p.channel_count()), 0.0);
  double slowest_client_s = 0;
  for (const ClientGraph& graph : plan.clients) {
    double own_s = 0;
    for (const Op& op : graph.ops) {
      own_s += op.compute_flop / p.devices[size_t(op.device)].speed_flop_per_s;
      if (op.kind != OpKind::kSend) continue;
      const int destination = graph.ops[size_t(op.peer)].device;
      own_s += op.bytes / p.route_bandwidth_bytes_per_s(op.device, destination);
      for (const Hop& hop : p.route(op.device, destination)) {
        channel_bytes[size_t(p.channel_of(hop))] += op.bytes;
      }
    }
    slowest_client_s = std::max(slowest_client_s, own_s);
  }
  double busiest_link_s = 0;
  for (int ch = 0; ch < p.channel_count(); ++ch) {
    if (!p.channel_exists(ch)) continue;
    busiest_link_s =
        std::max(busiest_link_s, channel_bytes[size_t(ch)] / p.channel_bandwidth_bytes_per_s(ch));
  }
  return std::max(slowest_client_s, busiest_link_s);
}

namespace strategy_detail {

std::string granularity_label(const Scenario& scenario, size_t groups) {
  if (groups >= scenario.model.layers.size()) return "layer";
  return std::to_string(groups) + (groups == 1 ? " group" : " groups");
}

int add_role(Plan& plan, const std::string& name, RoleKind kind, int device, bool chief) {
  plan.roles.push_back(Role{name, kind, device, chief});
  return int(plan.roles.size()) - 1;
}

Plan plan_skeleton(const Scenario& scenario, const std::string& strategy,
                   const CompileOptions& options) {
  Plan plan;
  plan.scenario_name = scenario.name;
  plan.strategy = strategy;
  plan.platform = build_platform(scenario.cluster);
  plan.steps = scenario.training.steps;
  plan.warmup_steps = scenario.training.warmup_steps;
  plan.batch_per_replica = scenario.training.batch_per_replica;
  plan.compute_jitter_fraction = scenario.training.jitter.compute_fraction;
  plan.step_jitter_fraction = scenario.training.jitter.step_fraction;
  // Set again by the compilers from the groups actually formed (see granularity_label).
  plan.granularity = "layer";
  plan.seed = options.seed;
  for (size_t i = 0; i < scenario.training.ps.size(); ++i) {
    const int device = plan.platform.find_device(scenario.training.ps[i]);
    REPLISIM_ASSERT(device >= 0, "validated PS device not found");
    plan.ps_roles.push_back(
        add_role(plan, "ps" + std::to_string(i), RoleKind::kParameterServer, device));
  }
  // global_step: an int64 variable, created first, so on PS 0 (TF replica_device_setter).
  constexpr double kGlobalStepBytes = 8;
  plan.variables.push_back({"global_step", kGlobalStepBytes, 0, -1});
  const PlacementPolicy* policy = find_placement_policy(scenario.training.variable_placement);
  REPLISIM_ASSERT(policy != nullptr, "validated placement policy not found");
  const int num_ps = int(plan.ps_roles.size());
  for (size_t l = 0; l < scenario.model.layers.size(); ++l) {
    const Layer& layer = scenario.model.layers[l];
    const double bytes = layer.params * scenario.model.bytes_per_param;
    if (!policy->partitions || num_ps == 1 || bytes <= scenario.training.partition_min_bytes) {
      plan.variables.push_back({layer.name, bytes, -1, int(l)});
      continue;
    }
    for (int k = 0; k < num_ps; ++k) {  // fixed_size_partitioner: equal parts along axis 0
      plan.variables.push_back(
          {layer.name + "/part_" + std::to_string(k), bytes / num_ps, -1, int(l)});
    }
  }
  // The policy sees global_step too, as TF's device setter does.
  std::vector<double> all_bytes;
  for (const Variable& v : plan.variables) all_bytes.push_back(v.bytes);
  const std::vector<int> shard = policy->assign(all_bytes, num_ps);
  for (size_t v = 0; v < plan.variables.size(); ++v) plan.variables[v].ps = shard[v];
  return plan;
}

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
  }
  c.summary_every_steps = t.summaries.every_steps;
  c.summary_bytes = t.summaries.bytes;
  c.summary_disk_bandwidth_bytes_per_s = t.summaries.disk_bandwidth_bytes_per_s;
  plan.recovery.enabled = t.recovery.enabled;
  plan.recovery.detect_timeout_s = t.recovery.detect_timeout_s;
  plan.recovery.restart_delay_s = t.recovery.restart_delay_s;
  plan.recovery.recovery_wait_s = t.recovery.recovery_wait_s;
}

// The clients whose graph belongs to role `r` (a between-graph worker).
std::vector<int> clients_of_role(const Plan& plan, int r) {
  std::vector<int> clients;
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    if (plan.clients[c].role == r) clients.push_back(int(c));
  }
  return clients;
}

// Whether PS role `r` holds a variable (global_step, whose PS also holds the sync queues, is
// one); a PS without variables runs nothing of any step.
bool holds_variables(const Plan& plan, int r) {
  for (const Variable& v : plan.variables) {
    if (v.ps >= 0 && plan.ps_roles[size_t(v.ps)] == r) return true;
  }
  return false;
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
  f.kind = "role";
  for (int r : dying) {
    if (plan.roles[size_t(r)].kind == RoleKind::kWorker) {
      for (int c : clients_of_role(plan, r)) f.clients.push_back(c);
    } else if (plan.roles[size_t(r)].kind == RoleKind::kParameterServer &&
               !holds_variables(plan, r)) {
      // A task no step touches (a PS left without variables): no RPC to it fails.
      idle_ps.push_back(plan.roles[size_t(r)].name);
      continue;
    } else {
      f.kind = "job";
      f.roles.push_back(r);
    }
  }
  return f;
}

}  // namespace

void add_faults(const Scenario& scenario, Plan& plan) {
  add_checkpoints_and_recovery(scenario, plan);
  const TrainingSpec& t = scenario.training;
  for (const FaultSpec& spec : scenario.faults) {
    PlanFault f;
    if (spec.kind == FaultKind::kSlowdown) {
      f.kind = "slowdown";
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
      f.kind = "link";
      f.link = plan.platform.switch_link;
      for (const PlatformMachine& m : plan.platform.machines) {
        if (m.name == spec.machine) f.link = m.nic_link;
      }
      REPLISIM_ASSERT(f.link >= 0, "validated fault link not found");
      f.from_s = spec.from_s;
      f.until_s = spec.until_s;
      f.open_ended = spec.open_ended;
      f.factor = spec.factor;
      const std::string link = spec.machine.empty() ? "switch" : spec.machine + "/nic";
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

double input_flop(const Scenario& scenario, const Platform& platform, int cpu_device, int samples) {
  const Costs& costs = scenario.training.costs;
  const PlatformDevice& cpu = platform.devices[size_t(cpu_device)];
  // Per core: the pipeline spreads a batch over every core, so the op (on one core) takes
  // samples / (rate x cores).
  const double rate = costs.input_samples_per_s_per_core > 0
                          ? costs.input_samples_per_s_per_core * cpu.cores
                          : costs.input_samples_per_s;
  if (rate <= 0) return 0;
  return double(samples) / rate * cpu.speed_flop_per_s;
}

int variable_device(const Plan& plan, int v) {
  return plan.roles[size_t(plan.ps_roles[size_t(plan.variables[size_t(v)].ps)])].device;
}

int variable_role(const Plan& plan, int v) {
  return plan.ps_roles[size_t(plan.variables[size_t(v)].ps)];
}

}  // namespace strategy_detail
}  // namespace replisim::core
