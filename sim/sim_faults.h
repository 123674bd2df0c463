// Faults of the platform in the simulation (internal to sim/): slowdowns as host speed profiles
// and link faults at run time (degraded or cut NICs and switch). Role and job faults are the step
// engine's and JobRecovery's.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"

namespace replisim::sim::detail {

namespace sg4 = simgrid::s4u;

class Network;

// Gives each device with slowdown faults one speed profile merging its windows (multipliers of
// its peak speed), and records the windows. `hosts`: per device (null: unused, skipped).
void apply_slowdowns(const core::Plan& plan, const std::vector<sg4::Host*>& hosts,
                     core::TraceRecorder& recorder);

// The link faults in force: the links cut and the lowered ones with the time each went down.
class LinkFaults {
 public:
  // `notes` receives what the run finds out about a fault (a link no transfer crosses).
  LinkFaults(const core::Plan& plan, core::TraceRecorder& recorder,
             std::vector<std::string>& notes);
  // Whether the plan has link faults (transfers then start their communications before waiting,
  // so that a cut can suspend them).
  bool enabled() const { return enabled_; }
  // Creates the synchronisation objects; call once the SimGrid engine exists.
  void start();

  // Link fault `fault`'s window starts (`start`) or ends: both directions of a NIC, or the
  // switch, at factor x their bandwidth while it lasts; windows on one link multiply.
  // - Degraded (factor > 0): Link::set_bandwidth at run time, which applies to flows in progress
  //   (simgrid-notes.md). SimGrid caps a communication at the narrowest link of its route when it
  //   starts, so when the link comes back, the communications that started while it was lowered
  //   are cancelled and resent (Network::cancel_capped).
  // - Cut (factor 0): the communications crossing it are suspended and new ones wait until it
  //   ends, as TCP retransmits and gRPC waits through an outage shorter than its timeouts.
  void change(int fault, bool start, Network& network);

  // Whether a route through `links` (Platform::links) crosses a cut link now.
  bool crosses_cut(const std::vector<int>& links) const {
    if (cut_links_.empty()) return false;
    for (int link : links) {
      if (cut_links_.count(link) > 0) return true;
    }
    return false;
  }
  // Blocks the calling actor while a route through `links` crosses a cut link.
  void wait_while_cut(const std::vector<int>& links);

 private:
  const core::Plan& plan_;
  core::TraceRecorder& recorder_;
  std::vector<std::string>& notes_;
  bool enabled_ = false;
  std::set<int> cut_links_;
  std::map<int, double> lowered_since_s_;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr restored_;
};

}  // namespace replisim::sim::detail
