// Internal state of one simulation run (sim_run.cpp, sim_actors.cpp): per-device queues and
// connections, per-client step state, and the SimRun class that drives them. Not a public API.
#pragma once

#include <cstdint>
#include <deque>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/plan.h"
#include "core/trace.h"

namespace replisim::sim::detail {

namespace sg4 = simgrid::s4u;

using core::Op;
using core::OpKind;

// A tensor in flight; the receiver owns it once delivered.
struct Message {
  int client;
  int send_op;
  double issued_s;
  int64_t message_id;
};

struct ComputeItem {
  int client;
  int op;
  bool production;  // an input-pipeline batch rather than an op of the current step
  int64_t step;
};

struct SendItem {
  double release_s;
  int64_t sequence;  // FIFO among equal release times
  int client;
  int op;
  bool admitted = false;  // holds its connection; goes on the wire at release_s
  double admitted_s = 0;  // when it took the connection (start of the transfer event)
  bool operator>(const SendItem& other) const {
    return release_s != other.release_s ? release_s > other.release_s : sequence > other.sequence;
  }
};

// One connection between two devices: TF sends every tensor between two tasks over one gRPC
// (HTTP/2) connection, so concurrent tensors share one TCP flow's bandwidth rather than each
// taking a fair share of its own. Modelled as one transfer in flight per directed device pair,
// the others waiting in issue order.
// Each connection has its own mailbox, so a receiver can wait on all of its connections at once
// and take each tensor when it arrives (one mailbox per device would match gets to puts in issue
// order and hold a finished tensor behind an unfinished one from another sender).
struct Connection {
  int source = -1;
  int destination = -1;
  sg4::Mailbox* mailbox = nullptr;
  double latency_s = 0;  // one-way latency of the route, charged once per burst
  bool busy = false;     // a tensor is on its way (or waiting out the latency)
  std::deque<SendItem> waiting;
};

struct DeviceState {
  sg4::Host* host = nullptr;
  std::vector<int> incoming;  // connections ending here
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr compute_ready;
  sg4::ConditionVariablePtr send_ready;
  std::deque<ComputeItem> compute_queue;
  std::priority_queue<SendItem, std::vector<SendItem>, std::greater<SendItem>> send_queue;
};

// Static facts about one client graph plus its dynamic step state.
struct ClientState {
  const core::ClientGraph* graph = nullptr;
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
  int64_t global_step_read = 0;
  // Input pipeline state.
  int produced = 0;
  int batches_ready = 0;
  bool producing = false;
  bool waiting_for_input = false;
  bool finished = false;
};

class SimRun {
 public:
  explicit SimRun(const core::Plan& plan) : plan_(plan) {}
  core::Trace run();

 private:
  void prepare_clients();
  void create_actors();
  void compute_loop(int device);
  void send_loop(int device);
  void receive_loop(int device);
  void deliver(const Message& message, Connection& connection);
  void driver();

  void start_step(int c);
  void schedule_step(int c, double at_s);
  void dispatch(int c, int op);
  void complete(int c, int op);
  void drain();
  void complete_now(int c, int op);
  void finish_step(int c);
  void maybe_produce(int c);
  void finish_production(int c);
  double jitter_factor(int c, int device, int64_t step) const;

  const core::Plan& plan_;
  core::Trace trace_;
  std::vector<DeviceState> devices_;
  std::vector<ClientState> clients_;
  std::vector<Connection> connections_;
  std::deque<std::pair<int, int>> pending_;  // completions waiting to be propagated
  bool draining_ = false;
  int64_t global_step_ = 0;
  int64_t next_message_id_ = 0;
  int64_t next_send_sequence_ = 0;
  int finished_clients_ = 0;
  // Step starts waiting for their time, served by the driver actor (earliest first).
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>,
                      std::greater<std::pair<double, int>>>
      timers_;
  sg4::MutexPtr driver_mutex_;
  sg4::ConditionVariablePtr driver_wake_;
  uint32_t global_step_counter_ = core::kNoString;
  double latency_factor_ = 1.0;  // the network model's multiplier on route latencies
};

}  // namespace replisim::sim::detail
