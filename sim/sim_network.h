// How tensors travel in the simulation (internal to sim/): one connection per directed pair of
// devices (and per slot when the transport opens several per peer; per pair of processes too when
// the transport charges between processes), each served by a pooled transfer actor that sends
// its tensors one after the other over SimGrid's links.
//
// A connection's ends are endpoints: a device's host, or, when the transport bounds what one
// process moves, a process's endpoint host on that device (ProcessEndpoint), or, when the device's
// machine reaches the other end through another NIC than its first (core::Platform::nic_toward), an
// endpoint whose way out is that NIC. Endpoint indices: the plan's devices first, then
// process_endpoints() in order.
//
// TF sends every tensor between two tasks over one gRPC (HTTP/2) connection, so concurrent
// tensors share one TCP flow's bandwidth rather than each taking a fair share of its own. Modelled
// as one transfer at a time per connection, the others waiting in issue order; the actor waits
// out the route latency once per burst, then sends the tensors back to back. In runs of the exact
// sharing model, a connection without copies on a CPU does the same without an actor
// (Connection::actorless): the model's actor starts each tensor after its delay and delivers it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/plan/plan.h"
#include "sim/sim_platform.h"

namespace replisim::sim::detail {

namespace sg4 = simgrid::s4u;

class LinkFaults;
class SharingEngine;

// A tensor waiting for its connection: send op `op` of client graph `client`'s incarnation; or,
// with `chunk` >= 0, a chunk of an all-reduce (sim_collectives.h) of `bytes` sent by that
// client's rank (`op`: its kAllReduce op), after `overhead_s`.
struct PendingSend {
  int client;
  int op;
  int incarnation;
  int64_t chunk = -1;
  double bytes = 0;
  double overhead_s = 0;
};

// What the network needs from the step engine.
class NetworkHost {
 public:
  virtual ~NetworkHost() = default;
  // Whether the send must not go (or count) any more: its client, or a role at either end, died.
  virtual bool void_send(const PendingSend& send) const = 0;
  // The send's copy (serialisation, or `receiving`, deserialisation) ran on CPU device `cpu`.
  virtual void copied(const PendingSend& send, int cpu, bool receiving, double start_s,
                      double flop) = 0;
  // The tensor arrived at its recv's device; it left at `start_s`. `bound`: what bounded its
  // rate (core::TraceEvent::bound).
  virtual void delivered(const PendingSend& send, double start_s, int64_t message_id,
                         const std::string& bound) = 0;
};

class Network {
 public:
  // `plan`, `host` and `faults` must outlive the network.
  Network(const core::Plan& plan, NetworkHost& host, LinkFaults& faults);
  ~Network();

  // Gives every send op of `graphs` (core::step_graphs) its connection. Call before the
  // platform is built: it needs process_endpoints().
  void prepare(const std::vector<const core::ClientGraph*>& graphs);
  // The network model's multiplier on the latencies of routes between machines, known once the
  // platform is built (network_latency_factor()). Call after prepare().
  void set_latency_factor(double latency_factor);
  const std::vector<ProcessEndpoint>& process_endpoints() const { return endpoints_; }
  const core::Processes& processes() const { return processes_; }
  // The hosts of the plan's devices (null: unused), where copies run.
  void set_device_hosts(const std::vector<sg4::Host*>& hosts) { device_hosts_ = hosts; }
  // The permanent receiver of the connections that end on endpoint `e` (on `host`). Call for each
  // device the plan uses and each process endpoint, in endpoint order, then create_mailboxes().
  void create_receiver(int e, sg4::Host* host);
  void create_mailboxes();

  // Queues send op `op` of graph `c` on its connection, waking a transfer actor if none serves it
  // (or, on an actorless connection, handing the tensor to the sharing engine).
  void send(int c, int op, int incarnation);

  // All-reduce: a connection per (sending device, receiving device, channel) of `pairs`, each
  // (from device, to device, channel, from role, to role). Between machines it crosses the
  // kernel's TCP stack when `kernel_tcp` (the transport's stream ceiling and headers; no
  // copies: NCCL reads device memory); inside a machine it takes the PCIe route alone (NCCL's
  // peer-to-peer or shared-memory transport). Call after prepare(), before the platform.
  void prepare_collective(const std::vector<std::array<int, 5>>& pairs, bool kernel_tcp);
  // The connection of (from device, to device, channel) that prepare_collective made; -1: none.
  int collective_connection(int from_device, int to_device, int channel) const;
  // Queues an all-reduce chunk (PendingSend::chunk >= 0) on `connection`.
  void send_on(int connection, const PendingSend& chunk);
  // The route latency the connection charges once per burst (s).
  double connection_latency_s(int connection) const {
    return connections_[size_t(connection)].latency_s;
  }
  // Whether no flow is on any link direction the connection crosses now.
  bool links_idle(int connection) const;

  // Lets the exact sharing model carry flows whenever it can (sim_sharing.h): call after
  // create_mailboxes(), in a run without faults. `nic_names`: the machines' NICs (split-duplex
  // links); `between_machines_factor` and `reverse_coefficient`: the network model's bandwidth
  // factor and cross-traffic (0: none). Does nothing and returns false when a flow could cross
  // a cap the model does not know: a stream ceiling, a process's RPC ceiling, a loopback link.
  bool use_sharing_model(sg4::Host* service_host, const std::vector<std::string>& nic_names,
                         double between_machines_factor, double reverse_coefficient);
  // The sharing model's figures (null: not in use).
  const SharingEngine* sharing_engine() const { return sharing_.get(); }

  // Link faults: suspends the communications in flight whose route crosses a cut link and
  // resumes those whose route no longer does.
  void hold_crossing_cuts();
  // Cancels the communications crossing `link` that started at or after `since_s` (SimGrid fixed
  // their rate when they started, under a lower bandwidth); their transfer actors send the bytes
  // left as new communications.
  void cancel_capped(int link, double since_s);

 private:
  struct Connection {
    int source = -1;  // devices (routes, link faults)
    int destination = -1;
    int from = -1;  // endpoints (hosts)
    int to = -1;
    // Serialisation and copying: the CPU devices of the sending and receiving processes (-1: no
    // copies), each charged Transport::copy_s of the tensor.
    int copy_cpu_from = -1;
    int copy_cpu_to = -1;
    // Its own mailbox, whose permanent receiver is the destination's receiver actor: a put starts
    // at once from the source host to the destination host and returns when the tensor has
    // arrived; the transfer actor then takes the delivered message off the mailbox itself.
    sg4::Mailbox* mailbox = nullptr;
    double latency_s = 0;  // one-way latency of the route, charged once per burst
    bool between_machines = false;
    // An all-reduce connection over RDMA (nccl_rdma): no kernel TCP, so none of the network
    // model's TCP latency factor.
    bool rdma = false;
    double loopback_latency_s = 0;  // between processes on one machine, the transport's
    // Between machines, the platform transport: link bytes per tensor byte (headers); between
    // processes, the ceiling of one stream (bytes/s; 0 = none).
    double wire_bytes_per_byte = 1;
    double rate_limit_bytes_per_s = 0;
    bool active = false;  // a transfer actor is serving it (actorless: a tensor is in flight)
    std::deque<PendingSend> waiting;
    std::vector<int> links;      // Platform::links its route crosses (link faults)
    std::vector<int> caps;       // the shared caps its flows cross (caps_)
    std::string stream_ceiling;  // the name of rate_limit_bytes_per_s (empty: none)
    // The tensor in flight (one at a time): its message id (-1: given when its flow starts), per
    // cap its flows when this one began, and whether a SimGrid comm went through the mailbox
    // since the connection's burst began.
    int64_t message_id = -1;
    std::vector<int> flows_at_start;
    bool used_mailbox = false;
    // Sent by the sharing engine without a transfer actor (SharingEngine::send_async): no copies on
    // a CPU come between its tensors' delays and their bytes. Then the tensor in flight, when
    // it was sent, its delay, and whether it has bytes on the links.
    bool actorless = false;
    bool first_in_burst = true;
    PendingSend current{};
    double current_start_s = 0;
    double current_delay_s = 0;
    bool current_flow = false;
  };
  // A resource the flows of several connections share, for naming what bounded a tensor's rate:
  // a link direction of its route, or a process's RPC ceiling.
  struct Cap {
    std::string name;  // "pc1/nic/up" (as the metrics name link directions), "ps0 RPC ceiling"
    double bytes_per_s = 0;
    int flows = 0;  // in flight now
  };
  // A pooled actor on a device's host that serves one connection from that device at a time.
  struct TransferActor {
    sg4::ActorPtr actor;
    int endpoint = -1;        // the source endpoint whose host it runs on
    int connection = -1;      // -1: idle (suspended, in its device's pool)
    sg4::CommPtr comm;        // the SimGrid communication in flight (link cuts suspend it)
    double comm_start_s = 0;  // when it started
    bool suspended = false;   // by a link cut
    double resend_bytes = 0;  // bytes still to send when a link fault cancelled the comm
  };

  // A connection of send op `send` (to recv op `recv`) in the plan's transport.
  // `collective`: an all-reduce's connection (-1: a plan send's; 0: RDMA; 1: kernel TCP).
  int add_connection(const core::Op& send, const core::Op& recv, int collective = -1);
  // Runs `seconds` of one core's work on CPU device `cpu` for `send` and waits for it.
  void copy_on(const PendingSend& send, int cpu, bool receiving, double seconds);
  // The endpoint of (process, device, NIC index) (ProcessEndpoint), added when new; (-1, device,
  // 0) is the device's own host, endpoint `device`.
  int endpoint_of(int process, int device, int nic);
  // The index in caps_ of the cap called `name`, added with `bytes_per_s` when new.
  int cap_of(const std::string& name, double bytes_per_s);
  // The cap with the smallest fair share for a flow of connection `id` (its capacity over the
  // flows crossing it when the flow began or ended, whichever is more; the stream ceiling is
  // the flow's own): what max-min sharing bounds the flow by, approximately (docs/model.md).
  const std::string& binding_cap(int id, const std::vector<int>& flows_at_start) const;
  // A flow of connection `id` starts (ends): counts it on its caps (and returns what bounded
  // it, binding_cap). A start numbers the tensor if it has no number yet. No s4u call (the
  // sharing engine's actor calls it).
  void flow_started(int id);
  std::string flow_ended(int id);
  void activate(int connection);
  // An actorless connection (Connection::actorless): hands its next tensor to the sharing
  // engine, or goes idle when none is waiting.
  void start_next(int id);
  // The sharing engine delivered the actorless connection's tensor in flight: records it
  // (NetworkHost::delivered), then starts the next.
  void actorless_delivered(int id);
  void transfer_loop(int transfer);
  // Sends one tensor's bytes on `connection`'s mailbox, anew after each link-fault cancellation;
  // with the sharing engine, starting `delay_s` from now (else `delay_s` must be 0). Returns what
  // bounded its rate (binding_cap).
  std::string send_bytes(int transfer, int connection, double bytes, double delay_s);

  const core::Plan& plan_;
  NetworkHost& host_;
  LinkFaults& faults_;
  std::vector<const core::ClientGraph*> graphs_;  // core::step_graphs(plan_)
  std::vector<std::vector<int>> connection_of_;   // per graph, per op: its connection (-1: none)
  std::vector<Connection> connections_;
  std::vector<TransferActor> transfers_;
  core::Processes processes_;
  std::vector<ProcessEndpoint> endpoints_;
  std::map<std::tuple<int, int, int>, int> endpoint_index_;  // (process, device, nic) -> endpoint
  std::vector<Cap> caps_;
  std::map<std::string, int> cap_index_;          // name -> index in caps_
  std::vector<sg4::Host*> device_hosts_;          // per device (null: unused)
  std::vector<sg4::Host*> hosts_;                 // per endpoint (null: unused)
  std::vector<sg4::ActorPtr> receivers_;          // per endpoint
  std::vector<std::vector<int>> idle_transfers_;  // per endpoint: its pooled transfer actors
  int64_t next_message_id_ = 0;
  std::unique_ptr<SharingEngine> sharing_;
  std::map<std::tuple<int, int, int>, int> collective_connections_;
};

}  // namespace replisim::sim::detail
