#include "core/metrics/critical_path_streams.h"

#include <algorithm>

namespace replisim::core::path_detail {
namespace {

// Times the backend computed from one clock reading: equal up to rounding.
constexpr double kSameTimeS = 1e-9;

}  // namespace

std::string queued_bound_name(const Trace& trace, uint32_t held_by) {
  if (held_by == kNoString) return kQueuedOnStream;
  return std::string(kQueuedOnStream) + " (their bound: " + trace.str(held_by) + ")";
}

void StreamIndex::add(const TraceEvent& e, size_t index) {
  if (e.kind != EventKind::kTransfer || e.producer == OpKind::kAllReduce) return;
  if (e.actor == kNoString || e.peer_actor == kNoString) return;
  ends_[stream_of(e)].emplace_back(e.end_s, index);
}

void StreamIndex::sort() {
  for (auto& [stream, list] : ends_) std::sort(list.begin(), list.end());
}

StreamQueue StreamIndex::queue_of(const Trace& trace, size_t index, double ready_s) const {
  const TraceEvent& e = trace.events[index];
  if (e.start_s <= ready_s + kSameTimeS) return {};
  const auto found = ends_.find(stream_of(e));
  if (found == ends_.end()) return {};
  const std::vector<std::pair<double, size_t>>& list = found->second;
  // Back from the last transfer of the stream that ended by this one's start, over those that
  // ended after ready_s: each held the stream for its part of [ready_s, start].
  auto it = std::upper_bound(list.begin(), list.end(),
                             std::make_pair(e.start_s + kSameTimeS, ~size_t(0)));
  bool released = false;
  std::map<uint32_t, double> held_s;  // per bound
  while (it != list.begin()) {
    --it;
    if (it->first <= ready_s) break;
    if (it->second == index) continue;
    const TraceEvent& earlier = trace.events[it->second];
    released |= it->first >= e.start_s - kSameTimeS;
    held_s[earlier.bound] +=
        std::min(earlier.end_s, e.start_s) - std::max(earlier.start_s, ready_s);
  }
  if (!released) return {};
  StreamQueue queue;
  queue.seconds = e.start_s - ready_s;
  double longest = 0;
  for (const auto& [bound, seconds] : held_s) {
    if (seconds > longest) {
      longest = seconds;
      queue.held_by = bound;
    }
  }
  return queue;
}

}  // namespace replisim::core::path_detail
