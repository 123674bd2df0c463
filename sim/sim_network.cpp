// Connections and their transfer actors. Actors wait with suspend/resume and host-to-host
// transfers on per-connection mailboxes: few simcalls per tensor, which is what bounds the
// simulation's speed. With the exact sharing model, connections without CPU copies have no
// actor at all: the model's actor delivers each tensor and starts the next (none per tensor).
#include "sim/sim_network.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <simgrid/Exception.hpp>

#include "core/base/error.h"
#include "core/base/units.h"
#include "sim/sim_faults.h"
#include "sim/sim_sharing.h"

namespace replisim::sim::detail {

using core::Op;
using core::OpKind;

namespace {

// What bounded a tensor's rate: `flow_bound` (Network::binding_cap; empty: it had no flow), unless
// its fixed costs (the latency and per-message overhead, `delay_s`) took longer than its
// `wire_s` on the links.
std::string tensor_bound(std::string flow_bound, double wire_s, double delay_s) {
  if (flow_bound.empty() || wire_s < delay_s) return "latency and per-message overhead";
  return flow_bound;
}

}  // namespace

Network::Network(const core::Plan& plan, NetworkHost& host, LinkFaults& faults)
    : plan_(plan),
      host_(host),
      faults_(faults),
      processes_(core::plan_processes(plan)),
      hosts_(plan.platform.devices.size(), nullptr),
      receivers_(plan.platform.devices.size()),
      idle_transfers_(plan.platform.devices.size()) {}

Network::~Network() = default;

bool Network::use_sharing_model(sg4::Host* service_host, const std::vector<std::string>& nic_names,
                                double between_machines_factor, double reverse_coefficient) {
  for (const ProcessEndpoint& e : endpoints_) {
    if (e.process >= 0) return false;  // a process's RPC ceiling
  }
  for (const Connection& c : connections_) {
    if (c.rate_limit_bytes_per_s > 0) return false;  // a stream ceiling or loopback bandwidth
  }
  auto engine =
      std::make_unique<SharingEngine>(nic_names, between_machines_factor, reverse_coefficient);
  for (const Connection& c : connections_) {
    if (!engine->add_connection(hosts_[size_t(c.from)], hosts_[size_t(c.to)], c.between_machines)) {
      return false;
    }
  }
  // The engine's slots are the connections (one tensor in flight on each).
  engine->on_flow_start([this](int id) { flow_started(id); });
  engine->on_delivered([this](int id) { actorless_delivered(id); });
  engine->start(service_host);
  sharing_ = std::move(engine);
  for (Connection& c : connections_) c.actorless = c.copy_cpu_from < 0 && c.copy_cpu_to < 0;
  return true;
}

int Network::endpoint_of(int process, int device, int nic) {
  if (process < 0 && nic == 0) return device;  // the device's own host
  const auto [found, added] = endpoint_index_.try_emplace(
      {process, device, nic}, int(plan_.platform.devices.size() + endpoints_.size()));
  if (added) {
    endpoints_.push_back({process, device, nic});
    hosts_.push_back(nullptr);
    receivers_.emplace_back();
    idle_transfers_.emplace_back();
  }
  return found->second;
}

int Network::add_connection(const Op& send, const Op& recv, int collective) {
  const core::Platform& p = plan_.platform;
  const core::Transport& t = p.transport;
  Connection connection;
  connection.source = send.device;
  connection.destination = recv.device;
  const int machine = p.devices[size_t(send.device)].machine;
  const int peer_machine = p.devices[size_t(recv.device)].machine;
  const bool between_machines = machine != peer_machine;
  const int process_from = processes_.of_role[size_t(send.role)];
  const int process_to = processes_.of_role[size_t(recv.role)];
  // The transport's costs: between machines, and between processes of one machine when it says
  // so (strategy.cpp charges the per-message overhead on the same condition).
  const bool transport =
      collective >= 0 ? between_machines && collective == 1
                      : between_machines || (t.between_processes && process_from != process_to);
  // The ends: the devices' hosts, or each process's endpoint when the transport bounds what a
  // process moves; through the NIC of each end that Platform::nic_toward chooses (0 inside a
  // machine: the device's own host, or the process's first endpoint).
  const bool rpc_ceiling = transport && t.process_rpc_ceiling_bytes_per_s > 0 && collective < 0;
  const int nic_from = between_machines ? p.nic_index_toward(machine, peer_machine) : 0;
  const int nic_to = between_machines ? p.nic_index_toward(peer_machine, machine) : 0;
  connection.from = endpoint_of(rpc_ceiling ? process_from : -1, send.device, nic_from);
  connection.to = endpoint_of(rpc_ceiling ? process_to : -1, recv.device, nic_to);
  connection.between_machines = between_machines;
  connection.rdma = collective == 0;
  for (const core::Hop& hop : p.transfer_route(send.device, recv.device)) {
    connection.links.push_back(hop.link);
    const core::PlatformLink& link = p.links[size_t(hop.link)];
    const char* direction = hop.direction == core::LinkDirection::kUp     ? "/up"
                            : hop.direction == core::LinkDirection::kDown ? "/down"
                                                                          : "";
    connection.caps.push_back(cap_of(link.name + direction, link.bandwidth_bytes_per_s));
  }
  if (transport) {
    connection.rate_limit_bytes_per_s = t.flow_rate_limit_bytes_per_s;
    if (between_machines) {
      connection.wire_bytes_per_byte = 1 + t.header_overhead_fraction;
    } else {
      connection.loopback_latency_s = t.loopback_latency_s;
      const double loopback = t.loopback_bandwidth_bytes_per_s;
      if (loopback > 0 && (connection.rate_limit_bytes_per_s == 0 ||
                           loopback < connection.rate_limit_bytes_per_s)) {
        connection.rate_limit_bytes_per_s = loopback;
      }
    }
    if (t.copy_bandwidth_bytes_per_s > 0 && collective < 0) {
      connection.copy_cpu_from = p.cpu_of_machine(processes_.machine[size_t(process_from)]);
      connection.copy_cpu_to = p.cpu_of_machine(processes_.machine[size_t(process_to)]);
    }
    if (rpc_ceiling) {
      const std::string ceiling =
          " RPC ceiling " +
          core::format_quantity(t.process_rpc_ceiling_bytes_per_s, core::Dimension::kBandwidth, 3);
      for (int process : {process_from, process_to}) {
        connection.caps.push_back(
            cap_of(processes_.names[size_t(process)] + ceiling, t.process_rpc_ceiling_bytes_per_s));
      }
    }
    if (connection.rate_limit_bytes_per_s > 0) {
      const bool loopback = !between_machines &&
                            connection.rate_limit_bytes_per_s == t.loopback_bandwidth_bytes_per_s;
      connection.stream_ceiling =
          "the " +
          core::format_quantity(connection.rate_limit_bytes_per_s, core::Dimension::kBandwidth, 3) +
          (loopback ? " loopback stream" : " stream ceiling");
    }
  }
  connections_.push_back(std::move(connection));
  return int(connections_.size()) - 1;
}

int Network::cap_of(const std::string& name, double bytes_per_s) {
  const auto [found, added] = cap_index_.try_emplace(name, int(caps_.size()));
  if (added) caps_.push_back({name, bytes_per_s, 0});
  return found->second;
}

const std::string& Network::binding_cap(int id, const std::vector<int>& flows_at_start) const {
  static const std::string kNone = "";
  const Connection& connection = connections_[size_t(id)];
  const std::string* bound = &kNone;
  double least = 0;
  if (connection.rate_limit_bytes_per_s > 0) {
    bound = &connection.stream_ceiling;
    least = connection.rate_limit_bytes_per_s;
  }
  for (size_t k = 0; k < connection.caps.size(); ++k) {
    const Cap& cap = caps_[size_t(connection.caps[k])];
    // This flow is still counted in cap.flows.
    const double share = cap.bytes_per_s / std::max({1, flows_at_start[k], cap.flows});
    if (bound == &kNone || share < least) {
      bound = &cap.name;
      least = share;
    }
  }
  return *bound;
}

void Network::set_latency_factor(double latency_factor) {
  for (Connection& c : connections_) {
    // TCP's factors apply between machines only (sim_platform.h).
    double route_s = 0;  // core::Platform::transfer_route's links
    for (int link : c.links) route_s += plan_.platform.links[size_t(link)].latency_s;
    c.latency_s =
        (c.between_machines && !c.rdma ? latency_factor : 1.0) * route_s + c.loopback_latency_s;
  }
}

void Network::prepare(const std::vector<const core::ClientGraph*>& graphs) {
  // (source, destination, slot, sending process, receiving process) -> connection; a pair of
  // devices on different machines has transport.connections_per_peer slots, which its tensors
  // take in turn. Processes key connections only when the transport charges between processes
  // (one gRPC channel per pair of tasks); otherwise -1.
  std::map<std::tuple<int, int, int, int, int>, int> connection_of;
  std::map<std::pair<int, int>, int> sends_of_pair;
  const core::Platform& p = plan_.platform;
  const int slots = std::max(1, p.transport.connections_per_peer);
  graphs_ = graphs;
  for (const core::ClientGraph* graph : graphs) {
    std::vector<int>& of_op = connection_of_.emplace_back(graph->ops.size(), -1);
    for (size_t k = 0; k < graph->ops.size(); ++k) {
      const Op& op = graph->ops[k];
      if (op.kind != OpKind::kSend) continue;
      const Op& recv = graph->ops[size_t(op.peer)];
      const int source = op.device, destination = recv.device;
      const bool network =
          p.devices[size_t(source)].machine != p.devices[size_t(destination)].machine;
      const int slot = network ? sends_of_pair[{source, destination}]++ % slots : 0;
      const bool by_process = p.transport.between_processes;
      const auto key = std::make_tuple(source, destination, slot,
                                       by_process ? processes_.of_role[size_t(op.role)] : -1,
                                       by_process ? processes_.of_role[size_t(recv.role)] : -1);
      auto found = connection_of.find(key);
      if (found == connection_of.end()) {
        found = connection_of.emplace(key, add_connection(op, recv)).first;
      }
      of_op[k] = found->second;
    }
  }
}

void Network::prepare_collective(const std::vector<std::array<int, 5>>& pairs, bool kernel_tcp) {
  for (const auto& [from, to, channel, from_role, to_role] : pairs) {
    const auto key = std::make_tuple(from, to, channel);
    if (collective_connections_.count(key) != 0) continue;
    Op send, recv;
    send.device = from;
    send.role = from_role;
    recv.device = to;
    recv.role = to_role;
    collective_connections_[key] = add_connection(send, recv, kernel_tcp ? 1 : 0);
  }
}

int Network::collective_connection(int from_device, int to_device, int channel) const {
  auto found = collective_connections_.find(std::make_tuple(from_device, to_device, channel));
  return found == collective_connections_.end() ? -1 : found->second;
}

void Network::send_on(int id, const PendingSend& chunk) {
  Connection& connection = connections_[size_t(id)];
  connection.waiting.push_back(chunk);
  if (!connection.active) activate(id);
}

bool Network::links_idle(int id) const {
  for (int cap : connections_[size_t(id)].caps) {
    if (caps_[size_t(cap)].flows > 0) return false;
  }
  return true;
}

void Network::create_receiver(int e, sg4::Host* host) {
  hosts_[size_t(e)] = host;
  // It only blocks, never suspends (SimGrid suspends a communication whose receiver is
  // suspended, so a compute actor cannot be the receiver).
  receivers_[size_t(e)] = sg4::Actor::create(host->get_name() + "/receive", host, [] {
    const sg4::MutexPtr mutex = sg4::Mutex::create();
    const sg4::ConditionVariablePtr never = sg4::ConditionVariable::create();
    std::unique_lock<sg4::Mutex> lock(*mutex);
    for (;;) never->wait(lock);
  });
  receivers_[size_t(e)]->daemonize();
}

void Network::create_mailboxes() {
  for (size_t id = 0; id < connections_.size(); ++id) {
    Connection& connection = connections_[id];
    connection.mailbox = sg4::Mailbox::by_name("connection." + std::to_string(id));
    connection.mailbox->set_receiver(receivers_[size_t(connection.to)]);
  }
}

void Network::send(int c, int op, int incarnation) {
  const int id = connection_of_[size_t(c)][size_t(op)];
  Connection& connection = connections_[size_t(id)];
  connection.waiting.push_back({c, op, incarnation});
  if (!connection.active) activate(id);
}

// Gives an idle connection that has a tensor waiting a transfer actor on its source's host: one
// from that host's pool, or a new one (an actorless connection starts its tensor instead).
void Network::activate(int connection) {
  Connection& c = connections_[size_t(connection)];
  c.active = true;
  if (c.actorless) {
    c.first_in_burst = true;
    start_next(connection);
    return;
  }
  std::vector<int>& pool = idle_transfers_[size_t(c.from)];
  if (!pool.empty()) {
    const int t = pool.back();
    pool.pop_back();
    transfers_[size_t(t)].connection = connection;
    transfers_[size_t(t)].actor->resume();
    return;
  }
  const int t = int(transfers_.size());
  TransferActor added;
  added.endpoint = c.from;
  added.connection = connection;
  transfers_.push_back(added);
  // Any s4u call may yield: the slot is claimed above, before Actor::create runs.
  sg4::ActorPtr actor = sg4::Actor::create("transfer." + std::to_string(t), hosts_[size_t(c.from)],
                                           [this, t] { transfer_loop(t); });
  actor->daemonize();
  transfers_[size_t(t)].actor = actor;
}

void Network::copy_on(const PendingSend& send, int cpu, bool receiving, double seconds) {
  if (cpu < 0 || seconds <= 0) return;
  // At the CPU's peak speed per core: a slowdown of the CPU slows its copies too.
  const double flop = seconds * plan_.platform.devices[size_t(cpu)].speed_flop_per_s;
  const double start_s = sg4::Engine::get_clock();
  sg4::Exec::init()->set_flops_amount(flop)->set_host(device_hosts_[size_t(cpu)])->wait();
  host_.copied(send, cpu, receiving, start_s, flop);
}

void Network::flow_started(int id) {
  Connection& connection = connections_[size_t(id)];
  if (connection.message_id < 0) connection.message_id = next_message_id_++;
  connection.flows_at_start.resize(connection.caps.size());
  for (size_t k = 0; k < connection.caps.size(); ++k) {
    connection.flows_at_start[k] = ++caps_[size_t(connection.caps[k])].flows;
  }
}

std::string Network::flow_ended(int id) {
  std::string bound = binding_cap(id, connections_[size_t(id)].flows_at_start);
  for (int cap : connections_[size_t(id)].caps) --caps_[size_t(cap)].flows;
  return bound;
}

void Network::start_next(int id) {
  for (;;) {
    Connection& c = connections_[size_t(id)];
    while (!c.waiting.empty()) {
      const PendingSend item = c.waiting.front();
      c.waiting.pop_front();
      if (host_.void_send(item)) continue;  // its client, or a role at either end, died
      const Op& send_op = graphs_[size_t(item.client)]->ops[size_t(item.op)];
      const double bytes = item.chunk >= 0 ? item.bytes : send_op.bytes;
      const double overhead_s = item.chunk >= 0 ? item.overhead_s : send_op.overhead_s;
      // As transfer_loop: the route's latency once per burst, the overhead per tensor.
      c.current_delay_s = overhead_s + (c.first_in_burst ? c.latency_s : 0.0);
      c.first_in_burst = false;
      const double wire_bytes = bytes * c.wire_bytes_per_byte;
      c.current = item;
      c.current_start_s = sg4::Engine::get_clock();
      // A zero-byte tensor (a control edge) or one under a byte on the wire: the delay alone.
      c.current_flow = bytes > 0 && wire_bytes >= 1;
      c.message_id = -1;
      // Last: the call may let other actors run (and deliver this tensor).
      sharing_->send_async(id, id, c.mailbox, c.current_flow ? wire_bytes : 0.0, c.current_delay_s);
      return;
    }
    // Drop the delivered messages the permanent receiver kept (when SimGrid carried flows). The
    // call may let other actors run: a tensor queued meanwhile is sent before the connection
    // goes idle.
    if (!c.used_mailbox) break;
    c.used_mailbox = false;
    c.mailbox->clear();
  }
  connections_[size_t(id)].active = false;
}

void Network::actorless_delivered(int id) {
  Connection& c = connections_[size_t(id)];
  REPLISIM_ASSERT(c.actorless, "a connection with a transfer actor was delivered without it");
  std::string flow_bound;
  if (c.current_flow) {
    c.used_mailbox |= sharing_->used_mailbox(id);
    flow_bound = flow_ended(id);
  } else {
    c.message_id = next_message_id_++;
  }
  const double wire_start_s = c.current_start_s + c.current_delay_s;
  const std::string bound = tensor_bound(
      std::move(flow_bound), sg4::Engine::get_clock() - wire_start_s, c.current_delay_s);
  const PendingSend item = c.current;
  if (!host_.void_send(item)) host_.delivered(item, c.current_start_s, c.message_id, bound);
  start_next(id);
}

std::string Network::send_bytes(int t, int id, double bytes, double delay_s) {
  static int payload;  // transfers carry no data: the plan knows what each one is
  Connection& connection = connections_[size_t(id)];
  std::string bound;
  if (sharing_ && bytes >= 1) {
    // The engine calls flow_started() when the flow starts, after the delay (its slots are the
    // connections).
    if (sharing_->send(id, id, connection.mailbox, bytes, delay_s)) {
      connections_[size_t(id)].used_mailbox = true;
    }
    return flow_ended(id);
  }
  REPLISIM_ASSERT(delay_s == 0, "only the sharing engine waits out a tensor's delay");
  while (bytes >= 1) {
    faults_.wait_while_cut(connection.links);
    TransferActor& self = transfers_[size_t(t)];
    self.comm = connection.mailbox->put_init(&payload, uint64_t(bytes));
    connection.used_mailbox = true;
    if (connection.rate_limit_bytes_per_s > 0)
      self.comm->set_rate(connection.rate_limit_bytes_per_s);
    self.comm_start_s = sg4::Engine::get_clock();
    self.resend_bytes = 0;
    flow_started(id);
    // With link faults, started before the wait so that a cut can suspend it and a recovered
    // link cancel it (an s4u activity that wait() starts itself is not marked started, and
    // suspend() then does nothing); without, wait() alone is one simcall fewer per tensor.
    if (faults_.enabled()) self.comm->start();
    try {
      self.comm->wait();
      bytes = 0;
    } catch (const simgrid::NetworkFailureException&) {
      // Comm::cancel() fails the flow's network action, which SimGrid 3.32 reports to the
      // waiting sender as a link failure (no link of ours ever fails: links are never turned
      // off), not as a CancelException.
      bytes = transfers_[size_t(t)].resend_bytes;  // cancelled when a link came back
    }
    bound = flow_ended(id);
    transfers_[size_t(t)].comm = nullptr;
    transfers_[size_t(t)].suspended = false;
  }
  return bound;
}

// Serves one connection: waits out the route latency when the connection starts a burst, then
// sends its tensors one after the other (each after its per-message overhead) until none is
// left, then goes back to its host's pool.
void Network::transfer_loop(int t) {
  for (;;) {
    if (transfers_[size_t(t)].connection < 0) {
      idle_transfers_[size_t(transfers_[size_t(t)].endpoint)].push_back(t);
      sg4::this_actor::suspend();
      continue;
    }
    const int id = transfers_[size_t(t)].connection;
    bool first = true;
    for (;;) {
      while (!connections_[size_t(id)].waiting.empty()) {
        Connection& connection = connections_[size_t(id)];
        const PendingSend item = connection.waiting.front();
        connection.waiting.pop_front();
        if (host_.void_send(item)) continue;  // its client, or a role at either end, died
        const double start_s = sg4::Engine::get_clock();
        const Op& send_op = graphs_[size_t(item.client)]->ops[size_t(item.op)];
        const double bytes = item.chunk >= 0 ? item.bytes : send_op.bytes;
        const double overhead_s = item.chunk >= 0 ? item.overhead_s : send_op.overhead_s;
        const double delay_s = overhead_s + (first ? connection.latency_s : 0.0);
        first = false;
        const double wire_bytes = bytes * connection.wire_bytes_per_byte;
        const double copy_s = plan_.platform.transport.copy_s(bytes);
        const int copy_from = connection.copy_cpu_from;
        const int copy_to = connection.copy_cpu_to;
        // The exact sharing model waits out the delay of a flow it starts (SharingEngine::send):
        // one SimGrid activity fewer per tensor. Not when a copy on the sender's CPU comes
        // between the delay and the wire.
        const bool delay_in_model =
            sharing_ && bytes > 0 && wire_bytes >= 1 && (copy_from < 0 || copy_s <= 0);
        if (delay_s > 0 && !delay_in_model) sg4::this_actor::sleep_for(delay_s);
        // Numbered when the wire starts (after the delay): by flow_started() when the model
        // waits the delay out.
        connections_[size_t(id)].message_id = delay_in_model ? -1 : next_message_id_++;
        std::string bound = tensor_bound("", 0, delay_s);
        // A zero-byte tensor (a control edge: TF's dead tensor) is latency only, which the wait
        // above has charged; it needs no flow on the links.
        if (bytes > 0) {
          copy_on(item, copy_from, false, copy_s);
          const double wire_start_s = delay_in_model ? start_s + delay_s : sg4::Engine::get_clock();
          std::string flow_bound = send_bytes(t, id, wire_bytes, delay_in_model ? delay_s : 0.0);
          bound =
              tensor_bound(std::move(flow_bound), sg4::Engine::get_clock() - wire_start_s, delay_s);
          copy_on(item, copy_to, true, copy_s);
        }
        if (host_.void_send(item)) continue;
        host_.delivered(item, start_s, connections_[size_t(id)].message_id, bound);
      }
      // Drop the delivered messages the permanent receiver kept (one call per burst; none when
      // the exact sharing model carried every flow). The call may let other actors run: a
      // tensor queued meanwhile (the connection still looked served) is sent before the
      // connection goes idle.
      if (connections_[size_t(id)].used_mailbox) {
        connections_[size_t(id)].used_mailbox = false;
        connections_[size_t(id)].mailbox->clear();
      }
      if (connections_[size_t(id)].waiting.empty()) break;
    }
    connections_[size_t(id)].active = false;
    transfers_[size_t(t)].connection = -1;
  }
}

void Network::hold_crossing_cuts() {
  for (TransferActor& transfer : transfers_) {
    if (!transfer.comm || transfer.connection < 0) continue;
    const bool hold = faults_.crosses_cut(connections_[size_t(transfer.connection)].links);
    if (hold && !transfer.suspended) transfer.comm->suspend();
    if (!hold && transfer.suspended) transfer.comm->resume();
    transfer.suspended = hold;
  }
}

void Network::cancel_capped(int link, double since_s) {
  for (TransferActor& transfer : transfers_) {
    if (!transfer.comm || transfer.connection < 0 || transfer.comm_start_s < since_s) continue;
    const std::vector<int>& links = connections_[size_t(transfer.connection)].links;
    if (std::find(links.begin(), links.end(), link) == links.end()) continue;
    transfer.resend_bytes = transfer.comm->get_remaining();
    transfer.comm->cancel();
  }
}

}  // namespace replisim::sim::detail
