// All-reduce (Horovod, 2017): no parameter server. Every replica device is a rank with a worker of
// its own (Horovod runs one process per GPU) and a full copy of the variables. Each step a worker
// reads its batch, runs forward, loss and backward, and, as backward produces each layer group's
// gradient, marks it ready for the all-reduce (kAllReduce; core/runtime/collectives.h fuses and
// reduces them); each reduced gradient is applied to the worker's own copy at once (Horovod's
// DistributedOptimizer applies after the allreduce of every gradient returns, TF's
// apply_gradients), then the worker increments its own global_step. Every rank applies the same
// averaged gradients, so the copies stay equal; rank 0 is the chief, whose increment counts the
// job's global steps.
#include <algorithm>
#include <map>
#include <string>

#include "core/base/error.h"
#include "core/base/random.h"
#include "core/base/units.h"
#include "core/hardware/collective_transport.h"
#include "core/strategy/step_graph_parts.h"
#include "core/strategy/strategy.h"

namespace replisim::core {

using namespace strategy_detail;

namespace {

DeviceMemory& device_memory(Plan& plan, int device) {
  for (DeviceMemory& m : plan.memory) {
    if (m.device == device) return m;
  }
  plan.memory.push_back({device, 0, 0, 0, 0});
  return plan.memory.back();
}

// One rank's step graph on `device` for `samples` per step: input on its machine's CPU, forward,
// loss, backward, one all-reduce per layer group's gradient (in the order backward produces them:
// last group first), an apply per group on the device, then the local global_step increment.
ClientGraph rank_graph(const Scenario& scenario, Plan& plan, const ModelLayout& layout, int device,
                       int samples, int role, bool chief) {
  const TrainingSpec& t = scenario.training;
  const int cpu = plan.platform.cpu_of_machine(plan.platform.devices[size_t(device)].machine);
  StepGraphBuilder builder(plan);
  const int input_op = add_input_op(builder, scenario, plan, cpu, role, samples);
  const GroupPlacement where = on_one_device(layout, device, role, samples);
  const std::vector<std::vector<int>> no_reads(layout.groups.size());
  const std::vector<int> forward =
      add_forward_chain(builder, scenario.model, layout, no_reads, where,
                        {input_op, scenario.model.input_bytes_per_sample * samples}, samples);
  const double logits_bytes = layout.groups.back().activation_bytes_per_sample * samples;
  Op loss;
  loss.name = "loss";
  loss.kind = OpKind::kLoss;
  loss.device = device;
  loss.role = role;
  loss.compute_flop = t.costs.loss_flop_per_sample * samples;
  const int loss_op = builder.add(std::move(loss), {{forward.back(), logits_bytes}});
  const std::vector<int> backward = add_backward_chain(builder, scenario.model, layout, no_reads,
                                                       where, {loss_op, logits_bytes}, samples);
  std::vector<Edge> applied;
  for (size_t g = layout.groups.size(); g-- > 0;) {
    if (layout.slices[g].empty()) continue;  // a group without variables has no gradient
    const Slice& slice = layout.slices[g].front();
    Op reduce;
    reduce.name = "allreduce/" + layout.groups[g].name;
    reduce.kind = OpKind::kAllReduce;
    reduce.device = device;
    reduce.role = role;
    reduce.bytes = slice.bytes;
    reduce.variable = slice.variables.front();
    const int reduced = builder.add(std::move(reduce), {{backward[g], slice.bytes, 1}});
    Op apply;
    apply.name = "apply/" + layout.groups[g].name;
    apply.kind = OpKind::kApply;
    apply.device = device;
    apply.role = role;
    apply.variable = slice.variables.front();
    apply.compute_flop = t.costs.apply_flop_per_param * slice.params;
    applied.push_back({builder.add(std::move(apply), {{reduced, slice.bytes}}), 0.0});
  }
  Op increment;
  increment.name = "global_step/increment";
  increment.kind = OpKind::kGlobalStepIncrement;
  increment.device = device;
  increment.role = role;
  const int increment_op = builder.add(std::move(increment), applied);

  account_replica_memory(plan, scenario.model, layout, where, samples, no_reads);
  DeviceMemory& m = device_memory(plan, device);
  for (const std::vector<Slice>& slices : layout.slices) {
    for (const Slice& s : slices) m.optimizer_bytes += s.bytes * t.optimizer.slots_per_param;
  }

  ClientGraph graph;
  graph.role = role;
  // One step applies the average of every rank's gradients: every rank's batch.
  graph.samples_per_step = 0;
  for (size_t r = 0; r < t.replicas.size(); ++r) graph.samples_per_step += t.batch_of_replica(r);
  graph.input_op = input_op;
  // Every rank increments its own global_step; the chief's counts the job's steps (they are equal).
  graph.global_step_op = chief ? increment_op : -1;
  graph.ops = builder.take();
  return graph;
}

CollectiveSpec collective_spec(const Scenario& scenario) {
  const AllReduceSpec& a = scenario.training.allreduce;
  const CollectivePreset* preset = find_collective_preset(a.preset);
  const CollectiveTransport* transport = find_collective_transport(a.transport);
  REPLISIM_ASSERT(preset != nullptr && transport != nullptr, "validated all-reduce names");
  CollectiveSpec cs;
  cs.preset = a.preset;
  cs.algorithm = a.algorithm;
  cs.fusion_threshold_bytes =
      a.fusion_threshold_bytes >= 0 ? a.fusion_threshold_bytes : preset->fusion_threshold_bytes;
  cs.cycle_time_s = a.cycle_time_s >= 0 ? a.cycle_time_s : preset->cycle_time_s;
  cs.transport = a.transport;
  cs.step_latency_s = a.step_latency_s >= 0 ? a.step_latency_s : transport->step_latency_s;
  cs.local_step_latency_s = transport->local_step_latency_s;
  cs.launch_s = transport->launch_s;
  cs.streams_per_peer = std::min(64, std::max(1, scenario.cluster.transport.connections_per_peer));
  cs.elastic = a.elastic;
  cs.rendezvous_s = std::max(0.0, a.rendezvous_s);
  return cs;
}

}  // namespace

Plan compile_allreduce(const Scenario& given, const CompileOptions& options) {
  // Forward-only steps have no gradient to average: every rank would read its own copy and share
  // nothing, which is no distributed run of the model (docs/scenario-format.md).
  if (given.training.forward_only) {
    throw InputError(given.file_of("/training/forward_only"), "/training/forward_only",
                     "strategy allreduce averages gradients; forward-only steps have none (every "
                     "rank would run alone): use between_graph or in_graph");
  }
  // No parameter server: the scenario's PS tasks (if any) are not started, so that one scenario
  // compares PS and all-reduce on the same cluster.
  Scenario scenario = given;
  const size_t unused_ps = scenario.training.ps.size();
  scenario.training.ps.clear();
  Plan plan = plan_skeleton(scenario, "allreduce", options);
  plan.sync = kAllReduceSync;
  const TrainingSpec& t = scenario.training;
  if (unused_ps > 0) {
    plan.notes.push_back("allreduce has no parameter server: the scenario's " +
                         std::to_string(unused_ps) +
                         " PS task(s) (given, or the default on the client's CPU) are not started");
  }
  if (!t.placement.empty()) {
    plan.notes.push_back(
        "training.placement applies to in_graph only: each allreduce rank runs the whole model "
        "on its replica device");
  }
  if (t.sync.synchronous || t.sync.distributed_replicated) {
    plan.notes.push_back("training.sync applies to between_graph only: all-reduce is synchronous");
  }
  if (!t.data_steps_per_worker.empty()) {
    plan.notes.push_back(
        "training.data_steps_per_worker applies to between_graph only: every allreduce rank runs "
        "every step (a rank out of data would stall every collective)");
  }
  if (t.workers.size() != t.replicas.size()) {
    plan.notes.push_back(
        "allreduce runs one rank per replica device (Horovod: one process per "
        "GPU); the scenario's multi-tower workers are not used");
  }
  const ModelLayout layout = layout_model(scenario, plan);
  plan.granularity = granularity_label(scenario, layout.groups.size());
  plan.collective = collective_spec(scenario);
  for (size_t r = 0; r < t.replicas.size(); ++r) {
    const int device = plan.platform.find_device(t.replicas[r]);
    REPLISIM_ASSERT(device >= 0, "validated replica device not found");
    const int role =
        add_role(plan, "worker" + std::to_string(r), RoleKind::kWorker, device, /*chief=*/r == 0);
    plan.clients.push_back(
        rank_graph(scenario, plan, layout, device, t.batch_of_replica(r), role, r == 0));
    plan.collective.ranks.push_back(int(r));
  }
  if (plan.collective.algorithm == "hierarchical") {
    // Horovod's hierarchical all-reduce needs as many ranks on every machine.
    std::map<int, int> per_machine;
    for (const ClientGraph& g : plan.clients) {
      ++per_machine[plan.platform.devices[size_t(plan.roles[size_t(g.role)].device)].machine];
    }
    for (const auto& [machine, count] : per_machine) {
      if (count == per_machine.begin()->second) continue;
      throw InputError(
          scenario.file_of("/training/allreduce/algorithm"), "/training/allreduce/algorithm",
          "hierarchical all-reduce needs the same number of ranks on every machine (Horovod's "
          "homogeneity check): " +
              plan.platform.machines[size_t(per_machine.begin()->first)].name + " has " +
              std::to_string(per_machine.begin()->second) + ", " +
              plan.platform.machines[size_t(machine)].name + " has " + std::to_string(count));
    }
  }
  add_faults(scenario, plan);
  apply_compute_scale(plan, options);
  // horovodrun starts every rank together; hvd.init() and the initial broadcast of the variables
  // from rank 0 make them begin as one (the seeded stagger would only delay the first ring).
  // Ranks launched at different times (training.start_times) wait in hvd.init() for the last.
  if (!t.start_times_s.empty()) {
    if (t.workers.size() != t.replicas.size()) {
      throw InputError(scenario.file_of("/training/start_times"), "/training/start_times",
                       "start_times has one entry per worker, and allreduce runs one rank per "
                       "replica device: give one replica per worker");
    }
    const double last_s = *std::max_element(t.start_times_s.begin(), t.start_times_s.end());
    for (size_t r = 0; r < plan.clients.size(); ++r) {
      plan.clients[r].launch_offset_s = t.start_times_s[r];
      plan.clients[r].start_offset_s = last_s;
    }
    plan.notes.push_back(
        "the ranks are launched at their start_times and wait in hvd.init() for "
        "the last, launched at " +
        format_quantity(last_s, Dimension::kTime) + ": every rank starts training then");
  }
  return plan;
}

}  // namespace replisim::core
