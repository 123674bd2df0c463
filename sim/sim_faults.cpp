// Faults in the simulation: slowdowns as host speed profiles (multipliers of the peak speed, a
// single profile per host merging every window), and role faults that kill clients at a time.
// A dead client's queued ops are dropped; an op already running on a device finishes (its device
// is not failed) but nothing follows from it.
#include <algorithm>
#include <map>
#include <sstream>

#include <simgrid/kernel/ProfileBuilder.hpp>

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
// lasts (runtime Link::set_bandwidth applies to flows in progress; simgrid-notes.md). A cut
// (factor 0) leaves kCutBandwidthBytesPerS: transfers in flight hold still until it ends, as TCP
// retransmits and gRPC waits through an outage shorter than its timeouts.
void SimRun::degrade_link(int fault, bool start) {
  constexpr double kCutBandwidthBytesPerS = 1;  // limits::kMinBandwidthBytesPerS
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  const core::PlatformLink& link = plan_.platform.links[size_t(f.link)];
  const double bandwidth =
      start ? std::max(kCutBandwidthBytesPerS, link.bandwidth_bytes_per_s * f.factor)
            : link.bandwidth_bytes_per_s;
  bool present = false;
  const bool is_switch = f.link == plan_.platform.switch_link;
  for (const std::string& name :
       is_switch ? std::vector<std::string>{"cluster/" + link.name}
                 : std::vector<std::string>{link.name + "_UP", link.name + "_DOWN"}) {
    sg4::Link* l = sg4::Link::by_name_or_null(name);
    if (l == nullptr) continue;  // a machine the plan does not use
    l->set_bandwidth(bandwidth);
    present = true;
  }
  if (!start || !present) return;
  core::TraceEvent event;
  event.kind = core::EventKind::kFault;
  event.actor = trace_.intern(link.name);
  event.label = trace_.intern(f.description);
  event.start_s = f.from_s;
  event.end_s = f.until_s;
  trace_.events.push_back(event);
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
  for (int c : f.clients) {
    ClientState& s = clients_[size_t(c)];
    if (s.dead || s.finished) continue;  // already gone: nothing to kill
    core::TraceEvent event;
    event.kind = core::EventKind::kFault;
    event.actor = s.role_name;
    event.client = s.role_name;
    event.device = trace_.intern(plan_.platform.devices[size_t(s.role_device)].name);
    event.label = trace_.intern(f.description);
    event.step = s.step;
    event.start_s = event.end_s = sg4::Engine::get_clock();
    trace_.events.push_back(event);
    kill_client(c);
    // The chief's sync op runs in the chief's process: it dies with worker 0.
    if (c == 0 && sync_.enabled) kill_client(int(clients_.size()) - 1);
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
