// Parsing of "training": batch and steps, replicas (devices or patterns), the client, parameter
// servers (devices or a {"count", "on"} template), placement policy, costs and jitter.
#include <algorithm>
#include <unordered_set>

#include "core/base/error.h"
#include "core/base/glob.h"
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
constexpr int kMaxPsCount = 100000;
constexpr int kMaxGroups = 100000;

DeviceRef resolve_device(const JsonCursor& c, const ClusterSpec& cluster);

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

// Every layer must match a rule (the first that matches places it) and every rule a layer.
void check_placement_covers(const JsonCursor& c, const std::vector<PlacementRule>& rules,
                            const Model& model) {
  std::vector<bool> used(rules.size(), false);
  for (const Layer& layer : model.layers) {
    size_t r = 0;
    while (r < rules.size() && !glob_match(rules[r].layers, layer.name)) ++r;
    if (r == rules.size()) c.fail("layer \"" + layer.name + "\" matches no placement rule");
    used[r] = true;
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (!used[r]) {
      c.at(r).at("layers").fail("\"" + rules[r].layers +
                                "\" matches no layer (or only layers an earlier rule placed)");
    }
  }
}

std::vector<PlacementRule> parse_placement(const JsonCursor& c, const ClusterSpec& cluster) {
  std::vector<PlacementRule> rules;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor rule = c.at(i);
    rule.check_keys({"layers", "device"});
    rules.push_back(
        {rule.at("layers").as_string(), resolve_device(rule.at("device"), cluster), rule.path()});
  }
  if (rules.empty()) c.fail("at least one rule is needed (or leave placement out)");
  return rules;
}

// Every device of the cluster, in machine order (CPU, then GPUs).
std::vector<DeviceRef> all_devices(const ClusterSpec& cluster) {
  std::vector<DeviceRef> out;
  for (const MachineSpec& m : cluster.machines) {
    out.push_back({m.name, DeviceKind::kCpu, 0});
    for (size_t g = 0; g < m.gpus.size(); ++g) out.push_back({m.name, DeviceKind::kGpu, int(g)});
  }
  return out;
}

// Resolves a device string against the cluster, failing at `c` when it does not exist.
DeviceRef resolve_device(const JsonCursor& c, const ClusterSpec& cluster) {
  const std::string text = c.as_string();
  DeviceRef ref;
  if (!parse_device_ref(text, &ref)) {
    c.fail(
        "expected a device \"<machine>/cpu\" or \"<machine>/gpu<i>\" (or a pattern such as "
        "\"w*/gpu*\"), got \"" +
        text + "\"");
  }
  const MachineSpec* machine = cluster.find_machine(ref.machine);
  if (machine == nullptr) {
    std::vector<std::string> names;
    for (const MachineSpec& m : cluster.machines) {
      names.push_back(m.name);
      if (names.size() == 8 && cluster.machines.size() > 8) {
        names.push_back("...");
        break;
      }
    }
    c.fail("no machine named \"" + ref.machine + "\" (machines: " + join_names(names) + ")");
  }
  if (ref.kind == DeviceKind::kGpu && ref.gpu_index >= int(machine->gpus.size())) {
    c.fail("machine \"" + ref.machine + "\" has " + std::to_string(machine->gpus.size()) +
           " GPU(s); there is no gpu" + std::to_string(ref.gpu_index));
  }
  return ref;
}

// A device, or every device a pattern matches (an error when it matches none).
std::vector<DeviceRef> resolve_device_or_pattern(const JsonCursor& c, const ClusterSpec& cluster) {
  const std::string text = c.as_string();
  if (!is_glob(text)) return {resolve_device(c, cluster)};
  std::vector<DeviceRef> matched;
  for (const DeviceRef& d : all_devices(cluster)) {
    if (glob_match(text, d.str())) matched.push_back(d);
  }
  if (matched.empty()) c.fail("pattern \"" + text + "\" matched no device");
  return matched;
}

// "replicas": one device or pattern, or a list of them, each a worker of its own (between-graph);
// or an entry {"towers": device(s) or pattern(s), "per": "worker" | "machine"}: one worker with a
// tower on every matched device ("worker", the default), or one such worker per machine
// ("machine"). No device may be listed twice.
void parse_replicas(const JsonCursor& c, const ClusterSpec& cluster, TrainingSpec& t) {
  std::vector<JsonCursor> entries;
  if (c.value().is_string() || c.value().is_object()) {
    entries.push_back(c);
  } else {
    for (size_t i = 0; i < c.size(); ++i) entries.push_back(c.at(i));
  }
  std::unordered_set<std::string> seen;
  auto add = [&](const JsonCursor& at, const DeviceRef& ref) {
    if (!seen.insert(ref.str()).second) {
      at.fail("duplicate replica \"" + ref.str() + "\" (listed or matched twice)");
    }
    t.replicas.push_back(ref);
    return int(t.replicas.size()) - 1;
  };
  for (const JsonCursor& entry : entries) {
    if (!entry.value().is_object()) {
      for (const DeviceRef& ref : resolve_device_or_pattern(entry, cluster)) {
        t.workers.push_back({add(entry, ref)});
      }
      continue;
    }
    entry.check_keys({"towers", "per"});
    const JsonCursor towers = entry.at("towers");
    std::vector<std::pair<JsonCursor, DeviceRef>> matched;
    if (towers.value().is_array()) {
      if (towers.size() == 0) towers.fail("expected at least one device or pattern");
      for (size_t i = 0; i < towers.size(); ++i) {
        for (const DeviceRef& ref : resolve_device_or_pattern(towers.at(i), cluster)) {
          matched.emplace_back(towers.at(i), ref);
        }
      }
    } else {
      for (const DeviceRef& ref : resolve_device_or_pattern(towers, cluster)) {
        matched.emplace_back(towers, ref);
      }
    }
    const std::string per = entry.has("per") ? entry.at("per").as_string() : "worker";
    if (per != "worker" && per != "machine") {
      entry.at("per").fail(
          "expected \"worker\" (one worker for all the towers) or \"machine\" "
          "(one worker per machine)");
    }
    std::vector<std::string> machines;  // per machine: in order of first appearance
    const size_t first_worker = t.workers.size();
    for (const auto& [at, ref] : matched) {
      size_t w = 0;
      if (per == "machine") {
        w = size_t(std::find(machines.begin(), machines.end(), ref.machine) - machines.begin());
        if (w == machines.size()) machines.push_back(ref.machine);
      }
      if (t.workers.size() <= first_worker + w) t.workers.emplace_back();
      t.workers[first_worker + w].push_back(add(at, ref));
    }
  }
  if (t.replicas.empty()) c.fail("at least one replica is needed");
}

// {"count": N, "on": "dedicated" | "workers", "name", "machine"}.
std::vector<DeviceRef> parse_ps_template(const JsonCursor& c, ClusterSpec& cluster,
                                         const std::vector<DeviceRef>& replicas) {
  c.check_keys({"count", "on", "name", "machine"});
  const int count = int(c.at("count").as_int(1, kMaxPsCount));
  const std::string on = c.at("on").as_string();
  std::vector<DeviceRef> ps;
  if (on == "workers") {
    if (c.has("name") || c.has("machine")) {
      c.fail(
          "\"name\" and \"machine\" describe dedicated PS machines; not with \"on\": \"workers\"");
    }
    std::vector<std::string> machines;  // the replicas' machines, in order, once each
    for (const DeviceRef& r : replicas) {
      if (std::find(machines.begin(), machines.end(), r.machine) == machines.end()) {
        machines.push_back(r.machine);
      }
    }
    for (int i = 0; i < count; ++i) {
      ps.push_back({machines[size_t(i) % machines.size()], DeviceKind::kCpu, 0});
    }
    return ps;
  }
  if (on != "dedicated")
    c.at("on").fail("expected \"dedicated\" or \"workers\", got \"" + on + "\"");
  // Default dedicated machine: the CPU, NIC and PCIe of the first replica's machine, no GPU.
  MachineSpec spec = *cluster.find_machine(replicas.front().machine);
  spec.gpus.clear();
  spec.json_path = c.path();
  if (c.has("machine")) {
    spec = parse_machine_hardware(c.at("machine"), {"cpu", "gpus", "nic", "pcie"});
    spec.json_path = c.at("machine").path();
  }
  const std::string prefix = c.has("name") ? c.at("name").as_string() : "ps";
  if (!valid_name(prefix)) (c.has("name") ? c.at("name") : c).fail("invalid machine name prefix");
  for (int i = 0; i < count; ++i) {
    spec.name = prefix + std::to_string(i);
    add_machine(cluster, spec, c.has("name") ? c.at("name") : c);
    ps.push_back({spec.name, DeviceKind::kCpu, 0});
  }
  return ps;
}

std::vector<DeviceRef> parse_ps(const JsonCursor& c, ClusterSpec& cluster,
                                const std::vector<DeviceRef>& replicas) {
  if (c.value().is_object()) return parse_ps_template(c, cluster, replicas);
  std::vector<DeviceRef> ps;
  for (size_t i = 0; i < c.size(); ++i) ps.push_back(resolve_device(c.at(i), cluster));
  if (ps.empty()) c.fail("at least one parameter server is needed");
  return ps;
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

// "async", "sync" (R = T = workers, variant tf) or {"replicas_to_aggregate", "total_num_replicas",
// "variant"}.
SyncSpec parse_sync(const JsonCursor& c, int workers) {
  SyncSpec sync;
  if (c.value().is_string()) {
    const std::string mode = c.as_string();
    if (mode == "async") return sync;
    if (mode != "sync") {
      c.fail("unknown sync mode \"" + mode +
             "\"; expected \"async\", \"sync\" or {\"replicas_to_aggregate\": R, "
             "\"total_num_replicas\": T, \"variant\": \"tf\" | \"strict\"}");
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
  c.check_keys({"every", "disk_bandwidth"});
  CheckpointSpec spec;
  spec.enabled = true;
  spec.every_s = c.at("every").as_quantity_in(Dimension::kTime, 1e-3, limits::kMaxDelayS);
  spec.disk_bandwidth_bytes_per_s = bandwidth_at(c.at("disk_bandwidth"));
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

}  // namespace

TrainingSpec parse_training(const JsonCursor& c, ClusterSpec& cluster, const Model& model) {
  c.check_keys({"batch_per_replica", "steps", "warmup_steps", "replicas", "client", "ps",
                "variable_placement", "sync", "optimizer", "costs", "jitter", "granularity",
                "placement", "data_steps_per_worker", "partition_min_bytes", "variables_on",
                "checkpoint", "summaries", "recovery"});
  TrainingSpec t;
  t.batch_per_replica = int(c.at("batch_per_replica").as_int(1, limits::kMaxBatch));
  t.steps = c.has("steps") ? int(c.at("steps").as_int(1, limits::kMaxSteps)) : kDefaultSteps;
  t.warmup_steps = c.has("warmup_steps") ? int(c.at("warmup_steps").as_int(0, limits::kMaxSteps))
                                         : kDefaultWarmupSteps;
  if (t.steps <= t.warmup_steps) {
    (c.has("steps") ? c.at("steps") : c)
        .fail("steps (" + std::to_string(t.steps) + ") must be greater than warmup_steps (" +
              std::to_string(t.warmup_steps) + ")");
  }
  parse_replicas(c.at("replicas"), cluster, t);

  if (c.has("client")) {
    t.client = c.at("client").as_string();
    if (cluster.find_machine(t.client) == nullptr) {
      c.at("client").fail("no machine named \"" + t.client + "\" (the client is a machine name)");
    }
  } else {
    t.client = t.replicas.front().machine;
  }
  if (c.has("ps") && c.has("variables_on")) {
    c.at("variables_on").fail("give either \"ps\" or \"variables_on\", not both");
  }
  if (c.has("ps")) {
    t.ps = parse_ps(c.at("ps"), cluster, t.replicas);
  } else if (c.has("variables_on")) {
    // In-graph: where the client keeps the variables, "client" (its CPU) or a device.
    const JsonCursor on = c.at("variables_on");
    if (on.as_string().find_first_of("*?") != std::string::npos) {
      on.fail("expected \"client\" or one device such as \"pc1/gpu0\", not a pattern");
    }
    t.ps.push_back(on.as_string() == "client" ? DeviceRef{t.client, DeviceKind::kCpu, 0}
                                              : resolve_device(on, cluster));
  } else {
    t.ps.push_back(DeviceRef{t.client, DeviceKind::kCpu, 0});
  }
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
  if (c.has("partition_min_bytes")) {
    t.partition_min_bytes =
        c.at("partition_min_bytes").as_quantity_in(Dimension::kBytes, 0, limits::kMaxParams * 8);
  }
  if (c.has("data_steps_per_worker")) {
    t.data_steps_per_worker =
        parse_data_steps(c.at("data_steps_per_worker"), int(t.workers.size()));
  }
  if (c.has("optimizer")) t.optimizer = parse_optimizer(c.at("optimizer"));
  if (c.has("checkpoint")) t.checkpoint = parse_checkpoint(c.at("checkpoint"));
  if (c.has("summaries")) t.summaries = parse_summaries(c.at("summaries"), t.checkpoint);
  if (c.has("recovery")) t.recovery = parse_recovery(c.at("recovery"));
  if (c.has("granularity")) t.granularity_groups = parse_granularity(c.at("granularity"));
  if (c.has("placement")) {
    t.placement = parse_placement(c.at("placement"), cluster);
    check_placement_covers(c.at("placement"), t.placement, model);
  }
  const JsonCursor costs_cursor = c.has("costs") ? c.at("costs") : c;
  t.costs = parse_costs(c.has("costs") ? &costs_cursor : nullptr, model, t.optimizer);
  const JsonCursor jitter_cursor = c.has("jitter") ? c.at("jitter") : c;
  t.jitter = parse_jitter(c.has("jitter") ? &jitter_cursor : nullptr);
  return t;
}

}  // namespace replisim::core::scenario_detail
