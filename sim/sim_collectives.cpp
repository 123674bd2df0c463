#include "sim/sim_collectives.h"

#include <algorithm>
#include <array>

#include "core/base/error.h"
#include "core/hardware/collective_transport.h"

namespace replisim::sim::detail {

SimCollectives::SimCollectives(const core::Plan& plan, Network& network,
                               core::TraceRecorder& recorder, Hooks hooks, bool fast_ring)
    : plan_(plan),
      network_(network),
      recorder_(recorder),
      hooks_(std::move(hooks)),
      fast_ring_(fast_ring) {
  std::vector<int> all;
  for (size_t r = 0; r < plan.collective.ranks.size(); ++r) all.push_back(int(r));
  collectives_.emplace(plan, *this, &recorder, all, /*coordinator=*/true);
}

int SimCollectives::device_of_rank(int rank) const {
  const core::ClientGraph& graph = plan_.clients[size_t(collectives_->client_of_rank(rank))];
  return plan_.roles[size_t(graph.role)].device;
}

void SimCollectives::prepare() {
  const core::CollectiveProgram& program = collectives_->program();
  const int ranks = int(plan_.collective.ranks.size());
  std::vector<std::array<int, 5>> pairs;
  auto add = [&](int from, int to, int channel) {
    const int from_role = plan_.clients[size_t(collectives_->client_of_rank(from))].role;
    const int to_role = plan_.clients[size_t(collectives_->client_of_rank(to))].role;
    pairs.push_back({device_of_rank(from), device_of_rank(to), channel, from_role, to_role});
  };
  for (int r = 0; r < ranks; ++r) {
    for (int h = 0; h < program.channels; ++h) {
      for (const core::CollectiveStep& s : program.steps[size_t(r)][size_t(h)]) {
        if (s.send_to >= 0) add(r, s.send_to, h);
      }
    }
  }
  if (plan_.collective.elastic) {
    // The survivors' programs pair ranks the full one does not: every pair, on every channel
    // (tree programs use two).
    const int channels = std::max(2, program.channels);
    for (int a = 0; a < ranks; ++a) {
      for (int b = 0; b < ranks; ++b) {
        if (a == b) continue;
        for (int h = 0; h < channels; ++h) add(a, b, h);
      }
    }
  }
  const core::CollectiveTransport* transport =
      core::find_collective_transport(plan_.collective.transport);
  network_.prepare_collective(pairs, transport == nullptr || transport->kernel_tcp);
}

void SimCollectives::send(int connection, const InFlight& flight, double overhead_s) {
  REPLISIM_ASSERT(connection >= 0, "an all-reduce chunk between ranks without a connection");
  const int64_t id = next_flight_++;
  in_flight_[id] = flight;
  const int c = collectives_->client_of_rank(flight.chunk.from);
  PendingSend p{c, flight.op, hooks_.incarnation(c), id, flight.chunk.bytes, overhead_s};
  network_.send_on(connection, p);
}

void SimCollectives::send_chunk(const core::CollectiveResponse& r,
                                const core::CollectiveChunk& chunk) {
  InFlight flight;
  flight.chunk = chunk;
  flight.step = r.step;
  flight.op = collectives_->op_of_tensor(chunk.from, r.tensors.front());
  send(network_.collective_connection(device_of_rank(chunk.from), device_of_rank(chunk.to),
                                      chunk.channel),
       flight, 0.0);
}

std::vector<int> SimCollectives::ring_connections(const core::CollectiveResponse& r) const {
  std::vector<int> out;
  const int n = int(r.ranks.size());
  const int channels = collectives_->program().channels;
  for (int p = 0; p < n; ++p) {
    for (int h = 0; h < channels; ++h) {
      out.push_back(network_.collective_connection(
          device_of_rank(r.ranks[size_t(p)]), device_of_rank(r.ranks[size_t((p + 1) % n)]), h));
    }
  }
  return out;
}

bool SimCollectives::can_carry_whole(const core::CollectiveResponse& r) {
  if (!fast_ring_ || plan_.collective.algorithm != "ring" || !plan_.faults.empty() ||
      r.ranks.size() < 2) {
    return false;
  }
  for (int connection : ring_connections(r)) {
    if (connection < 0) return false;
  }
  return true;
}

bool SimCollectives::carry_whole(const core::CollectiveResponse& r) {
  const std::vector<int> connections = ring_connections(r);
  for (int connection : connections) {
    if (!network_.links_idle(connection)) return false;  // other traffic: chunk by chunk
  }
  const int n = int(r.ranks.size());
  const int channels = collectives_->program().channels;
  const int steps = 2 * (n - 1);
  // The ring's steps run in lock step at its slowest pair's pace: its latency per step (the
  // transport's and the route's), then its share of the bytes.
  double step_latency_s = 0;
  for (int p = 0; p < n; ++p) {
    const int from = r.ranks[size_t(p)], to = r.ranks[size_t((p + 1) % n)];
    const bool local = plan_.platform.devices[size_t(device_of_rank(from))].machine ==
                       plan_.platform.devices[size_t(device_of_rank(to))].machine;
    const double alpha =
        local ? plan_.collective.local_step_latency_s : plan_.collective.step_latency_s;
    for (int h = 0; h < channels; ++h) {
      step_latency_s =
          std::max(step_latency_s,
                   alpha + network_.connection_latency_s(connections[size_t(p * channels + h)]));
    }
  }
  const double bytes = r.bytes * steps / n / channels;
  whole_left_[r.id] = n * channels;
  for (int p = 0; p < n; ++p) {
    for (int h = 0; h < channels; ++h) {
      const int connection = connections[size_t(p * channels + h)];
      InFlight flight;
      flight.chunk.id = r.id;
      flight.chunk.from = r.ranks[size_t(p)];
      flight.chunk.to = r.ranks[size_t((p + 1) % n)];
      flight.chunk.channel = h;
      flight.chunk.bytes = bytes;
      flight.step = r.step;
      flight.whole = r.id;
      flight.op = collectives_->op_of_tensor(flight.chunk.from, r.tensors.front());
      // The connection charges its own route latency once: the rest of the steps' latencies
      // before the bytes.
      send(connection, flight, steps * step_latency_s - network_.connection_latency_s(connection));
    }
  }
  return true;
}

void SimCollectives::delivered(const PendingSend& send, double start_s, int64_t message_id,
                               const std::string& bound) {
  auto found = in_flight_.find(send.chunk);
  REPLISIM_ASSERT(found != in_flight_.end(), "an all-reduce chunk delivered twice");
  const InFlight flight = found->second;
  in_flight_.erase(found);
  const int from = collectives_->client_of_rank(flight.chunk.from);
  const int to = collectives_->client_of_rank(flight.chunk.to);
  recorder_.collective_transfer(from, flight.op, to, flight.step, flight.chunk.bytes, start_s,
                                hooks_.now_s(), message_id, bound);
  if (flight.whole >= 0) {
    if (--whole_left_[flight.whole] == 0) {
      whole_left_.erase(flight.whole);
      collectives_->whole_done(flight.whole);
    }
    return;
  }
  collectives_->sent(flight.chunk);
  collectives_->arrived(flight.chunk);
}

void SimCollectives::reduced(int rank, const core::CollectiveResponse& r) {
  const int c = collectives_->client_of_rank(rank);
  if (hooks_.client_dead(c)) return;
  for (int t : r.tensors) hooks_.complete(c, collectives_->op_of_tensor(rank, t));
}

int SimCollectives::counting_client() const {
  const int ranks = int(plan_.collective.ranks.size());
  for (int r = 0; r < ranks; ++r) {
    if (collectives_->rank_alive(r)) return collectives_->client_of_rank(r);
  }
  return collectives_->client_of_rank(0);
}

double SimCollectives::client_died(int c) {
  if (!plan_.collective.elastic) return -1;  // the job fails (a kJob fault): restart resets it
  return collectives_->rank_died(collectives_->rank_of_client(c));
}

}  // namespace replisim::sim::detail
