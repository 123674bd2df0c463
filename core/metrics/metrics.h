// Metrics of one run, computed from its trace alone (events + metadata), so simulated and real
// runs are measured by the same code. Definitions: docs/metrics.md.
#pragma once

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/metrics/critical_path.h"
#include "core/trace/trace.h"

namespace replisim::core {

struct Distribution {
  double mean = 0;
  double p50 = 0;
  double p95 = 0;
};

struct ResourceUse {
  std::string name;        // "<machine>/cpu", "<machine>/gpu0", "<machine>/nic/up", "switch", ...
  double utilization = 0;  // busy time / window (devices); bytes / (bandwidth x window) (links)
};

// Per client graph (a worker, or the in-graph client).
struct ClientMetrics {
  std::string name;
  int measured_steps = 0;  // steps that lie wholly inside the window
  double mean_step_time_s = 0;
  double step_rate_per_s = 0;  // 1 / mean_step_time_s (0 when no step was measured)
  bool died = false;           // a fault killed it (its rate covers its steps before that)
  // Its updates in the window (asynchronous and in-graph; a synchronous update is the chief's):
  // staleness = global_step at the apply - 1 - global_step read, as RunMetrics::staleness_mean.
  int updates = 0;
  double staleness_mean = 0;
  double staleness_max = 0;
  // staleness_histogram[k]: updates of staleness k; the last bucket (kStalenessBuckets - 1)
  // counts that and more. Empty without updates.
  std::vector<int> staleness_histogram;
  int dropped_gradients = 0;  // synchronous: its steps whose gradient an accumulator dropped
};

inline constexpr int kStalenessBuckets = 64;

// What a report prints for a figure of updates (update interval, staleness, push and apply
// phases) of a forward-only run, where none happened (RunMetrics::forward_only).
inline constexpr const char* kNoUpdatesText = "no updates (forward only)";

// What one role's time in its steps went to (fractions summing to 1).
struct WaitBreakdown {
  std::string role;       // role name
  std::string role_kind;  // "worker", "tower", "client"
  double compute = 0;     // its own ops running
  double network = 0;     // a transfer it sends or receives in flight
  // All-reduce: inside a phase of one of its own collectives (kCollective: negotiation, the
  // reduction's chunks), its own compute idle: waiting on the collective, that is on the other
  // ranks and the ring's links.
  double collective = 0;
  double peers = 0;   // other towers/workers of the same step computing
  double client = 0;  // the in-graph client computing
  double ps = 0;      // a parameter server applying
  double token = 0;   // sync: its gradients in, waiting for a token (the global step)
  double other = 0;   // nothing of the step active (start-up, jitter, software overhead)
};

// What held a role in a stretch of its step in which nothing of its own ran: the activity the
// wait breakdown charges it to (WaitBreakdown's network, collective, client, peers, ps, token,
// other).
enum class WaitCause { kNetwork, kClient, kPeers, kParameterServer, kToken, kOther, kCollective };
// "the network", "the client", "its peers", "a parameter server", "a token", "nothing of the
// step (start-up, jitter, overheads)", "the collective (all-reduce)".
const char* wait_cause_text(WaitCause cause);

// One stretch of a computing role's step (worker, tower, in-graph client) in which it neither
// computed nor moved a tensor of its own.
struct WaitStretch {
  uint32_t role = 0;  // the role's string id in the trace
  double start_s = 0;
  double end_s = 0;
  WaitCause cause = WaitCause::kOther;
};

// Every computing role's waits in every step of its client, the warm-up and the steps after the
// window included (a view draws them all), charged as the wait breakdown charges them; ordered by
// role id, then time; adjacent stretches of one cause joined. Throws InputError(`source`, ...) for
// a trace without run metadata.
std::vector<WaitStretch> wait_stretches(const Trace& trace, const std::string& source = "<trace>");

// A GPU's memory need against its capacity (when the scenario gives it).
struct MemoryUse {
  std::string device;
  double needed_bytes = 0;
  double capacity_bytes = 0;
  double headroom_bytes() const { return capacity_bytes - needed_bytes; }
};

// A fault the run went through (trace kFault events).
struct FaultRecord {
  std::string target;       // the role that died, or the slowed device
  std::string description;  // "worker2 dies", "machine w3 dies", "w3/gpu0 slowed to 0.5x"
  double start_s = 0;       // when it struck (a slowdown: its window)
  double end_s = 0;
  bool open_ended = false;  // a window with no end: it lasts to the end of the run
  // A role that died: its work since its last completed step, lost (s), and that step.
  double lost_work_s = 0;
  int64_t lost_step = -1;
  // A death no fault of the plan caused (a real run's task killed from outside; kEventUnplanned).
  bool unplanned = false;
  // The throughput (samples/s, updates counted as the window's) inside the measured window
  // before the fault struck, and after it ended (a death: after it); -1 when that part of the
  // window is empty (the fault came before the window, or lasts past its end).
  double throughput_before_samples_per_s = -1;
  double throughput_after_samples_per_s = -1;
};

// A job failure (a parameter server, the in-graph client or a tower died) and its restart from
// the last checkpoint (trace metadata "restarts", kRecovery events).
struct RecoveryRecord {
  std::string cause;             // "ps0 dies", "machine w3 dies"
  double fault_s = 0;            // the death
  double detected_s = 0;         // every client failed (fault + detect_timeout)
  double resumed_s = 0;          // the chief restored the checkpoint; training goes on
  double workers_resumed_s = 0;  // the other workers found the model ready (their next poll)
  double interrupted_s = -1;     // the next job failure, when it came before workers_resumed_s
  std::vector<std::string> workers_lost;  // died before this restart brought them back
  double recovery_time_s = 0;             // resumed_s - fault_s
  int64_t checkpoint_global_step = 0;     // where training resumed (0: no checkpoint, from scratch)
  double checkpoint_start_s = 0;          // when that checkpoint's save read the variables
  int64_t global_step_at_failure = 0;
  int64_t lost_global_steps = 0;  // updates rolled back
  // Training time thrown away: from the checkpoint's save (or the start, or the last restart's
  // resumption if later) to the death.
  double lost_work_s = 0;
};

// The training objective's curve (training.objective; the trace's "loss" and "accuracy" counters,
// one sample of each per evaluation on the test set, recorded after the global_step counter of
// the update that triggered it; TraceMeta::objective_target names the target).
struct ObjectiveMetrics {
  std::string target;  // "accuracy" (reached at >= target_value) or "loss" (at <= target_value)
  double target_value = 0;
  int evaluations = 0;  // 0: the run recorded none (a backend that does not compute it)
  // The last evaluation: its values, simulated time (s) and global step.
  double final_loss = 0;      // mean cross-entropy (nats)
  double final_accuracy = 0;  // fraction of the test set
  double final_s = 0;
  int64_t final_global_step = 0;
  // The first evaluation that reached the target: its time (s of the run's clock, from the
  // run's start) and the global step it evaluated; -1 when none did.
  double time_to_target_s = -1;
  int64_t global_steps_to_target = -1;
  bool reached() const { return time_to_target_s >= 0; }
};

// The objective's figures from the trace's counters; nullopt when its metadata names no target.
std::optional<ObjectiveMetrics> objective_metrics(const Trace& trace);

// One evaluation of the objective: when (s of the run's clock), at which global step (the
// global_step counter's last value before it), and its loss (nats) and accuracy (fraction).
struct ObjectivePoint {
  double time_s = 0;
  int64_t global_step = 0;
  double loss = 0;
  double accuracy = 0;
};
// The trace's evaluations in recording order (a restart's evaluations repeat global steps: the
// curve goes back with the values); empty when it recorded none.
std::vector<ObjectivePoint> objective_curve(const Trace& trace);

struct RunMetrics {
  std::string scenario;
  std::string strategy;
  std::string backend;  // the trace's ("sim", "real")
  double window_start_s = 0;
  double window_end_s = 0;
  // Samples of the updates applied in the window and kept: updates a restart rolled back (after
  // the checkpoint it restored) do not count.
  double throughput_samples_per_s = 0;
  Distribution step_time_s;
  double update_interval_s = 0;
  int updates_in_window = 0;
  // Forward-only steps (TraceMeta::forward_only): no update happened, so the update interval,
  // staleness and updates are 0 by definition, not measured (reports say "no updates (forward
  // only)"); the throughput counts the samples of the clients' steps ending in the window.
  bool forward_only = false;
  // Synchronous between-graph training (sync "sync"): what the workers computed, applied or not
  // (worker steps ending in the window x their batch / window), and the worker steps whose
  // gradient (one slice or more) an accumulator dropped as stale in the window.
  bool synchronous = false;
  bool worker_clients = false;  // the clients are workers (core::clients_are_workers)
  // "tf" or "strict"; "distributed_replicated" or "allreduce" (not synchronous: no token)
  std::string sync_variant;
  int replicas_to_aggregate = 0;
  int total_num_replicas = 0;
  double computed_samples_per_s = 0;
  int dropped_gradients = 0;
  // A synchronous run whose global_step stopped short of training.steps: from the last update
  // (`stall_start_s`) to the end of the run, with its cause.
  bool stalled = false;
  double stall_start_s = 0;
  double stall_end_s = 0;
  int64_t stall_global_step = 0;
  std::string stall_cause;
  // training.steps "auto": where the run stopped and the 95% interval it stopped on.
  std::optional<SteadyStateRecord> steady_state;
  std::vector<FaultRecord> faults;         // in time order
  std::vector<RecoveryRecord> recoveries;  // job restarts, in time order
  // A job failure with no training.recovery: the run ended there.
  bool job_failed = false;
  double job_failure_s = 0;
  std::string job_failure_cause;
  // A real run's task died from outside and the job could not survive it (JobFailureRecord).
  bool job_failure_unplanned = false;
  // The chief's checkpoints and summaries over the whole run: how many, and its time writing.
  int checkpoints_written = 0;
  int summaries_written = 0;
  double chief_writing_s = 0;
  double staleness_mean = 0;
  double staleness_max = 0;
  // training.objective's loss, accuracy and time to target over the whole run (not windowed).
  std::optional<ObjectiveMetrics> objective;
  std::vector<ResourceUse> devices;  // by utilisation, highest first
  std::vector<ResourceUse> links;    // per direction, highest first
  ResourceUse bottleneck;            // the highest of devices and links
  // What binds: the critical path of every measured step, per client and all together
  // (critical_path.h); empty for a trace without step graphs, and for window metrics.
  std::vector<CriticalPath> paths;
  CriticalPath bound_by;
  std::vector<double> bytes_per_ps;  // parameter bytes held by each PS shard
  std::string granularity;           // "layer" or "<N> groups"
  std::vector<MemoryUse> memory;     // GPUs with a known capacity, tightest first
  std::vector<ClientMetrics> clients;
  std::vector<WaitBreakdown> waits;
  double simulated_time_s = 0;
  size_t events = 0;
  // Caveats about the figures, one sentence each (e.g. a client with too few measured steps).
  std::vector<std::string> warnings;
  // What the plan says about itself (e.g. a scenario field this strategy does not use).
  std::vector<std::string> notes;
};

// Below this many steps inside the window a client's step time is flagged as noisy.
inline constexpr int kFewMeasuredSteps = 3;
// A step overlapping the window's edge this many times longer than the client's mean is flagged.
inline constexpr double kLongStepFactor = 3;
// Below this utilisation the bottleneck is reported as not saturated: the steps are then bound
// by waiting along the chain of dependent compute and transfers, not by one resource.
inline constexpr double kSaturatedUtilization = 0.7;
// ... unless one share of the critical path holds at least this much of it: that share binds.
inline constexpr double kPathHeldShare = 0.5;

// The run left no window to measure (too few steps, a job failure before the warm-up ended,
// every client dead): an InputError naming the trace, which also says which scenario field would
// change that (`scenario_path`, a JSON pointer such as "/training/steps"), so that a command that
// has the scenario can point at it instead.
class MeasurementError : public InputError {
 public:
  MeasurementError(const std::string& source, std::string scenario_path, const std::string& message)
      : InputError(source, "", message), scenario_path_(std::move(scenario_path)) {}
  const std::string& scenario_path() const { return scenario_path_; }

 private:
  std::string scenario_path_;
};

// Computes every metric. Throws InputError(`source`, ...) when the trace lacks the metadata or
// its steps are inconsistent, MeasurementError when they define no measurement window.
RunMetrics compute_metrics(const Trace& trace, const std::string& source = "<trace>");

// The metrics of a window the caller chooses, [from_s, until_s] in seconds of the run's clock (a
// range selected in a timeline view), instead of the measured window: throughput, update interval
// and staleness of the updates ending inside it, the step times of the steps wholly inside it,
// and the utilisation of every device and link direction over it with the bottleneck. Other
// fields are as compute_metrics fills them without a window (faults, restarts, memory), and the
// waits are left empty. Throws InputError(`source`, ...) when the trace lacks the metadata or
// until_s <= from_s.
RunMetrics compute_window_metrics(const Trace& trace, double from_s, double until_s,
                                  const std::string& source = "<trace>");

// Role-kind averages of `waits` ("worker", "tower", "client"), in that order, kinds present only.
std::vector<WaitBreakdown> average_waits_by_kind(const std::vector<WaitBreakdown>& waits);

}  // namespace replisim::core
