// Internal state of one simulation run (sim_run.cpp, sim_actors.cpp): per-device queues and
// connections, per-client step state, and the SimRun class that drives them. Not a public API.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/plan/plan.h"
#include "core/trace/trace.h"

namespace replisim::sim::detail {

namespace sg4 = simgrid::s4u;

using core::Op;
using core::OpKind;

// Work queued for a device or a connection belongs to one incarnation of its client: a job
// restart (a new incarnation) makes everything the failed one left behind void.
struct ComputeItem {
  int client;
  int op;
  bool production;  // an input-pipeline batch rather than an op of the current step
  int64_t step;
  int incarnation;
};

// A tensor waiting for its connection.
struct PendingSend {
  int client;
  int op;
  int incarnation;
};

// One connection between two devices: TF sends every tensor between two tasks over one gRPC
// (HTTP/2) connection, so concurrent tensors share one TCP flow's bandwidth rather than each
// taking a fair share of its own. Modelled as one transfer at a time per directed device pair,
// the others waiting in issue order. A transfer actor serves the connection while it has
// tensors: it waits out the route latency once, then sends them back to back.
struct Connection {
  int source = -1;
  int destination = -1;
  // Its own mailbox, whose permanent receiver is the destination's compute actor: a put starts
  // at once from the source host to the destination host and returns when the tensor has
  // arrived; the transfer actor then takes the delivered message off the mailbox itself.
  sg4::Mailbox* mailbox = nullptr;
  double latency_s = 0;  // one-way latency of the route, charged once per burst
  // Between machines, the platform transport: link bytes per tensor byte (headers) and the
  // ceiling of one stream (bytes/s; 0 = none).
  double wire_bytes_per_byte = 1;
  double rate_limit_bytes_per_s = 0;
  bool active = false;  // a transfer actor is serving it
  std::deque<PendingSend> waiting;
  std::vector<int> links;  // Platform::links its route crosses (link faults)
};

// A pooled actor on a device's host that serves one connection from that device at a time.
struct TransferActor {
  sg4::ActorPtr actor;
  int device = -1;          // the source device whose host it runs on
  int connection = -1;      // -1: idle (suspended, in its device's pool)
  sg4::CommPtr comm;        // the SimGrid communication in flight (link cuts suspend it)
  double comm_start_s = 0;  // when it started
  bool suspended = false;   // by a link cut
  // Bytes still to send when a link fault cancelled the communication (see degrade_link).
  double resend_bytes = 0;
};

struct DeviceState {
  sg4::Host* host = nullptr;
  // One compute actor per core (a GPU: one, its stream), taking ops from one queue.
  std::vector<sg4::ActorPtr> compute_actors;
  // The permanent receiver of the connections ending here. It only blocks, never suspends (SimGrid
  // suspends a communication whose receiver is suspended, so the compute actor cannot be it).
  sg4::ActorPtr sink;
  std::vector<int> idle_compute;    // compute actors suspended, waiting for work
  std::vector<int> idle_transfers;  // pooled transfer actors on this host
  std::deque<ComputeItem> compute_queue;
};

// How a client graph loops over its steps.
enum class StepLoop {
  kFixedSteps,   // Plan::steps steps (in-graph client, async worker)
  kSyncWorker,   // until the token it dequeues says global_step reached Plan::steps
  kChiefSyncOp,  // the chief's sync op: once per global step until Plan::steps; no step events
};

// Static facts about one client graph plus its dynamic step state.
struct ClientState {
  const core::ClientGraph* graph = nullptr;
  StepLoop loop = StepLoop::kFixedSteps;
  std::vector<std::vector<int>> dependents;
  std::vector<int> in_degree;
  std::vector<uint32_t> label, actor, device_name;  // interned strings per op
  std::vector<int> connection;                      // kSend ops: their connection
  uint32_t role_name = core::kNoString;
  int role_device = -1;
  // Step state.
  int step = 0;
  std::vector<int> remaining_inputs;
  size_t remaining_ops = 0;
  double step_start_s = 0;
  // The durations of the last few steps (a ring): the step jitter's scale is their median, so
  // one step stalled by a fault does not delay the next start by a share of the stall.
  std::array<double, 5> recent_step_s{};
  int recent_steps = 0;
  int64_t global_step_read = 0;  // sync workers: their local_step (the token they hold)
  int64_t next_local_step = 0;   // sync workers: the token dequeued in this step
  // Input pipeline state.
  int produced = 0;
  int batches_ready = 0;
  bool producing = false;
  bool waiting_for_input = false;
  bool finished = false;
  bool dead = false;    // killed by a fault: its ops are dropped, it runs no more steps
  int incarnation = 0;  // bumped by each job restart
  // After a job restart: when this incarnation starts (its first poll, the chief's restore), and
  // whether that start is still to come.
  double restart_start_s = 0;
  bool awaiting_restart = false;
  bool lost_before_back = false;  // killed while awaiting its restart
};

// What the driver actor does at a time (Timer::kind).
enum class TimerKind {
  kStart,     // a client's first step of its incarnation (its input pipeline starts too)
  kStep,      // a client's next step
  kFinish,    // the chief done with its final checkpoint
  kFault,     // a fault strikes (index: the fault)
  kFaultEnd,  // a fault's window ends
  kDetect,    // the clients find out that the job failed
  kRestart,   // the launcher restarts every task
};
struct Timer {
  double at_s;
  int order;  // ties at one time: lower first (faults, then first starts, then steps)
  TimerKind kind;
  int index;            // the client, or the fault
  int incarnation = 0;  // kStart, kStep: the client's incarnation that asked for it
  bool operator>(const Timer& other) const {
    return at_s > other.at_s || (at_s == other.at_s && order > other.order);
  }
};

// A checkpoint the chief wrote: the state a restart resumes from.
struct Checkpoint {
  double start_s = 0;  // when the save read the variables
  double end_s = 0;    // when it was on disk
  int64_t global_step = 0;
  std::vector<int> client_steps;  // each client's completed steps at start_s
};

// A job failure in progress (a PS, the in-graph client or a tower died).
struct JobFailure {
  int fault = -1;
  double fault_s = 0;
  double detected_s = 0;
  int64_t global_step = 0;  // at detection
};

// Synchronous training (SyncReplicasOptimizer): the accumulators, keyed by the first variable of
// each slice, and the token queue.
struct SyncState {
  bool enabled = false;
  bool strict = false;
  int replicas_to_aggregate = 0;
  int tokens_per_step = 0;
  std::vector<int64_t> accumulator_step;  // the accumulator's global step (bumped by each take)
  std::vector<int> accumulated;           // fresh gradients in since the last take
  std::vector<std::pair<int, int>> waiting_take;  // (client, op) of a take waiting; (-1, -1)
  std::deque<int64_t> tokens;
  std::deque<std::pair<int, int>> waiting_dequeue;  // (client, op), in arrival order
  bool done = false;  // global_step reached Plan::steps: dequeues return at once
};

class SimRun {
 public:
  explicit SimRun(const core::Plan& plan) : plan_(plan) {}
  core::Trace run();
  double engine_wall_s() const { return engine_wall_s_; }

 private:
  void prepare_clients();
  void create_actors();
  void compute_loop(int device, int core);
  void transfer_loop(int transfer);
  void activate(int connection);
  void deliver(const PendingSend& send, double start_s, int64_t message_id);
  void wake_compute(int device);
  void driver();

  void start_step(int c);
  void schedule_step(int c, double at_s);
  void dispatch(int c, int op);
  void complete(int c, int op);
  void drain();
  void complete_now(int c, int op);
  void finish_step(int c);
  void mark_finished(int c);
  void build_platform();
  void reserve_events();
  void record_outcome();
  void record_restart(const Checkpoint* checkpoint, double restore_s, double workers_resumed_s);
  void note_lost_before_back(int c);
  // Records a finished step's duration; returns the median of the client's last few (s).
  static double typical_step_s(ClientState& s, double step_s);
  void maybe_produce(int c);
  void finish_production(int c);
  double jitter_factor(int c, int device, int64_t step) const;
  bool more_steps(const ClientState& s) const;
  // Synchronous training (sim_sync.cpp).
  void prepare_sync();
  void reset_sync();
  bool dispatch_sync(int c, int op);  // false: not a sync op
  void accumulate(int c, int op);
  void take_gradient(int c, int op);
  void dequeue_token(int c, int op);
  void enqueue_tokens();
  // Why a synchronous run stopped short of Plan::steps: {"time_s" (the last update),
  // "global_step", "live_workers", "detected_s", "cause"}.
  nlohmann::json sync_stall() const;
  // Faults (sim_faults.cpp).
  void apply_slowdowns();
  void schedule_faults();
  void inject_fault(int code);  // 2 x fault index + phase (0 strikes, 1 its window ends)
  void degrade_link(int fault, bool start);
  // Link faults at run time (sim_faults.cpp): whether a connection's route crosses a cut link,
  // and how many bytes its next communication may carry (see there).
  bool crosses_cut(int connection) const;
  // Cancels the communications crossing `link` that started at or after since_s; their transfer
  // actors send the remaining bytes as new communications.
  void restart_capped_transfers(int link, double since_s);
  void wait_while_cut(int connection);
  void kill_client(int c);
  // Job failures and restarts (sim_recovery.cpp).
  bool void_item(int c, int incarnation, int op) const;  // work that must not run or complete
  void fail_job(int fault);
  void detect_job_failure();
  void restart_job();
  void start_client(int c);  // kStart: the chief first restores/saves, then steps
  // After the chief's step: its checkpoint and summaries, if due; returns the pause (s).
  double chief_duties(int c, double now);
  double write_checkpoint(double now, const char* why);

  const core::Plan& plan_;
  double engine_wall_s_ = 0;
  core::Trace trace_;
  std::vector<DeviceState> devices_;
  std::vector<ClientState> clients_;  // plan clients, then the chief's sync op when sync
  SyncState sync_;
  std::vector<Connection> connections_;
  std::vector<TransferActor> transfers_;
  std::vector<int> idle_transfers_;
  sg4::Host* service_host_ = nullptr;        // runs the driver; no links, never fails
  std::deque<std::pair<int, int>> pending_;  // completions waiting to be propagated
  bool draining_ = false;
  int64_t global_step_ = 0;
  int64_t next_message_id_ = 0;
  int finished_clients_ = 0;
  // Step starts waiting for their time, served by the driver actor (earliest first).
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  // Checkpoints, summaries and restarts.
  int chief_client_ = -1;  // the client graph of the chief role (-1: none)
  double last_checkpoint_s_ = 0;
  std::vector<Checkpoint> checkpoints_;
  std::vector<bool> role_dead_;  // roles a job fault killed, until the restart
  // Link faults in force: the links cut, and the lowered links with the time they went down.
  bool link_faults_ = false;  // the plan has link faults
  std::set<int> cut_links_;
  std::map<int, double> lowered_since_s_;
  sg4::MutexPtr links_mutex_;
  sg4::ConditionVariablePtr links_restored_;
  bool job_down_ = false;  // failed, not yet restarted
  JobFailure failure_;
  nlohmann::json restarts_ = nlohmann::json::array();
  sg4::MutexPtr driver_mutex_;
  sg4::ConditionVariablePtr driver_wake_;
  uint32_t global_step_counter_ = core::kNoString;
  double latency_factor_ = 1.0;  // the network model's multiplier on route latencies
};

}  // namespace replisim::sim::detail
