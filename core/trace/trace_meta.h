// What a trace says about its run, typed: the metadata written before the first event (the plan's
// summary, the platform, the backend, provenance) and the outcome written after the last one
// (restarts, a job failure or a stall, the run's own notes, when it ended). One JSON form each,
// read and written here only; metrics, reports and views read the fields, never JSON keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware/platform.h"
#include "core/plan/kinds.h"

namespace replisim::core {

// A task of the job (Plan::roles): its name, kind, main device and whether it is the chief.
struct TraceRole {
  std::string name;
  RoleKind kind = RoleKind::kWorker;
  std::string device;
  bool chief = false;
};

// A client graph (Plan::clients): the role that owns its steps and what one step applies.
struct TraceClient {
  std::string role;
  int samples_per_step = 0;
  double start_offset_s = 0;
  int data_steps = 0;  // steps of data it holds; 0 = no limit
};

struct TraceVariable {
  std::string name;
  double bytes = 0;
  int ps = 0;  // index into TraceMeta::ps
};

// A device whose memory capacity is known, against what the plan needs on it (bytes).
struct TraceMemory {
  std::string device;
  double needed_bytes = 0;
  double capacity_bytes = 0;
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
};

// Synchronous between-graph training (TraceMeta::sync == "sync").
struct TraceSyncReplicas {
  int replicas_to_aggregate = 0;
  int total_num_replicas = 0;
  std::string variant;  // "tf" or "strict"
};

// An op of a step graph (Plan's Op, reduced to what a critical path needs): `role` indexes
// TraceMeta::roles, `device` the platform's devices, `inputs` earlier ops of the same graph.
struct TraceOp {
  std::string name;
  OpKind kind = OpKind::kForward;
  int role = -1;
  int device = -1;
  int variable = -1;  // kReadVariable, kApply, kAccumulate, kTakeGradient: TraceMeta::variables
  std::vector<int> inputs;
};

// A step graph (step_graphs(plan) order: each client's, then the chief's sync op): the role that
// owns its events (TraceEvent::client) and its ops, in topological order. TraceEvent::op_index
// indexes `ops`.
struct TraceGraph {
  std::string role;
  std::vector<TraceOp> ops;
};

// The most ops TraceMeta::graphs holds (about 80 bytes of JSON each, below kMaxTraceMetaBytes).
inline constexpr size_t kMaxTraceGraphOps = 500000;

// Written once, before any event (TraceSink::begin).
struct TraceMeta {
  std::string scenario;
  std::string strategy;        // the strategy's registry name ("in_graph", "between_graph")
  std::string sync = "async";  // "async", "sync" or "distributed_replicated"
  TraceSyncReplicas sync_replicas;
  // Forward-only steps (Plan::forward_only): no update events; metrics count the clients' steps.
  // Written only when true.
  bool forward_only = false;
  int steps = 0;
  int warmup_steps = 0;
  int batch_per_replica = 0;
  uint64_t seed = 1;
  std::string plan_hash;
  Platform platform;
  std::vector<TraceRole> roles;
  std::vector<TraceClient> clients;
  std::vector<std::string> ps;  // role name of each PS shard
  std::string granularity = "layer";
  std::vector<std::string> notes;  // the plan's caveats (the run's own are in RunOutcome::notes)
  std::vector<TraceMemory> memory;
  std::vector<TraceVariable> variables;
  // The step graphs' dependencies (what the critical path walks; metrics.h). Empty in traces
  // written before 2026-12-03, and for plans of more than kMaxTraceGraphOps ops (their JSON
  // would pass the metadata's size limit): their reports have no "bound by" row.
  std::vector<TraceGraph> graphs;
  // training.objective's target, when the run computed the objective (loss and accuracy
  // counters; metrics.h ObjectiveMetrics): "accuracy" (reached at >= value) or "loss" (<= value);
  // "" when it computed none. Not written when "".
  std::string objective_target;
  double objective_target_value = 0;
  std::string backend;                                   // the registered name ("sim")
  nlohmann::json provenance = nlohmann::json::object();  // versions, scenario, command line, ...

  bool synchronous() const { return sync == "sync"; }
  // The role called `name`, or nullptr.
  const TraceRole* find_role(const std::string& name) const;
  // The step graph whose events name `role` as their client, or nullptr.
  const TraceGraph* find_graph(const std::string& role) const;
};

// Whether the run's clients are workers (between-graph: each worker's own client), whose
// training has a sync mode; in-graph's one client (RoleKind::kClient) is synchronous by
// construction. Decided by role kind, not by the strategy's name.
bool clients_are_workers(const TraceMeta& meta);

// A job failure and the restart that followed it (a parameter server, the in-graph client or a
// tower died; training.recovery). Times in seconds of the run's clock.
struct RestartRecord {
  std::string cause;                   // the fault's description
  double fault_s = 0;                  // the death
  double detected_s = 0;               // every client failed
  double restart_s = 0;                // the launcher restarted every task
  double resumed_s = 0;                // the chief restored the checkpoint: training goes on
  double workers_resumed_s = 0;        // every (other) worker found the model ready
  double restore_s = 0;                // the restore's duration
  double checkpoint_start_s = 0;       // when the restored checkpoint's save read the variables
  int64_t checkpoint_global_step = 0;  // where training resumed (0: from scratch)
  double lost_work_s = 0;              // training time thrown away
  int64_t global_step_at_failure = 0;
  int64_t lost_global_steps = 0;
  double interrupted_s = -1;  // the next job failure, when it came before workers_resumed_s
  std::vector<std::string> workers_lost;  // died before this restart brought them back
};

// A job failure without training.recovery: the run ended there.
struct JobFailureRecord {
  double time_s = 0;  // the death
  double detected_s = 0;
  int64_t global_step = 0;
  std::string cause;
  // A real run's task died without a fault of the plan (kill -9, the OOM killer) and the job
  // could not survive it (a PS, the in-graph client or a tower): the run failed, as TF's would.
  bool unplanned = false;
};

// Synchronous training stopped short of its global steps (every live worker waiting).
struct StallRecord {
  double time_s = 0;  // the last update
  int64_t global_step = 0;
  int live_workers = 0;
  double detected_s = 0;  // when the backend found every actor blocked
  std::string cause;
};

// training.steps "auto" (core/runtime/steady_state.h): where the run stopped and the interval it
// stopped on.
struct SteadyStateRecord {
  double tolerance = 0;    // the half width asked for, a fraction of the throughput
  int max_steps = 0;       // training.max_steps
  bool converged = false;  // the rule stopped the run; false: max_steps came first
  double stop_s = 0;       // when the rule held (not converged: 0)
  // global_step when the rule held (a synchronous run's last update: its measured window ends
  // there, as a run of that many steps would); not converged: 0.
  int64_t stop_global_step = 0;
  // The estimate when the rule held, or over the last window the run measured.
  double throughput_samples_per_s = 0;
  double half_width_fraction = 0;
  int updates = 0;  // in the estimate's window
};

// A real run's estimate of a task's clock against the chief's (ping-pong at start, the exchange
// with the lowest round trip kept): chief = task + offset_s, to within uncertainty_s (half that
// round trip). The merged trace is on the chief's clock.
struct ClockOffset {
  std::string task;  // "worker1"
  double offset_s = 0;
  double uncertainty_s = 0;
};

// Written once, after the last event (TraceSink::end).
struct RunOutcome {
  double end_s = 0;  // when the run ended (simulated seconds for a simulation)
  std::vector<RestartRecord> restarts;
  std::optional<JobFailureRecord> job_failure;
  std::optional<StallRecord> stall;
  std::optional<SteadyStateRecord> steady_state;  // training.steps "auto" only
  std::vector<std::string> notes;                 // what the run found out, after the plan's notes
  std::vector<ClockOffset> clock_offsets;         // real runs: every task but the coordinator's
  // A real run's part only: its task was killed at this time by a fault of the plan (it wrote its
  // part, then died).
  std::optional<double> killed_s;
};

// The JSON forms (docs/trace-format.md). Metadata: {"format": "replisim-trace-meta",
// "scenario", "strategy", "sync", "sync_replicas", "steps", ..., "backend", "provenance"}.
// Outcome: {"simulated_time_s", "restarts", "job_failure", "stall", "steady_state", "notes",
// "clock_offsets", "killed_s"},
// each but the first only when present; the same members that version 2 traces kept in their
// metadata.
nlohmann::json trace_meta_to_json(const TraceMeta& meta);
nlohmann::json run_outcome_to_json(const RunOutcome& outcome);
// The outcome's "steady_state" member (also the --json summary's, per run).
nlohmann::json steady_state_to_json(const SteadyStateRecord& record);

// Throw InputError(source, path + "/<member>", ...) on a missing member, a wrong type or a value
// out of range (e.g. a restart detected before its fault).
TraceMeta trace_meta_from_json(const nlohmann::json& json, const std::string& source,
                               const std::string& path = "/meta");
// Members absent from `json` keep their defaults (a version 2 metadata object holds the outcome
// only when the run had one).
RunOutcome run_outcome_from_json(const nlohmann::json& json, const std::string& source,
                                 const std::string& path = "/outcome");

}  // namespace replisim::core
