// Parsing of "training": the knobs — batch and steps, variable placement policy, sync mode,
// optimizer, costs, jitter, granularity, data limits, checkpoints, summaries and recovery. Where
// things run (replicas, the client, parameter servers, model-parallel placement) is
// scenario_devices.cpp.
#include <algorithm>
#include <unordered_set>

#include "core/base/error.h"
#include "core/base/glob.h"
#include "core/hardware/collective_transport.h"
#include "core/model/placement.h"
#include "core/scenario/scenario_parse.h"

namespace replisim::core::scenario_detail {
namespace {

// Defaults of training.costs (docs/scenario-format.md gives the reasoning for each).
constexpr double kDefaultInputSamplesPerS = 2000;    // a CPU decoding and augmenting JPEGs
constexpr double kDefaultAggregateFlopPerParam = 1;  // one add per parameter per gradient summed
constexpr double kDefaultPerMessageOverheadS = 50e-6;
// Default jitter: workers start spread over about one step ("auto"), each step's compute varies
// by up to +-2% and each step starts up to 2% of the previous step's time late (GPU clocks,
// kernel timing and the host's training loop vary by about that much between steps).
constexpr double kDefaultStartupStaggerS = kAutoStagger;
constexpr double kDefaultComputeJitterFraction = 0.02;
constexpr double kDefaultStepJitterFraction = 0.02;
constexpr int kDefaultSteps = 100;
constexpr int kDefaultWarmupSteps = 10;
constexpr int kMaxGroups = 100000;

// Optimizers: apply cost per parameter (FLOP) and state slots per parameter. Counts follow the
// update rules of TF's ApplyGradientDescent (w -= lr g), ApplyMomentum (a = m a + g;
// w -= lr a) and ApplyAdam (m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// w -= lr m / (sqrt(v) + eps)).
const std::vector<OptimizerSpec>& optimizers() {
  static const std::vector<OptimizerSpec> kOptimizers = {
      {"sgd", 2, 0}, {"momentum", 4, 1}, {"adam", 12, 2}};
  return kOptimizers;
}

OptimizerSpec parse_optimizer(const JsonCursor& c) {
  const std::string name = c.as_string();
  std::vector<std::string> names;
  for (const OptimizerSpec& o : optimizers()) {
    if (o.name == name) return o;
    names.push_back(o.name);
  }
  c.fail("unknown optimizer \"" + name + "\"; valid: " + join_names(names));
}

int parse_granularity(const JsonCursor& c) {
  if (c.value().is_string()) {
    if (c.as_string() == "layer") return 0;
    c.fail("expected \"layer\" or a number of layer groups, got \"" + c.as_string() + "\"");
  }
  return int(c.as_int(1, kMaxGroups));
}

Costs parse_costs(const JsonCursor* c, const Model& model, const OptimizerSpec& optimizer) {
  Costs costs;
  // Softmax cross-entropy: about 5 FLOP per logit (exp, sum, log, subtract, multiply).
  const double last_elements =
      model.layers.empty()
          ? 0
          : model.layers.back().activation_bytes_per_sample / model.bytes_per_activation_element;
  costs.loss_flop_per_sample = 5.0 * last_elements;
  costs.input_samples_per_s = kDefaultInputSamplesPerS;
  costs.apply_flop_per_param = optimizer.apply_flop_per_param;
  costs.aggregate_flop_per_param = kDefaultAggregateFlopPerParam;
  costs.per_message_overhead_s = kDefaultPerMessageOverheadS;
  if (c == nullptr) return costs;
  if (c->value().is_string()) {
    if (c->as_string() != "none") c->fail("expected an object or \"none\"");
    return Costs{};
  }
  c->check_keys({"input_samples_per_s", "input_samples_per_s_per_core", "apply_flop_per_param",
                 "aggregate_flop_per_param", "loss_flop_per_sample", "per_message_overhead"});
  if (c->has("input_samples_per_s") && c->has("input_samples_per_s_per_core")) {
    c->at("input_samples_per_s_per_core")
        .fail("give input_samples_per_s (one CPU) or input_samples_per_s_per_core, not both");
  }
  if (c->has("input_samples_per_s_per_core")) {
    const JsonCursor rate = c->at("input_samples_per_s_per_core");
    costs.input_samples_per_s_per_core =
        rate.as_number_in(limits::kMinSamplesPerS, limits::kMaxSamplesPerS);
    costs.input_samples_per_s = 0;
  }
  if (c->has("input_samples_per_s")) {
    const JsonCursor rate = c->at("input_samples_per_s");
    costs.input_samples_per_s = rate.as_number_in(0, limits::kMaxSamplesPerS);
    if (costs.input_samples_per_s > 0 && costs.input_samples_per_s < limits::kMinSamplesPerS) {
      rate.fail("must be 0 (free) or at least 0.001 samples/s");
    }
  }
  for (const auto& [key, field] :
       {std::make_pair("apply_flop_per_param", &costs.apply_flop_per_param),
        std::make_pair("aggregate_flop_per_param", &costs.aggregate_flop_per_param)}) {
    if (c->has(key)) *field = c->at(key).as_number_in(0, limits::kMaxFlopPerParam);
  }
  if (c->has("loss_flop_per_sample")) {
    costs.loss_flop_per_sample =
        c->at("loss_flop_per_sample")
            .as_quantity_in(Dimension::kFlop, 0, limits::kMaxFlopPerSample);
  }
  if (c->has("per_message_overhead")) {
    costs.per_message_overhead_s =
        c->at("per_message_overhead").as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS);
  }
  return costs;
}

Jitter parse_jitter(const JsonCursor* c) {
  Jitter jitter{kDefaultStartupStaggerS, kDefaultComputeJitterFraction, kDefaultStepJitterFraction};
  if (c == nullptr) return jitter;
  if (c->value().is_number() || c->value().is_string()) {
    const bool off = c->value().is_number() ? c->as_number() == 0 : c->as_string() == "none";
    if (!off) c->fail("expected an object, 0 or \"none\" (0 and \"none\" turn jitter off)");
    return Jitter{};
  }
  c->check_keys({"startup_stagger", "compute", "step"});
  if (c->has("startup_stagger")) {
    const JsonCursor stagger = c->at("startup_stagger");
    if (stagger.value().is_string() && stagger.as_string() == "auto") {
      jitter.startup_stagger_s = kAutoStagger;
    } else {
      jitter.startup_stagger_s = stagger.as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS);
    }
  }
  for (const auto& [key, field] : {std::make_pair("compute", &jitter.compute_fraction),
                                   std::make_pair("step", &jitter.step_fraction)}) {
    if (!c->has(key)) continue;
    *field = c->at(key).as_number();
    if (*field < 0 || *field >= 1) c->at(key).fail("expected a fraction in [0, 1), such as 0.02");
  }
  return jitter;
}

// A number (every worker) or a list with one number per worker: steps of data, at least 1.
// training.batch_per_replica (after training.replicas): one count for every replica, or a list
// of one per replica in `replicas` order (its patterns expanded in machine order, as `plan`
// prints the towers). A list of equal counts is the same as the count.
void parse_batches(const JsonCursor& c, TrainingSpec& t) {
  if (!c.value().is_array()) {
    t.batch_per_replica = int(c.as_int(1, limits::kMaxBatch));
    return;
  }
  if (c.size() != t.replicas.size()) {
    c.fail("expected one batch per replica (" + std::to_string(t.replicas.size()) +
           ", in training.replicas order), got " + std::to_string(c.size()));
  }
  std::vector<int> batches;
  for (size_t i = 0; i < c.size(); ++i) {
    batches.push_back(int(c.at(i).as_int(1, limits::kMaxBatch)));
  }
  t.batch_per_replica = batches.front();
  if (std::any_of(batches.begin(), batches.end(), [&](int b) { return b != batches.front(); })) {
    t.replica_batches = std::move(batches);
  }
}

// training.start_times: one launch time per worker, in worker order.
std::vector<double> parse_start_times(const JsonCursor& c, int workers) {
  if (c.size() != size_t(workers)) {
    c.fail("expected one start time per worker (" + std::to_string(workers) + "), got " +
           std::to_string(c.size()));
  }
  std::vector<double> times;
  for (size_t i = 0; i < c.size(); ++i) {
    times.push_back(c.at(i).as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS));
  }
  return times;
}

std::vector<int> parse_data_steps(const JsonCursor& c, int workers) {
  if (!c.value().is_array()) {
    return std::vector<int>(size_t(workers), int(c.as_int(1, limits::kMaxSteps)));
  }
  if (c.size() != size_t(workers)) {
    c.fail("expected one entry per worker (" + std::to_string(workers) + "), got " +
           std::to_string(c.size()));
  }
  std::vector<int> steps;
  for (size_t i = 0; i < c.size(); ++i) steps.push_back(int(c.at(i).as_int(1, limits::kMaxSteps)));
  return steps;
}

// "async", "sync" (R = T = workers, variant tf), "distributed_replicated" or
// {"replicas_to_aggregate", "total_num_replicas", "variant"}.
SyncSpec parse_sync(const JsonCursor& c, int workers) {
  SyncSpec sync;
  if (c.value().is_string()) {
    const std::string mode = c.as_string();
    if (mode == "async") return sync;
    if (mode == "distributed_replicated") {
      sync.distributed_replicated = true;
      return sync;
    }
    if (mode != "sync") {
      c.fail("unknown sync mode \"" + mode +
             "\"; expected \"async\", \"sync\", \"distributed_replicated\" or "
             "{\"replicas_to_aggregate\": R, \"total_num_replicas\": T, \"variant\": \"tf\" | "
             "\"strict\"}");
    }
    sync.synchronous = true;
    sync.replicas_to_aggregate = sync.total_num_replicas = workers;
    return sync;
  }
  c.check_keys({"replicas_to_aggregate", "total_num_replicas", "variant"});
  sync.synchronous = true;
  sync.total_num_replicas = c.has("total_num_replicas")
                                ? int(c.at("total_num_replicas").as_int(1, limits::kMaxReplicas))
                                : workers;
  if (sync.total_num_replicas != workers) {
    c.at("total_num_replicas")
        .fail("total_num_replicas (" + std::to_string(sync.total_num_replicas) +
              ") must equal the number of workers (" + std::to_string(workers) +
              "); backup workers are total_num_replicas - replicas_to_aggregate");
  }
  sync.replicas_to_aggregate =
      c.has("replicas_to_aggregate")
          ? int(c.at("replicas_to_aggregate").as_int(1, limits::kMaxReplicas))
          : workers;
  if (c.has("variant")) {
    const std::string variant = c.at("variant").as_string();
    if (variant == "strict") {
      sync.variant = SyncVariant::kStrict;
    } else if (variant != "tf") {
      c.at("variant").fail("unknown sync variant \"" + variant + "\"; valid: tf, strict");
    }
  }
  if (sync.variant == SyncVariant::kStrict && sync.replicas_to_aggregate > workers) {
    c.at("replicas_to_aggregate")
        .fail(
            "with variant \"strict\" each worker gives at most one gradient per global step, so "
            "replicas_to_aggregate (" +
            std::to_string(sync.replicas_to_aggregate) + ") cannot exceed the workers (" +
            std::to_string(workers) + ")");
  }
  return sync;
}

double bandwidth_at(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
                          limits::kMaxBandwidthBytesPerS);
}

double delay_at(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS);
}

CheckpointSpec parse_checkpoint(const JsonCursor& c) {
  c.check_keys({"every", "disk_bandwidth", "max_to_keep"});
  CheckpointSpec spec;
  spec.enabled = true;
  spec.every_s = c.at("every").as_quantity_in(Dimension::kTime, 1e-3, limits::kMaxDelayS);
  spec.disk_bandwidth_bytes_per_s = bandwidth_at(c.at("disk_bandwidth"));
  if (c.has("max_to_keep")) spec.max_to_keep = int(c.at("max_to_keep").as_int(0, 1 << 20));
  return spec;
}

SummarySpec parse_summaries(const JsonCursor& c, const CheckpointSpec& checkpoint) {
  c.check_keys({"every_steps", "bytes", "disk_bandwidth"});
  SummarySpec spec;
  spec.every_steps = int(c.at("every_steps").as_int(1, limits::kMaxSteps));
  spec.bytes = c.at("bytes").as_quantity_in(Dimension::kBytes, 0, limits::kMaxParams * 8);
  if (c.has("disk_bandwidth")) {
    spec.disk_bandwidth_bytes_per_s = bandwidth_at(c.at("disk_bandwidth"));
  } else if (checkpoint.enabled) {
    spec.disk_bandwidth_bytes_per_s = checkpoint.disk_bandwidth_bytes_per_s;
  } else {
    c.fail("needs \"disk_bandwidth\" (or training.checkpoint.disk_bandwidth)");
  }
  return spec;
}

RecoverySpec parse_recovery(const JsonCursor& c) {
  c.check_keys({"detect_timeout", "restart_delay", "recovery_wait"});
  RecoverySpec spec;
  spec.enabled = true;
  spec.detect_timeout_s = delay_at(c.at("detect_timeout"));
  spec.restart_delay_s = delay_at(c.at("restart_delay"));
  if (c.has("recovery_wait")) {
    spec.recovery_wait_s =
        c.at("recovery_wait").as_quantity_in(Dimension::kTime, 1e-3, limits::kMaxDelayS);
  }
  return spec;
}

// training.steps: a count, or "auto" with max_steps and steady_tolerance (SteadyStateSpec).
void parse_steps(const JsonCursor& c, TrainingSpec& t) {
  const bool automatic = c.has("steps") && c.at("steps").value().is_string();
  if (automatic && c.at("steps").as_string() != "auto") {
    c.at("steps").fail(
        "expected a number of steps or \"auto\" (stop once the throughput is "
        "steady), got " +
        describe_json(c.at("steps").value()));
  }
  for (const char* key : {"max_steps", "steady_tolerance"}) {
    if (!automatic && c.has(key)) c.at(key).fail("applies only with \"steps\": \"auto\"");
  }
  if (automatic) {
    t.steady_state.enabled = true;
    if (c.has("max_steps")) {
      t.steady_state.max_steps = int(c.at("max_steps").as_int(1, limits::kMaxSteps));
    }
    if (c.has("steady_tolerance")) {
      const double tolerance = c.at("steady_tolerance").as_number();
      if (!(tolerance > 0 && tolerance < 1)) {
        c.at("steady_tolerance")
            .fail("must lie strictly between 0 and 1 (a fraction: 0.01 is +-1%), got " +
                  describe_json(c.at("steady_tolerance").value()));
      }
      t.steady_state.tolerance = tolerance;
    }
    t.steps = t.steady_state.max_steps;
    if (t.steps <= t.warmup_steps) {
      (c.has("max_steps") ? c.at("max_steps") : c.at("steps"))
          .fail("max_steps (" + std::to_string(t.steps) + ") must be greater than warmup_steps (" +
                std::to_string(t.warmup_steps) + ")");
    }
    return;
  }
  t.steps = c.has("steps") ? int(c.at("steps").as_int(1, limits::kMaxSteps)) : kDefaultSteps;
  if (t.steps <= t.warmup_steps) {
    (c.has("steps") ? c.at("steps") : c)
        .fail("steps (" + std::to_string(t.steps) + ") must be greater than warmup_steps (" +
              std::to_string(t.warmup_steps) + ")");
  }
}

// training.allreduce: {"preset", "algorithm", "fusion_threshold", "cycle_time", "transport",
// "step_latency", "elastic", "rendezvous"}.
AllReduceSpec parse_allreduce(const JsonCursor& c) {
  c.check_keys({"preset", "algorithm", "fusion_threshold", "cycle_time", "transport",
                "step_latency", "elastic", "rendezvous"});
  AllReduceSpec a;
  if (c.has("preset")) {
    a.preset = c.at("preset").as_string();
    if (find_collective_preset(a.preset) == nullptr) {
      c.at("preset").fail("unknown all-reduce preset \"" + a.preset.substr(0, 100) +
                          "\"; valid: " + join_names(collective_preset_names()));
    }
  }
  if (c.has("algorithm")) {
    a.algorithm = c.at("algorithm").as_string();
    if (!is_collective_algorithm(a.algorithm)) {
      c.at("algorithm")
          .fail("unknown all-reduce algorithm \"" + a.algorithm.substr(0, 100) +
                "\"; valid: " + join_names(collective_algorithm_names()));
    }
  }
  if (c.has("fusion_threshold")) {
    a.fusion_threshold_bytes =
        c.at("fusion_threshold").as_quantity_in(Dimension::kBytes, 0, limits::kMaxParams * 8);
  }
  if (c.has("cycle_time")) {
    a.cycle_time_s = c.at("cycle_time").as_quantity_in(Dimension::kTime, 0, 60);
  }
  if (c.has("transport")) {
    a.transport = c.at("transport").as_string();
    if (find_collective_transport(a.transport) == nullptr) {
      c.at("transport")
          .fail("unknown all-reduce transport \"" + a.transport.substr(0, 100) +
                "\"; valid: " + join_names(collective_transport_names()));
    }
  }
  if (c.has("step_latency")) {
    a.step_latency_s = c.at("step_latency").as_quantity_in(Dimension::kTime, 0, 60);
  }
  if (c.has("elastic")) a.elastic = c.at("elastic").as_bool();
  if (c.has("rendezvous")) {
    if (!a.elastic) c.at("rendezvous").fail("only an elastic job has a rendezvous time");
    a.rendezvous_s = c.at("rendezvous").as_quantity_in(Dimension::kTime, 0, 1e6);
  } else if (a.elastic) {
    c.at("elastic").fail(
        "an elastic job needs \"rendezvous\": the time Horovod Elastic takes to re-form the "
        "ring after a death (no default: docs/allreduce.md says how to measure it)");
  }
  return a;
}

// training.forward_only: what makes no sense without gradients or updates, refused at its own
// path (the others are parsed by then).
void check_forward_only(const JsonCursor& c, const TrainingSpec& t) {
  if (!t.forward_only) return;
  const std::string why =
      " (training.forward_only: its steps compute no gradient and apply no update)";
  if (t.sync.synchronous || t.sync.distributed_replicated) {
    c.at("sync").fail(
        "a sync mode synchronises gradients; forward-only steps have none: use "
        "\"async\" or drop the key" +
        why);
  }
  if (t.objective.enabled) {
    c.at("objective").fail("an objective trains toward a target; nothing trains" + why);
  }
  if (t.steady_state.enabled) {
    c.at("steps").fail(
        "\"auto\" stops once the updates' throughput is steady; give a number "
        "of steps" +
        why);
  }
  if (t.checkpoint.enabled) {
    c.at("checkpoint").fail("a checkpoint would save variables that never change" + why);
  }
}

}  // namespace

TrainingSpec parse_training(const JsonCursor& c, ClusterSpec& cluster, const Model& model) {
  c.check_keys({"batch_per_replica",
                "steps",
                "max_steps",
                "steady_tolerance",
                "warmup_steps",
                "replicas",
                "client",
                "ps",
                "variable_placement",
                "sync",
                "allreduce",
                "optimizer",
                "learning_rate",
                "costs",
                "jitter",
                "granularity",
                "placement",
                "data_steps_per_worker",
                "start_times",
                "partition_min_bytes",
                "variables_on",
                "checkpoint",
                "summaries",
                "recovery",
                "objective",
                "forward_only"});
  TrainingSpec t;
  t.warmup_steps = c.has("warmup_steps") ? int(c.at("warmup_steps").as_int(0, limits::kMaxSteps))
                                         : kDefaultWarmupSteps;
  parse_steps(c, t);
  parse_where(c, cluster, model, t);
  parse_batches(c.at("batch_per_replica"), t);
  t.variable_placement = "round_robin";
  if (c.has("variable_placement")) {
    t.variable_placement = c.at("variable_placement").as_string();
    if (find_placement_policy(t.variable_placement) == nullptr) {
      c.at("variable_placement")
          .fail("unknown variable placement \"" + t.variable_placement +
                "\"; valid: " + join_names(placement_policy_names()));
    }
  }
  if (c.has("sync")) t.sync = parse_sync(c.at("sync"), int(t.workers.size()));
  if (c.has("allreduce")) t.allreduce = parse_allreduce(c.at("allreduce"));
  if (c.has("partition_min_bytes")) {
    t.partition_min_bytes =
        c.at("partition_min_bytes").as_quantity_in(Dimension::kBytes, 0, limits::kMaxParams * 8);
  }
  if (c.has("data_steps_per_worker")) {
    t.data_steps_per_worker =
        parse_data_steps(c.at("data_steps_per_worker"), int(t.workers.size()));
  }
  if (c.has("start_times")) {
    t.start_times_s = parse_start_times(c.at("start_times"), int(t.workers.size()));
    if (c.has("jitter") && c.at("jitter").value().is_object() &&
        c.at("jitter").has("startup_stagger")) {
      c.at("start_times").fail("give start_times or jitter.startup_stagger, not both");
    }
  }
  if (c.has("optimizer")) t.optimizer = parse_optimizer(c.at("optimizer"));
  if (c.has("learning_rate")) {
    t.optimizer.learning_rate = c.at("learning_rate").as_number_in(1e-12, 1e6);
  }
  if (c.has("checkpoint")) t.checkpoint = parse_checkpoint(c.at("checkpoint"));
  if (c.has("summaries")) t.summaries = parse_summaries(c.at("summaries"), t.checkpoint);
  if (c.has("recovery")) t.recovery = parse_recovery(c.at("recovery"));
  if (c.has("granularity")) t.granularity_groups = parse_granularity(c.at("granularity"));
  const JsonCursor costs_cursor = c.has("costs") ? c.at("costs") : c;
  t.costs = parse_costs(c.has("costs") ? &costs_cursor : nullptr, model, t.optimizer);
  const JsonCursor jitter_cursor = c.has("jitter") ? c.at("jitter") : c;
  t.jitter = parse_jitter(c.has("jitter") ? &jitter_cursor : nullptr);
  if (c.has("objective")) {
    if (!t.replica_batches.empty()) {
      c.at("batch_per_replica")
          .fail(
              "per-replica batches beside training.objective: the value engine gives every "
              "worker objective.batch samples a step; give batch_per_replica as one number");
    }
    t.objective = parse_objective(c.at("objective"), t);
  }
  if (c.has("forward_only")) t.forward_only = c.at("forward_only").as_bool();
  check_forward_only(c, t);
  return t;
}

}  // namespace replisim::core::scenario_detail
