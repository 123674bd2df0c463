// A scenario: the cluster (machines, devices, links), the model and the training setup, parsed
// and validated from JSON (docs/scenario-format.md). A Scenario that exists is valid.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/json_cursor.h"
#include "core/hardware/device.h"
#include "core/hardware/platform.h"
#include "core/hardware/transport.h"
#include "core/model/model.h"
#include "core/model/objective_model.h"

namespace replisim::core {

struct LinkSpec {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};

struct GpuSpec {
  double speed_flop_per_s = 0;
  double memory_bytes = 0;  // 0 = not given (no memory check)
  // Where memory_bytes was given ("/cluster/machines/0/gpus/1/memory", the shorthand's
  // "/cluster/machines/0/gpus/memory", or a default's); empty when not given.
  std::string memory_json_path;
};

struct MachineSpec {
  std::string name;
  std::string json_path;  // the scenario entry that describes it (a template may make several)
  double cpu_speed_flop_per_s = 0;  // one core's speed
  int cpu_cores = 1;                // the CPU runs up to this many ops at once
  std::vector<GpuSpec> gpus;
  LinkSpec nic;  // full duplex: each direction has this bandwidth
  // nic.count: identical NICs of `nic` (1 to limits::kMaxNicsPerMachine), links "<name>/nic",
  // "<name>/nic1", ... Each connection to another machine takes one of them
  // (core::Platform::nic_toward).
  int nic_count = 1;
  std::string nic_count_json_path;  // where nic.count was given (a default's too); "" when not
  LinkSpec pcie;                    // one per GPU, between the GPU and the host (CPU and NIC)
  int rack = -1;  // cluster.topology "racks" or "fat_tree": its rack's index (level 0); else -1
};

// cluster.topology (docs/scenario-format.md, "Topology"): how the machines' NICs are joined.
// kStar: one switch (the default). kRacks: `machines_per_rack` machines in order per rack behind
// a top-of-rack switch, each rack's uplink to a core switch (cluster.switch). The uplink is given
// (`uplink`), or derived from the oversubscription ratio r: uplink = the rack's NIC total / r,
// the usual meaning of "3:1 oversubscribed" (a rack's hosts can send r times what its uplink
// carries; e.g. Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture",
// SIGCOMM 2008, section 2.1).
// The oversubscription ratios a scenario may give: below 1 an uplink is faster than its rack's
// NICs together (allowed, so that "uplinks x2" of a 1:1 rack is a point); beyond 1,000 it is a
// fault rather than a design (data-centre designs quote 1:1 to 20:1, Al-Fares et al. 2008).
inline constexpr double kMinOversubscription = 0.01;
inline constexpr double kMaxOversubscription = 1000;

// One switch level of a fat tree above level 0 (cluster.topology "fat_tree", levels[k], k >= 1):
// `down` groups of level k - 1 under one aggregation switch, whose uplink toward the level above
// is given (`uplink`) or derived: the sum of its children's uplinks / `oversubscription`.
struct FatTreeLevelSpec {
  int down = 0;
  double oversubscription = 0;    // > 0: the uplink is derived from it
  LinkSpec uplink;                // when oversubscription is 0
  LinkSpec switch_link;           // the group's aggregation switch
  bool switch_is_default = true;  // not given: non-blocking (never binds)
  int group_count = 0;            // groups of this level (pods at level 1)
};

// kFatTree (Leiserson, "Fat-trees: universal networks for hardware-efficient supercomputing",
// IEEE Trans. Computers C-34(10), 1985): levels of switches above the machines, links fatter
// toward the root. Level 0 is the racks' level (its fields above: `machines_per_rack` machines
// per top-of-rack switch, its uplink from `oversubscription` or `uplink`, `tor`); `upper_levels`
// hold levels 1, 2, ... (pods of racks, pods of pods); one core switch (cluster.switch) joins the
// last level's groups. Racks are the one-level fat tree. A folded Clos (leaf-spine) with perfect
// ECMP balance offers each group the same capacities under max-min fair sharing, so one fat link
// per group stands for its parallel spine links (the modelling choice; per-path imbalance of real
// ECMP hashing is not modelled).
struct TopologySpec {
  enum class Kind { kStar, kRacks, kFatTree };
  Kind kind = Kind::kStar;
  int machines_per_rack = 0;
  double oversubscription = 0;  // > 0: the uplink is derived from it
  LinkSpec uplink;              // when oversubscription is 0
  LinkSpec tor;                 // a rack's top-of-rack switch
  bool tor_is_default = true;   // not given: non-blocking (never binds)
  int rack_count = 0;           // racks of the scenario's machines (dedicated PSes join them)
  std::vector<FatTreeLevelSpec> upper_levels;  // kFatTree: levels 1, 2, ... (empty otherwise)

  // Whether machines sit in racks (kRacks, or a fat tree's level 0).
  bool has_racks() const { return kind != Kind::kStar; }
};

// Default PCIe link of a GPU: PCIe 3.0 x16 is 15.75 GB/s per direction in theory (8 GT/s per
// lane, 128b/130b encoding, PCI-SIG); pinned cudaMemcpy typically reaches about 12 GB/s, which is
// the default. 5 us is the usual order of a cudaMemcpy call's fixed cost.
inline constexpr double kDefaultPcieBandwidthBytesPerS = 12e9;
inline constexpr double kDefaultPcieLatencyS = 5e-6;

struct ClusterSpec {
  std::vector<MachineSpec> machines;
  LinkSpec switch_link;           // one link shared by every flow that crosses the switch
  bool switch_is_default = true;  // not given: non-blocking, grows with every machine added
  NetworkModel network_model = NetworkModel::kLv08;
  Transport transport;  // cluster.transport (default: the "ideal" preset)
  TopologySpec topology;

  // By name, through an index kept by add_machine (parsing); a linear scan when the machines were
  // filled in directly.
  const MachineSpec* find_machine(const std::string& name) const;
  // Appends `machine` and indexes it. False (nothing added) when the name is taken.
  bool add_machine(MachineSpec machine);

 private:
  std::unordered_map<std::string, size_t> machine_index_;

 public:
};

// Costs beyond layer compute and tensor transfers (docs/scenario-format.md, "training.costs").
struct Costs {
  double input_samples_per_s = 0;  // input pipeline rate of one CPU device; 0 = free
  // When > 0, replaces input_samples_per_s: the rate of one core, the pipeline using every core
  // of the CPU (tf.data's parallel map), so a machine's rate is this x cpu.cores.
  double input_samples_per_s_per_core = 0;
  double apply_flop_per_param = 0;      // optimizer update on the parameter server
  double aggregate_flop_per_param = 0;  // per gradient summed (in-graph aggregation)
  double loss_flop_per_sample = 0;      // loss and summary ops
  double per_message_overhead_s = 0;    // fixed software cost of a message between machines
};

// Seeded variability that keeps identical workers from running in artificial lockstep
// (simgrid-notes.md section 9: lockstep halves a PS-bound plateau).
inline constexpr double kAutoStagger = -1;

struct Jitter {
  // Worker i > 0 starts at U[0, stagger]; the chief at 0. kAutoStagger: one estimated step
  // (estimated_round_time_s in strategy.h).
  double startup_stagger_s = 0;
  double compute_fraction = 0;  // each step's compute is scaled by 1 + U[-f, +f]
  double step_fraction = 0;     // a step starts U[0, f] x the previous step's time after it
};

// Between-graph sync mode. Asynchronous (TF's default): every worker applies its own gradients.
// Synchronous: TF's SyncReplicasOptimizer — gradients go to per-variable accumulators on the PS;
// the chief's sync op takes `replicas_to_aggregate` (R) of them per variable, applies, increments
// global_step and enqueues tokens; a worker dequeues a token after each step, and a gradient
// computed from an older global_step than the accumulator's is dropped.
enum class SyncVariant {
  kTf,      // TF: max(T, R) tokens per global step in one shared queue (R to start with), so a
            // fast worker may take a spare token and contribute twice to one global step
  kStrict,  // at most one gradient per worker per global step (each worker waits for the next
            // global step after its push), for teaching: the "backup workers" scheme
};
struct SyncSpec {
  bool synchronous = false;  // SyncReplicasOptimizer (the fields below)
  // tf_cnn_benchmarks' distributed_replicated with cross_replica_sync (Plan's
  // kDistributedReplicated): per-variable barriers of all workers, no accumulators, no chief op.
  bool distributed_replicated = false;
  int replicas_to_aggregate = 0;  // R (1..)
  int total_num_replicas = 0;     // T: the number of workers; backup workers = T - R
  SyncVariant variant = SyncVariant::kTf;
};
const char* sync_variant_name(SyncVariant variant);

// The optimizer: what an apply costs on the PS and how much state it keeps per parameter
// (TF's GradientDescentOptimizer, MomentumOptimizer, AdamOptimizer).
struct OptimizerSpec {
  std::string name = "sgd";
  double apply_flop_per_param = 2;  // sgd: w -= lr g (1 mul + 1 sub)
  int slots_per_param = 0;          // momentum: 1 accumulator; adam: m and v
  // training.learning_rate: the real backend's applies use it. The default, 1/16, is exact in
  // float32, so that sums of updates can be checked bit for bit.
  double learning_rate = 0.0625;
};

// Model-parallel placement rule (in-graph): layers whose name matches `layers` run on `device`.
struct PlacementRule {
  std::string layers;  // a name or pattern ("conv*")
  DeviceRef device;
  std::string json_path;  // where the rule is, for errors found while compiling
};

// The chief's checkpoints (TF's CheckpointSaverHook in MonitoredTrainingSession): one right after
// the session is created, then after the first chief step ending `every_s` or more after the
// last one. The chief pauses while every variable and optimizer slot is written at
// `disk_bandwidth_bytes_per_s` (sharded saving onto one store: the PS write their shards while
// the chief's save call waits).
struct CheckpointSpec {
  bool enabled = false;
  double every_s = 0;
  double disk_bandwidth_bytes_per_s = 0;
  // The newest checkpoints kept on disk (TF's Saver max_to_keep, default 5; 0 keeps all). Only
  // real runs delete files; the simulation keeps no disk.
  int max_to_keep = 5;
};

// The chief's summaries (SummarySaverHook): every `every_steps` chief steps, `bytes` of event
// file written at `disk_bandwidth_bytes_per_s`; the chief pauses while writing.
struct SummarySpec {
  int every_steps = 0;  // 0: no summaries
  double bytes = 0;
  double disk_bandwidth_bytes_per_s = 0;
};

// What happens when the job fails (a parameter server, the in-graph client or a tower dies):
// every client fails `detect_timeout_s` after the death (its RPCs to the dead task time out; 0: a
// crash that resets the connections), the launcher restarts every task `restart_delay_s` later,
// the chief restores the last checkpoint (its bytes / disk bandwidth) and the other workers poll
// for the restored model every `recovery_wait_s` (TF SessionManager's recovery_wait_secs,
// default 30 s). Not enabled: a job failure ends the run.
struct RecoverySpec {
  bool enabled = false;
  double detect_timeout_s = 0;
  double restart_delay_s = 0;
  double recovery_wait_s = 30;
};

// training.steps "auto": train until the throughput's 95% confidence interval (batch means over
// the measured window, core/runtime/steady_state.h) is within +-tolerance, at most max_steps.
struct SteadyStateSpec {
  bool enabled = false;
  int max_steps = 1000;     // per client (synchronous training: global steps)
  double tolerance = 0.01;  // the interval's half width over the throughput, in (0, 1)
};

// training.allreduce: how the allreduce strategy reduces gradients (Plan's CollectiveSpec has
// each field's meaning). Fields left out take the preset's values (fusion, cycle) or the
// transport's (latencies).
struct AllReduceSpec {
  std::string preset = "horovod";
  std::string algorithm = "ring";
  double fusion_threshold_bytes = -1;  // -1: the preset's
  double cycle_time_s = -1;            // -1: the preset's
  std::string transport = "nccl_socket";
  double step_latency_s = -1;  // -1: the transport's
  bool elastic = false;
  double rendezvous_s =
      -1;  // elastic: required (no default; docs/allreduce.md says how to measure)
};

// training.objective (issue 40): the data and the proxy model whose SGD arithmetic the run
// computes, with its learning rate, evaluation interval and target (docs/scenario-format.md has
// each field's default and source). Parsing reads no data: the sets are loaded when a run starts.
struct ObjectiveDataSpec {
  enum class Set { kSynthetic, kFashionMnist };
  Set set = Set::kSynthetic;
  SyntheticSetSpec synthetic;  // kSynthetic: every field given
  // kFashionMnist: the folder of the four IDX files (a relative one is taken from the scenario
  // file's folder) and the first `subset` samples of each set (0: all).
  std::string dir = kFashionMnistDir;
  int subset = 0;

  int features() const;
  int classes() const;
  // Training samples the set holds (the subset's, when one is given).
  int train_samples() const;
};
enum class ObjectiveTarget { kAccuracy, kLoss };
// Whose costs drive the clock: the objective's own FLOP and bytes ("objective"), or the
// scenario's model ("scenario"), the proxy's arithmetic then showing what that schedule of
// updates does to a model that converges in seconds.
enum class ObjectiveTiming { kObjective, kScenario };
const char* objective_timing_name(ObjectiveTiming timing);
struct ObjectiveSpec {
  bool enabled = false;  // the key is present
  ObjectiveDataSpec data;
  std::vector<int> hidden_widths;  // "model": empty for "softmax", the MLP's hidden layers else
  double learning_rate = 0;
  LearningRateSchedule schedule;
  bool staleness_aware = false;  // lr / staleness (Zhang et al. 2016)
  int batch = 0;                 // samples per worker step (default: batch_per_replica)
  int evaluate_every_steps = 0;  // global steps between evaluations on the test set
  ObjectiveTarget target = ObjectiveTarget::kAccuracy;
  double target_value = 0;  // accuracy in (0, 1], or loss > 0 (nats)
  ObjectiveTiming timing = ObjectiveTiming::kObjective;
  uint64_t seed = 0;      // initialisation, shards and batch orders
  std::string json_path;  // "/training/objective", for errors found when the data is loaded

  // The model over the data's features and classes.
  ObjectiveModel model() const;
};

struct TrainingSpec {
  int batch_per_replica = 0;  // the first replica's, and every replica's unless replica_batches
  // training.batch_per_replica given as a list, one per replica in `replicas` order (workers of
  // different batch sizes, unequal in-graph sub-batches); empty when every entry is the same.
  std::vector<int> replica_batches;
  // training.start_times: when each worker's task is launched (seconds after the parameter
  // servers', in worker order); empty: jitter.startup_stagger spaces them.
  std::vector<double> start_times_s;
  // Samples replica `k` (an index into `replicas`) computes per step.
  int batch_of_replica(size_t k) const {
    return replica_batches.empty() ? batch_per_replica : replica_batches[k];
  }
  int steps = 0;  // "auto": steady_state.max_steps
  int warmup_steps = 0;
  SteadyStateSpec steady_state;
  std::vector<DeviceRef> replicas;  // every tower device (in-graph: one tower each)
  // Between-graph workers: each one's tower devices, as indices into `replicas`. One worker per
  // replica, except where a {"towers": ...} entry groups several into one worker.
  std::vector<std::vector<int>> workers;
  std::string client;              // machine that runs the in-graph client
  std::vector<DeviceRef> ps;       // one parameter server task per entry
  std::string variable_placement;  // a placement policy name (placement.h)
  // partitioned placement: variables above this size are cut into one partition per PS.
  // Default 256 KiB, the min_slice_size default of TF's min_max_variable_partitioner.
  double partition_min_bytes = 256 * 1024;
  SyncSpec sync;            // between_graph only
  AllReduceSpec allreduce;  // allreduce only
  Costs costs;
  Jitter jitter;
  OptimizerSpec optimizer;
  // Layers per op group: 0 = one group per layer; N > 0 = the model cut into N groups of about
  // equal forward FLOP (fewer, larger ops and transfers for large simulations).
  int granularity_groups = 0;
  std::vector<PlacementRule> placement;  // empty = data parallel only
  // Between-graph: the steps of data each worker holds (one per replica); a worker out of data
  // exits. Empty = every worker has data for all its steps.
  std::vector<int> data_steps_per_worker;
  CheckpointSpec checkpoint;
  SummarySpec summaries;
  RecoverySpec recovery;
  ObjectiveSpec objective;  // not enabled: no objective (rates only)
  // training.forward_only (inference; tf_cnn_benchmarks' --forward_only, which runs
  // sess.run(logits) with the variables on the PS): each step reads every variable and runs the
  // input, forward and loss ops only: no backward, no gradient sent, no apply, no global_step
  // update. Refused with sync "sync"/"distributed_replicated", an objective, steps "auto" and
  // checkpoints (scenario_training.cpp); the allreduce strategy refuses it (nothing to reduce).
  bool forward_only = false;
};

// A fault (top-level "faults"): what goes wrong, where and when.
enum class FaultKind {
  kRole,      // a role's process dies at `at_s` (its devices stay up): a between-graph worker,
              // a parameter server, the in-graph client or an in-graph tower
  kMachine,   // a machine dies at `at_s`: every role with a device on it dies
  kSlowdown,  // a device runs at `factor` x its speed in [from_s, until_s)
  kLink,      // a machine's NIC or the switch runs at `factor` x its bandwidth in
              // [from_s, until_s); factor 0 cuts it
};
struct FaultSpec {
  FaultKind kind = FaultKind::kRole;
  std::string role;     // kRole: "worker<i>", "ps<k>", "client", "tower<i>"
  int worker = -1;      // kRole: index into TrainingSpec::workers ("worker<i>")
  std::string machine;  // kMachine, kLink (its NIC; "" with kLink: another link)
  int nic = 0;          // kLink on a machine's NIC: which one ("<machine>/nic" 0, ".../nic1" 1)
  // kLink: the link's platform name (core::PlatformLink::name): "<machine>/nic", "<machine>/nic1"
  // (its second NIC), "switch" (with racks the core switch), "core", "rack<i>/uplink",
  // "rack<i>/tor".
  std::string link;
  DeviceRef device;         // kSlowdown
  double at_s = 0;          // kRole, kMachine
  double from_s = 0;        // kSlowdown, kLink
  double until_s = 0;       // kSlowdown, kLink (limits::kOpenEndedFaultS when open_ended)
  bool open_ended = false;  // kSlowdown, kLink: no "until" given, the window lasts to the end
  double factor = 1;        // kSlowdown (0, 1], kLink [0, 1]
  std::string json_path;    // where it is, for errors found while compiling
};

struct Scenario {
  std::string name;
  std::string file;  // where it was read from ("" when built in code)
  // Which file each part came from (includes); null when parsed from one document.
  std::shared_ptr<const SourceMap> sources;
  // The file that holds `json_path` (for errors found after parsing).
  const std::string& file_of(const std::string& json_path) const {
    return sources ? sources->file_of(json_path) : file;
  }
  // The calibration it includes ("calibration": what `replisim calibrate` measured, where and
  // when; docs/scenario-format.md), or null.
  nlohmann::json calibration;
  ClusterSpec cluster;
  Model model;
  TrainingSpec training;
  std::vector<FaultSpec> faults;
};

// A scenario's "calibration" member: {"format": kCalibrationFormat, "version": kCalibrationVersion,
// ...} (its other members are provenance and figures, not read). Returns it; throws InputError at
// /calibration/format or /calibration/version for another kind of file or another version.
inline constexpr const char* kCalibrationFormat = "replisim-calibration";
inline constexpr int kCalibrationVersion = 1;
nlohmann::json check_calibration(const JsonCursor& c);

// Plausibility bounds on scenario quantities (SI units): far outside any real hardware or model,
// yet tight enough to keep simulated times finite and the simulator's arithmetic meaningful
// (denormal bandwidths or 1e308-byte tensors deadlock or overflow SimGrid).
namespace limits {
inline constexpr double kMinBandwidthBytesPerS = 1;     // 8 bit/s
inline constexpr double kMaxBandwidthBytesPerS = 1e15;  // 1 PB/s
inline constexpr double kMinSpeedFlopPerS = 1e3;        // 1 kFLOPS
inline constexpr double kMaxSpeedFlopPerS = 1e18;       // 1 EFLOPS
inline constexpr double kMaxLatencyS = 10;
inline constexpr double kMaxDelayS = 86400;  // start-up stagger, per-message overhead
inline constexpr double kMaxParams = 1e13;
inline constexpr double kMaxFlopPerSample = 1e16;
inline constexpr double kMaxBytesPerSample = 1e13;
inline constexpr double kMaxFlopPerParam = 1e6;
inline constexpr double kMinSamplesPerS = 1e-3;  // input pipeline rate when not 0 (free)
inline constexpr double kMaxSamplesPerS = 1e12;
inline constexpr int kMaxSteps = 1000000;
inline constexpr int kMaxReplicas = 1000000;
inline constexpr int kMaxCpuCores =
    kMaxDeviceCores;  // also replicas_to_aggregate, total_num_replicas
inline constexpr int kMaxBatch = 1 << 24;
inline constexpr double kMaxGpuMemoryBytes = 1e15;
// NICs of one machine (nic.count): core::kMaxNicsPerMachine (platform.h).
inline constexpr int kMaxNicsPerMachine = core::kMaxNicsPerMachine;
// Names (the scenario's, machines', layers'): they become op, role and device names in plans and
// traces, whose strings have a limit of their own (1 MiB, core/trace/trace_format.h).
inline constexpr size_t kMaxNameBytes = 1024;
// Devices (CPUs and GPUs) of a cluster, at most: refused while the machines are read, before they
// are made (100,000 machines of 1,024 GPUs each, in a 361-byte file, took 6 GiB). The plan's own
// budget (core/strategy/strategy.h, PlanBudget) bounds what is built from them.
inline constexpr double kMaxDevices = 4194304;
// The `until` of a fault window given without one: past the end of any run (a year). Plans keep
// this value (with PlanFault::open_ended), so a backend needs no special case for it.
inline constexpr double kOpenEndedFaultS = 86400.0 * 365;
}  // namespace limits

// Parses and validates a scenario. `file` names the source in error messages; `sources`, when
// given, names the file each part came from (includes). Throws InputError (file + JSON path +
// what was expected) on any bad input.
Scenario parse_scenario(const nlohmann::json& document, const std::string& file,
                        const SourceMap* sources = nullptr);

// A scenario file with its includes merged in: each "include" (a path or a list of paths,
// relative to the including file) is read first, in order, and the including file's own fields
// are deep-merged over the result (objects merge member by member; anything else replaces).
struct ScenarioDocument {
  nlohmann::json json;             // the merged document, without "include"
  SourceMap sources;               // which file each part came from
  std::vector<std::string> files;  // every file read, the top one first
};

// Where a scenario's files come from: the file system (the default), or a set held in memory (the
// scenario fuzzer's includes, tests).
class ScenarioFiles {
 public:
  enum class Kind { kMissing, kNotRegular, kFile };
  virtual ~ScenarioFiles() = default;
  virtual Kind kind(const std::string& path) const = 0;
  // One name per file, whatever the spelling of `path` (include cycles are found by it).
  virtual std::string canonical(const std::string& path) const = 0;
  // The file's JSON, at most `max_values` values (the loader asks for kMaxScenarioJsonValues,
  // and refuses a scenario whose files together hold more). Throws InputError naming `path`.
  virtual nlohmann::json read(const std::string& path, size_t max_values) const = 0;
};

// Files in memory: path -> text; paths are taken lexically ("a/./b.json" is "a/b.json").
class ScenarioFilesInMemory : public ScenarioFiles {
 public:
  explicit ScenarioFilesInMemory(std::map<std::string, std::string> files);
  Kind kind(const std::string& path) const override;
  std::string canonical(const std::string& path) const override;
  nlohmann::json read(const std::string& path, size_t max_values) const override;

 private:
  std::map<std::string, std::string> files_;
};

// Reads `file` and its includes. Throws InputError naming the including file and its
// /include/<i> path for a missing file or a cycle, and the included file for its own errors.
ScenarioDocument load_scenario_document(const std::string& file);
ScenarioDocument load_scenario_document(const std::string& file, const ScenarioFiles& files);

// Reads, merges, parses and validates a scenario file. Throws InputError.
Scenario load_scenario(const std::string& file);

// The platform of a validated cluster: per machine its NIC, its CPU (device first), then each
// GPU behind its own PCIe link; the switch is link 0 (scenario_platform.cpp).
Platform build_platform(const ClusterSpec& cluster);

// The index in a numbered name "<prefix><i>" without leading zeros ("worker3" -> 3), or -1 when
// `text` has another form.
int numbered_name(const std::string& text, const std::string& prefix);

}  // namespace replisim::core
