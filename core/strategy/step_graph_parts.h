// Building blocks the strategy compilers share: the model cut into layer groups and PS slices,
// variable reads, forward and backward chains, applies, and the memory each device needs.
#pragma once

#include <vector>

#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/strategy/graph_builder.h"
#include "core/strategy/layer_groups.h"

namespace replisim::core::strategy_detail {

// The variables of one layer group held by one PS shard: read, sent and applied as one tensor.
struct Slice {
  int shard = -1;
  std::vector<int> variables;  // indices into Plan::variables
  double bytes = 0;
  double params = 0;
};

// The model as the step graphs see it: groups (granularity, placement) and their PS slices.
struct ModelLayout {
  std::vector<LayerGroup> groups;
  std::vector<std::vector<Slice>> slices;  // per group, in shard order
  // Per group: its forward and backward passes' entries in Plan::gemm_lists (Op::gemms); -1 when
  // a layer of the group has no GEMM shape (Layer::gemm).
  std::vector<int> forward_gemms;
  std::vector<int> backward_gemms;
};

// `layer_device`: empty, or the model-parallel device of every layer (training.placement).
// Appends each group's per-sample GEMM lists to plan.gemm_lists.
ModelLayout layout_model(const Scenario& scenario, Plan& plan,
                         const std::vector<int>& layer_device = {});

// Where each group of one tower/worker runs, and the samples it computes per step.
struct GroupPlacement {
  std::vector<int> device;  // per group
  std::vector<int> role;    // per group
  int batch = 0;            // samples per step: its replica's (TrainingSpec::batch_of_replica)
};
GroupPlacement on_one_device(const ModelLayout& layout, int device, int role, int batch);

// The input pipeline's op for `samples` on CPU device `cpu`, owned by `role` (input_flop's
// cost): a step graph's first op. Returns its index.
int add_input_op(StepGraphBuilder& builder, const Scenario& scenario, const Plan& plan, int cpu,
                 int role, int samples);

// One read op per slice on its PS device: reads[g][s].
std::vector<std::vector<int>> add_reads(StepGraphBuilder& builder, const Plan& plan,
                                        const ModelLayout& layout);

// A worker with several towers keeps a local copy of each slice on `device` (its CPU): one read
// from the PS per step, then every tower reads the copy over its own link (tf_cnn_benchmarks'
// distributed_replicated). Accounts the copy and (`gradient_sum`) the towers' gradient sum (the
// same bytes) in `device`'s memory. Returns local[g][s], shaped as `reads`.
std::vector<std::vector<int>> add_local_copies(StepGraphBuilder& builder, Plan& plan,
                                               const ModelLayout& layout,
                                               const std::vector<std::vector<int>>& reads,
                                               int device, int role, bool gradient_sum = true);

// Forward of each group: needs its slices' variables and the previous group's output (`input`
// for the first). Returns the forward op of each group.
std::vector<int> add_forward_chain(StepGraphBuilder& builder, const Model& model,
                                   const ModelLayout& layout,
                                   const std::vector<std::vector<int>>& reads,
                                   const GroupPlacement& where, Edge input, int samples);

// Backward from the loss gradient down to the first group (2 x forward FLOP). Returns the
// backward op of each group; its output is that group's gradient.
std::vector<int> add_backward_chain(StepGraphBuilder& builder, const Model& model,
                                    const ModelLayout& layout,
                                    const std::vector<std::vector<int>>& reads,
                                    const GroupPlacement& where, Edge loss_gradient, int samples);

// The backward pass of every tower (tower k starting from `loss_gradient[k]`), then the sum of
// each slice's gradients over the towers on `device` (owned by `role`; aggregate_flop_per_param
// x params x towers). With one tower, nothing to sum: the gradient itself. Returns, per group
// and slice, the op whose output is the gradient to apply. Accounts the towers' memory.
// `device`: one device for every sum, or (several) slice i's sum on device[i mod size], slices
// counted over the groups in order.
std::vector<std::vector<int>> add_backward_and_aggregate(
    StepGraphBuilder& builder, const Scenario& scenario, Plan& plan, const ModelLayout& layout,
    const std::vector<std::vector<int>>& reads, const std::vector<GroupPlacement>& towers,
    const std::vector<Edge>& loss_gradient, const std::vector<int>& device, int role);

// distributed_replicated, one worker's end of step (tf_cnn_benchmarks 9165a70,
// VariableMgrDistributedReplicated.append_apply_gradients_ops and add_sync_queues_and_barrier):
// per slice i, in order, the worker applies its gradient (gradient[g][s]) to the PS variable,
// waits at barrier i on PS task (i + 1) mod P (the benchmark's counter is bumped before use),
// reads the value into `cpu` and assigns it to each of `towers`' copies; after every assign it
// increments global_step (on its PS) and waits at the step-end barrier (PS (slices + 1) mod P).
// Returns the increment op.
int add_distributed_replicated_updates(StepGraphBuilder& builder, const Scenario& scenario,
                                       const Plan& plan, const ModelLayout& layout,
                                       const std::vector<std::vector<int>>& gradient,
                                       const std::vector<int>& towers, int cpu, int role);

// Applies each slice on its PS, the gradient coming from `gradient[g][s]` (slice bytes), then
// increments global_step on PS 0 after all of them (TF's Optimizer.apply_gradients). Returns the
// increment op.
int add_applies(StepGraphBuilder& builder, const Scenario& scenario, const Plan& plan,
                const ModelLayout& layout, const std::vector<std::vector<int>>& gradient);

// Synchronous training, worker side: each slice's gradient (from `gradient[g][s]`) goes into its
// accumulator on the PS (kAccumulate: one add per parameter), then, after all of them, the worker
// dequeues a token on global_step's PS and assigns it to its local_step on `device` (an int64).
// Returns the kLocalStep op.
int add_accumulates_and_token(StepGraphBuilder& builder, const Plan& plan,
                              const ModelLayout& layout,
                              const std::vector<std::vector<int>>& gradient, int device, int role);

// Synchronous training, the chief's sync op: take every slice's aggregated gradient, apply it,
// increment global_step after all applies, then enqueue the tokens. `role` is the
// kSyncQueueRunner; `samples_per_step` the samples one global step applies.
ClientGraph chief_sync_graph(const Scenario& scenario, const Plan& plan, const ModelLayout& layout,
                             int role, int samples_per_step);

// Adds to plan.memory what one tower/worker keeps on its devices: the weights it reads (unless
// it reads them where they are: `read_device[g][s]`, the device of the op each slice is read
// from, is its own), their gradients, and every layer's output for `samples` (kept for the
// backward pass), plus the input batch on the first group's device.
void account_replica_memory(Plan& plan, const Model& model, const ModelLayout& layout,
                            const GroupPlacement& where, int samples,
                            const std::vector<std::vector<int>>& read_device);
// Adds to plan.memory the variables and optimizer slots each PS device holds (no slots with
// forward-only steps: no optimizer is built).
void account_ps_memory(Plan& plan, const Scenario& scenario);

// Forward-only steps (Plan::forward_only): adds to plan.memory what each of `towers` keeps for
// its batch: the weights it reads (unless it reads them where they are: `reads`, ops of
// `builder`, on its own device), and, per device, its largest group's output and the input batch
// (a forward pass frees each layer's output once the next layer has read it, and keeps no
// gradient: a lower bound, as account_replica_memory's).
void account_forward_memory(const StepGraphBuilder& builder, Plan& plan, const Model& model,
                            const ModelLayout& layout, const std::vector<std::vector<int>>& reads,
                            const std::vector<GroupPlacement>& towers);

}  // namespace replisim::core::strategy_detail
