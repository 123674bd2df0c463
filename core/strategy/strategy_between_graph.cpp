// Between-graph replication: one client per replica with its own full graph (input pipeline,
// forward, loss, backward); variables on parameter servers. Each step a worker reads every
// variable from its PS and computes its gradients.
// - async: it sends each gradient to the variable's PS, which applies it; TF's optimizer then
//   increments global_step (Optimizer.apply_gradients puts the increment after the applies). No
//   worker waits for another.
// - sync (SyncReplicasOptimizer): it sends each gradient into the variable's accumulator, then
//   dequeues a token; the chief's sync op aggregates, applies, increments and enqueues tokens
//   (Plan::sync_replicas).
// - distributed_replicated (tf_cnn_benchmarks, kDistributedReplicated): its towers compute on
//   their own copies; per variable it applies its gradient, waits at a barrier of all workers and
//   reads the new value back into every tower; then it increments global_step.
// - forward_only (inference): it reads every variable, runs the forward pass and the loss, and its
//   step ends there (tf_cnn_benchmarks --forward_only: sess.run(logits), the variables on the PS).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/base/error.h"
#include "core/base/random.h"
#include "core/strategy/step_graph_parts.h"
#include "core/strategy/strategy.h"

namespace replisim::core {

using namespace strategy_detail;

namespace {

// The training half of one worker's step: the backward pass of every tower (from
// `loss_gradients`), the towers' gradient sum, and the sync mode's updates. Returns the
// global_step increment op (-1 for a synchronous worker: the chief's sync op increments).
int add_gradient_updates(StepGraphBuilder& builder, const Scenario& scenario, Plan& plan,
                         const ModelLayout& layout, const std::vector<std::vector<int>>& reads,
                         const std::vector<GroupPlacement>& towers,
                         const std::vector<Edge>& loss_gradients, const std::vector<int>& devices,
                         int role) {
  const TrainingSpec& t = scenario.training;
  const int device = devices.front();
  const int cpu = plan.platform.cpu_of_machine(plan.platform.devices[size_t(device)].machine);
  const int local = devices.size() > 1 ? cpu : device;
  const bool replicated = t.sync.distributed_replicated;
  // distributed_replicated sums slice i's tower gradients on GPU i mod towers
  // (aggregate_gradients_using_copy_with_device_selection, --local_parameter_device=gpu).
  const std::vector<std::vector<int>> gradient =
      add_backward_and_aggregate(builder, scenario, plan, layout, reads, towers, loss_gradients,
                                 replicated ? devices : std::vector<int>{local}, role);
  if (replicated) {
    return add_distributed_replicated_updates(builder, scenario, plan, layout, gradient, devices,
                                              cpu, role);
  }
  if (t.sync.synchronous) {
    add_accumulates_and_token(builder, plan, layout, gradient, device, role);
    return -1;
  }
  return add_applies(builder, scenario, plan, layout, gradient);
}

// One worker's step graph with a tower on each of `devices`, of `batches[k]` samples on device k
// (its machine's CPU runs the input pipeline for all of them). With several towers, as
// tf_cnn_benchmarks' distributed_replicated (VariableMgrDistributedReplicated, variable_mgr.py,
// 2017): the worker splits its batch, reads each variable from its PS once into its CPU's memory,
// copies it to every tower over that tower's own PCIe link, and averages the towers' gradients on
// its CPU before talking to the PS.
ClientGraph worker_graph(const Scenario& scenario, Plan& plan, const ModelLayout& layout,
                         const std::vector<int>& devices, const std::vector<int>& batches,
                         int role) {
  const TrainingSpec& t = scenario.training;
  const int samples = std::accumulate(batches.begin(), batches.end(), 0);
  const int device = devices.front();
  const int cpu = plan.platform.cpu_of_machine(plan.platform.devices[size_t(device)].machine);
  StepGraphBuilder builder(plan);
  int batch_op = add_input_op(builder, scenario, plan, cpu, role, samples);
  const int input_op = batch_op;
  if (devices.size() > 1) {
    Op split;
    split.name = "split";
    split.kind = OpKind::kSplit;
    split.device = cpu;
    split.role = role;
    batch_op = builder.add(std::move(split), {{input_op, 0.0}});
  }
  // Where the worker's own copy of the variables and the towers' gradient sum live.
  const int local = devices.size() > 1 ? cpu : device;
  const bool replicated = t.sync.distributed_replicated;
  std::vector<std::vector<int>> reads(layout.groups.size());  // replicated: the towers' copies
  if (!replicated) {
    reads = add_reads(builder, plan, layout);
    if (devices.size() > 1) {
      reads = add_local_copies(builder, plan, layout, reads, local, role, !t.forward_only);
    }
  }
  std::vector<GroupPlacement> towers;
  std::vector<Edge> loss_gradients;
  for (size_t k = 0; k < devices.size(); ++k) {
    const int sub_batch = batches[k];
    const double logits_bytes = layout.groups.back().activation_bytes_per_sample * sub_batch;
    towers.push_back(on_one_device(layout, devices[k], role, sub_batch));
    const std::vector<int> forward =
        add_forward_chain(builder, scenario.model, layout, reads, towers.back(),
                          {batch_op, scenario.model.input_bytes_per_sample * sub_batch}, sub_batch);
    Op loss;
    loss.name = devices.size() > 1 ? "loss/tower" + std::to_string(k) : "loss";
    loss.kind = OpKind::kLoss;
    loss.device = devices[k];
    loss.role = role;
    loss.compute_flop = t.costs.loss_flop_per_sample * sub_batch;
    loss_gradients.push_back(
        {builder.add(std::move(loss), {{forward.back(), logits_bytes}}), logits_bytes});
  }
  ClientGraph graph;
  graph.role = role;
  graph.samples_per_step = samples;
  graph.input_op = input_op;
  if (t.forward_only) {  // the step ends with the loss: nothing is sent back, nothing updated
    account_forward_memory(builder, plan, scenario.model, layout, reads, towers);
  } else {
    graph.global_step_op = add_gradient_updates(builder, scenario, plan, layout, reads, towers,
                                                loss_gradients, devices, role);
  }
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
  // Samples one global step applies: R worker gradients, each of its worker's whole batch (the
  // mean worker's when workers have different numbers of towers or batches: exact when R = T, the
  // expectation over which workers' gradients a step takes when R < T).
  double worker_samples = 0;
  for (const ClientGraph& worker : plan.clients) worker_samples += worker.samples_per_step;
  worker_samples /= double(plan.clients.size());
  sr.chief_graph = chief_sync_graph(scenario, plan, layout, role,
                                    int(std::lround(spec.replicas_to_aggregate * worker_samples)));
}

// training.start_times: each worker's task is launched at its time. The chief (worker 0) creates
// the session and initialises the variables, its model ready at its launch (the initialisers'
// time is not modelled); every other worker waits in SessionManager.wait_for_session, checking for
// the ready model when it comes up and then every recovery_wait (training.recovery's, TF's 30 s
// default), so one launched before the chief starts training at its first poll after it. The
// chief's sync op (SyncReplicas' queue runner) starts with the chief.
void start_at_launch_times(const TrainingSpec& t, Plan& plan) {
  const double ready_s = t.start_times_s.front();
  for (size_t w = 0; w < plan.clients.size(); ++w) {
    ClientGraph& g = plan.clients[w];
    g.launch_offset_s = t.start_times_s[w];
    g.start_offset_s =
        w == 0 ? ready_s
               : first_model_poll_s(g.launch_offset_s, ready_s, t.recovery.recovery_wait_s);
    if (g.start_offset_s > g.launch_offset_s) {
      char text[256];
      std::snprintf(text, sizeof text,
                    "%s is launched at %.6g s, before the chief's model is ready at %.6g s: "
                    "polling for it every %.6g s (SessionManager.wait_for_session, "
                    "training.recovery.recovery_wait), it starts training at %.6g s",
                    plan.roles[size_t(g.role)].name.c_str(), g.launch_offset_s, ready_s,
                    t.recovery.recovery_wait_s, g.start_offset_s);
      plan.notes.push_back(text);
    }
  }
  if (plan.sync == "sync") {
    plan.sync_replicas.chief_graph.start_offset_s = ready_s;
    plan.sync_replicas.chief_graph.launch_offset_s = ready_s;
  }
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
  for (size_t w = 0; w < t.workers.size(); ++w) {
    std::vector<int> devices;
    std::vector<int> batches;
    for (int replica : t.workers[w]) {
      devices.push_back(plan.platform.find_device(t.replicas[size_t(replica)]));
      REPLISIM_ASSERT(devices.back() >= 0, "validated replica device not found");
      batches.push_back(t.batch_of_replica(size_t(replica)));
    }
    const int role = add_role(plan, "worker" + std::to_string(w), RoleKind::kWorker,
                              devices.front(), /*chief=*/w == 0);
    plan.clients.push_back(worker_graph(scenario, plan, layout, devices, batches, role));
    if (!t.data_steps_per_worker.empty())
      plan.clients.back().data_steps = t.data_steps_per_worker[w];
  }
  if (t.sync.synchronous) add_sync_replicas(scenario, plan, layout);
  if (t.sync.distributed_replicated) plan.sync = kDistributedReplicated;
  add_faults(scenario, plan);
  account_ps_memory(plan, scenario);
  apply_compute_scale(plan, options);
  if (!t.start_times_s.empty()) {
    start_at_launch_times(t, plan);
    return plan;
  }
  // The chief starts first; the others within the stagger, as TF workers come up one by one
  // after the chief has initialised the variables (seeded; docs/scenario-format.md).
  const double stagger_s = t.jitter.startup_stagger_s == kAutoStagger ? estimated_round_time_s(plan)
                                                                      : t.jitter.startup_stagger_s;
  for (size_t w = 1; w < plan.clients.size(); ++w) {
    plan.clients[w].start_offset_s = stagger_s * uniform01(options.seed, 1, w);
    plan.clients[w].launch_offset_s = plan.clients[w].start_offset_s;
  }
  return plan;
}

}  // namespace replisim::core
