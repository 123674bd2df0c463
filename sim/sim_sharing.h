// The `auto` network engine's second lever (issue 17, docs/model.md "An exact sharing model"):
// while every flow in flight can be carried by the exact sharing model (sharing_model.h), the
// model carries them all and SimGrid's solver carries none; the moment the model's checks fail,
// every flow goes back to SimGrid with the bytes it has left, and comes back when they hold again.
// A transfer either has an actor that waits for it (send()) or none (send_async(): the model's
// actor, or an actor started to carry the flow in SimGrid, calls back when it has arrived).
// Internal to sim/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <tuple>
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

  // Called with the slot's number when its flow starts on the links, before the model counts it
  // (Network counts the flow on its caps then; not for a transfer of no bytes). It may run on
  // the model's actor, in the middle of a state change: it must make no s4u call.
  void on_flow_start(std::function<void(int)> callback) { on_flow_start_ = std::move(callback); }

  // Called with a slot's number when the bytes send_async() sent on it have arrived (at their
  // arrival time), from the model's actor or from an actor that carried them in SimGrid: it may
  // make s4u calls, and send_async() the slot's next transfer.
  void on_delivered(std::function<void(int)> callback) { on_delivered_ = std::move(callback); }

  // A slot carries one transfer at a time: its number is the caller's, from 0 (Network uses its
  // connections' numbers, for send() and send_async() alike).
  //
  // Sends `bytes` (>= 1) on slot `slot` over connection `connection`, whose SimGrid mailbox is
  // `mailbox` (used while SimGrid carries the flow), starting on the links `delay_s` (>= 0) from
  // now: the connection's latency and per-message overhead, waited out here rather than in a
  // sleep of the actor (the model's actor starts the flow at its time: one SimGrid activity and
  // two context switches fewer per tensor). Returns when the bytes have arrived; true if SimGrid
  // carried part of them (through `mailbox`). Call from the actor that waits.
  bool send(int slot, int connection, sg4::Mailbox* mailbox, double bytes, double delay_s);
  // The same without an actor that waits: returns at once, and on_delivered(slot) follows when
  // the bytes have arrived (used_mailbox(slot) then says whether SimGrid carried part of them).
  // `bytes` may be 0: the delay alone (no flow). While SimGrid carries the flow, an actor on the
  // connection's source host carries it (started for it). It may make s4u calls, and
  // on_delivered(slot) may even run before it returns: the caller finishes its own state
  // changes before the call and touches nothing after it.
  void send_async(int slot, int connection, sg4::Mailbox* mailbox, double bytes, double delay_s);
  bool used_mailbox(int slot) const { return slots_[size_t(slot)].used_mailbox; }

  const Stats& stats() const { return stats_; }

 private:
  enum class Carrier { kModel, kSimGrid };
  struct Slot {
    int flow = -1;  // its flow in the model (while SimGrid carries it: the model still counts it)
    int connection = -1;
    Carrier carrier = Carrier::kSimGrid;
    bool done = false;
    // An actor waits on `wake` for this slot's transfer: send()'s caller, or the actor started
    // to carry it in SimGrid; without one, the end calls on_delivered_.
    bool waiter = false;
    bool used_mailbox = false;  // SimGrid carried part of the last transfer
    double bytes_left = 0;      // handed to SimGrid or taken by the model
    sg4::Mailbox* mailbox = nullptr;
    sg4::CommPtr comm;
    sg4::SemaphorePtr wake;
  };

  Slot& slot(int number);
  // The state send() and send_async() share: the slot's transfer is queued to start in `delay_s`,
  // or (`delay_s` 0 and bytes) counted now; in that case changed() follows, and it may make
  // s4u calls.
  void begin(int number, int connection, sg4::Mailbox* mailbox, double bytes, double delay_s);
  // Waits until the slot's transfer has arrived, carrying it in SimGrid while SimGrid carries
  // the flows. Returns whether it used the mailbox. Runs on the waiting actor.
  bool carry(int number);
  // Starts an actor on the connection's source host that carries the slot's transfer in
  // SimGrid, then calls on_delivered_ (the slot's `waiter` is set already). An s4u call: after
  // every state change.
  void create_carrier(int number);
  // Who takes the arrival of a slot's transfer, decided when it ends: the semaphore of the actor
  // that waits for it, or (null) on_delivered_.
  struct Arrival {
    int slot = -1;
    sg4::Semaphore* waiter = nullptr;
  };
  Arrival arrival(int number) const;
  // Releases the waiting actors and calls on_delivered_, in order (s4u calls).
  void deliver(const std::vector<Arrival>& arrivals);
  // The flow of slot `number` starts at `now_s`: counted in the model, carried by the current
  // carrier (the caller then calls changed()). No s4u call.
  void count_flow(int number, double now_s);
  // Starts at `now_s` the transfers whose start time is at or before `due_s` (run_model()):
  // releases the actors of those SimGrid carries or starts carriers for them, and delivers those
  // of no bytes (after every state change: a release lets other actors run).
  void start_due_flows(double due_s, double now_s);
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
    sg4::Host* from = nullptr;  // where an actor carrying its flow in SimGrid runs
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
  // Transfers waiting out their delay: (start time, order of send(), slot), earliest first.
  using Start = std::tuple<double, int64_t, int>;
  std::priority_queue<Start, std::vector<Start>, std::greater<>> starts_;
  int64_t next_start_ = 0;
  // Scratch space of start_due_flows() (only the model's actor runs it, never from within a
  // delivery): the transfers started now, and the semaphores to release. Raw pointers: each slot
  // holds its semaphore for the whole run.
  std::vector<int> started_scratch_;
  std::vector<sg4::Semaphore*> wake_scratch_;
  std::function<void(int)> on_flow_start_;
  std::function<void(int)> on_delivered_;
  // run_model(): the arrivals of the transfers that ended now; start_due_flows(): of the
  // transfers of no bytes whose delay is over, and the slots that need a carrier.
  std::vector<Arrival> arrival_scratch_;
  std::vector<Arrival> delays_over_scratch_;
  std::vector<int> carrier_scratch_;
  // A flow started or ended (see changed() in the .cpp).
  void changed(double now_s);
  Stats stats_;
};

}  // namespace replisim::sim::detail
