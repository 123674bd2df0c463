// What to buy: the configurations a price catalog allows for one scenario (instance type, machine
// count, strategy, PS count, sync mode), closed-form bounds that prune those that cannot meet the
// target or the budget before anything is simulated, the job's cost and time of each simulated
// point (a spot point's time with its expected preemptions), and the cost-time Pareto front.
// `replisim recommend` (cli/recommend_command.cpp) simulates the survivors as sweep points;
// docs/capacity-planning.md#what-to-buy.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware/catalog.h"
#include "core/model/model.h"

namespace replisim::core {

// What the job must achieve: a sustained throughput, or a number of samples by a deadline.
struct RecommendTarget {
  enum class Kind { kThroughput, kSamples };
  Kind kind = Kind::kThroughput;
  double throughput_samples_per_s = 0;  // kThroughput
  double samples = 0;                   // kSamples
  double deadline_s = 0;                // kSamples
  // The samples a point's job time and cost are computed for: `samples`, or for a throughput
  // target one million (the cost per 1M samples).
  double job_samples() const { return kind == Kind::kSamples ? samples : 1e6; }
};

// "2000 images/s", "2000 samples/s" or "2000/s" -> samples/s. Throws InputError("", flag, ...).
double parse_throughput_text(const std::string& text, const std::string& flag);
// "72 h", "90 min", "3600 s", "3 d" (also "ms") -> seconds (> 0). Throws InputError("", flag, ...).
double parse_duration_text(const std::string& text, const std::string& flag);
// "3000", "$3000", "3000 USD" -> dollars (> 0). Throws InputError("", flag, ...).
double parse_usd_text(const std::string& text, const std::string& flag);

// Training FLOP of one sample: forward plus backward of every layer (a layer's own backward FLOP,
// else kBackwardToForwardFlopRatio x forward: model.h).
double training_flop_per_sample(const Model& model);

// The catalog's speed presets checked against the model presets core/model knows: an unknown
// one throws InputError(catalog file, its JSON path, the known presets).
void check_catalog_presets(const Catalog& catalog);

// What one preemption costs a job that restarts from its last checkpoint, in the terms of the
// scenario's training.recovery and training.checkpoint (core RecoveryTimeline: detect, restart,
// restore, first poll), each from the scenario when it gives them, else recommend's defaults
// (default_spot_recovery). Expected loss per preemption = detect + restart + restore +
// recovery_wait + checkpoint_every / 2 (the work since the last checkpoint: half an interval on
// average for a preemption that falls uniformly in it).
struct SpotRecovery {
  double detect_timeout_s = 0;
  double restart_delay_s = 0;
  double restore_s = 0;  // checkpoint bytes / disk bandwidth
  double recovery_wait_s = 0;
  double checkpoint_every_s = 0;
  bool from_scenario = false;  // training.recovery and training.checkpoint both given
  double lost_per_interruption_s() const;
};
// Defaults where the scenario gives no recovery: detect 60 s (gRPC's keepalive order), restart
// 300 s (a replacement spot instance launched and booted: AWS gives a two-minute notice, a new
// instance takes minutes), TF's recovery_wait 30 s, a checkpoint every hour, restore time 0.
SpotRecovery default_spot_recovery();

// One configuration to simulate: an instance type, how many of it, how the job is trained.
struct Configuration {
  size_t instance = 0;   // index into Catalog::instances
  int machines = 0;      // machines of the replicas' template
  int ps_machines = 0;   // dedicated PS machines (the scenario's {"on": "dedicated"}): priced too
  std::string strategy;  // between_graph, in_graph, allreduce
  int ps = 0;            // PS tasks (0: allreduce)
  std::string sync;      // between_graph: async or sync; "" otherwise
  double gpu_speed_flop_per_s = 0;
  // The GPU bound: machines x GPUs x speed / training FLOP per sample, an upper bound on any
  // simulated throughput (every step computes at least the model's FLOP per sample).
  double gpu_bound_samples_per_s = 0;
  // The PS NIC bound, for between-graph with PS on machines of their own (0: none): every worker
  // step (of s samples: its towers' batches) reads every variable from the PS, so the PS
  // machines' NICs send the parameter bytes P once per worker step: samples/s <= s x PS x NICs x
  // bandwidth / P (the plateau of docs/capacity-planning.md's knee, before LV08's 0.97).
  double ps_nic_bound_samples_per_s = 0;
  // The tighter of the two.
  double bound_samples_per_s = 0;
  // The sweep knobs that make it from the instance's scenario (machines=, strategy=, ps=, sync=).
  std::vector<std::pair<std::string, std::string>> knobs() const;
  std::string label(const Catalog& catalog) const;  // "p3.16xlarge x4 between_graph ps=2 async"
  int priced_machines() const { return machines + ps_machines; }
};

// What recommend searches.
struct RecommendSpace {
  int max_machines = 16;  // machine counts 1, 2, 4, ... up to it
  std::vector<std::string> strategies = {"between_graph", "in_graph", "allreduce"};
  std::vector<int> ps_counts = {1, 2, 4, 8};
  std::vector<std::string> sync_modes = {"async", "sync"};
  bool spot = true;   // offer spot points where the catalog has a spot price
  std::string as_of;  // prices stated on or before this date ("": the newest)
};

// The scenario's document with the instance's hardware on the replicas' machine template
// (sweep_knobs.h's replicas_machine_template): gpus = {count, speed, memory}, nic.count and
// nic.bandwidth (its latency kept), pcie.bandwidth when the catalog gives one, cpu.cores. The CPU
// speed, NIC latency and everything else stay the scenario's. Throws InputError(file, path, ...)
// for a scenario whose replicas are not a pattern over one machine template.
nlohmann::json instance_scenario(const nlohmann::json& base, const std::string& file,
                                 const CatalogInstance& instance, double gpu_speed_flop_per_s,
                                 double gpu_memory_bytes);

// An instance type left out, and why ("no speed for model preset resnet50 in the catalog").
struct SkippedInstance {
  size_t instance = 0;
  std::string why;
};

// What the bounds need of the scenario.
struct BoundInputs {
  std::string preset;            // the model preset (the catalog's speeds are per preset)
  double flop_per_sample = 0;    // training_flop_per_sample
  double parameter_bytes = 0;    // Model::parameter_bytes
  double batch_per_replica = 0;  // samples per tower per step
  // The replicas are {"towers": ..., "per": "machine"}: one worker per machine with a tower on
  // each GPU (a worker step then computes batch x GPUs samples); else one worker per GPU.
  bool worker_per_machine = false;
  // The scenario's PS template puts its tasks on machines of their own ({"on": "dedicated"}):
  // each is priced as one more instance of the type, and the PS NIC bound applies.
  bool dedicated_ps = false;
};

// Every configuration of `space` over the catalog's instance types, in order (instance,
// machines, strategy, PS count, sync), with their bounds. Instances without a speed for the
// preset, or without a price for `as_of`, go to `skipped`.
std::vector<Configuration> recommend_configurations(const Catalog& catalog, const BoundInputs& in,
                                                    const RecommendSpace& space,
                                                    std::vector<SkippedInstance>* skipped);

// One way to pay for a configuration.
struct PricedOption {
  size_t configuration = 0;
  PriceKind kind = PriceKind::kOnDemand;
  const CatalogPrice* price = nullptr;
  double usd_per_hour = 0;  // every priced machine
  // Spot: the job's preemption rate (each priced machine's band rate: any preemption restarts
  // the job) and the expected time lost per preemption.
  double interruptions_per_hour = 0;
  double lost_per_interruption_s = 0;
};
std::vector<PricedOption> priced_options(const Catalog& catalog,
                                         const std::vector<Configuration>& configurations,
                                         const RecommendSpace& space, const SpotRecovery& recovery);

// The closed-form bounds: why a priced option cannot meet the target or stay within the budget,
// whatever the simulation says; "" when it may. The throughput bound first (the GPU bound, or
// the PS NIC bound where it is the tighter: named so): bound_samples_per_s below the target
// throughput, or samples / bound_samples_per_s (its expected time with preemptions) past the
// deadline; then the cost: the lowest possible job cost (the expected time at the bound,
// times usd_per_hour) above `budget_usd` (for a throughput target: usd_per_hour above it). A
// budget of 0 is none.
std::string prune_reason(const Configuration& c, const PricedOption& o,
                         const RecommendTarget& target, double budget_usd);

// Expected job time: samples / throughput, stretched by the preemptions it expects,
// T x (1 + rate x lost): the first-order expectation for a rate x T x lost much below T (each
// preemption adds `lost` seconds; rate x T of them). Infinite for a throughput of 0.
double expected_job_time_s(double samples, double throughput_samples_per_s, const PricedOption& o);

// A simulated and priced point.
struct RecommendPoint {
  size_t option = 0;  // index into the priced options
  double throughput_samples_per_s = 0;
  double job_time_s = 0;    // expected, for target.job_samples()
  double job_cost_usd = 0;  // usd_per_hour x job_time_s / 3600
  bool meets_target = false;
  bool within_budget = false;
};
// Prices a simulated throughput.
RecommendPoint price_point(size_t option, const PricedOption& o, double throughput_samples_per_s,
                           const RecommendTarget& target, double budget_usd);

// The indices of the points no other point beats on both job cost and job time (ties broken
// against the later point), sorted by job time (fastest first).
std::vector<size_t> pareto_front(const std::vector<RecommendPoint>& points);
// The cheapest point that meets the target (ties: the faster), within budget; nullopt when none.
std::optional<size_t> cheapest_meeting_target(const std::vector<RecommendPoint>& points);
// The fastest point within budget (ties: the cheaper); nullopt when none.
std::optional<size_t> fastest_within_budget(const std::vector<RecommendPoint>& points);

}  // namespace replisim::core
