#include "core/strategy/strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/model/placement.h"
#include "core/strategy/plan_rules.h"

namespace replisim::core {

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> kStrategies = {
      {"in_graph",
       "one client, one graph over all towers; the client splits the batch, gathers, computes "
       "the loss and aggregates gradients; every step waits for every tower",
       compile_in_graph, /*one_client=*/true, /*replica_role_kind=*/"tower",
       /*sync_replicas=*/false,
       [](const Plan& plan, const std::string& file) {
         strategy_detail::require_parameter_servers(plan, file);
         strategy_detail::refuse_sync_replicas(plan, file);
         strategy_detail::require_global_step_increments(plan, file);
       }},
      {"between_graph",
       "one client per worker with a full graph copy; variables on parameter servers; workers "
       "pull, compute and push on their own (async) or aggregate through the chief's sync op "
       "(sync); worker 0 is the chief",
       compile_between_graph, /*one_client=*/false, /*replica_role_kind=*/"worker",
       /*sync_replicas=*/true,
       [](const Plan& plan, const std::string& file) {
         strategy_detail::require_parameter_servers(plan, file);
         strategy_detail::require_global_step_increments(plan, file);
         strategy_detail::require_barriers(plan, file);
       }},
      {"allreduce",
       "one worker per replica device with its own copy of the variables, no parameter server; "
       "gradients averaged by a collective (ring, tree or hierarchical) as backward produces "
       "them (Horovod); every step waits for every worker; worker 0 is the chief",
       compile_allreduce, /*one_client=*/false, /*replica_role_kind=*/"worker",
       /*sync_replicas=*/false,
       [](const Plan& plan, const std::string& file) {
         if (plan.sync != kAllReduceSync) {
           throw InputError(file, "/sync", "an allreduce plan's sync mode is \"allreduce\"");
         }
       },
       /*rank_per_replica=*/true},
  };
  return kStrategies;
}

const Strategy* find_strategy(const std::string& name) {
  for (const Strategy& s : strategies()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool is_strategy_name(const std::string& name) {
  return find_strategy(name) != nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Strategy& s : strategies()) names.push_back(s.name);
  return names;
}

std::string strategy_list_help() {
  return join_names(strategy_names()) +
         ", a comma-separated list of them, both (in_graph and between_graph) or all";
}

std::vector<std::string> parse_strategy_list(const std::string& text, const std::string& flag) {
  if (text == "both") return {"in_graph", "between_graph"};
  if (text == "all") return strategy_names();
  std::vector<std::string> names;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string name =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (name.empty()) {
      throw InputError("", flag,
                       "an empty strategy name in \"" + text.substr(0, 200) +
                           "\"; valid: " + strategy_list_help());
    }
    if (name == "both" || name == "all") {
      throw InputError("", flag,
                       "\"" + name + "\" stands alone, not in a list (\"" + text.substr(0, 200) +
                           "\"); valid: " + strategy_list_help());
    }
    if (!is_strategy_name(name)) {
      const std::string near = nearest_name(name, strategy_names());
      throw InputError("", flag,
                       "unknown strategy \"" + name.substr(0, 100) + "\"" +
                           (near.empty() ? "" : " (did you mean " + near + "?)") +
                           "; valid: " + strategy_list_help());
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw InputError("", flag,
                       "strategy \"" + name + "\" is given twice in \"" + text.substr(0, 200) +
                           "\"; valid: " + strategy_list_help());
    }
    names.push_back(name);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return names;
}

namespace {

// Each send that leaves its process (between machines always; between processes of one machine
// when the transport says so) pays training.costs.per_message_overhead and the transport's own
// per-message cost before it starts.
void charge_send_overheads(Plan& plan, double per_message_overhead_s) {
  const Processes processes = plan_processes(plan);
  const Transport& transport = plan.platform.transport;
  auto charge = [&](ClientGraph& graph) {
    for (Op& op : graph.ops) {
      if (op.kind != OpKind::kSend) continue;
      const Op& recv = graph.ops[size_t(op.peer)];
      const bool between_machines = plan.platform.devices[size_t(op.device)].machine !=
                                    plan.platform.devices[size_t(recv.device)].machine;
      const bool charged =
          between_machines || (transport.between_processes && processes.crosses(op, recv));
      op.overhead_s = charged ? per_message_overhead_s + transport.send_overhead_s(op.bytes) : 0.0;
    }
  };
  for (ClientGraph& graph : plan.clients) charge(graph);
  if (plan.sync == "sync") charge(plan.sync_replicas.chief_graph);
}

}  // namespace

namespace {

// Timing "objective": the scenario with the proxy in place of its model, the proxy's batch, and
// a free input pipeline (the proxy's data set is in memory: no images to decode).
// Throws InputError for a model-parallel placement, whose rules name the scenario model's layers.
Scenario with_objective_costs(const Scenario& scenario) {
  if (!scenario.training.placement.empty()) {
    throw InputError(scenario.file, "/training/objective/timing",
                     "timing \"objective\" puts the proxy's dense layers in place of the model, "
                     "which training.placement's rules (written for the scenario's layers) do not "
                     "name: use timing \"scenario\" with a placement");
  }
  Scenario costed = scenario;
  const ObjectiveSpec& o = scenario.training.objective;
  costed.model = o.model().cost_model();
  costed.training.batch_per_replica = o.batch;
  costed.training.replica_batches.clear();  // refused beside an objective (scenario_training.cpp)
  costed.training.costs.input_samples_per_s = 0;
  costed.training.costs.input_samples_per_s_per_core = 0;
  // The proxy's logits layer carries its softmax cross-entropy (ObjectiveModel::cost_model): the
  // loss op costs nothing more (the scenario model's default counted its own classes).
  costed.training.costs.loss_flop_per_sample = 0;
  return costed;
}

// The estimate of the plan of `scenario` as given (its model and batch: the costed one).
PlanEstimate estimate_costed_plan(const Scenario& scenario, const std::string& strategy) {
  PlanEstimate e;
  const TrainingSpec& t = scenario.training;
  for (const MachineSpec& m : scenario.cluster.machines) e.devices += 1 + double(m.gpus.size());
  const bool between = strategy == "between_graph";
  // In-graph model parallelism (training.placement) spreads one copy of the model over the
  // devices: one tower's ops.
  e.towers = !between && !t.placement.empty() ? 1 : double(t.replicas.size());
  e.workers = between ? double(t.workers.size()) : 1;
  const double layers = double(scenario.model.layers.size());
  e.layer_groups =
      t.granularity_groups > 0 ? std::min(layers, double(t.granularity_groups)) : layers;
  const double ps = double(std::max<size_t>(1, t.ps.size()));
  const bool partitioned = t.variable_placement == "partitioned";
  double pieces = 0;  // trainable variables, partitions counted
  for (const Layer& layer : scenario.model.layers) {
    if (layer.params <= 0) continue;
    const double bytes = layer.params * scenario.model.bytes_per_param;
    pieces += partitioned && bytes > t.partition_min_bytes ? ps : 1;
  }
  // A group's variables travel as a slice per PS that holds any of them: at most min(PS, its
  // pieces) slices, so at most groups x min(PS, pieces per group) in all (min is concave).
  e.variable_slices = e.layer_groups < layers && e.layer_groups > 0
                          ? e.layer_groups * std::min(ps, std::ceil(pieces / e.layer_groups))
                          : pieces;
  e.roles = e.towers + e.workers + ps + 2;
  // Per tower: forward and backward per group, the loss, and per slice its read, copy or
  // assignment and the send/receive pairs that bring it and take its gradient. Per worker: its
  // slices' reads, aggregates, applies (or accumulates, barriers) and their transfers. The chief's
  // sync graph: a take and an apply per slice.
  const double g = e.layer_groups, v = e.variable_slices;
  e.ops = e.towers * (2 * g + 8 * v + 1) + e.workers * (8 * v + 4) + 2 * v + 3;
  if (strategy == "allreduce") {
    // A rank per replica, no PS: per rank forward, backward, an all-reduce and an apply per
    // group, the loss, the input and its transfer, the increment (placement does not apply).
    e.towers = double(t.replicas.size());
    e.workers = e.towers;
    e.roles = e.towers;
    e.variable_slices = g;
    e.ops = e.towers * (4 * g + 5);
  }
  e.bytes = e.ops * (between ? kPlanBytesPerOp : kInGraphPlanBytesPerOp) +
            e.devices * kPlanBytesPerDevice;
  return e;
}

}  // namespace

PlanEstimate estimate_plan(const Scenario& scenario, const std::string& strategy) {
  const ObjectiveSpec& o = scenario.training.objective;
  if (o.enabled && o.timing == ObjectiveTiming::kObjective) {
    return estimate_costed_plan(with_objective_costs(scenario), strategy);
  }
  return estimate_costed_plan(scenario, strategy);
}

namespace {

std::string count_text(double n) {
  const std::string digits = std::to_string(int64_t(std::llround(n)));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "1 client", "80,000 clients".
std::string counted(double n, const std::string& what) {
  return count_text(n) + " " + what + (std::llround(n) == 1 ? "" : "s");
}

std::string gib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return text;
}

}  // namespace

void require_within_budget(const PlanEstimate& e, const PlanBudget& budget) {
  const bool ops = e.ops > budget.max_ops;
  if (!ops && e.bytes <= budget.max_bytes) return;
  const std::string what =
      "the plan would hold about " + count_text(e.ops) + " ops and " + gib_text(e.bytes) +
      " (estimated from " + counted(e.devices, "device") + ", " + counted(e.towers, "tower") +
      " in " + counted(e.workers, "client") + ", " + counted(e.layer_groups, "layer group") +
      " and " + counted(e.variable_slices, "variable slice") + ")";
  if (ops) {
    throw InputError("", "--max-plan-ops",
                     what + ": more than the budget of " + count_text(budget.max_ops) +
                         " ops; --max-plan-ops raises it (training.granularity makes fewer ops)");
  }
  throw InputError("", "--max-plan-memory",
                   what + ": more than the budget of " + gib_text(budget.max_bytes) +
                       "; --max-plan-memory raises it");
}

namespace {

// The plan's copy of training.objective (plain data: core/plan/plan_objective.h).
PlanObjective plan_objective(const ObjectiveSpec& spec) {
  PlanObjective o;
  o.enabled = true;
  if (spec.data.set == ObjectiveDataSpec::Set::kSynthetic) {
    o.set = "synthetic";
    o.train_samples = spec.data.synthetic.train_samples;
    o.test_samples = spec.data.synthetic.test_samples;
    o.features = spec.data.synthetic.features;
    o.classes = spec.data.synthetic.classes;
    o.data_seed = spec.data.synthetic.seed;
  } else {
    o.set = "fashion_mnist";
    o.dir = spec.data.dir;
    o.subset = spec.data.subset;
  }
  o.hidden_widths = spec.hidden_widths;
  o.learning_rate = spec.learning_rate;
  if (spec.schedule.kind == LearningRateSchedule::Kind::kStepDecay) {
    o.schedule = "step_decay";
    o.decay_steps = spec.schedule.decay_steps;
    o.decay_rate = spec.schedule.decay_rate;
  }
  o.staleness_aware = spec.staleness_aware;
  o.batch = spec.batch;
  o.evaluate_every_steps = spec.evaluate_every_steps;
  o.target = spec.target == ObjectiveTarget::kAccuracy ? "accuracy" : "loss";
  o.target_value = spec.target_value;
  o.timing = objective_timing_name(spec.timing);
  o.seed = spec.seed;
  return o;
}

// What a real run of the plan does with its objective (real/node/objective_values.h).
std::string real_objective_note(const Plan& plan, const ObjectiveSpec& objective) {
  if (!objective_evaluated_by_real_run(plan)) {
    return "real runs do not compute it for a model split across processes (each tower's "
           "process would lack the other parts' values)";
  }
  // A real run carries the proxy's values in the variables' first floats
  // (real/node/objective_values.h ObjectiveValues::check refuses the run when they do not fit).
  double floats = 0;
  for (size_t v = 1; v < plan.variables.size(); ++v) floats += plan.variables[v].bytes / 4;
  const double parameters = double(objective.model().parameter_count());
  if (parameters > floats) {
    return "a real run refuses it: the proxy's " + std::to_string(int64_t(parameters)) +
           " parameters do not fit in the model's " + std::to_string(int64_t(floats)) +
           " float32 values, which carry them";
  }
  const std::string processes = plan.sync == kAllReduceSync ? "ranks'"
                                : clients_are_workers(plan)
                                    ? (plan.ps_roles.size() > 1 ? "workers' and parameter servers'"
                                                                : "workers' and parameter server's")
                                    : (plan.ps_roles.size() > 1 ? "towers' and parameter servers'"
                                                                : "towers' and parameter server's");
  std::string note = "a real run computes it too, in its " + processes +
                     " processes, and records the same counters";
  if (plan.ps_roles.size() > 1) {
    note +=
        ": the parameter server holding global_step evaluates with the others' values as "
        "they are a round trip after the update";
  }
  return note;
}

// What a run of the plan does with its objective (sim/sim_values.cpp computes it for every plan).
std::string objective_note(const Plan& plan, const Scenario& scenario) {
  const ObjectiveSpec& o = scenario.training.objective;
  const std::string clock =
      o.timing == ObjectiveTiming::kObjective
          ? "the clock is the proxy's own costs (timing \"objective\": the model is \"" +
                scenario.model.name + "\", " + std::to_string(o.batch) +
                " samples per worker step and a free input pipeline, in place of the scenario's "
                "model)"
          : "the clock is the scenario model's costs (timing \"scenario\": the proxy shows what "
            "this schedule of updates does to a model that converges in seconds)";
  return "training.objective: a simulation computes the proxy's SGD arithmetic as the run goes "
         "(each gradient at the values its worker read, each apply in the run's order) and "
         "records loss and accuracy on the test set every " +
         std::to_string(plan.objective.evaluate_every_steps) + " global steps; " + clock + "; " +
         real_objective_note(plan, o);
}

}  // namespace

Plan compile_plan(const Scenario& scenario, const std::string& strategy,
                  const CompileOptions& options, const std::string& flag) {
  const Strategy* s = find_strategy(strategy);
  if (s == nullptr) {
    throw InputError(
        "", flag, "unknown strategy \"" + strategy + "\"; valid: " + join_names(strategy_names()));
  }
  const ObjectiveSpec& o = scenario.training.objective;
  std::optional<Scenario> costed;
  if (o.enabled && o.timing == ObjectiveTiming::kObjective) costed = with_objective_costs(scenario);
  const Scenario& timed = costed ? *costed : scenario;
  require_within_budget(estimate_costed_plan(timed, strategy), options.budget);
  Plan plan = s->compile(timed, options);
  if (o.enabled) {
    plan.objective = plan_objective(o);
    plan.notes.push_back(objective_note(plan, timed));
  }
  charge_send_overheads(plan, timed.training.costs.per_message_overhead_s);
  check_plan_rules(plan, "<compiled plan>");
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

void apply_compute_scale(Plan& plan, const CompileOptions& options) {
  if (options.compute_scale == 1) return;
  auto scale = [&](ClientGraph& graph) {
    for (Op& op : graph.ops) op.compute_flop *= options.compute_scale;
  };
  for (ClientGraph& graph : plan.clients) scale(graph);
  scale(plan.sync_replicas.chief_graph);
  plan.notes.push_back("every op's compute is scaled by " +
                       dump_json(nlohmann::json(options.compute_scale)) +
                       " (--scale-compute): the times are those of a model with that much less "
                       "(or more) arithmetic");
}

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
  if (scenario.training.steady_state.enabled) {
    plan.steady_tolerance = scenario.training.steady_state.tolerance;
  }
  plan.batch_per_replica = scenario.training.batch_per_replica;
  plan.replica_batches = scenario.training.replica_batches;
  plan.forward_only = scenario.training.forward_only;
  if (plan.forward_only) {
    plan.notes.push_back(
        "forward-only steps (training.forward_only): each step reads every variable and runs the "
        "forward pass and the loss; no gradient is sent, no variable or global_step updated");
  }
  plan.compute_jitter_fraction = scenario.training.jitter.compute_fraction;
  plan.step_jitter_fraction = scenario.training.jitter.step_fraction;
  // Set again by the compilers from the groups actually formed (see granularity_label).
  plan.granularity = "layer";
  plan.seed = options.seed;
  plan.optimizer.name = scenario.training.optimizer.name;
  plan.optimizer.learning_rate = scenario.training.optimizer.learning_rate;
  plan.optimizer.slots = scenario.training.optimizer.slots_per_param;
  for (size_t i = 0; i < scenario.training.ps.size(); ++i) {
    const int device = plan.platform.find_device(scenario.training.ps[i]);
    REPLISIM_ASSERT(device >= 0, "validated PS device not found");
    plan.ps_roles.push_back(
        add_role(plan, "ps" + std::to_string(i), RoleKind::kParameterServer, device));
  }
  // global_step: an int64 variable, created first, so on PS 0 (TF replica_device_setter).
  constexpr double kGlobalStepBytes = 8;
  plan.variables.push_back({"global_step", kGlobalStepBytes, plan.ps_roles.empty() ? -1 : 0, -1});
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
  if (num_ps == 0) return plan;  // all-reduce: every worker holds every variable (ps -1)
  const std::vector<int> shard = policy->assign(all_bytes, num_ps);
  for (size_t v = 0; v < plan.variables.size(); ++v) plan.variables[v].ps = shard[v];
  return plan;
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
