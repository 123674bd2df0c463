// What the parts of one simulation run share (internal to sim/): the step engine's per-client and
// per-device state, the work items queued on devices, and the driver's timers. Each part owns the
// rest of its state itself: SyncQueues (core/runtime/sync_queues.h), the client loop
// (core/runtime/client_loop.h), Network (sim_network.h), LinkFaults
// (sim_faults.h), JobRecovery (sim_recovery.h); SimRun (sim_engine.h) drives them.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/step_state.h"

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

struct DeviceState {
  sg4::Host* host = nullptr;
  // One compute actor per core (a GPU: one, its stream), taking ops from one queue.
  std::vector<sg4::ActorPtr> compute_actors;
  std::vector<int> idle_compute;  // compute actors suspended, waiting for work
  std::deque<ComputeItem> compute_queue;
};

// One client graph (a step graph of core::step_graphs) and the simulator's own state of it (its
// loop's state is core::ClientLoop's).
struct ClientState {
  explicit ClientState(const core::ClientGraph& g) : graph(&g), steps(g) {}
  const core::ClientGraph* graph;
  core::StepState steps;  // which ops are ready in the current step
  // The durations of the last few steps (a ring): the step jitter's scale is their median, so
  // one step stalled by a fault does not delay the next start by a share of the stall.
  std::array<double, 5> recent_step_s{};
  int recent_steps = 0;
  int64_t global_step_read = 0;  // sync workers: their local_step (the token they hold)
  bool dead = false;             // killed by a fault: its ops are dropped, it runs no more steps
  int incarnation = 0;           // bumped by each job restart
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
  kResumed,   // the chief finished restoring after a restart: training goes on
  kDeferred,  // work the all-reduce asked for (index: its key in SimRun::deferred_)
  kRollback,  // an elastic all-reduce survivor trains again after the rendezvous (same session)
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

}  // namespace replisim::sim::detail
