// The actors that do the work: one compute actor per device (one op at a time, suspended while
// it has none) and pooled transfer actors, each serving one connection while it has tensors.
// Both wait with suspend/resume and host-to-host transfers (Comm::sendto_async): few simcalls per
// op and per tensor, which is what bounds the simulation's speed.
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include "core/base/error.h"
#include "core/base/random.h"
#include "sim/sim_run_state.h"

namespace replisim::sim::detail {

void SimRun::wake_compute(int d) {
  DeviceState& device = devices_[size_t(d)];
  if (!device.idle_compute.empty()) {
    const int core = device.idle_compute.back();
    device.idle_compute.pop_back();
    device.compute_actors[size_t(core)]->resume();
  }
}

double SimRun::jitter_factor(int c, int device, int64_t step) const {
  if (plan_.compute_jitter_fraction <= 0) return 1.0;
  const double u = core::uniform01(plan_.seed, uint64_t(c) + 2, uint64_t(device), uint64_t(step));
  return 1.0 + plan_.compute_jitter_fraction * (2.0 * u - 1.0);
}

void SimRun::compute_loop(int d, int core) {
  DeviceState& device = devices_[size_t(d)];
  for (;;) {
    if (device.compute_queue.empty()) {
      // Nothing runs between these two lines: the flag and the suspension are one step for
      // everyone else (actors only switch at simcalls).
      device.idle_compute.push_back(core);
      sg4::this_actor::suspend();
      continue;
    }
    const ComputeItem item = device.compute_queue.front();
    device.compute_queue.pop_front();
    ClientState& s = clients_[size_t(item.client)];
    // Its client (or the role it runs for) died while the op was queued.
    if (void_item(item.client, item.incarnation, item.op)) continue;
    const Op& op = s.graph->ops[size_t(item.op)];
    const double flop =
        op.compute_flop * (op.jittered ? jitter_factor(item.client, d, item.step) : 1.0);
    core::TraceEvent event;
    event.kind = core::EventKind::kCompute;
    event.start_s = sg4::Engine::get_clock();
    sg4::this_actor::execute(flop);
    event.end_s = sg4::Engine::get_clock();
    event.actor = s.actor[size_t(item.op)];
    event.device = s.device_name[size_t(item.op)];
    event.label = s.label[size_t(item.op)];
    event.client = s.role_name;
    event.step = item.step;
    event.flop = flop;
    trace_.events.push_back(event);
    if (void_item(item.client, item.incarnation, item.op)) continue;  // died while it ran
    if (item.production) {
      finish_production(item.client);
      drain();
    } else {
      complete(item.client, item.op);
    }
  }
}

// Gives an idle connection that has a tensor waiting a transfer actor on its source's host: one
// from that host's pool, or a new one.
void SimRun::activate(int connection) {
  Connection& c = connections_[size_t(connection)];
  c.active = true;
  DeviceState& source = devices_[size_t(c.source)];
  if (!source.idle_transfers.empty()) {
    const int t = source.idle_transfers.back();
    source.idle_transfers.pop_back();
    transfers_[size_t(t)].connection = connection;
    transfers_[size_t(t)].actor->resume();
    return;
  }
  const int t = int(transfers_.size());
  TransferActor added;
  added.device = c.source;
  added.connection = connection;
  transfers_.push_back(added);
  // Any s4u call may yield: the slot is claimed above, before Actor::create runs.
  sg4::ActorPtr actor = sg4::Actor::create("transfer." + std::to_string(t), source.host,
                                           [this, t] { transfer_loop(t); });
  actor->daemonize();
  transfers_[size_t(t)].actor = actor;
}

// Serves one connection: waits out the route latency when the connection starts a burst, then
// sends its tensors one after the other (each after its per-message overhead) until none is
// left, then goes back to its host's pool.
void SimRun::transfer_loop(int t) {
  static int payload;  // transfers carry no data: the plan knows what each one is
  for (;;) {
    if (transfers_[size_t(t)].connection < 0) {
      devices_[size_t(transfers_[size_t(t)].device)].idle_transfers.push_back(t);
      sg4::this_actor::suspend();
      continue;
    }
    const int id = transfers_[size_t(t)].connection;
    bool first = true;
    bool sent = false;
    for (;;) {
      while (!connections_[size_t(id)].waiting.empty()) {
        Connection& connection = connections_[size_t(id)];
        const PendingSend item = connection.waiting.front();
        connection.waiting.pop_front();
        // Its client, or a role at either end, died while it waited.
        if (void_item(item.client, item.incarnation, item.op)) continue;
        const Op& send = clients_[size_t(item.client)].graph->ops[size_t(item.op)];
        const double start_s = sg4::Engine::get_clock();
        const double delay_s = send.overhead_s + (first ? connection.latency_s : 0.0);
        first = false;
        if (delay_s > 0) sg4::this_actor::sleep_for(delay_s);
        const int64_t message_id = next_message_id_++;
        // A zero-byte tensor (a control edge: TF's dead tensor) is latency only, which the wait
        // above has charged; it needs no flow on the links.
        if (send.bytes > 0) {
          double bytes = send.bytes * connection.wire_bytes_per_byte;
          while (bytes >= 1) {
            wait_while_cut(id);
            TransferActor& self = transfers_[size_t(t)];
            self.comm = connection.mailbox->put_init(&payload, uint64_t(bytes));
            if (connection.rate_limit_bytes_per_s > 0) {
              self.comm->set_rate(connection.rate_limit_bytes_per_s);
            }
            self.comm_start_s = sg4::Engine::get_clock();
            self.resend_bytes = 0;
            // With link faults, started before the wait so that a cut can suspend it and a
            // recovered link cancel it (an s4u activity that wait() starts itself is not marked
            // started, and suspend() then does nothing); without, wait() alone is one simcall
            // fewer per tensor.
            if (link_faults_) self.comm->start();
            try {
              self.comm->wait();
              bytes = 0;
            } catch (const simgrid::Exception&) {
              bytes = transfers_[size_t(t)].resend_bytes;  // cancelled when a link came back
            }
            transfers_[size_t(t)].comm = nullptr;
            transfers_[size_t(t)].suspended = false;
          }
          sent = true;
        }
        if (void_item(item.client, item.incarnation, item.op)) continue;
        deliver(item, start_s, message_id);
      }
      // Drop the delivered messages the permanent receiver kept (one call per burst). The call
      // may let other actors run: a tensor queued meanwhile (the connection still looked served)
      // is sent before the connection goes idle.
      if (sent) connections_[size_t(id)].mailbox->clear();
      sent = false;
      if (connections_[size_t(id)].waiting.empty()) break;
    }
    connections_[size_t(id)].active = false;
    transfers_[size_t(t)].connection = -1;
  }
}

void SimRun::deliver(const PendingSend& item, double start_s, int64_t message_id) {
  ClientState& s = clients_[size_t(item.client)];
  const Op& send = s.graph->ops[size_t(item.op)];
  core::TraceEvent event;
  event.kind = core::EventKind::kTransfer;
  event.actor = s.actor[size_t(item.op)];
  event.device = s.device_name[size_t(item.op)];
  event.peer_actor = s.actor[size_t(send.peer)];
  event.peer = s.device_name[size_t(send.peer)];
  event.label = s.label[size_t(item.op)];
  event.client = s.role_name;
  event.step = s.step;
  event.start_s = start_s;
  event.end_s = sg4::Engine::get_clock();
  event.bytes = send.bytes;
  event.message_id = message_id;
  trace_.events.push_back(event);
  pending_.emplace_back(item.client, item.op);
  pending_.emplace_back(item.client, send.peer);
  drain();
}

}  // namespace replisim::sim::detail
