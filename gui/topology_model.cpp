#include "gui/topology_model.h"

#include <algorithm>
#include <unordered_map>

namespace replisim::gui {
namespace {

TensorRole tensor_role(const core::TraceEvent& e) {
  if (!e.producer) return TensorRole::kOther;
  switch (*e.producer) {
    case core::OpKind::kReadVariable:
      return TensorRole::kParameter;
    case core::OpKind::kBackward:
    case core::OpKind::kAggregate:
      return TensorRole::kGradient;
    default:
      return TensorRole::kOther;
  }
}

}  // namespace

double TopologyState::link_utilisation(const core::Platform& platform, int link) const {
  double most = 0;
  for (int channel : {2 * link, 2 * link + 1}) {
    if (platform.channel_exists(channel) && size_t(channel) < channel_utilisation.size()) {
      most = std::max(most, channel_utilisation[size_t(channel)]);
    }
  }
  return most;
}

TopologyModel::TopologyModel(const core::Trace& trace) : trace_(&trace) {
  const core::Platform& p = trace.meta.platform;
  for (const core::PlatformMachine& m : p.machines) {
    // Its first NIC ("<machine>/nic"): the view draws one line from a machine to its switch.
    TopologyMachine machine{m.name, m.nic_links.front(), {}};
    for (int d : m.devices) {
      const core::PlatformDevice& device = p.devices[size_t(d)];
      TopologyDevice shown{d, device.name, device.kind, {}, false};
      for (const core::TraceRole& role : trace.meta.roles) {
        if (role.device != device.name) continue;
        shown.roles.push_back(role.name);
        shown.parameter_server |= role.kind == core::RoleKind::kParameterServer;
      }
      machine.devices.push_back(std::move(shown));
    }
    machines_.push_back(std::move(machine));
  }
  if (p.devices.empty()) return;
  // String id -> platform device, for the transfers' device and peer.
  std::unordered_map<uint32_t, int> device_of;
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const uint32_t id = trace.find(p.devices[d].name);
    if (id != core::kNoString) device_of[id] = int(d);
  }
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const core::TraceEvent& e = trace.events[i];
    if (e.kind != core::EventKind::kTransfer || e.bytes <= 0 || !(e.end_s > e.start_s)) continue;
    const auto src = device_of.find(e.device), dst = device_of.find(e.peer);
    if (src == device_of.end() || dst == device_of.end()) continue;
    std::vector<core::Hop> route = p.transfer_route(src->second, dst->second);
    if (route.empty()) continue;  // within one CPU: no link crossed
    transfers_.push_back({i, src->second, dst->second, std::move(route), e.start_s, e.end_s,
                          e.bytes, tensor_role(e)});
    longest_s_ = std::max(longest_s_, e.end_s - e.start_s);
    transfers_end_s_ = std::max(transfers_end_s_, e.end_s);
  }
  std::stable_sort(transfers_.begin(), transfers_.end(),
                   [](const Transfer& a, const Transfer& b) { return a.start_s < b.start_s; });
}

TopologyState TopologyModel::state_at(double time_s) const {
  const core::Platform& p = platform();
  TopologyState state;
  state.time_s = time_s;
  state.channel_utilisation.assign(size_t(p.channel_count()), 0.0);
  // Transfers that started by time_s, and not before time_s - longest_s_ (those have ended).
  const auto last =
      std::upper_bound(transfers_.begin(), transfers_.end(), time_s,
                       [](double t, const Transfer& transfer) { return t < transfer.start_s; });
  const auto first =
      std::lower_bound(transfers_.begin(), last, time_s - longest_s_,
                       [](const Transfer& transfer, double t) { return transfer.start_s < t; });
  for (auto it = first; it != last; ++it) {
    const Transfer& t = *it;
    if (!(time_s < t.end_s)) continue;
    const double duration = t.end_s - t.start_s;
    const double rate = t.bytes / duration;
    for (const core::Hop& hop : t.route) {
      const int channel = p.channel_of(hop);
      state.channel_utilisation[size_t(channel)] += rate / p.channel_bandwidth_bytes_per_s(channel);
    }
    state.in_flight.push_back(
        {t.event, t.src, t.dst, t.route, t.bytes, (time_s - t.start_s) / duration, t.tensor});
  }
  return state;
}

}  // namespace replisim::gui
