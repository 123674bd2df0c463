#include "sim/sim_faults.h"

#include <algorithm>
#include <sstream>

#include <simgrid/kernel/ProfileBuilder.hpp>

#include "sim/sim_network.h"

namespace replisim::sim::detail {

void apply_slowdowns(const core::Plan& plan, const std::vector<sg4::Host*>& hosts,
                     core::TraceRecorder& recorder) {
  namespace prof = simgrid::kernel::profile;
  std::map<int, std::vector<const core::PlanFault*>> by_device;
  for (const core::PlanFault& f : plan.faults) {
    if (f.kind == core::PlanFaultKind::kSlowdown && hosts[size_t(f.device)] != nullptr) {
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
    hosts[size_t(device)]->set_speed_profile(
        prof::ProfileBuilder::from_string("slowdown." + std::to_string(device), text.str(), -1));
    for (const core::PlanFault* f : faults) recorder.fault_window(*f);
  }
}

LinkFaults::LinkFaults(const core::Plan& plan, core::TraceRecorder& recorder,
                       std::vector<std::string>& notes)
    : plan_(plan), recorder_(recorder), notes_(notes) {
  for (const core::PlanFault& f : plan.faults) enabled_ |= f.kind == core::PlanFaultKind::kLink;
}

void LinkFaults::start() {
  mutex_ = sg4::Mutex::create();
  restored_ = sg4::ConditionVariable::create();
}

void LinkFaults::change(int fault, bool start, Network& network) {
  const core::PlanFault& f = plan_.faults[size_t(fault)];
  const core::PlatformLink& link = plan_.platform.links[size_t(f.link)];
  const double now = sg4::Engine::get_clock();
  double factor = 1;
  bool cut = false;
  for (const core::PlanFault& other : plan_.faults) {
    if (other.kind != core::PlanFaultKind::kLink || other.link != f.link || now < other.from_s ||
        now >= other.until_s) {
      continue;
    }
    if (other.factor == 0) {
      cut = true;
    } else {
      factor *= other.factor;
    }
  }
  // A switch (shared) is one SimGrid link (sim_platform.cpp's create_switch), a split link two.
  const std::vector<std::string> names =
      !link.split_duplex ? std::vector<std::string>{"cluster/" + link.name}
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
    network.cancel_capped(f.link, lowered->second);
  }
  if (factor < 1 && lowered == lowered_since_s_.end()) lowered_since_s_[f.link] = now;
  if (factor >= 1) lowered_since_s_.erase(f.link);
  const bool was_cut = cut_links_.count(f.link) > 0;
  if (cut && !was_cut) cut_links_.insert(f.link);
  if (!cut && was_cut) cut_links_.erase(f.link);
  if (cut != was_cut) {
    network.hold_crossing_cuts();  // hold, or let go, the communications in flight
    if (!cut) restored_->notify_all();
  }
  if (start && !present && !cut) {
    notes_.push_back("fault \"" + f.description +
                     "\": no transfer of the plan crosses that link; it changed nothing");
  }
  if (start && (present || cut)) recorder_.fault_window(f);
}

void LinkFaults::wait_while_cut(const std::vector<int>& links) {
  if (!crosses_cut(links)) return;
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  while (crosses_cut(links)) restored_->wait(lock);
}

}  // namespace replisim::sim::detail
