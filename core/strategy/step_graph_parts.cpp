#include "core/strategy/step_graph_parts.h"

#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "core/strategy/strategy.h"

namespace replisim::core::strategy_detail {
namespace {

int device_of_shard(const Plan& plan, int shard) {
  return plan.roles[size_t(plan.ps_roles[size_t(shard)])].device;
}

DeviceMemory& memory_of(Plan& plan, int device) {
  for (DeviceMemory& m : plan.memory) {
    if (m.device == device) return m;
  }
  plan.memory.push_back(DeviceMemory{});
  plan.memory.back().device = device;
  return plan.memory.back();
}

std::string slice_name(const LayerGroup& group, const std::vector<Slice>& slices, size_t s) {
  return slices.size() == 1 ? group.name : group.name + "@ps" + std::to_string(slices[s].shard);
}

// An op on the PS holding slice `s` of group `g` (its read or its apply).
Op slice_op(const Plan& plan, const ModelLayout& layout, size_t g, size_t s, OpKind kind,
            const char* prefix) {
  const Slice& slice = layout.slices[g][s];
  Op op;
  op.name = prefix + slice_name(layout.groups[g], layout.slices[g], s);
  op.kind = kind;
  op.device = device_of_shard(plan, slice.shard);
  op.role = plan.ps_roles[size_t(slice.shard)];
  op.variable = slice.variables.front();
  return op;
}

// One op per slice on its PS (an apply or an accumulate), fed the slice's gradient (output
// 1 + s of gradient[g][s]); returns control edges from all of them.
std::vector<Edge> add_slice_ops(StepGraphBuilder& builder, const Plan& plan,
                                const ModelLayout& layout,
                                const std::vector<std::vector<int>>& gradient, OpKind kind,
                                const char* prefix, double flop_per_param) {
  std::vector<Edge> done;
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const std::vector<Slice>& slices = layout.slices[g];
    for (size_t s = 0; s < slices.size(); ++s) {
      Op op = slice_op(plan, layout, g, s, kind, prefix);
      op.compute_flop = flop_per_param * slices[s].params;
      const int id = builder.add(std::move(op), {{gradient[g][s], slices[s].bytes, int(s) + 1}});
      done.push_back({id, 0.0});  // control edge: TF sends a dead tensor across devices
    }
  }
  return done;
}

// An op (no compute) on the PS holding global_step.
Op op_on_global_step_ps(const Plan& plan, const char* name, OpKind kind) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.device = device_of_shard(plan, plan.variables[0].ps);
  op.role = plan.ps_roles[size_t(plan.variables[0].ps)];
  op.variable = 0;
  return op;
}

// The forward or backward op of group `g` where `where` places it, reading the group's slices.
int add_group_op(StepGraphBuilder& builder, const ModelLayout& layout,
                 const std::vector<std::vector<int>>& reads, const GroupPlacement& where, size_t g,
                 OpKind kind, double flop, const Edge& upstream) {
  Op op;
  op.name = (kind == OpKind::kForward ? "forward/" : "backward/") + layout.groups[g].name;
  op.kind = kind;
  op.device = where.device[g];
  op.role = where.role[g];
  op.compute_flop = flop;
  op.jittered = true;
  op.gemms = kind == OpKind::kForward ? layout.forward_gemms[g] : layout.backward_gemms[g];
  std::vector<Edge> inputs = {upstream};
  for (size_t s = 0; s < reads[g].size(); ++s) {
    inputs.push_back({reads[g][s], layout.slices[g][s].bytes});
  }
  return builder.add(std::move(op), inputs);
}

// Each group's forward GEMMs (its layers in order) and backward GEMMs (last layer first: the input
// gradient, then the weight gradient), per sample (PlanGemm), when every layer has its shape.
void add_gemm_lists(const Model& model, Plan& plan, ModelLayout& layout) {
  for (const LayerGroup& group : layout.groups) {
    bool known = !group.layers.empty();
    for (int l : group.layers) known = known && model.layers[size_t(l)].gemm.known();
    if (!known) {
      layout.forward_gemms.push_back(-1);
      layout.backward_gemms.push_back(-1);
      continue;
    }
    std::vector<PlanGemm> forward, backward;
    for (int l : group.layers) {
      const LayerGemm& g = model.layers[size_t(l)].gemm;
      forward.push_back({g.rows_per_sample, g.n, g.k, 'm'});
    }
    for (auto l = group.layers.rbegin(); l != group.layers.rend(); ++l) {
      const LayerGemm& g = model.layers[size_t(*l)].gemm;
      backward.push_back({g.rows_per_sample, g.k, g.n, 'm'});  // dX = dY W^T
      backward.push_back({g.k, g.n, g.rows_per_sample, 'k'});  // dW = X^T dY
    }
    layout.forward_gemms.push_back(int(plan.gemm_lists.size()));
    plan.gemm_lists.push_back(std::move(forward));
    layout.backward_gemms.push_back(int(plan.gemm_lists.size()));
    plan.gemm_lists.push_back(std::move(backward));
  }
}

double backward_flop_per_sample(const LayerGroup& g) {
  return g.backward_flop_per_sample > 0 ? g.backward_flop_per_sample
                                        : kBackwardToForwardFlopRatio * g.forward_flop_per_sample;
}

}  // namespace

ModelLayout layout_model(const Scenario& scenario, Plan& plan,
                         const std::vector<int>& layer_device) {
  ModelLayout layout;
  layout.groups = group_layers(scenario.model, scenario.training.granularity_groups, layer_device);
  add_gemm_lists(scenario.model, plan, layout);
  std::vector<std::vector<int>> variables_of_layer(scenario.model.layers.size());
  for (size_t v = 0; v < plan.variables.size(); ++v) {
    if (plan.variables[v].layer >= 0) {
      variables_of_layer[size_t(plan.variables[v].layer)].push_back(int(v));
    }
  }
  for (const LayerGroup& g : layout.groups) {
    std::vector<Slice> slices;
    for (int l : g.layers) {
      const Layer& layer = scenario.model.layers[size_t(l)];
      const double layer_bytes = layer.params * scenario.model.bytes_per_param;
      for (int variable : variables_of_layer[size_t(l)]) {
        const Variable& v = plan.variables[size_t(variable)];
        Slice* slice = nullptr;
        for (Slice& s : slices) {
          if (s.shard == v.ps) slice = &s;
        }
        if (slice == nullptr) {
          slices.push_back(Slice{v.ps, {}, 0, 0});
          slice = &slices.back();
        }
        slice->variables.push_back(variable);
        slice->bytes += v.bytes;
        // A partition holds its share of the layer's parameters.
        slice->params += layer_bytes > 0 ? layer.params * v.bytes / layer_bytes : 0.0;
      }
    }
    std::sort(slices.begin(), slices.end(),
              [](const Slice& a, const Slice& b) { return a.shard < b.shard; });
    layout.slices.push_back(std::move(slices));
  }
  return layout;
}

GroupPlacement on_one_device(const ModelLayout& layout, int device, int role, int batch) {
  return {std::vector<int>(layout.groups.size(), device),
          std::vector<int>(layout.groups.size(), role), batch};
}

int add_input_op(StepGraphBuilder& builder, const Scenario& scenario, const Plan& plan, int cpu,
                 int role, int samples) {
  Op input;
  input.name = "input";
  input.kind = OpKind::kInput;
  input.device = cpu;
  input.role = role;
  input.compute_flop = input_flop(scenario, plan.platform, cpu, samples);
  return builder.add(std::move(input), {});
}

std::vector<std::vector<int>> add_reads(StepGraphBuilder& builder, const Plan& plan,
                                        const ModelLayout& layout) {
  std::vector<std::vector<int>> reads(layout.groups.size());
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    for (size_t s = 0; s < layout.slices[g].size(); ++s) {
      reads[g].push_back(
          builder.add(slice_op(plan, layout, g, s, OpKind::kReadVariable, "read/"), {}));
    }
  }
  return reads;
}

std::vector<std::vector<int>> add_local_copies(StepGraphBuilder& builder, Plan& plan,
                                               const ModelLayout& layout,
                                               const std::vector<std::vector<int>>& reads,
                                               int device, int role, bool gradient_sum) {
  std::vector<std::vector<int>> local(layout.groups.size());
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    for (size_t s = 0; s < layout.slices[g].size(); ++s) {
      Op copy;
      copy.name = "local/" + slice_name(layout.groups[g], layout.slices[g], s);
      copy.kind = OpKind::kReadVariable;
      copy.device = device;
      copy.role = role;
      copy.variable = layout.slices[g][s].variables.front();
      local[g].push_back(builder.add(std::move(copy), {{reads[g][s], layout.slices[g][s].bytes}}));
      DeviceMemory& m = memory_of(plan, device);
      m.weights_bytes += layout.slices[g][s].bytes;
      if (gradient_sum) m.gradients_bytes += layout.slices[g][s].bytes;
    }
  }
  return local;
}

std::vector<int> add_forward_chain(StepGraphBuilder& builder, const Model& /*model*/,
                                   const ModelLayout& layout,
                                   const std::vector<std::vector<int>>& reads,
                                   const GroupPlacement& where, Edge input, int samples) {
  std::vector<int> forward;
  Edge previous = input;
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const LayerGroup& group = layout.groups[g];
    const int id = add_group_op(builder, layout, reads, where, g, OpKind::kForward,
                                group.forward_flop_per_sample * samples, previous);
    forward.push_back(id);
    previous = {id, group.activation_bytes_per_sample * samples};
  }
  return forward;
}

std::vector<int> add_backward_chain(StepGraphBuilder& builder, const Model& /*model*/,
                                    const ModelLayout& layout,
                                    const std::vector<std::vector<int>>& reads,
                                    const GroupPlacement& where, Edge loss_gradient, int samples) {
  const size_t n = layout.groups.size();
  std::vector<int> backward(n, -1);
  Edge upstream = loss_gradient;
  for (size_t g = n; g-- > 0;) {
    backward[g] = add_group_op(builder, layout, reads, where, g, OpKind::kBackward,
                               backward_flop_per_sample(layout.groups[g]) * samples, upstream);
    // The gradient with respect to this group's input has the shape of the group below's output.
    const double below = g > 0 ? layout.groups[g - 1].activation_bytes_per_sample * samples : 0.0;
    upstream = {backward[g], below};
  }
  return backward;
}

std::vector<std::vector<int>> add_backward_and_aggregate(
    StepGraphBuilder& builder, const Scenario& scenario, Plan& plan, const ModelLayout& layout,
    const std::vector<std::vector<int>>& reads, const std::vector<GroupPlacement>& towers,
    const std::vector<Edge>& loss_gradient, const std::vector<int>& device, int role) {
  REPLISIM_ASSERT(!device.empty(), "an aggregation device");
  size_t slice_number = 0;
  const TrainingSpec& t = scenario.training;
  std::vector<std::vector<std::vector<Edge>>> gradients(layout.groups.size());
  for (size_t g = 0; g < layout.groups.size(); ++g) gradients[g].resize(layout.slices[g].size());
  // Where each slice is read from: its PS variable, or a worker's local copy.
  std::vector<std::vector<int>> read_device(reads.size());
  for (size_t g = 0; g < reads.size(); ++g) {
    for (int op : reads[g]) read_device[g].push_back(builder.op(op).device);
  }
  for (size_t k = 0; k < towers.size(); ++k) {
    const std::vector<int> backward = add_backward_chain(
        builder, scenario.model, layout, reads, towers[k], loss_gradient[k], towers[k].batch);
    for (size_t g = 0; g < layout.groups.size(); ++g) {
      for (size_t s = 0; s < layout.slices[g].size(); ++s) {
        gradients[g][s].push_back({backward[g], layout.slices[g][s].bytes, int(s) + 1});
      }
    }
    account_replica_memory(plan, scenario.model, layout, towers[k], towers[k].batch, read_device);
  }
  std::vector<std::vector<int>> aggregated(layout.groups.size());
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    for (size_t s = 0; s < layout.slices[g].size(); ++s) {
      if (towers.size() == 1) {
        aggregated[g].push_back(gradients[g][s].front().op);
        continue;
      }
      Op aggregate;
      aggregate.name = "aggregate/" + slice_name(layout.groups[g], layout.slices[g], s);
      aggregate.kind = OpKind::kAggregate;
      aggregate.device = device[slice_number++ % device.size()];
      aggregate.role = role;
      aggregate.compute_flop =
          t.costs.aggregate_flop_per_param * layout.slices[g][s].params * double(towers.size());
      aggregated[g].push_back(builder.add(std::move(aggregate), gradients[g][s]));
    }
  }
  return aggregated;
}

int add_applies(StepGraphBuilder& builder, const Scenario& scenario, const Plan& plan,
                const ModelLayout& layout, const std::vector<std::vector<int>>& gradient) {
  const std::vector<Edge> applied =
      add_slice_ops(builder, plan, layout, gradient, OpKind::kApply, "apply/",
                    scenario.training.costs.apply_flop_per_param);
  Op increment = op_on_global_step_ps(plan, "global_step/increment", OpKind::kGlobalStepIncrement);
  return builder.add(std::move(increment), applied);
}

int add_distributed_replicated_updates(StepGraphBuilder& builder, const Scenario& scenario,
                                       const Plan& plan, const ModelLayout& layout,
                                       const std::vector<std::vector<int>>& gradient,
                                       const std::vector<int>& towers, int cpu, int role) {
  const size_t ps_count = plan.ps_roles.size();
  size_t barrier_counter = 0;
  auto barrier = [&](std::string name, int variable, const std::vector<Edge>& after) {
    const int shard = int(++barrier_counter % ps_count);
    Op op;
    op.name = "barrier/" + std::move(name);
    op.kind = OpKind::kBarrier;
    op.device = device_of_shard(plan, shard);
    op.role = plan.ps_roles[size_t(shard)];
    op.variable = variable;
    return builder.add(std::move(op), after);
  };
  std::vector<Edge> assigned;
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const std::vector<Slice>& slices = layout.slices[g];
    for (size_t s = 0; s < slices.size(); ++s) {
      const std::string name = slice_name(layout.groups[g], slices, s);
      Op apply = slice_op(plan, layout, g, s, OpKind::kApply, "apply/");
      apply.compute_flop = scenario.training.costs.apply_flop_per_param * slices[s].params;
      const int applied =
          builder.add(std::move(apply), {{gradient[g][s], slices[s].bytes, int(s) + 1}});
      // Control edges: TF sends a dead tensor across devices.
      const int passed = barrier(name, slices[s].variables.front(), {{applied, 0.0}});
      const int read = builder.add(slice_op(plan, layout, g, s, OpKind::kReadVariable, "read/"),
                                   {{passed, 0.0}});
      const int variable = slices[s].variables.front();
      Op local;
      local.name = "local/" + name;
      local.kind = OpKind::kReadVariable;
      local.device = cpu;
      local.role = role;
      local.variable = variable;
      const int value = builder.add(std::move(local), {{read, slices[s].bytes}});
      for (size_t k = 0; k < towers.size(); ++k) {
        Op assign;
        assign.name = "assign/" + name + (towers.size() > 1 ? "/tower" + std::to_string(k) : "");
        assign.kind = OpKind::kReadVariable;
        assign.device = towers[k];
        assign.role = role;
        assign.variable = variable;
        assigned.push_back({builder.add(std::move(assign), {{value, slices[s].bytes}}), 0.0});
      }
    }
  }
  Op increment = op_on_global_step_ps(plan, "global_step/increment", OpKind::kGlobalStepIncrement);
  const int incremented = builder.add(std::move(increment), assigned);
  barrier("step_end", -1, assigned);
  return incremented;
}

int add_accumulates_and_token(StepGraphBuilder& builder, const Plan& plan,
                              const ModelLayout& layout,
                              const std::vector<std::vector<int>>& gradient, int device, int role) {
  // ConditionalAccumulator.apply_grad sums the gradient into the accumulator: one add per element.
  constexpr double kAccumulateFlopPerParam = 1;
  const std::vector<Edge> accumulated = add_slice_ops(
      builder, plan, layout, gradient, OpKind::kAccumulate, "accumulate/", kAccumulateFlopPerParam);
  Op dequeue = op_on_global_step_ps(plan, "sync_token_q/dequeue", OpKind::kTokenDequeue);
  const int token = builder.add(std::move(dequeue), accumulated);
  Op assign;
  assign.name = "local_step/assign";
  assign.kind = OpKind::kLocalStep;
  assign.device = device;
  assign.role = role;
  constexpr double kTokenBytes = 8;  // the token is the int64 global_step
  return builder.add(std::move(assign), {{token, kTokenBytes}});
}

ClientGraph chief_sync_graph(const Scenario& scenario, const Plan& plan, const ModelLayout& layout,
                             int role, int samples_per_step) {
  StepGraphBuilder builder(plan);
  std::vector<std::vector<int>> taken(layout.groups.size());
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    for (size_t s = 0; s < layout.slices[g].size(); ++s) {
      taken[g].push_back(
          builder.add(slice_op(plan, layout, g, s, OpKind::kTakeGradient, "take_grad/"), {}));
    }
  }
  const int increment = add_applies(builder, scenario, plan, layout, taken);
  Op enqueue;
  enqueue.name = "sync_token_q/enqueue";
  enqueue.kind = OpKind::kTokenEnqueue;
  enqueue.device = builder.op(increment).device;
  enqueue.role = builder.op(increment).role;
  enqueue.variable = 0;
  builder.add(std::move(enqueue), {{increment, 0.0}});
  ClientGraph graph;
  graph.role = role;
  graph.samples_per_step = samples_per_step;
  graph.input_op = -1;
  graph.global_step_op = increment;
  graph.ops = builder.take();
  return graph;
}

void account_replica_memory(Plan& plan, const Model& model, const ModelLayout& layout,
                            const GroupPlacement& where, int samples,
                            const std::vector<std::vector<int>>& read_device) {
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    DeviceMemory& m = memory_of(plan, where.device[g]);
    for (size_t i = 0; i < layout.slices[g].size(); ++i) {
      const Slice& s = layout.slices[g][i];
      // No read (distributed_replicated): the tower keeps its own copy.
      if (i >= read_device[g].size() || read_device[g][i] != where.device[g]) {
        m.weights_bytes += s.bytes;
      }
      m.gradients_bytes += s.bytes;
    }
    m.activations_bytes += layout.groups[g].stored_activation_bytes_per_sample * samples;
  }
  if (!layout.groups.empty()) {
    memory_of(plan, where.device[0]).activations_bytes += model.input_bytes_per_sample * samples;
  }
}

void account_ps_memory(Plan& plan, const Scenario& scenario) {
  for (const Variable& v : plan.variables) {
    DeviceMemory& m = memory_of(plan, device_of_shard(plan, v.ps));
    m.weights_bytes += v.bytes;
    if (!scenario.training.forward_only) {
      m.optimizer_bytes += v.bytes * scenario.training.optimizer.slots_per_param;
    }
  }
}

void account_forward_memory(const StepGraphBuilder& builder, Plan& plan, const Model& model,
                            const ModelLayout& layout, const std::vector<std::vector<int>>& reads,
                            const std::vector<GroupPlacement>& towers) {
  for (const GroupPlacement& where : towers) {
    const int samples = where.batch;
    std::map<int, double> largest_output;  // device -> bytes
    for (size_t g = 0; g < layout.groups.size(); ++g) {
      DeviceMemory& m = memory_of(plan, where.device[g]);
      for (size_t i = 0; i < layout.slices[g].size(); ++i) {
        if (builder.op(reads[g][i]).device != where.device[g]) {
          m.weights_bytes += layout.slices[g][i].bytes;
        }
      }
      double& out = largest_output[where.device[g]];
      out = std::max(out, layout.groups[g].activation_bytes_per_sample * samples);
    }
    for (const auto& [device, bytes] : largest_output)
      memory_of(plan, device).activations_bytes += bytes;
    if (!layout.groups.empty()) {
      memory_of(plan, where.device[0]).activations_bytes += model.input_bytes_per_sample * samples;
    }
  }
}

}  // namespace replisim::core::strategy_detail
