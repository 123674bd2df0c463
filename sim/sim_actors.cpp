// The three actors of each device: compute (one op at a time), send (admits tensors to their
// connections) and receive (takes each tensor as it arrives, on any incoming connection).
#include <memory>

#include <simgrid/s4u.hpp>

#include "core/error.h"
#include "sim/sim_run_state.h"

namespace replisim::sim::detail {

void SimRun::compute_loop(int d) {
  DeviceState& device = devices_[size_t(d)];
  for (;;) {
    std::unique_lock<sg4::Mutex> lock(*device.mutex);
    while (device.compute_queue.empty()) device.compute_ready->wait(lock);
    const ComputeItem item = device.compute_queue.front();
    device.compute_queue.pop_front();
    lock.unlock();
    ClientState& s = clients_[size_t(item.client)];
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
    if (item.production) {
      finish_production(item.client);
      drain();
    } else {
      complete(item.client, item.op);
    }
  }
}

// Admits released tensors to their connection: an idle connection waits out the route latency
// once, then carries the tensor; tensors that find it busy queue behind, in order, and follow
// back to back without paying the latency again (the stream is already flowing).
void SimRun::send_loop(int d) {
  DeviceState& device = devices_[size_t(d)];
  for (;;) {
    std::unique_lock<sg4::Mutex> lock(*device.mutex);
    while (device.send_queue.empty()) device.send_ready->wait(lock);
    SendItem item = device.send_queue.top();
    const double now = sg4::Engine::get_clock();
    if (item.release_s > now) {
      device.send_ready->wait_until(lock, item.release_s);
      continue;
    }
    device.send_queue.pop();
    lock.unlock();
    Connection& connection =
        connections_[size_t(clients_[size_t(item.client)].connection[size_t(item.op)])];
    if (!item.admitted) {
      if (connection.busy) {
        connection.waiting.push_back(item);
        continue;
      }
      connection.busy = true;
      item.admitted = true;
      item.admitted_s = now;
      if (connection.latency_s > 0) {
        item.release_s = now + connection.latency_s;
        item.sequence = next_send_sequence_++;
        device.send_queue.push(item);
        continue;
      }
    }
    const Op& send = clients_[size_t(item.client)].graph->ops[size_t(item.op)];
    auto* message = new Message{item.client, item.op, item.admitted_s, next_message_id_++};
    connection.mailbox->put_init(message, uint64_t(send.bytes))->detach();
  }
}

void SimRun::receive_loop(int d) {
  DeviceState& device = devices_[size_t(d)];
  // A get is always posted on every incoming connection; eager mailboxes let a send start at
  // once even in the instant between a delivery and the next get.
  std::vector<sg4::CommPtr> gets(device.incoming.size());
  std::vector<Message*> slots(device.incoming.size(), nullptr);
  for (size_t i = 0; i < gets.size(); ++i) {
    sg4::Mailbox* mailbox = connections_[size_t(device.incoming[i])].mailbox;
    mailbox->set_receiver(sg4::Actor::self());
    gets[i] = mailbox->get_async<Message>(&slots[i]);
  }
  for (;;) {
    const ssize_t ready = sg4::Comm::wait_any(gets);
    REPLISIM_ASSERT(ready >= 0, "wait_any returned no communication");
    const size_t i = size_t(ready);
    const std::unique_ptr<Message> message(slots[i]);
    Connection& connection = connections_[size_t(device.incoming[i])];
    gets[i] = connection.mailbox->get_async<Message>(&slots[i]);
    deliver(*message, connection);
  }
}

void SimRun::deliver(const Message& message, Connection& connection) {
  ClientState& s = clients_[size_t(message.client)];
  const Op& send = s.graph->ops[size_t(message.send_op)];
  core::TraceEvent event;
  event.kind = core::EventKind::kTransfer;
  event.actor = s.actor[size_t(message.send_op)];
  event.device = s.device_name[size_t(message.send_op)];
  event.peer_actor = s.actor[size_t(send.peer)];
  event.peer = s.device_name[size_t(send.peer)];
  event.label = s.label[size_t(message.send_op)];
  event.client = s.role_name;
  event.step = s.step;
  event.start_s = message.issued_s;
  event.end_s = sg4::Engine::get_clock();
  event.bytes = send.bytes;
  event.message_id = message.message_id;
  trace_.events.push_back(event);
  // The connection is free: its next tensor goes out now (from the sender's own actor).
  connection.busy = false;
  if (!connection.waiting.empty()) {
    SendItem next = connection.waiting.front();
    connection.waiting.pop_front();
    connection.busy = true;
    next.admitted = true;
    next.admitted_s = next.release_s = sg4::Engine::get_clock();
    DeviceState& sender = devices_[size_t(connection.source)];
    sender.send_queue.push(next);
    sender.send_ready->notify_all();
  }
  pending_.emplace_back(message.client, message.send_op);
  pending_.emplace_back(message.client, send.peer);
  drain();
}

}  // namespace replisim::sim::detail
