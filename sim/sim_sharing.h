// The `auto` network engine's second lever (issue 17, docs/model.md "An exact sharing model"):
// while every flow in flight can be carried by the exact sharing model (sharing_model.h), the
// model carries them all and SimGrid's solver carries none; the moment the model's checks fail,
// every flow goes back to SimGrid with the bytes it has left, and comes back when they hold again.
// Internal to sim/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/sharing_model.h"
#include "sim/sim_settings.h"

namespace replisim::sim::detail {

namespace sg4 = simgrid::s4u;

// How hard the model tries before it hands the flows to SimGrid (tests weaken it to make the
// switching run often).
struct SharingOptions {
  int repair_rounds = 8;  // SharingModel's local repairs per change
  bool reassign = true;   // choose every group again before handing the flows back
};

class SharingEngine {
 public:
  using Stats = SharingStats;

  using Options = SharingOptions;

  // Builds the model's constraints from the sealed platform: every shared link direction, and a
  // group for each of `nic_names` (split-duplex links, "<name>_UP" / "<name>_DOWN").
  // `between_machines_factor`: the network model's bandwidth factor (LV08 0.97) for flows between
  // machines (1 inside one); `reverse_coefficient`: LV08's cross-traffic (0.05), or 0.
  SharingEngine(const std::vector<std::string>& nic_names, double between_machines_factor,
                double reverse_coefficient, Options options = {});

  // Connection `connection` (numbered from 0, in order) goes from `from` to `to`. Returns false
  // if its route is empty or crosses a link the model does not know (a loopback FATPIPE link, a
  // link with latency): the run must then not use the engine.
  bool add_connection(sg4::Host* from, sg4::Host* to, bool between_machines);
  // Starts the actor that ends the model's flows, on `service_host` (no links, never fails).
  void start(sg4::Host* service_host);

  // Sends `bytes` (>= 1) for transfer actor `transfer` over connection `connection`, whose
  // SimGrid mailbox is `mailbox` (used while SimGrid carries the flow). Returns when the bytes
  // have arrived; true if SimGrid carried part of them (through `mailbox`). Call from the
  // transfer actor.
  bool send(int transfer, int connection, sg4::Mailbox* mailbox, double bytes);

  const Stats& stats() const { return stats_; }

 private:
  enum class Carrier { kModel, kSimGrid };
  struct Slot {     // per transfer actor
    int flow = -1;  // its flow in the model (while SimGrid carries it: the model still counts it)
    int connection = -1;
    Carrier carrier = Carrier::kSimGrid;
    bool done = false;
    double bytes_left = 0;  // handed to SimGrid or taken by the model
    sg4::CommPtr comm;
    sg4::SemaphorePtr wake;
  };

  Slot& slot(int transfer);
  // After a flow started or ended: hands every flow to SimGrid if the model is not exact, or
  // takes them all if it is again.
  void after_change(double now_s);
  void hand_back(double now_s);
  void take_over(double now_s);
  void run_model();

  SharingModel model_;
  std::map<const sg4::Link*, int> constraint_of_;
  struct Route {
    std::vector<SharingModel::Use> uses;
    double rate_factor = 1;
  };
  std::vector<Route> routes_;  // per connection
  double between_machines_factor_ = 1;
  double reverse_coefficient_ = 0;
  Options options_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_flow_;  // per model flow id
  Carrier mode_ = Carrier::kModel;
  // Changes since the last switch or re-choice of groups while SimGrid carries the flows: taking
  // them over waits for a number of changes proportional to the flows in flight, so that
  // switching back and forth costs O(1) per change on average.
  int64_t changes_since_ = 0;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr changed_;
  // When run_model() wakes up next: SharingModel::kNever while it waits for a change, -kNever
  // while it runs.
  double wakes_at_s_ = -SharingModel::kNever;
  bool wake_pending_ = false;   // notified, not resumed yet
  bool check_pending_ = false;  // changes run_model() has not checked yet
  // A flow started or ended (see changed() in the .cpp).
  void changed(double now_s);
  Stats stats_;
};

}  // namespace replisim::sim::detail
