// Between-graph replication: one client per replica with its own full graph (input pipeline,
// forward, loss, backward); variables on parameter servers. Each step a worker reads every
// variable from its PS and computes its gradients.
// - async: it sends each gradient to the variable's PS, which applies it; TF's optimizer then
//   increments global_step (Optimizer.apply_gradients puts the increment after the applies). No
//   worker waits for another.
// - sync (SyncReplicasOptimizer): it sends each gradient into the variable's accumulator, then
//   dequeues a token; the chief's sync op aggregates, applies, increments and enqueues tokens
//   (Plan::sync_replicas).
#include <algorithm>

#include "core/error.h"
#include "core/random.h"
#include "core/step_graph_parts.h"
#include "core/strategy.h"

namespace replisim::core {

using namespace strategy_detail;

namespace {

// One worker's step graph on `device` (its machine's CPU runs the input pipeline).
ClientGraph worker_graph(const Scenario& scenario, Plan& plan, const ModelLayout& layout,
                         int device, int role) {
  const TrainingSpec& t = scenario.training;
  const int samples = t.batch_per_replica;
  const int cpu = plan.platform.cpu_of_machine(plan.platform.devices[size_t(device)].machine);
  StepGraphBuilder builder(plan.platform, t.costs.per_message_overhead_s);
  Op input;
  input.name = "input";
  input.kind = OpKind::kInput;
  input.device = cpu;
  input.role = role;
  input.compute_flop = input_flop(scenario, plan.platform, cpu, samples);
  const int input_op = builder.add(std::move(input), {});
  const std::vector<std::vector<int>> reads = add_reads(builder, plan, layout);
  const GroupPlacement where = on_one_device(layout, device, role);
  const std::vector<int> forward =
      add_forward_chain(builder, scenario.model, layout, reads, where,
                        {input_op, scenario.model.input_bytes_per_sample * samples}, samples);
  Op loss;
  loss.name = "loss";
  loss.kind = OpKind::kLoss;
  loss.device = device;
  loss.role = role;
  loss.compute_flop = t.costs.loss_flop_per_sample * samples;
  const double logits_bytes = layout.groups.back().activation_bytes_per_sample * samples;
  const int loss_op = builder.add(std::move(loss), {{forward.back(), logits_bytes}});
  const std::vector<int> backward = add_backward_chain(builder, scenario.model, layout, reads,
                                                       where, {loss_op, logits_bytes}, samples);
  std::vector<std::vector<int>> gradient(layout.groups.size());
  for (size_t g = 0; g < gradient.size(); ++g) {
    gradient[g].assign(layout.slices[g].size(), backward[g]);
  }
  const int increment =
      t.sync.synchronous ? -1 : add_applies(builder, scenario, plan, layout, gradient);
  if (t.sync.synchronous) {
    add_accumulates_and_token(builder, plan, layout, gradient, device, role);
  }
  account_replica_memory(plan, scenario.model, layout, where, samples);

  ClientGraph graph;
  graph.role = role;
  graph.samples_per_step = samples;
  graph.input_op = input_op;
  graph.global_step_op = increment;
  graph.ops = builder.take();
  return graph;
}

// The sync settings and the chief's sync op (run by its queue runner on the chief's device).
void add_sync_replicas(const Scenario& scenario, Plan& plan, const ModelLayout& layout) {
  const SyncSpec& spec = scenario.training.sync;
  SyncReplicas& sr = plan.sync_replicas;
  plan.sync = "sync";
  sr.replicas_to_aggregate = spec.replicas_to_aggregate;
  sr.total_num_replicas = spec.total_num_replicas;
  sr.variant = sync_variant_name(spec.variant);
  if (spec.variant == SyncVariant::kTf) {
    sr.initial_tokens = spec.replicas_to_aggregate;  // get_init_tokens_op(num_tokens=-1)
    sr.tokens_per_step = std::max(spec.total_num_replicas, spec.replicas_to_aggregate);
  }
  const int chief_device = plan.roles[size_t(plan.clients.front().role)].device;
  const int role = add_role(plan, "chief/sync", RoleKind::kSyncQueueRunner, chief_device);
  sr.chief_graph =
      chief_sync_graph(scenario, plan, layout, role,
                       spec.replicas_to_aggregate * scenario.training.batch_per_replica);
}

}  // namespace

Plan compile_between_graph(const Scenario& scenario, const CompileOptions& options) {
  Plan plan = plan_skeleton(scenario, "between_graph", options);
  const TrainingSpec& t = scenario.training;
  // Model-parallel placement is an in-graph construct: every worker keeps its whole graph.
  if (!t.placement.empty()) {
    plan.notes.push_back(
        "training.placement applies to in_graph only: each between_graph "
        "worker runs the whole model on its replica device");
  }
  const ModelLayout layout = layout_model(scenario, plan);
  plan.granularity = granularity_label(scenario, layout.groups.size());
  for (size_t w = 0; w < t.replicas.size(); ++w) {
    const int device = plan.platform.find_device(t.replicas[w]);
    REPLISIM_ASSERT(device >= 0, "validated replica device not found");
    const int role = add_role(plan, "worker" + std::to_string(w), RoleKind::kWorker, device,
                              /*chief=*/w == 0);
    plan.clients.push_back(worker_graph(scenario, plan, layout, device, role));
    if (!t.data_steps_per_worker.empty())
      plan.clients.back().data_steps = t.data_steps_per_worker[w];
  }
  if (t.sync.synchronous) add_sync_replicas(scenario, plan, layout);
  account_ps_memory(plan, scenario);
  // The chief starts first; the others within the stagger, as TF workers come up one by one
  // after the chief has initialised the variables (seeded; docs/scenario-format.md).
  const double stagger_s = t.jitter.startup_stagger_s == kAutoStagger ? estimated_round_time_s(plan)
                                                                      : t.jitter.startup_stagger_s;
  for (size_t w = 1; w < plan.clients.size(); ++w) {
    plan.clients[w].start_offset_s = stagger_s * uniform01(options.seed, 1, w);
  }
  return plan;
}

}  // namespace replisim::core
