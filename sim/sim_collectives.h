// All-reduce in the simulation (internal to sim/): core::Collectives on SimGrid's clock, its
// chunks carried by the network as transfers between the ranks' devices. Where the algorithm is
// a ring and nothing else is on its links when a collective begins, the ring is carried whole:
// per neighbour pair and channel one flow of 2(N - 1)/N of the buffer, after 2(N - 1) steps'
// latencies (a ring moves at the pace of its slowest link: 2(N - 1) rounds of N chunks would be
// millions of flows per step at 1,024 ranks). tests/sim/sim_collectives_test.cpp holds the two
// within 1% of each other.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/runtime/collectives.h"
#include "sim/sim_network.h"

namespace replisim::sim::detail {

class SimCollectives : public core::CollectiveHost {
 public:
  // What it needs of the run.
  struct Hooks {
    std::function<double()> now_s;
    std::function<void(double, std::function<void()>)> at;  // run `work` at a simulated time
    std::function<void(int, int)> complete;                 // client c's op is done
    std::function<int(int)> incarnation;                    // client c's
    std::function<bool(int)> client_dead;
  };
  // `fast_ring`: whether a ring may be carried whole (SimSettings::collective_fast_path).
  SimCollectives(const core::Plan& plan, Network& network, core::TraceRecorder& recorder,
                 Hooks hooks, bool fast_ring);

  // The connections its programs use (every pair of ranks when elastic: survivors re-form the
  // ring with new neighbours). Call after Network::prepare, before the platform.
  void prepare();
  // Client c's kAllReduce op `op` is ready in its step `step`.
  void ready(int c, int op, int64_t step) { collectives_->ready(c, op, step); }
  // A chunk the network delivered (PendingSend::chunk >= 0).
  void delivered(const PendingSend& send, double start_s, int64_t message_id,
                 const std::string& bound);
  // A job restart; an elastic job's client died: returns when the survivors resume (the
  // rendezvous's end; core::Collectives::rank_died), -1 when the job is not elastic (it fails).
  void reset() { collectives_->reset(); }
  double client_died(int c);
  std::string waiting_for() const { return collectives_->waiting_for(); }
  int64_t formed() const { return collectives_->formed(); }
  int64_t carried_whole() const { return collectives_->carried_whole(); }
  int live_samples_per_step() const { return collectives_->live_samples_per_step(); }
  // The client whose increments count the job's global steps: the lowest live rank's.
  int counting_client() const;

  // core::CollectiveHost
  double now_s() const override { return hooks_.now_s(); }
  void at(double at_s, std::function<void()> work) override { hooks_.at(at_s, std::move(work)); }
  void send_chunk(const core::CollectiveResponse& r, const core::CollectiveChunk& chunk) override;
  bool can_carry_whole(const core::CollectiveResponse& r) override;
  bool carry_whole(const core::CollectiveResponse& r) override;
  void reduced(int rank, const core::CollectiveResponse& r) override;

 private:
  struct InFlight {
    core::CollectiveChunk chunk;
    int op = -1;  // the sender's kAllReduce op (of the collective's first tensor)
    int64_t step = 0;
    int64_t whole = -1;  // a flow of a ring carried whole: its collective
  };
  int device_of_rank(int rank) const;
  // The ring's neighbour connections of collective `r`: per position and channel.
  std::vector<int> ring_connections(const core::CollectiveResponse& r) const;
  void send(int connection, const InFlight& flight, double overhead_s);

  const core::Plan& plan_;
  Network& network_;
  core::TraceRecorder& recorder_;
  Hooks hooks_;
  bool fast_ring_ = false;
  std::optional<core::Collectives> collectives_;
  std::map<int64_t, InFlight> in_flight_;  // by PendingSend::chunk
  int64_t next_flight_ = 0;
  std::map<int64_t, int> whole_left_;  // collective -> flows of it not yet delivered
};

}  // namespace replisim::sim::detail
