// Faults in the simulation: slowdowns as host speed profiles (multipliers of the peak speed, a
// single profile per host merging every window), and role faults that kill clients at a time.
// A dead client's queued ops are dropped; an op already running on a device finishes (its device
// is not failed) but nothing follows from it.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <simgrid/kernel/ProfileBuilder.hpp>

#include "core/base/units.h"
#include "sim/sim_run_state.h"

namespace replisim::sim::detail {

void SimRun::apply_slowdowns() {
  namespace prof = simgrid::kernel::profile;
  std::map<int, std::vector<const core::PlanFault*>> by_device;
  for (const core::PlanFault& f : plan_.faults) {
    if (f.kind == "slowdown" && devices_[size_t(f.device)].host != nullptr) {
      by_device[f.device].push_back(&f);
    }
  }
  for (auto& [device, faults] : by_device) {
    // Breakpoints of the merged profile: at each window edge, the product of the factors of the
    // windows open there.
    std::vector<double> edges = {0.0};
    for (const core::PlanFault* f : faults) {
      edges.push_back(f->from_s);
      edges.push_back(f->until_s);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    std::ostringstream text;
    text.precision(17);
    for (double t : edges) {
      double factor = 1;
      for (const core::PlanFault* f : faults) {
        if (t >= f->from_s && t < f->until_s) factor *= f->factor;
      }
      text << t << " " << factor << "\n";
    }
    devices_[size_t(device)].host->set_speed_profile(
        prof::ProfileBuilder::from_string("slowdown." + std::to_string(device), text.str(), -1));
    for (const core::PlanFault* f : faults) {
      core::TraceEvent event;
      event.kind = core::EventKind::kFault;
      event.actor = trace_.intern(plan_.platform.devices[size_t(device)].name);
      event.device = event.actor;
      event.label = trace_.intern(f->description);
      event.start_s = f->from_s;
      event.end_s = f->until_s;
      trace_.events.push_back(event);
    }
  }
}

void SimRun::schedule_faults() {
  // At one time, faults come before first starts and steps: orders below -clients.
  const int base = -1 - int(clients_.size());
  for (size_t f = 0; f < plan_.faults.size(); ++f) {
    const core::PlanFault& fault = plan_.faults[f];
    const int order = base - 2 * int(f);
    if (fault.kind == "role" || fault.kind == "job") {
      timers_.push({fault.at_s, order, TimerKind::kFault, int(f)});
    }
    if (fault.kind == "link") {
      timers_.push({fault.from_s, order, TimerKind::kFault, int(f)});
      timers_.push({fault.until_s, order - 1, TimerKind::kFaultEnd, int(f)});
    }
  }
}

// A link fault: both directions of a NIC, or the switch, at factor x their bandwidth while it
// lasts; windows on one link multiply.
// - Degraded (factor > 0): Link::set_bandwidth at run time, which applies to flows in progress
//   (simgrid-notes.md). SimGrid caps a communication at the narrowest link of its route when it
//   starts, so when the link comes back, the communications that started while it was lowered
//   are cancelled and their transfers send the remaining bytes anew (restart_capped_transfers).
// - Cut (factor 0): the communications crossing it are suspended and new ones wait until it
//   ends, as TCP retransmits and gRPC waits through an outage shorter than its timeouts.
void SimRun::degrade_link(int fault, bool start) {
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  const core::PlatformLink& link = plan_.platform.links[size_t(f.link)];
  const double now = sg4::Engine::get_clock();
  double factor = 1;
  bool cut = false;
  for (const core::PlanFault& other : plan_.faults) {
    if (other.kind != "link" || other.link != f.link || now < other.from_s ||
        now >= other.until_s) {
      continue;
    }
    if (other.factor == 0) {
      cut = true;
    } else {
      factor *= other.factor;
    }
  }
  const bool is_switch = f.link == plan_.platform.switch_link;
  const std::vector<std::string> names =
      is_switch ? std::vector<std::string>{"cluster/" + link.name}
                : std::vector<std::string>{link.name + "_UP", link.name + "_DOWN"};
  const bool present = sg4::Link::by_name_or_null(names.front()) != nullptr;
  // The factor in force until now, read back from the link.
  const double lowered_factor =
      present ? sg4::Link::by_name(names.front())->get_bandwidth() / link.bandwidth_bytes_per_s
              : 1.0;
  if (present) {
    for (const std::string& name : names) {
      sg4::Link* l = sg4::Link::by_name_or_null(name);
      if (l != nullptr) l->set_bandwidth(link.bandwidth_bytes_per_s * factor);
    }
  }
  auto lowered = lowered_since_s_.find(f.link);
  if (lowered != lowered_since_s_.end() && factor > lowered_factor) {
    restart_capped_transfers(f.link, lowered->second);
  }
  if (factor < 1 && lowered == lowered_since_s_.end()) lowered_since_s_[f.link] = now;
  if (factor >= 1) lowered_since_s_.erase(f.link);
  const bool was_cut = cut_links_.count(f.link) > 0;
  if (cut && !was_cut) cut_links_.insert(f.link);
  if (!cut && was_cut) cut_links_.erase(f.link);
  if (cut != was_cut) {
    // Hold, or let go, the communications in flight whose route crosses a cut link.
    for (TransferActor& transfer : transfers_) {
      if (!transfer.comm || transfer.connection < 0) continue;
      const bool hold = crosses_cut(transfer.connection);
      if (hold && !transfer.suspended) transfer.comm->suspend();
      if (!hold && transfer.suspended) transfer.comm->resume();
      transfer.suspended = hold;
    }
    if (!cut) links_restored_->notify_all();
  }
  if (start && !present && !cut) {
    trace_.meta["notes"].push_back(
        "fault \"" + f.description +
        "\": no transfer of the plan crosses that link; it changed nothing");
  }
  if (!start || (!present && !cut)) return;
  core::TraceEvent event;
  event.kind = core::EventKind::kFault;
  event.actor = trace_.intern(link.name);
  event.label = trace_.intern(f.description);
  event.start_s = f.from_s;
  event.end_s = f.until_s;
  trace_.events.push_back(event);
}

bool SimRun::crosses_cut(int connection) const {
  if (cut_links_.empty()) return false;
  for (int link : connections_[size_t(connection)].links) {
    if (cut_links_.count(link) > 0) return true;
  }
  return false;
}

void SimRun::wait_while_cut(int connection) {
  if (!crosses_cut(connection)) return;
  std::unique_lock<sg4::Mutex> lock(*links_mutex_);
  while (crosses_cut(connection)) links_restored_->wait(lock);
}

void SimRun::restart_capped_transfers(int link, double since_s) {
  for (TransferActor& transfer : transfers_) {
    if (!transfer.comm || transfer.connection < 0 || transfer.comm_start_s < since_s) continue;
    const std::vector<int>& links = connections_[size_t(transfer.connection)].links;
    if (std::find(links.begin(), links.end(), link) == links.end()) continue;
    transfer.resend_bytes = transfer.comm->get_remaining();
    transfer.comm->cancel();
  }
}

void SimRun::inject_fault(int code) {
  const int fault = code / 2;
  if (plan_.faults[size_t(fault)].kind == "link") {
    degrade_link(fault, code % 2 == 0);
    return;
  }
  if (plan_.faults[size_t(fault)].kind == "job") {
    fail_job(fault);
    return;
  }
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  if (job_down_) {
    trace_.meta["notes"].push_back(
        "fault \"" + f.description + "\" struck while the job was down (" +
        core::format_quantity(sg4::Engine::get_clock(), core::Dimension::kTime) +
        "): the restart brings every task back");
    return;
  }
  for (int c : f.clients) {
    ClientState& s = clients_[size_t(c)];
    if (s.dead || s.finished) continue;  // already gone: nothing to kill
    core::TraceEvent event;
    event.kind = core::EventKind::kFault;
    event.actor = s.role_name;
    event.client = s.role_name;
    event.device = trace_.intern(plan_.platform.devices[size_t(s.role_device)].name);
    event.label = trace_.intern(f.description);
    // A worker still waiting for a restart to bring it back was running no step: -1.
    const bool awaiting_restart = s.awaiting_restart;
    event.step = awaiting_restart ? -1 : s.step;
    event.start_s = event.end_s = sg4::Engine::get_clock();
    trace_.events.push_back(event);
    kill_client(c);
    // The chief's sync op runs in the chief's process: it dies with worker 0.
    if (c == 0 && sync_.enabled) kill_client(int(clients_.size()) - 1);
    if (awaiting_restart) note_lost_before_back(c);
  }
}

void SimRun::kill_client(int c) {
  ClientState& s = clients_[size_t(c)];
  if (s.dead) return;
  s.dead = true;
  if (!s.finished) {
    s.finished = true;
    ++finished_clients_;
  }
  driver_wake_->notify_all();
}

}  // namespace replisim::sim::detail
