#include "sim/sim_sharing.h"

#include <algorithm>
#include <unordered_map>

#include <simgrid/Exception.hpp>
#include <xbt/config.hpp>

#include "core/base/error.h"

namespace replisim::sim::detail {

SharingEngine::SharingEngine(const std::vector<std::string>& nic_names,
                             double between_machines_factor, double reverse_coefficient,
                             Options options)
    : model_(options.repair_rounds),
      between_machines_factor_(between_machines_factor),
      reverse_coefficient_(reverse_coefficient),
      options_(options),
      mutex_(sg4::Mutex::create()),
      changed_(sg4::ConditionVariable::create()) {
  // By name from one walk over the platform: Link::by_name_or_null searches every zone (one per
  // machine), quadratic over a NIC per machine at thousands of machines.
  std::unordered_map<std::string, const sg4::Link*> by_name;
  for (sg4::Link* link : sg4::Engine::get_instance()->get_all_links()) {
    if (link->get_sharing_policy() != sg4::Link::SharingPolicy::SHARED) continue;
    constraint_of_[link] = model_.add_constraint(link->get_bandwidth());
    by_name.emplace(link->get_name(), link);
  }
  auto find = [&by_name](const std::string& name) -> const sg4::Link* {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  for (const std::string& name : nic_names) {
    const sg4::Link* up = find(name + "_UP");
    const sg4::Link* down = find(name + "_DOWN");
    if (up == nullptr || down == nullptr) continue;  // a machine left out of the platform
    // Without cross-traffic a NIC's directions share nothing: each is a group of its own.
    if (reverse_coefficient > 0) {
      model_.add_group({constraint_of_.at(up), constraint_of_.at(down)});
    } else {
      model_.add_group({constraint_of_.at(up)});
      model_.add_group({constraint_of_.at(down)});
    }
  }
}

bool SharingEngine::add_connection(sg4::Host* from, sg4::Host* to, bool between_machines) {
  Route route;
  route.rate_factor = between_machines ? between_machines_factor_ : 1.0;
  route.from = from;
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  from->route_to(to, links, &latency_s);
  if (links.empty()) return false;  // SimGrid's own rules for a route without links
  for (const sg4::Link* link : links) {
    auto it = constraint_of_.find(link);
    if (it == constraint_of_.end() || link->get_latency() > 0) return false;
    route.uses.push_back({it->second, 1.0});
  }
  if (reverse_coefficient_ > 0) {
    links.clear();
    to->route_to(from, links, &latency_s);
    for (const sg4::Link* link : links) {
      auto it = constraint_of_.find(link);
      if (it == constraint_of_.end()) return false;
      route.uses.push_back({it->second, reverse_coefficient_});
    }
  }
  routes_.push_back(std::move(route));
  return true;
}

void SharingEngine::start(sg4::Host* service_host) {
  sg4::ActorPtr actor = sg4::Actor::create("sharing-model", service_host, [this] { run_model(); });
  actor->daemonize();
}

SharingEngine::Slot& SharingEngine::slot(int number) {
  if (size_t(number) >= slots_.size()) slots_.resize(size_t(number) + 1);
  Slot& s = slots_[size_t(number)];
  if (!s.wake) s.wake = sg4::Semaphore::create(0);
  return s;
}

bool SharingEngine::send(int t, int connection, sg4::Mailbox* mailbox, double bytes,
                         double delay_s) {
  REPLISIM_ASSERT(bytes >= 1, "send() carries bytes: a delay alone goes through send_async()");
  slot(t).waiter = true;
  begin(t, connection, mailbox, bytes, delay_s);
  const bool used_mailbox = carry(t);
  slots_[size_t(t)].waiter = false;
  return used_mailbox;
}

void SharingEngine::send_async(int number, int connection, sg4::Mailbox* mailbox, double bytes,
                               double delay_s) {
  slot(number).waiter = false;
  begin(number, connection, mailbox, bytes, delay_s);
}

void SharingEngine::begin(int number, int connection, sg4::Mailbox* mailbox, double bytes,
                          double delay_s) {
  const double now_s = sg4::Engine::get_clock();
  Slot& s = slot(number);
  s.connection = connection;
  s.mailbox = mailbox;
  s.done = false;
  s.used_mailbox = false;
  s.bytes_left = bytes;
  s.flow = -1;
  if (delay_s > 0 || bytes < 1) {
    // Waits until run_model() starts the flow (or, without bytes, ends the delay).
    s.carrier = Carrier::kModel;
    const double start_s = now_s + delay_s;
    starts_.emplace(start_s, next_start_++, number);
    // run_model() waits until a later time (or for a change): it must wake up earlier.
    if (!wake_pending_ && wakes_at_s_ != -SharingModel::kNever && start_s < wakes_at_s_) {
      wake_pending_ = true;
      changed_->notify_all();
    }
    return;
  }
  count_flow(number, now_s);
  // SimGrid carries the flows now: an actor must carry this one (claimed before changed() may
  // let other actors run).
  const bool needs_carrier = !s.waiter && s.carrier == Carrier::kSimGrid;
  if (needs_carrier) s.waiter = true;
  changed(now_s);
  if (needs_carrier) create_carrier(number);
}

bool SharingEngine::carry(int t) {
  static int payload;  // transfers carry no data
  bool used_mailbox = false;
  // Any s4u call may let other actors run and grow slots_: index it anew after each.
  for (;;) {
    if (slots_[size_t(t)].carrier == Carrier::kModel) {
      // Released when the model ends the flow or hands it back; a release left over from an
      // earlier wait only makes this loop look again.
      slots_[size_t(t)].wake->acquire();
      if (slots_[size_t(t)].done) return used_mailbox;
      continue;
    }
    if (slots_[size_t(t)].bytes_left >= 1) {
      sg4::CommPtr comm =
          slots_[size_t(t)].mailbox->put_init(&payload, uint64_t(slots_[size_t(t)].bytes_left));
      used_mailbox = true;
      comm->start();  // marked started, so that a take-over can cancel it
      if (slots_[size_t(t)].carrier == Carrier::kModel) {
        comm->cancel();  // taken over while start() let other actors run
        continue;
      }
      slots_[size_t(t)].comm = comm;
      try {
        comm->wait();
      } catch (const simgrid::NetworkFailureException&) {
        // Cancelled by take_over() (SimGrid 3.32 reports a cancelled flow to its sender as a
        // link failure): the model carries the bytes left now.
        slots_[size_t(t)].comm = nullptr;
        continue;
      }
      slots_[size_t(t)].comm = nullptr;
    }
    // A take-over at the instant SimGrid ended it left it to SimGrid (take_over()), and the model
    // may have ended its count of it already.
    if (slots_[size_t(t)].done) return used_mailbox;
    const double end_s = sg4::Engine::get_clock();
    const int flow = slots_[size_t(t)].flow;
    REPLISIM_ASSERT(flow >= 0, "a flow SimGrid carried has no count in the model");
    slots_[size_t(t)].flow = -1;
    slots_[size_t(t)].done = true;
    slot_of_flow_[size_t(flow)] = -1;
    model_.remove_flow(end_s, flow);
    changed(end_s);
    return used_mailbox;
  }
}

void SharingEngine::create_carrier(int number) {
  const Slot& s = slots_[size_t(number)];
  // A daemon from its first statement: SimGrid runs a new actor before its creator resumes, and
  // one that ended before the creator's daemonize() would be counted a daemon while dead (the
  // engine would then take the driver for the last actor and kill every daemon).
  sg4::Actor::create("carrier." + std::to_string(number), routes_[size_t(s.connection)].from,
                     [this, number] {
                       sg4::Actor::self()->daemonize();
                       const bool used_mailbox = carry(number);
                       Slot& carried = slots_[size_t(number)];
                       carried.waiter = false;
                       carried.used_mailbox = used_mailbox;
                       if (on_delivered_) on_delivered_(number);
                     });
}

SharingEngine::Arrival SharingEngine::arrival(int number) const {
  const Slot& s = slots_[size_t(number)];
  return {number, s.waiter ? s.wake.get() : nullptr};
}

void SharingEngine::deliver(const std::vector<Arrival>& arrivals) {
  for (const Arrival& a : arrivals) {
    if (a.waiter != nullptr) {
      a.waiter->release();
    } else if (on_delivered_) {
      on_delivered_(a.slot);
    }
  }
}

void SharingEngine::count_flow(int t, double now_s) {
  if (on_flow_start_) on_flow_start_(t);
  Slot& s = slots_[size_t(t)];
  s.carrier = mode_;
  const Route& route = routes_[size_t(s.connection)];
  s.flow = model_.add_flow(now_s, s.bytes_left, route.uses, route.rate_factor);
  if (size_t(s.flow) >= slot_of_flow_.size()) slot_of_flow_.resize(size_t(s.flow) + 1, -1);
  slot_of_flow_[size_t(s.flow)] = t;
  ++stats_.flows;
}

void SharingEngine::start_due_flows(double due_s, double now_s) {
  std::vector<int>& started = started_scratch_;
  started.clear();
  while (!starts_.empty() && std::get<0>(starts_.top()) <= due_s) {
    started.push_back(std::get<2>(starts_.top()));
    starts_.pop();
  }
  if (started.empty()) return;
  // Every flow counted before the checks: while SimGrid carries the flows, changed() checks at
  // once and may take them over (s4u calls, which let other actors run). A transfer of no
  // bytes has only waited out its delay: it has arrived.
  int counted = 0;
  for (int t : started) {
    if (slots_[size_t(t)].bytes_left >= 1) {
      count_flow(t, now_s);
      ++counted;
    } else {
      slots_[size_t(t)].done = true;
    }
  }
  for (int k = 0; k < counted; ++k) changed(now_s);
  // The flows SimGrid carries go on: their actors are released (a release the wait does not
  // need only makes it look again), or actors are started to carry them.
  std::vector<sg4::Semaphore*>& wake = wake_scratch_;
  std::vector<int>& carriers = carrier_scratch_;
  std::vector<Arrival>& delays_over = delays_over_scratch_;
  wake.clear();
  carriers.clear();
  delays_over.clear();
  for (int t : started) {
    Slot& s = slots_[size_t(t)];
    if (s.bytes_left < 1) {
      delays_over.push_back(arrival(t));
    } else if (s.carrier == Carrier::kSimGrid && !s.done) {
      if (s.waiter) {
        wake.push_back(s.wake.get());
      } else {
        s.waiter = true;
        carriers.push_back(t);
      }
    }
  }
  for (sg4::Semaphore* semaphore : wake) semaphore->release();
  for (int t : carriers) create_carrier(t);
  deliver(delays_over);
}

// While the model carries the flows, run_model() settles the shares and checks them once for
// every change at this instant: woken once, it runs after the actors that start flows now.
void SharingEngine::changed(double now_s) {
  if (mode_ != Carrier::kModel) {
    after_change(now_s);
    return;
  }
  check_pending_ = true;
  if (!wake_pending_ && wakes_at_s_ != -SharingModel::kNever) {
    wake_pending_ = true;
    changed_->notify_all();
  }
}

void SharingEngine::after_change(double now_s) {
  ++changes_since_;
  // Re-choosing groups and switching cost O(flows): they wait for a proportional number of
  // changes, so that they cost O(1) per change on average.
  if (mode_ == Carrier::kModel) {
    if (model_.exact()) return;
    // A group chosen when a flow started can be the wrong one: choose them all again (the full
    // max-min problem, O(uses x log links), far less than handing every flow to SimGrid).
    if (options_.reassign) {
      model_.reassign_groups(now_s);
      ++stats_.reassignments;
      if (model_.exact()) return;
    }
    hand_back(now_s);
    return;
  }
  if (changes_since_ < std::max(16, model_.flows() / 8)) return;
  if (!model_.exact()) {
    model_.reassign_groups(now_s);
    changes_since_ = 0;
    if (!model_.exact()) return;
  }
  take_over(now_s);
}

void SharingEngine::hand_back(double now_s) {
  mode_ = Carrier::kSimGrid;
  changes_since_ = 0;
  ++stats_.hand_backs;
  // Every s4u call may let other actors run and grow slots_: the state first, then the calls.
  std::vector<sg4::Semaphore*> wake;
  std::vector<int> carriers;
  for (size_t number = 0; number < slots_.size(); ++number) {
    Slot& s = slots_[number];
    if (s.flow < 0 || s.carrier != Carrier::kModel) continue;
    s.bytes_left = std::max(0.0, model_.remaining_bytes(s.flow, now_s));
    s.carrier = Carrier::kSimGrid;
    if (s.waiter) {
      wake.push_back(s.wake.get());
    } else {
      s.waiter = true;  // an actor is started below to carry it
      carriers.push_back(int(number));
    }
  }
  for (sg4::Semaphore* semaphore : wake) semaphore->release();
  for (int number : carriers) create_carrier(number);
}

void SharingEngine::take_over(double now_s) {
  mode_ = Carrier::kModel;
  changes_since_ = 0;
  ++stats_.take_overs;
  std::vector<sg4::CommPtr> cancel;  // after the loop: see hand_back()
  for (Slot& s : slots_) {
    if (s.flow < 0 || s.carrier != Carrier::kSimGrid) continue;
    if (s.comm) {
      // The model counted the flow all along; its bytes left are SimGrid's.
      const double left = std::max(0.0, s.comm->get_remaining());
      model_.set_remaining_bytes(now_s, s.flow, left);
      // Ended at this instant (its actor has not resumed yet): it stays SimGrid's, and the model,
      // with nothing left for it either, may end its count first (carry() checks `done`).
      if (left == 0) continue;
      s.carrier = Carrier::kModel;
      cancel.push_back(s.comm);
      s.comm = nullptr;
    } else {
      // Not started in SimGrid yet (its actor has not run since it was handed back, or it is
      // the flow that just started): the model's count of its bytes is current.
      s.carrier = Carrier::kModel;
    }
  }
  for (const sg4::CommPtr& comm : cancel) comm->cancel();
  changed_->notify_all();
}

// Ends the model's flows at their times: sleeps until the next end, or until a flow starts or
// the carrier changes.
void SharingEngine::run_model() {
  const double precision_s = simgrid::config::get_value<double>("surf/precision");
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  for (;;) {
    // after_change() may hand the flows back, and the releases let other actors run and start
    // flows (even take them over again): check until nothing is pending, so that no yield
    // separates the last check from the wait below (nothing there calls s4u).
    while (check_pending_) {
      check_pending_ = false;
      if (mode_ == Carrier::kModel) after_change(sg4::Engine::get_clock());
    }
    double next_s = mode_ == Carrier::kModel ? model_.next_completion_s() : SharingModel::kNever;
    if (!starts_.empty()) next_s = std::min(next_s, std::get<0>(starts_.top()));
    if (next_s == SharingModel::kNever) {
      wakes_at_s_ = SharingModel::kNever;
      changed_->wait(lock);
      wakes_at_s_ = -SharingModel::kNever;
      wake_pending_ = false;
      continue;
    }
    if (next_s > sg4::Engine::get_clock()) {
      wakes_at_s_ = next_s;
      const std::cv_status woken = changed_->wait_until(lock, next_s);
      wakes_at_s_ = -SharingModel::kNever;
      wake_pending_ = false;
      if (woken == std::cv_status::no_timeout) continue;
    }
    const double now_s = sg4::Engine::get_clock();
    // The flows due now start first (at the time waited for, whatever SimGrid's clock rounded
    // it to: a start never waits twice), then the flows due end, then the checks at the top see
    // both changes at once.
    const bool starting = !starts_.empty() && std::get<0>(starts_.top()) <= std::max(now_s, next_s);
    if (starting) start_due_flows(std::max(now_s, next_s), now_s);
    if (mode_ != Carrier::kModel) continue;
    const std::vector<int>& ended = model_.advance_to(now_s, precision_s);
    REPLISIM_ASSERT(starting || !ended.empty() || model_.next_completion_s() > now_s,
                    "the sharing model's next end did not come");
    // The state of every ended flow first: a release or a delivery lets other actors run, and a
    // flow they start can take an ended flow's id.
    std::vector<Arrival>& arrivals = arrival_scratch_;
    arrivals.clear();
    for (int flow : ended) {
      const int t = slot_of_flow_[size_t(flow)];
      REPLISIM_ASSERT(t >= 0, "a flow the model ended has no transfer");
      slot_of_flow_[size_t(flow)] = -1;
      Slot& s = slots_[size_t(t)];
      s.flow = -1;
      s.done = true;
      ++stats_.model_flows;
      // Who takes the arrival is decided now: a delivery lets other actors run, and a carrier
      // of another slot ended here may deliver and clear its `waiter` meanwhile.
      arrivals.push_back(arrival(t));
    }
    if (!ended.empty()) check_pending_ = true;  // checked at the top, before the next wait
    // Deliveries start the next transfers of their slots (send_async()), also of slots ended
    // here: each arrival is handled once, in this order, whatever they start.
    deliver(arrivals);
  }
}

}  // namespace replisim::sim::detail
