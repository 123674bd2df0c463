#include "core/trace/timeline_layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace replisim::core {
namespace {

class Builder {
 public:
  Builder(const Trace& trace, const TimelineWindow& window) : trace_(trace), window_(window) {}

  TimelineLayout build() {
    for (const TraceRole& role : trace_.meta.roles) {
      const uint32_t id = trace_.find(role.name);
      if (id != kNoString) process(id);
    }
    add_slices();
    layout_.roles_and_slices = layout_.processes.size();
    assign_lanes();
    add_instants();
    add_counters();
    for (const TraceEvent& e : trace_.events) {
      layout_.max_message_id = std::max(layout_.max_message_id, e.message_id);
    }
    return std::move(layout_);
  }

 private:
  int process(uint32_t actor) {
    const auto [it, added] = process_of_.emplace(actor, int(layout_.processes.size()));
    if (added) layout_.processes.push_back({actor});
    return it->second;
  }

  void slice(const TraceEvent& e, uint32_t actor, std::string lane, bool receiver_side) {
    const int64_t start = timeline_ns(e.start_s);
    const int64_t end = std::max(timeline_ns(e.end_s), start);
    layout_.slices.push_back({&e, process(actor), -1, start, end, receiver_side});
    lane_names_.push_back(std::move(lane));
  }

  void add_slices() {
    for (const TraceEvent& e : trace_.events) {
      if (!window_.overlaps(e.start_s, e.end_s)) continue;
      switch (e.kind) {
        case EventKind::kCompute:
          slice(e, e.actor, "compute " + trace_.str(e.device), false);
          break;
        case EventKind::kTransfer:
          slice(e, e.actor, "send", false);
          slice(e, e.peer_actor, "recv", true);
          break;
        case EventKind::kStep:
          slice(e, e.actor, "step", false);
          break;
        case EventKind::kCheckpoint:
          slice(e, e.actor, "checkpoint", false);
          break;
        case EventKind::kRecovery:
          slice(e, e.actor, "recovery", false);
          break;
        case EventKind::kCollective:
          slice(e, e.actor, "collective", false);
          break;
        case EventKind::kUpdate:
        case EventKind::kDropped:
        case EventKind::kFault:
          break;
      }
    }
  }

  // Every slice of one (process, lane kind) goes to the first sub-lane free at its start, taking
  // them by start (the longer first at equal starts) so that enclosing slices come first.
  void assign_lanes() {
    std::map<std::pair<int, std::string>, std::vector<size_t>> by_lane;
    for (size_t i = 0; i < layout_.slices.size(); ++i) {
      by_lane[{layout_.slices[i].process, lane_names_[i]}].push_back(i);
    }
    for (auto& [key, members] : by_lane) {
      std::stable_sort(members.begin(), members.end(), [this](size_t a, size_t b) {
        const TimelineSlice &x = layout_.slices[a], &y = layout_.slices[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      });
      // The first free sub-lane is the smallest-numbered one whose last slice ended by this
      // start: sub-lanes in use wait in a heap by end, free ones in a heap by number (a scan of
      // every sub-lane per slice took 31 s for 100,000 overlapping copies of one transfer).
      using EndAndLane = std::pair<int64_t, int>;
      std::priority_queue<EndAndLane, std::vector<EndAndLane>, std::greater<>> busy;
      std::priority_queue<int, std::vector<int>, std::greater<>> free;
      std::vector<int> lane_index;  // sub-lane -> index in layout_.lanes
      for (size_t i : members) {
        TimelineSlice& s = layout_.slices[i];
        while (!busy.empty() && busy.top().first <= s.start_ns) {
          free.push(busy.top().second);
          busy.pop();
        }
        int k = 0;
        if (free.empty()) {
          k = int(lane_index.size());
          lane_index.push_back(int(layout_.lanes.size()));
          layout_.lanes.push_back({key.first, key.second, k});
        } else {
          k = free.top();
          free.pop();
        }
        busy.emplace(s.end_ns, k);
        s.lane = lane_index[size_t(k)];
      }
    }
  }

  void add_instants() {
    for (const TraceEvent& e : trace_.events) {
      if (!window_.overlaps(e.start_s, std::max(e.start_s, e.end_s))) continue;
      if (e.kind == EventKind::kFault || e.kind == EventKind::kDropped ||
          e.kind == EventKind::kUpdate) {
        layout_.instants.push_back({&e, process(e.actor)});
      }
    }
  }

  // Counters (global_step) go on the process of PS 0, which holds global_step.
  void add_counters() {
    const uint32_t actor = trace_.meta.ps.empty() ? kNoString : trace_.find(trace_.meta.ps[0]);
    for (const CounterSample& c : trace_.counters) {
      if (!window_.overlaps(c.time_s, c.time_s)) continue;
      if (actor != kNoString && layout_.counter_process < 0) {
        layout_.counter_process = process(actor);
      }
      layout_.counters.push_back(&c);
    }
  }

  const Trace& trace_;
  const TimelineWindow& window_;
  TimelineLayout layout_;
  std::unordered_map<uint32_t, int> process_of_;
  std::vector<std::string> lane_names_;  // per slice
};

}  // namespace

int64_t timeline_ns(double seconds) {
  return std::llround(seconds * 1e9);
}

TimelineLayout layout_timeline(const Trace& trace, const TimelineWindow& window) {
  return Builder(trace, window).build();
}

}  // namespace replisim::core
