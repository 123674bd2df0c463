// In-graph replication: one client on `training.client` builds one graph over all towers. Its CPU
// runs the input pipeline for the whole batch and the split, receives every tower's logits,
// computes the loss, sends the loss gradient back, and sums every tower's gradients before the
// PS applies them (the seed: everything before the split and after the compute runs on the
// client, a bottleneck; with a single tower there is nothing to sum and gradients go straight to
// the PS). Each tower reads the variables from their PS. A step ends when every
// tower and every apply is done, so the slowest tower sets the pace. With training.forward_only
// (inference) the step ends when the client has every tower's logits and has run the loss.
//
// With `training.placement` the graph is model-parallel instead: one tower whose layers run on
// the devices the rules name (the seed's "all convolutions on PC1, all dense layers on PC2"),
// activations and their gradients crossing between them.
#include <algorithm>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/strategy/step_graph_parts.h"
#include "core/strategy/strategy.h"

namespace replisim::core {

using namespace strategy_detail;

namespace {

// The device of every layer under the placement rules (first matching rule wins).
std::vector<int> place_layers(const Scenario& scenario, const Platform& platform) {
  const std::vector<PlacementRule>& rules = scenario.training.placement;
  std::vector<bool> used(rules.size(), false);
  std::vector<int> device;
  for (const Layer& layer : scenario.model.layers) {
    size_t r = 0;
    while (r < rules.size() && !glob_match(rules[r].layers, layer.name)) ++r;
    if (r == rules.size()) {
      throw InputError(scenario.file_of("/training/placement"), "/training/placement",
                       "layer \"" + layer.name + "\" matches no placement rule");
    }
    used[r] = true;
    device.push_back(platform.find_device(rules[r].device));
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (!used[r]) {
      throw InputError(scenario.file_of(rules[r].json_path), rules[r].json_path + "/layers",
                       "\"" + rules[r].layers +
                           "\" matches no layer (or only layers an earlier "
                           "rule placed)");
    }
  }
  return device;
}

// The towers: one per replica (data parallel) of its replica's batch, or one model-parallel tower
// of stages of batch_per_replica samples. Throws InputError for per-replica batches beside a
// model-parallel placement (one tower, one batch).
std::vector<GroupPlacement> towers(const Scenario& scenario, Plan& plan,
                                   const ModelLayout& layout) {
  std::vector<GroupPlacement> out;
  if (!scenario.training.placement.empty()) {
    if (!scenario.training.replica_batches.empty()) {
      throw InputError(scenario.file_of("/training/batch_per_replica"),
                       "/training/batch_per_replica",
                       "training.placement makes in_graph one model-parallel tower, which takes "
                       "one batch: give batch_per_replica as one number");
    }
    GroupPlacement where;
    where.batch = scenario.training.batch_per_replica;
    std::vector<int> stage_devices;
    std::vector<int> stage_roles;
    for (const LayerGroup& g : layout.groups) {
      auto found = std::find(stage_devices.begin(), stage_devices.end(), g.device);
      if (found == stage_devices.end()) {
        stage_devices.push_back(g.device);
        stage_roles.push_back(add_role(plan, "stage" + std::to_string(stage_roles.size()),
                                       RoleKind::kTower, g.device));
        found = stage_devices.end() - 1;
      }
      where.device.push_back(g.device);
      where.role.push_back(stage_roles[size_t(found - stage_devices.begin())]);
    }
    out.push_back(std::move(where));
    return out;
  }
  for (size_t k = 0; k < scenario.training.replicas.size(); ++k) {
    const int device = plan.platform.find_device(scenario.training.replicas[k]);
    REPLISIM_ASSERT(device >= 0, "validated replica device not found");
    const int role = add_role(plan, "tower" + std::to_string(k), RoleKind::kTower, device);
    out.push_back(on_one_device(layout, device, role, scenario.training.batch_of_replica(k)));
  }
  return out;
}

Op client_op(const std::string& name, OpKind kind, int cpu, int client, double flop) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.device = cpu;
  op.role = client;
  op.compute_flop = flop;
  return op;
}

// What the in-graph plan leaves out of the scenario, said in its notes.
void note_unused_fields(const TrainingSpec& t, Plan& plan) {
  if (!t.placement.empty()) {
    plan.notes.push_back(
        "training.placement makes in_graph one model-parallel tower on the "
        "placement's devices; training.replicas is used by between_graph only");
  }
  if (!t.data_steps_per_worker.empty()) {
    plan.notes.push_back(
        "training.data_steps_per_worker applies to between_graph only: the in_graph client "
        "feeds every tower from one input pipeline");
  }
  if (!t.start_times_s.empty()) {
    plan.notes.push_back(
        "training.start_times applies to between_graph and allreduce only: the in_graph client is "
        "one task, started at once");
  }
  if (t.sync.synchronous || t.sync.distributed_replicated) {
    plan.notes.push_back(
        "training.sync applies to between_graph only: in_graph is synchronous by construction "
        "(each global step waits for every tower)");
  }
}

// The CPU of the machine that runs the client.
int client_cpu(const TrainingSpec& t, const Plan& plan) {
  for (size_t m = 0; m < plan.platform.machines.size(); ++m) {
    if (plan.platform.machines[m].name == t.client) return plan.platform.cpu_of_machine(int(m));
  }
  REPLISIM_ASSERT(false, "validated client machine not found");
}

}  // namespace

Plan compile_in_graph(const Scenario& scenario, const CompileOptions& options) {
  Plan plan = plan_skeleton(scenario, "in_graph", options);
  const TrainingSpec& t = scenario.training;
  const int cpu = client_cpu(t, plan);
  const int client = add_role(plan, "client", RoleKind::kClient, cpu, /*chief=*/true);
  const ModelLayout layout =
      t.placement.empty() ? layout_model(scenario, plan)
                          : layout_model(scenario, plan, place_layers(scenario, plan.platform));
  plan.granularity = granularity_label(scenario, layout.groups.size());
  note_unused_fields(t, plan);
  const std::vector<GroupPlacement> tower = towers(scenario, plan, layout);
  int batch = 0;  // the client's whole batch, split into the towers' sub-batches
  for (const GroupPlacement& where : tower) batch += where.batch;

  StepGraphBuilder builder(plan);
  const int input_op = builder.add(client_op("input", OpKind::kInput, cpu, client,
                                             input_flop(scenario, plan.platform, cpu, batch)),
                                   {});
  const int split_op =
      builder.add(client_op("split", OpKind::kSplit, cpu, client, 0), {{input_op, 0.0}});
  const std::vector<std::vector<int>> reads = add_reads(builder, plan, layout);
  std::vector<Edge> logits;
  for (const GroupPlacement& where : tower) {
    const std::vector<int> forward = add_forward_chain(
        builder, scenario.model, layout, reads, where,
        {split_op, scenario.model.input_bytes_per_sample * where.batch}, where.batch);
    logits.push_back(
        {forward.back(), layout.groups.back().activation_bytes_per_sample * where.batch});
  }
  const int loss_op = builder.add(
      client_op("loss", OpKind::kLoss, cpu, client, t.costs.loss_flop_per_sample * batch), logits);

  int increment = -1;
  if (t.forward_only) {  // the step ends with the client's loss: no gradient, no update
    account_forward_memory(builder, plan, scenario.model, layout, reads, tower);
  } else {
    // Every tower's gradient of each slice, summed on the client, then applied on the slice's PS.
    // Each tower's loss gradient is its sub-batch's logits' shape.
    std::vector<Edge> loss_gradients;
    for (const Edge& l : logits) loss_gradients.push_back({loss_op, l.bytes});
    const std::vector<std::vector<int>> aggregated = add_backward_and_aggregate(
        builder, scenario, plan, layout, reads, tower, loss_gradients, {cpu}, client);
    increment = add_applies(builder, scenario, plan, layout, aggregated);
  }
  add_faults(scenario, plan);
  account_ps_memory(plan, scenario);

  ClientGraph graph;
  graph.role = client;
  graph.samples_per_step = batch;
  graph.input_op = input_op;
  graph.global_step_op = increment;
  graph.ops = builder.take();
  plan.clients.push_back(std::move(graph));
  apply_compute_scale(plan, options);
  return plan;
}

}  // namespace replisim::core
