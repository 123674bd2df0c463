#include "core/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "core/json_cursor.h"
#include "core/placement.h"
#include "core/scenario_model.h"

namespace replisim::core {
namespace {

// Defaults of training.costs (docs/scenario-format.md gives the reasoning for each).
constexpr double kDefaultInputSamplesPerS = 2000;    // a CPU decoding and augmenting JPEGs
constexpr double kDefaultApplyFlopPerParam = 2;      // SGD: w -= lr * g (TF ApplyGradientDescent)
constexpr double kDefaultAggregateFlopPerParam = 1;  // one add per parameter per gradient summed
constexpr double kDefaultPerMessageOverheadS = 50e-6;
// Default jitter: workers start spread over about one step ("auto"), each step's compute varies
// by up to +-2% and each step starts up to 2% of the previous step's time late (GPU clocks,
// kernel timing and the host's training loop vary by about that much between steps).
constexpr double kDefaultStartupStaggerS = kAutoStagger;
constexpr double kDefaultComputeJitterFraction = 0.02;
constexpr double kDefaultStepJitterFraction = 0.02;
constexpr int kDefaultSteps = 100;
constexpr double kDefaultSwitchLatencyS = 1e-6;
constexpr int kDefaultWarmupSteps = 10;

bool valid_name(const std::string& name) {
  if (name.empty() || name.find_first_of("/*? ") != std::string::npos) return false;
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7F) return false;  // control characters, NUL included
  }
  return true;
}

// A link object {"bandwidth", "latency"}. A field missing from the object takes its value from
// `defaults` when given (bandwidth <= 0 there means "required"), else it is required.
LinkSpec parse_link(const JsonCursor& c, const LinkSpec* defaults) {
  c.check_keys({"bandwidth", "latency"});
  LinkSpec link;
  if (c.has("bandwidth") || defaults == nullptr || defaults->bandwidth_bytes_per_s <= 0) {
    link.bandwidth_bytes_per_s =
        c.at("bandwidth")
            .as_quantity_in(Dimension::kBandwidth, limits::kMinBandwidthBytesPerS,
                            limits::kMaxBandwidthBytesPerS);
  } else {
    link.bandwidth_bytes_per_s = defaults->bandwidth_bytes_per_s;
  }
  if (c.has("latency") || defaults == nullptr) {
    link.latency_s = c.at("latency").as_quantity_in(Dimension::kTime, 0, limits::kMaxLatencyS);
  } else {
    link.latency_s = defaults->latency_s;
  }
  return link;
}

double speed(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kFlopRate, limits::kMinSpeedFlopPerS,
                          limits::kMaxSpeedFlopPerS);
}

MachineSpec parse_machine(const JsonCursor& c) {
  c.check_keys({"name", "cpu", "gpus", "nic", "pcie"});
  MachineSpec m;
  m.name = c.at("name").as_string();
  if (!valid_name(m.name)) {
    c.at("name").fail(
        "a machine name must be non-empty without '/', '*', '?', spaces or control characters");
  }
  const JsonCursor cpu = c.at("cpu");
  cpu.check_keys({"speed"});
  m.cpu_speed_flop_per_s = speed(cpu.at("speed"));
  if (c.has("gpus")) {
    const JsonCursor gpus = c.at("gpus");
    for (size_t i = 0; i < gpus.size(); ++i) {
      const JsonCursor g = gpus.at(i);
      g.check_keys({"speed"});
      m.gpus.push_back({speed(g.at("speed"))});
    }
  }
  m.nic = parse_link(c.at("nic"), nullptr);
  const LinkSpec pcie_defaults{kDefaultPcieBandwidthBytesPerS, kDefaultPcieLatencyS};
  m.pcie = c.has("pcie") ? parse_link(c.at("pcie"), &pcie_defaults) : pcie_defaults;
  return m;
}

ClusterSpec parse_cluster(const JsonCursor& c) {
  c.check_keys({"machines", "switch", "network_model"});
  ClusterSpec cluster;
  const JsonCursor machines = c.at("machines");
  if (machines.size() == 0) machines.fail("at least one machine is needed");
  for (size_t i = 0; i < machines.size(); ++i) {
    MachineSpec m = parse_machine(machines.at(i));
    if (cluster.find_machine(m.name) != nullptr) {
      machines.at(i).at("name").fail("duplicate machine name \"" + m.name + "\"");
    }
    cluster.machines.push_back(std::move(m));
  }
  if (c.has("switch")) {
    const LinkSpec switch_defaults{0, kDefaultSwitchLatencyS};
    cluster.switch_link = parse_link(c.at("switch"), &switch_defaults);
  } else {
    // Default switch: non-blocking (as fast as all NICs together), 1 us.
    for (const MachineSpec& m : cluster.machines) {
      cluster.switch_link.bandwidth_bytes_per_s += m.nic.bandwidth_bytes_per_s;
    }
    cluster.switch_link.latency_s = kDefaultSwitchLatencyS;
  }
  if (c.has("network_model")) {
    const std::string model = c.at("network_model").as_string();
    if (model == "lv08") {
      cluster.network_model = NetworkModel::kLv08;
    } else if (model == "ideal") {
      cluster.network_model = NetworkModel::kIdeal;
    } else {
      c.at("network_model").fail("unknown network model \"" + model + "\"; valid: lv08, ideal");
    }
  }
  return cluster;
}

// Resolves a device string against the cluster, failing at `c` when it does not exist.
DeviceRef resolve_device(const JsonCursor& c, const ClusterSpec& cluster) {
  const std::string text = c.as_string();
  DeviceRef ref;
  if (!parse_device_ref(text, &ref)) {
    c.fail("expected a device \"<machine>/cpu\" or \"<machine>/gpu<i>\", got \"" + text + "\"");
  }
  const MachineSpec* machine = cluster.find_machine(ref.machine);
  if (machine == nullptr) {
    std::vector<std::string> names;
    for (const MachineSpec& m : cluster.machines) names.push_back(m.name);
    c.fail("no machine named \"" + ref.machine + "\" (machines: " + join_names(names) + ")");
  }
  if (ref.kind == DeviceKind::kGpu && ref.gpu_index >= int(machine->gpus.size())) {
    c.fail("machine \"" + ref.machine + "\" has " + std::to_string(machine->gpus.size()) +
           " GPU(s); there is no gpu" + std::to_string(ref.gpu_index));
  }
  return ref;
}

std::vector<DeviceRef> parse_device_list(const JsonCursor& c, const ClusterSpec& cluster,
                                         const char* what) {
  std::vector<DeviceRef> out;
  for (size_t i = 0; i < c.size(); ++i) {
    DeviceRef ref = resolve_device(c.at(i), cluster);
    if (std::find(out.begin(), out.end(), ref) != out.end()) {
      c.at(i).fail(std::string("duplicate ") + what + " \"" + ref.str() + "\"");
    }
    out.push_back(ref);
  }
  return out;
}

Costs parse_costs(const JsonCursor* c, const Model& model) {
  Costs costs;
  // Softmax cross-entropy: about 5 FLOP per logit (exp, sum, log, subtract, multiply).
  const double last_elements =
      model.layers.empty()
          ? 0
          : model.layers.back().activation_bytes_per_sample / model.bytes_per_activation_element;
  costs.loss_flop_per_sample = 5.0 * last_elements;
  costs.input_samples_per_s = kDefaultInputSamplesPerS;
  costs.apply_flop_per_param = kDefaultApplyFlopPerParam;
  costs.aggregate_flop_per_param = kDefaultAggregateFlopPerParam;
  costs.per_message_overhead_s = kDefaultPerMessageOverheadS;
  if (c == nullptr) return costs;
  if (c->value().is_string()) {
    if (c->as_string() != "none") c->fail("expected an object or \"none\"");
    return Costs{};
  }
  c->check_keys({"input_samples_per_s", "apply_flop_per_param", "aggregate_flop_per_param",
                 "loss_flop_per_sample", "per_message_overhead"});
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

TrainingSpec parse_training(const JsonCursor& c, const ClusterSpec& cluster, const Model& model) {
  c.check_keys({"batch_per_replica", "steps", "warmup_steps", "replicas", "client", "ps",
                "variable_placement", "sync", "costs", "jitter"});
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
  const JsonCursor replicas = c.at("replicas");
  t.replicas = parse_device_list(replicas, cluster, "replica");
  if (t.replicas.empty()) replicas.fail("at least one replica is needed");

  if (c.has("client")) {
    t.client = c.at("client").as_string();
    if (cluster.find_machine(t.client) == nullptr) {
      c.at("client").fail("no machine named \"" + t.client + "\" (the client is a machine name)");
    }
  } else {
    t.client = t.replicas.front().machine;
  }
  if (c.has("ps")) {
    const JsonCursor ps = c.at("ps");
    for (size_t i = 0; i < ps.size(); ++i) t.ps.push_back(resolve_device(ps.at(i), cluster));
    if (t.ps.empty()) ps.fail("at least one parameter server is needed");
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
  if (c.has("sync")) {
    const JsonCursor sync = c.at("sync");
    if (!(sync.value().is_string() && sync.as_string() == "async")) {
      sync.fail("synchronous training (SyncReplicasOptimizer) is not supported yet; use \"async\"");
    }
  }
  const JsonCursor costs_cursor = c.has("costs") ? c.at("costs") : c;
  t.costs = parse_costs(c.has("costs") ? &costs_cursor : nullptr, model);
  const JsonCursor jitter_cursor = c.has("jitter") ? c.at("jitter") : c;
  t.jitter = parse_jitter(c.has("jitter") ? &jitter_cursor : nullptr);
  return t;
}

std::string file_stem(const std::string& file) {
  std::string base = file.substr(file.find_last_of('/') + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

std::string DeviceRef::str() const {
  return machine + (kind == DeviceKind::kCpu ? "/cpu" : "/gpu" + std::to_string(gpu_index));
}

const char* network_model_name(NetworkModel model) {
  return model == NetworkModel::kIdeal ? "ideal" : "lv08";
}

const MachineSpec* ClusterSpec::find_machine(const std::string& name) const {
  for (const MachineSpec& m : machines) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool parse_device_ref(const std::string& text, DeviceRef* out) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || text.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  DeviceRef ref;
  ref.machine = text.substr(0, slash);
  const std::string device = text.substr(slash + 1);
  if (device == "cpu") {
    ref.kind = DeviceKind::kCpu;
  } else if (device.size() > 3 && device.compare(0, 3, "gpu") == 0 &&
             device.find_first_not_of("0123456789", 3) == std::string::npos && device.size() <= 9) {
    ref.kind = DeviceKind::kGpu;
    ref.gpu_index = std::atoi(device.c_str() + 3);
  } else {
    return false;
  }
  *out = ref;
  return true;
}

Scenario parse_scenario(const nlohmann::json& document, const std::string& file) {
  const JsonCursor root(document, file);
  root.expect_object();
  root.check_keys({"name", "description", "cluster", "model", "training"});
  Scenario s;
  s.file = file;
  s.name = root.has("name") ? root.at("name").as_string() : file_stem(file);
  if (root.has("description")) root.at("description").as_string();
  s.cluster = parse_cluster(root.at("cluster"));
  s.model = parse_model(root.at("model"));
  s.training = parse_training(root.at("training"), s.cluster, s.model);
  return s;
}

Scenario load_scenario(const std::string& file) {
  return parse_scenario(read_json_file(file), file);
}

}  // namespace replisim::core
