// The client loop: what every backend does for a client graph between and around its steps,
// whichever clock it runs on — how the graph loops over its steps, whether there are more, the
// input pipeline running ahead, a step's start and end, the chief's hooks (the session's
// checkpoints, its duties after each step) — and how a ready op is dispatched by its kind. The
// simulator runs it on SimGrid's clock (sim/sim_steps.cpp), a real run's node on its threads and
// sockets (real/node/node_steps.cpp); each implements StepHost. After ns-3's model code written
// once over a swappable SimulatorImpl (../shared/architecture-next.md §8).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "core/plan/plan.h"

namespace replisim::core {

// How a client graph loops over its steps.
enum class LoopKind {
  kFixedSteps,   // Plan::steps steps (in-graph client, async worker)
  kSyncWorker,   // until the token it dequeues says global_step reached Plan::steps
  kChiefSyncOp,  // the chief's sync op: once per global step until Plan::steps; no step events
};

// Graph `graph` of step_graphs(plan): with SyncReplicasOptimizer (Plan::sync "sync"),
// kSyncWorker for a client and kChiefSyncOp for the chief's sync op (the graphs after the
// clients); kFixedSteps otherwise (async, in-graph, distributed_replicated's barriers).
LoopKind loop_kind(const Plan& plan, size_t graph);

// One client's loop state. Hosts read it, and set it on a job restart (ClientLoop::resume).
struct LoopClient {
  const ClientGraph* graph = nullptr;
  LoopKind loop = LoopKind::kFixedSteps;
  int step = 0;                 // steps done: the index of the step in progress or next
  double step_start_s = 0;      // when the step in progress began (the host's clock)
  int64_t next_local_step = 0;  // sync workers: the token dequeued in this step
  // The input pipeline (Plan::input_prefetch_batches batches ahead of the steps).
  int produced = 0;
  int batches_ready = 0;
  bool producing = false;
  bool waiting_for_input = false;
  bool finished = false;
};

// What the loop needs of a backend. Calls come from the thread or actor that runs the loop
// (the simulator's actors, the node's network thread); none may call back into the loop
// recursively except where said.
class StepHost {
 public:
  virtual ~StepHost() = default;
  virtual double now_s() const = 0;
  // The client died or the run is stopping: the loop begins nothing more for it.
  virtual bool client_gone(int c) const = 0;
  // No completion is propagated any more (a real node that stops).
  virtual bool completions_stopped() const { return false; }
  // global_step as the client's host knows it (the chief's sync op runs until Plan::steps).
  virtual int64_t global_step_seen() const = 0;
  // training.steps "auto": false once the stopping rule's limit forbids the client's next step.
  virtual bool within_stop_limit(int c) const = 0;
  // training.steps "auto" on a real run: true when the client must wait for the coordinator's
  // limit before its next step (the host starts it again when the limit comes).
  virtual bool hold_step(int /*c*/) { return false; }
  virtual bool is_chief(int c) const = 0;

  // Begins the client's step (ClientLoop::client(c).step): the roots of its step graph other
  // than its input op are dispatched (a real run also tells the other tasks of the step).
  virtual void begin_step(int c) = 0;
  // Runs the input op's compute for batch `batch`, then calls ClientLoop::batch_produced(c).
  virtual void produce(int c, int64_t batch) = 0;
  // The step `step` ended over [start_s, end_s] (not the chief's sync op, which has no step
  // events): the trace, the stopping rule. Called before the step count moves.
  virtual void step_ended(int c, int step, double start_s, double end_s) = 0;
  // The step count moved (ClientLoop::client(c).step steps done): progress.
  virtual void step_counted(int c, double start_s, double end_s) = 0;
  // The chief's checkpoint when its session begins (`at_end` false) or ends: returns false when
  // there is none (not the chief, checkpoints off, the job down); otherwise calls
  // then(ready_s) once it is written, ready_s being when the client goes on (now or later).
  virtual bool session_checkpoint(int c, bool at_end, std::function<void(double)> then) = 0;
  // The chief's duties after a step that ended at end_s (a checkpoint or summaries when due);
  // calls then(pause_s) when they are done, pause_s the time they still take from then on.
  virtual void chief_duties(int c, double end_s, std::function<void(double)> then) = 0;
  // Host-side pause before the client's next step (the simulator's step jitter; s), given the
  // step that ended took step_s.
  virtual double step_gap_s(int /*c*/, double /*step_s*/) { return 0; }
  // Calls ClientLoop::start_step(c) at the host's time at_s (the simulator: a timer).
  virtual void start_step_at(int c, double at_s) = 0;
  // Calls ClientLoop::mark_finished(c) at the host's time at_s.
  virtual void finish_at(int c, double at_s) = 0;
  // The client is done: out of steps or data (it is not called twice).
  virtual void finished(int c) = 0;

  // Dispatch by op kind (ClientLoop::dispatch).
  // A recv: completes when its tensor is in (now, when it already is).
  virtual void recv(int c, int op) = 0;
  // A send: hands the tensor to the network.
  virtual void send(int c, int op) = 0;
  // A sync queue op (kTakeGradient, kTokenDequeue, kTokenEnqueue, kBarrier): core::SyncQueues.
  virtual void sync(int c, int op) = 0;
  // A kAllReduce: the client's tensor is ready for core::Collectives (collectives.h), which
  // completes the op once it is reduced. A host that runs no all-reduce plan need not override.
  virtual void collective(int c, int op);
  // An op that touches values (kReadVariable, kAggregate, kApply, kAccumulate, kLocalStep,
  // kGlobalStepIncrement): true when the host ran it itself (a backend that keeps values);
  // false to run it by its FLOP as any other op.
  virtual bool values(int /*c*/, int /*op*/) { return false; }
  // An op with compute (Op::compute_flop > 0) on its device.
  virtual void compute(int c, int op) = 0;
  // A completed op of the client's current step (from ClientLoop::drain, never recursively):
  // the host's bookkeeping, then its StepState, which dispatches what became ready.
  virtual void complete_now(int c, int op) = 0;
};

class ClientLoop {
 public:
  // One LoopClient per graph of `graphs` (loop_kind of each); `plan` and `host` outlive it.
  ClientLoop(const Plan& plan, const std::vector<const ClientGraph*>& graphs, StepHost& host);

  LoopClient& client(int c) { return clients_[size_t(c)]; }
  const LoopClient& client(int c) const { return clients_[size_t(c)]; }
  size_t size() const { return clients_.size(); }

  // A client's first step of an incarnation: the input pipeline starts, the chief first saves
  // a checkpoint (the hook's save at session creation) when checkpoints are on.
  void start_client(int c);
  void start_step(int c);
  // The client's step is over (every op of it done): its end recorded, the chief's duties,
  // then its next step (after the host's gap), or its session's end.
  void step_done(int c);
  // The input op's batch is ready (ClientLoop::produce's completion).
  void batch_produced(int c);
  // After a hold (StepHost::hold_step) ends: the client's next step now, or its session's end.
  void next_step(int c);
  void mark_finished(int c);
  bool more_steps(int c) const;
  // No completion waits to be propagated (a real node's quiescence).
  bool idle() const { return pending_.empty(); }
  // After a job restart: the client goes on from step `step` (its input pipeline from there),
  // a synchronous worker with the token `next_local_step`.
  void resume(int c, int step, int64_t next_local_step);
  // After an elastic all-reduce rollback (resume first): the client trains again from its step
  // in the same session (no session checkpoint, unlike start_client), or finishes when none is
  // left.
  void resume_steps(int c);

  // Runs a ready op by its kind through the host.
  void dispatch(int c, int op);
  // Op `op` of client c's step is done: queued and propagated iteratively, never recursively (a
  // chain of instant ops, or of whole instant steps, must not grow the stack).
  void complete(int c, int op);
  // Queues a completion without propagating it yet (several that arrive together, in order);
  // drain() propagates.
  void enqueue(int c, int op) { pending_.emplace_back(c, op); }
  void drain();

 private:
  void maybe_produce(int c);
  void after_duties(int c, double end_s, double step_s, double pause_s);
  void end_session(int c);

  const Plan& plan_;
  StepHost& host_;
  std::vector<LoopClient> clients_;
  std::deque<std::pair<int, int>> pending_;  // completions waiting to be propagated
  bool draining_ = false;
};

}  // namespace replisim::core
