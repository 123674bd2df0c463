// Strategy compilers: a validated Scenario in, a Plan out. Registered by name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/strategy/graph_builder.h"
#include "core/strategy/strategy_names.h"

namespace replisim::core {

// How large a plan may get: refused before it is built (estimate_plan) above either bound. A
// scenario of a few hundred bytes can describe a cluster whose plan would not fit in memory
// (issue 37: 361 bytes grew `plan` to 6 GiB in 15 s).
struct PlanBudget {
  double max_ops = 10e6;                        // --max-plan-ops
  double max_bytes = 4.0 * 1024 * 1024 * 1024;  // --max-plan-memory (4 GiB)
};

struct CompileOptions {
  uint64_t seed = 1;  // start-up stagger and per-step jitter draws (random.h)
  // Every op's compute is multiplied by this (--scale-compute): a large model's plan on a small
  // machine, identical but for its FLOP, so that a prediction and a real run share one plan.
  double compute_scale = 1;
  PlanBudget budget{};
};

// The size of a plan before it is built, from the scenario's counts alone (O(machines + layers)).
// ops: an estimate from the strategy's structure per tower, per worker and per variable slice
// (forward and backward per layer group and tower; read, send/receive, aggregate, apply per slice
// and worker); on the bundled scenarios it lies between 0.8 and 2.5 times the compiled plan's
// count (tests/core/strategy/plan_estimate_test.cpp). bytes: ops at kPlanBytesPerOp (in-graph:
// kInGraphPlanBytesPerOp), devices at kPlanBytesPerDevice. The plan only: a simulation of it
// holds more (its flows, events and trace), a few times as much at the largest sizes.
struct PlanEstimate {
  double devices = 0;
  double roles = 0;
  double towers = 0;
  double workers = 0;  // clients: between-graph workers, or the one in-graph client
  double layer_groups = 0;
  double variable_slices = 0;  // trainable variables, cut per PS where partitioned
  double ops = 0;
  double bytes = 0;
};
// Memory of one op of a plan (its struct, name and input list) and of one device (its spec,
// links and routes): `replisim plan --strategy between_graph` of 64 machines of 8 GPUs of
// Inception v3 held 482,112 ops of 576 devices in 157 MB (326 bytes an op); building an in-graph
// client's single graph peaks higher (the op vector's growth: 1.7 kB an op; a review's 2,280
// machines of 8 GPUs of ResNet-50, estimated at 9.9 M ops, peaked at 8.7 GB), so in-graph plans
// count kInGraphPlanBytesPerOp.
inline constexpr double kPlanBytesPerOp = 400;
inline constexpr double kInGraphPlanBytesPerOp = 1800;
inline constexpr double kPlanBytesPerDevice = 1000;
PlanEstimate estimate_plan(const Scenario& scenario, const std::string& strategy);
// Throws InputError naming the flag that raises the bound when `estimate` is above `budget`,
// with the estimate and what it was made of, in one line.
void require_within_budget(const PlanEstimate& estimate, const PlanBudget& budget);

// A strategy of the registry: its name (the --strategy value, a trace's and a sweep row's
// `strategy`), a line for help texts, its compiler, and what the planning tools need to know of
// its roles without naming it.
struct Strategy {
  std::string name;
  std::string description;
  std::function<Plan(const Scenario&, const CompileOptions&)> compile;
  // One client drives every replica (in-graph): a sweep row counts 1 worker and names the
  // client's machine, whose NIC is "client nic".
  bool one_client = false;
  // The role kind whose step breakdown describes a replica in a sweep row: "tower" or "worker".
  std::string replica_role_kind = "worker";
  // Synchronous training through SyncReplicasOptimizer (and so backup workers) applies.
  bool sync_replicas = false;
  // The strategy's own plan rules beyond validate_plan's (check_plan_rules calls it): throws
  // InputError naming the file and JSON path. Null: none.
  std::function<void(const Plan&, const std::string& file)> check_plan;
  // Every replica device is a client of its own and no parameter server runs (all-reduce ranks,
  // Horovod's one process per GPU): a sweep row counts one worker per replica device and no PS.
  bool rank_per_replica = false;
};

// "in_graph", "between_graph" and "allreduce", in that order.
const std::vector<Strategy>& strategies();
const Strategy* find_strategy(const std::string& name);

// Compiles `scenario` with the named strategy; an unknown name throws InputError listing the
// valid ones (`flag` names the flag or field that gave it).
Plan compile_plan(const Scenario& scenario, const std::string& strategy,
                  const CompileOptions& options, const std::string& flag = "--strategy");

// Strategy entry points (strategy_in_graph.cpp, strategy_between_graph.cpp,
// strategy_allreduce.cpp).
Plan compile_in_graph(const Scenario& scenario, const CompileOptions& options);
Plan compile_between_graph(const Scenario& scenario, const CompileOptions& options);
Plan compile_allreduce(const Scenario& scenario, const CompileOptions& options);

// A rough duration of one step of every client at once, used to scale the "auto" start-up
// stagger: the larger of (a) the slowest client's compute plus its transfers, each at its route's
// bandwidth, with no overlap, and (b) the busiest link direction's bytes for one step of every
// client divided by its bandwidth. Seconds; 0 for a plan without work.
double estimated_round_time_s(const Plan& plan);

// Parts shared by the compilers (strategy.cpp).
namespace strategy_detail {

// A plan with the platform, PS roles and variables (global_step first, on PS shard 0 as TF's
// replica_device_setter puts it when it is created before the model; then one variable per layer
// placed by the scenario's policy).
Plan plan_skeleton(const Scenario& scenario, const std::string& strategy,
                   const CompileOptions& options);
int add_role(Plan& plan, const std::string& name, RoleKind kind, int device, bool chief = false);
// Resolves the scenario's faults against the plan (plan.faults, notes for faults hitting no role)
// and sets plan.checkpoints and plan.recovery. A role or machine fault kills between-graph
// workers (kind "role") or, when it hits a PS, the in-graph client or a tower, fails the job
// (kind "job").
void add_faults(const Scenario& scenario, Plan& plan);
// Multiplies every op's compute_flop by options.compute_scale and says so in the plan's notes
// (nothing when it is 1). Call before anything derives a time from the FLOP (the stagger).
void apply_compute_scale(Plan& plan, const CompileOptions& options);
// Rules the strategies' check_plan share (strategy_plan_rules.cpp), each throwing InputError:
// the plan has a parameter server; every async client names its global_step increment; the
// plan trains with neither "sync" nor "distributed_replicated".
void require_parameter_servers(const Plan& plan, const std::string& file);
void require_global_step_increments(const Plan& plan, const std::string& file);
void refuse_sync_replicas(const Plan& plan, const std::string& file);
// Every worker of a distributed_replicated plan passes a barrier (else it trains as async).
void require_barriers(const Plan& plan, const std::string& file);
// "layer" when every layer is its own group, else "<N> group(s)" (what the report says ran).
std::string granularity_label(const Scenario& scenario, size_t groups);
// FLOP that makes a CPU spend batch / input_samples_per_s seconds on the input pipeline.
double input_flop(const Scenario& scenario, const Platform& platform, int cpu_device, int samples);
// Device and role of the PS shard holding variable `v`.
int variable_device(const Plan& plan, int v);
int variable_role(const Plan& plan, int v);

}  // namespace strategy_detail
}  // namespace replisim::core
