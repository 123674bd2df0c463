// In-graph replication: one client on `training.client` builds one graph over all towers. Its CPU
// runs the input pipeline for the whole batch and the split, receives every tower's logits,
// computes the loss, sends the loss gradient back, and sums every tower's gradients before the
// PS applies them (the seed: everything before the split and after the compute runs on the
// client, a bottleneck). Each tower reads the variables from their PS. A step ends when every
// tower and every apply is done, so the slowest tower sets the pace.
#include "core/error.h"
#include "core/strategy.h"

namespace replisim::core {

using namespace strategy_detail;

Plan compile_in_graph(const Scenario& scenario, const CompileOptions& options) {
  Plan plan = plan_skeleton(scenario, "in_graph", options);
  const TrainingSpec& t = scenario.training;
  const Model& model = scenario.model;
  const int sub_batch = t.batch_per_replica;
  const int towers = int(t.replicas.size());
  const int batch = sub_batch * towers;
  const int client_machine = [&] {
    for (size_t m = 0; m < plan.platform.machines.size(); ++m) {
      if (plan.platform.machines[m].name == t.client) return int(m);
    }
    return -1;
  }();
  REPLISIM_ASSERT(client_machine >= 0, "validated client machine not found");
  const int cpu = plan.platform.cpu_of_machine(client_machine);
  const int client = add_role(plan, "client", RoleKind::kClient, cpu, /*chief=*/true);
  StepGraphBuilder builder(plan.platform, t.costs.per_message_overhead_s);

  Op input;
  input.name = "input";
  input.kind = OpKind::kInput;
  input.device = cpu;
  input.role = client;
  input.compute_flop = input_flop(scenario, plan.platform, cpu, batch);
  const int input_op = builder.add(std::move(input), {});
  Op split;
  split.name = "split";
  split.kind = OpKind::kSplit;
  split.device = cpu;
  split.role = client;
  const int split_op = builder.add(std::move(split), {{input_op, 0.0}});
  const std::vector<int> reads = add_variable_reads(builder, plan);

  const double logits_bytes = model.layers.back().activation_bytes_per_sample * sub_batch;
  std::vector<int> tower_device, tower_role;
  std::vector<Edge> logits;
  for (int k = 0; k < towers; ++k) {
    const int device = plan.platform.find_device(t.replicas[size_t(k)]);
    REPLISIM_ASSERT(device >= 0, "validated replica device not found");
    const int role = add_role(plan, "tower" + std::to_string(k), RoleKind::kTower, device);
    tower_device.push_back(device);
    tower_role.push_back(role);
    const std::vector<int> forward =
        add_forward_chain(builder, scenario, plan, device, role,
                          {split_op, model.input_bytes_per_sample * sub_batch}, reads, sub_batch);
    logits.push_back({forward.back(), logits_bytes});
  }
  Op loss;
  loss.name = "loss";
  loss.kind = OpKind::kLoss;
  loss.device = cpu;
  loss.role = client;
  loss.compute_flop = t.costs.loss_flop_per_sample * batch;
  const int loss_op = builder.add(std::move(loss), logits);

  const size_t layers = model.layers.size();
  std::vector<std::vector<Edge>> gradients(layers);
  for (int k = 0; k < towers; ++k) {
    const std::vector<int> backward =
        add_backward_chain(builder, scenario, plan, tower_device[size_t(k)], tower_role[size_t(k)],
                           {loss_op, logits_bytes}, reads, sub_batch);
    for (size_t l = 0; l < layers; ++l) {
      gradients[l].push_back({backward[l], plan.variables[l + 1].bytes});
    }
  }
  std::vector<int> aggregated(layers);
  for (size_t l = 0; l < layers; ++l) {
    Op aggregate;
    aggregate.name = "aggregate/" + model.layers[l].name;
    aggregate.kind = OpKind::kAggregate;
    aggregate.device = cpu;
    aggregate.role = client;
    aggregate.compute_flop = t.costs.aggregate_flop_per_param * model.layers[l].params * towers;
    aggregated[l] = builder.add(std::move(aggregate), gradients[l]);
  }
  const int increment = add_applies(builder, scenario, plan, aggregated);

  ClientGraph graph;
  graph.role = client;
  graph.samples_per_step = batch;
  graph.input_op = input_op;
  graph.global_step_op = increment;
  graph.ops = builder.take();
  plan.clients.push_back(std::move(graph));
  return plan;
}

}  // namespace replisim::core
