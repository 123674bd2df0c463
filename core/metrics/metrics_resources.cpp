// How busy each resource was: every device and link direction over the window, the busiest (the
// bottleneck), and the GPUs' memory against their capacity.
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/units.h"
#include "core/metrics/metrics_detail.h"

namespace replisim::core::metrics_detail {
namespace {

void sort_by_use(std::vector<ResourceUse>& uses) {
  std::stable_sort(uses.begin(), uses.end(), [](const ResourceUse& a, const ResourceUse& b) {
    return a.utilization > b.utilization;
  });
}

// ", or transfers run at the transport's ceilings, which no row shows (...)" when it has any.
std::string transport_ceilings(const Transport& t) {
  std::vector<std::string> ceilings;
  auto add = [&](double bytes_per_s, const char* what) {
    if (bytes_per_s > 0) {
      ceilings.push_back(format_quantity(bytes_per_s, Dimension::kBandwidth) + " " + what);
    }
  };
  add(t.flow_rate_limit_bytes_per_s, "per stream");
  if (t.between_processes) add(t.loopback_bandwidth_bytes_per_s, "per loopback stream");
  add(t.process_rpc_ceiling_bytes_per_s, "per process");
  if (ceilings.empty()) return "";
  std::string out = ", or transfers run at the transport's ceilings, which no row shows (";
  for (size_t i = 0; i < ceilings.size(); ++i) out += (i > 0 ? ", " : "") + ceilings[i];
  return out + ")";
}

}  // namespace

// Utilisation of devices and link directions over the window; the bottleneck.
void add_utilisation(RunMetrics& r, const Trace& trace, const Platform& p) {
  const double window_start = r.window_start_s, window_end = r.window_end_s;
  const double window = window_end - window_start;
  std::unordered_map<std::string, int> device_index;
  for (size_t d = 0; d < p.devices.size(); ++d) device_index[p.devices[d].name] = int(d);
  // Per device, (time, +1/-1) as its ops start and end inside the window.
  std::vector<std::vector<std::pair<double, int>>> edges(p.devices.size());
  std::vector<double> channel_bytes(size_t(p.channel_count()), 0.0);
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kCompute) {
      auto found = device_index.find(trace.str(e.device));
      if (found == device_index.end()) continue;
      const double start = std::max(e.start_s, window_start), end = std::min(e.end_s, window_end);
      if (end <= start) continue;
      edges[size_t(found->second)].emplace_back(start, +1);
      edges[size_t(found->second)].emplace_back(end, -1);
    } else if (e.kind == EventKind::kTransfer && e.bytes > 0 && e.end_s > e.start_s) {
      auto src = device_index.find(trace.str(e.device));
      auto dst = device_index.find(trace.str(e.peer));
      if (src == device_index.end() || dst == device_index.end()) continue;
      const double fraction =
          overlap(e.start_s, e.end_s, window_start, window_end) / (e.end_s - e.start_s);
      if (fraction <= 0) continue;
      for (const Hop& hop : p.transfer_route(src->second, dst->second)) {
        channel_bytes[size_t(p.channel_of(hop))] += e.bytes * fraction;
      }
    }
  }
  for (size_t d = 0; d < p.devices.size(); ++d) {
    // Cores in use: ops beyond the core count (a tensor's copies beside the ops, which share the
    // cores) do not make a device more than fully busy.
    std::sort(edges[d].begin(), edges[d].end());
    const int cores = p.devices[d].cores;
    double busy = 0, last = window_start;
    int active = 0;
    for (const auto& [time, delta] : edges[d]) {
      busy += std::min(active, cores) * (time - last);
      last = time;
      active += delta;
    }
    r.devices.push_back({p.devices[d].name, busy / (window * cores)});
  }
  for (int ch = 0; ch < p.channel_count(); ++ch) {
    if (!p.channel_exists(ch)) continue;
    r.links.push_back({p.channel_name(ch),
                       channel_bytes[size_t(ch)] / (p.channel_bandwidth_bytes_per_s(ch) * window)});
  }
  sort_by_use(r.devices);
  sort_by_use(r.links);
  r.bottleneck = r.devices.front();
  if (!r.links.empty() && r.links.front().utilization > r.bottleneck.utilization) {
    r.bottleneck = r.links.front();
  }
}

void add_saturation_warning(RunMetrics& r, const Platform& p) {
  // The critical path names what binds when one resource or cap holds most of it (not time
  // it cannot place: "other", or a token wait it could not follow).
  if (!r.bound_by.shares.empty() &&
      r.bound_by.shares.front().seconds >= kPathHeldShare * r.bound_by.seconds &&
      r.bound_by.shares.front().name != "other" &&
      r.bound_by.shares.front().name != "token queue") {
    return;
  }
  if (r.bottleneck.utilization < kSaturatedUtilization) {
    r.warnings.push_back(
        "no resource is saturated over the window (the busiest, " + r.bottleneck.name + ", is " +
        std::to_string(int(std::lround(r.bottleneck.utilization * 100))) +
        "% busy): the steps wait along the chain of dependent compute and transfers, or load "
        "different resources in turn" +
        transport_ceilings(p.transport) + "; see what each role waited on");
  }
}

// GPU memory from the metadata: tightest first, a warning for each GPU that cannot hold its
// share. Also the granularity and the notes, which the report prints with the memory rows.
void add_memory(RunMetrics& r, const Trace& trace) {
  r.granularity = trace.meta.granularity;
  r.notes = trace.notes();
  for (const TraceMemory& m : trace.meta.memory) {
    r.memory.push_back({m.device, m.needed_bytes, m.capacity_bytes});
  }
  std::stable_sort(r.memory.begin(), r.memory.end(), [](const MemoryUse& a, const MemoryUse& b) {
    return a.needed_bytes / a.capacity_bytes > b.needed_bytes / b.capacity_bytes;
  });
  for (const MemoryUse& m : r.memory) {
    if (m.headroom_bytes() >= 0) continue;
    r.warnings.push_back(m.device + " needs " + format_quantity(m.needed_bytes, Dimension::kBytes) +
                         " of memory but has " +
                         format_quantity(m.capacity_bytes, Dimension::kBytes) +
                         " (weights, gradients, optimizer state and activations x batch); the "
                         "run would not fit");
  }
}

}  // namespace replisim::core::metrics_detail
