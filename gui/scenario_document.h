// The knobs of a scenario file that a teacher or planner touches (replicas, PS count, NIC
// bandwidth, sync mode and backup workers, one device's speed, a fault at a time), read from and
// written into the file's JSON: every other field, and the order of the keys, kept as they are.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace replisim::gui {

// training.sync as the panel edits it.
struct SyncKnob {
  bool synchronous = false;             // SyncReplicasOptimizer ("sync" or the object)
  bool distributed_replicated = false;  // "distributed_replicated" (barriers, no backups)
  int backup_workers = 0;               // total_num_replicas - replicas_to_aggregate
  std::string variant;  // "tf", "strict", or "" (the file gives none: replisim's default)
};

// The first fault of kind "role" or "machine" in `faults` (kind "" when there is none).
struct FaultKnob {
  std::string kind;    // "", "role" or "machine"
  std::string target;  // the role ("worker1", "ps0") or the machine ("pc2")
  double at_s = 0;
};

// A scenario file's JSON with typed access to the knobs. Holds no Qt type; copyable. The setters
// change only the fields their knob is bound to (named on each) and throw std::invalid_argument
// with one line on a value they cannot write; replisim validates the rest when it runs.
class ScenarioDocument {
 public:
  using Json = nlohmann::ordered_json;

  // Reads `path`. Throws std::runtime_error("<path>: <why>") when it cannot be read or is not a
  // JSON object.
  static ScenarioDocument load(const std::string& path);
  ScenarioDocument(Json json, std::string path);

  const Json& json() const { return json_; }
  // The file it was read from.
  const std::string& path() const { return path_; }
  std::string name() const;

  // The replicas training.replicas trains (core::scenario_replica_count: workers, a device each
  // unless towers group them), and what one more machine adds (core::scenario_replica_step).
  int replica_count() const;
  int replica_step() const;
  // Why the replica count cannot be edited here; "" when it can.
  std::string replicas_fixed_reason() const;
  // core::set_scenario_replica_count, the sweep's replicas knob: a pattern's machine template
  // grows or shrinks by whole machines; a list drops entries from its end or gains copies of the
  // fastest replica's machine (pc2 -> pc3). A sync object's total_num_replicas follows (its
  // backups kept).
  void set_replica_count(int count);

  // training.ps: a list of devices (grows over the machines' CPUs) or a template's count.
  int ps_count() const;
  void set_ps_count(int count);

  // The first machine's NIC bandwidth (bytes/s; 0 when no machine gives one); the setter writes
  // nic.bandwidth of every machine entry and of machine_defaults.nic that has one.
  double nic_bandwidth_bytes_per_s() const;
  void set_nic_bandwidth_bytes_per_s(double bandwidth_bytes_per_s);

  // training.sync.
  SyncKnob sync() const;
  void set_sync(const SyncKnob& knob);

  // GPUs of the machine entries: "pc1/gpu0", or "w*/gpu0" for every copy of a template.
  std::vector<std::string> gpu_devices() const;
  // Its speed (flop/s); throws std::invalid_argument for a device not in gpu_devices().
  double device_speed_flop_per_s(const std::string& device) const;
  // That GPU's speed field.
  void set_device_speed_flop_per_s(const std::string& device, double speed_flop_per_s);

  // faults: the first role or machine fault (set_fault with kind "" removes it).
  FaultKnob fault() const;
  void set_fault(const FaultKnob& knob);

  // training.steps (default 100) and training.warmup_steps (default 10).
  int steps() const;
  int warmup_steps() const;
  // Sets steps, and warmup_steps in proportion (the file's share of warm-up kept: at least 1,
  // below steps); for a shortened interactive run.
  void set_steps(int steps);
  // training.granularity: "" when the file gives none ("layer", the default).
  std::string granularity() const;
  // Sets training.granularity to `groups` groups of layers (fewer, larger ops: a faster run).
  void set_granularity_groups(int groups);

  // Machine names in order, templates expanded.
  std::vector<std::string> machine_names() const;

  // Writes the JSON (indented) to a temporary name beside `path`, then renames it over `path`.
  // Throws std::runtime_error with one line when it cannot.
  void write(const std::string& path) const;

 private:
  Json& training();
  const Json* training_or_null() const;
  // The index of the machine entry that `machine` belongs to (-1 when none).
  int machine_entry_of(const std::string& machine) const;

  Json json_;
  std::string path_;
};

}  // namespace replisim::gui
