#include "gui/timeline_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "core/base/error.h"

namespace replisim::gui {

using core::EventKind;
using core::TraceEvent;

std::pair<size_t, size_t> LaneSlices::overlapping(int64_t from_ns, int64_t until_ns) const {
  const size_t first =
      size_t(std::lower_bound(end_ns.begin(), end_ns.end(), from_ns) - end_ns.begin());
  const size_t last =
      size_t(std::upper_bound(start_ns.begin(), start_ns.end(), until_ns) - start_ns.begin());
  return {first, std::max(first, last)};
}

std::pair<size_t, size_t> WaitLane::overlapping(int64_t from_ns, int64_t until_ns) const {
  const size_t first =
      size_t(std::lower_bound(end_ns.begin(), end_ns.end(), from_ns) - end_ns.begin());
  const size_t last =
      size_t(std::upper_bound(start_ns.begin(), start_ns.end(), until_ns) - start_ns.begin());
  return {first, std::max(first, last)};
}

double CounterTrack::value_at(double t) const {
  const auto it = std::upper_bound(time_s.begin(), time_s.end(), t);
  if (it == time_s.begin()) return 0;
  return value[size_t(it - time_s.begin()) - 1];
}

double LinkTrack::utilisation(double from_s, double until_s) const {
  if (!(until_s > from_s) || bandwidth_bytes_per_s <= 0 || time_s.empty()) return 0;
  auto moved = [this](double t) {
    const auto it = std::upper_bound(time_s.begin(), time_s.end(), t);
    if (it == time_s.begin()) return 0.0;
    const size_t k = size_t(it - time_s.begin()) - 1;
    if (k + 1 >= time_s.size()) return bytes_moved.back();
    const double span = time_s[k + 1] - time_s[k];
    const double f = span > 0 ? (t - time_s[k]) / span : 0;
    return bytes_moved[k] + f * (bytes_moved[k + 1] - bytes_moved[k]);
  };
  return (moved(until_s) - moved(from_s)) / (bandwidth_bytes_per_s * (until_s - from_s));
}

TimelineModel::TimelineModel(core::Trace trace, std::string source)
    : trace_(std::make_unique<core::Trace>(std::move(trace))), source_(std::move(source)) {
  layout_ = core::layout_timeline(*trace_);
  index_lanes();
  build_counters();
  build_links();
  build_waits();
  objective_ = core::objective_metrics(*trace_);
}

std::string objective_marker_text(const core::ObjectiveMetrics& objective) {
  char text[160];
  std::snprintf(text, sizeof text, "target %s %g at %.4g s, global step %lld",
                objective.target.c_str(), objective.target_value, objective.time_to_target_s,
                (long long)objective.global_steps_to_target);
  return text;
}

std::string TimelineModel::title() const {
  if (trace_->meta.scenario.empty()) return source_;
  std::string title = trace_->meta.scenario + " · " + trace_->meta.strategy;
  if (core::clients_are_workers(trace_->meta)) title += " (" + trace_->meta.sync + ")";
  return title;
}

std::string TimelineModel::process_name(int process) const {
  const uint32_t actor = layout_.processes[size_t(process)].actor;
  return actor == core::kNoString ? "?" : trace_->str(actor);
}

void TimelineModel::index_lanes() {
  lanes_.resize(layout_.lanes.size());
  process_lanes_.assign(layout_.processes.size(), {});
  for (size_t l = 0; l < layout_.lanes.size(); ++l) {
    const core::TimelineLane& lane = layout_.lanes[l];
    lanes_[l].process = lane.process;
    lanes_[l].label = lane.sub_lane == 0 ? lane.name : lane.label();
    process_lanes_[size_t(lane.process)].push_back(int(l));
  }
  std::vector<size_t> count(lanes_.size(), 0);
  for (const core::TimelineSlice& s : layout_.slices) ++count[size_t(s.lane)];
  for (size_t l = 0; l < lanes_.size(); ++l) lanes_[l].slice.reserve(count[l]);
  bool any = false;
  double first = 0, last = 0;
  for (size_t i = 0; i < layout_.slices.size(); ++i) {
    const core::TimelineSlice& s = layout_.slices[i];
    lanes_[size_t(s.lane)].slice.push_back(uint32_t(i));
    first = any ? std::min(first, s.event->start_s) : s.event->start_s;
    last = any ? std::max(last, s.event->end_s) : s.event->end_s;
    any = true;
  }
  for (LaneSlices& lane : lanes_) {
    std::stable_sort(lane.slice.begin(), lane.slice.end(), [this](uint32_t a, uint32_t b) {
      return layout_.slices[a].start_ns < layout_.slices[b].start_ns;
    });
    lane.start_ns.reserve(lane.slice.size());
    lane.end_ns.reserve(lane.slice.size());
    lane.category.reserve(lane.slice.size());
    for (uint32_t i : lane.slice) {
      const core::TimelineSlice& s = layout_.slices[i];
      lane.start_ns.push_back(s.start_ns);
      // A slice touching the next one's start keeps the ends sorted.
      lane.end_ns.push_back(lane.end_ns.empty() ? s.end_ns
                                                : std::max(lane.end_ns.back(), s.end_ns));
      lane.category.push_back(category_of(*s.event));
    }
  }
  for (const core::TimelineInstant& instant : layout_.instants) {
    const TraceEvent& e = *instant.event;
    const double end = (e.flags & core::kEventOpenEnded) ? e.start_s : std::max(e.start_s, e.end_s);
    first = any ? std::min(first, e.start_s) : e.start_s;
    last = any ? std::max(last, end) : end;
    any = true;
  }
  last = std::max(last, trace_->outcome.end_s);
  begin_s_ = std::min(0.0, first);
  end_s_ = last > begin_s_ ? last : begin_s_ + 1;
}

void TimelineModel::build_counters() {
  std::map<uint32_t, size_t> by_name;
  for (const core::CounterSample& c : trace_->counters) {
    const auto [it, added] = by_name.emplace(c.name, counters_.size());
    if (added) counters_.push_back({trace_->str(c.name), {}, {}, 0});
    CounterTrack& track = counters_[it->second];
    track.time_s.push_back(c.time_s);
    track.value.push_back(c.value);
  }
  const bool has_global_step =
      std::any_of(counters_.begin(), counters_.end(),
                  [](const CounterTrack& t) { return t.name == "global_step"; });
  if (!has_global_step) {  // derived from the updates
    CounterTrack track{"global_step", {}, {}, 0};
    for (const TraceEvent& e : trace_->events) {
      if (e.kind != EventKind::kUpdate || e.global_step_after < 0) continue;
      track.time_s.push_back(e.end_s);
      track.value.push_back(double(e.global_step_after));
    }
    if (!track.time_s.empty()) counters_.insert(counters_.begin(), std::move(track));
  }
  for (CounterTrack& track : counters_) {
    std::vector<size_t> order(track.time_s.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&track](size_t a, size_t b) { return track.time_s[a] < track.time_s[b]; });
    std::vector<double> t, v;
    for (size_t i : order) {
      t.push_back(track.time_s[i]);
      v.push_back(track.value[i]);
      track.max_value = std::max(track.max_value, track.value[i]);
    }
    track.time_s = std::move(t);
    track.value = std::move(v);
  }
}

// Per channel, the transfers crossing it at their mean rate, swept into cumulative bytes.
void TimelineModel::build_links() {
  const core::Platform& p = trace_->meta.platform;
  if (p.devices.empty()) return;
  std::unordered_map<uint32_t, int> device_of;  // string id -> platform device
  for (uint32_t id = 0; id < trace_->strings().size(); ++id) device_of[id] = -1;
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const uint32_t id = trace_->find(p.devices[d].name);
    if (id != core::kNoString) device_of[id] = int(d);
  }
  std::map<std::pair<int, int>, std::vector<int>> route_channels;
  std::vector<std::vector<std::pair<double, double>>> deltas(size_t(p.channel_count()));
  std::vector<double> total(size_t(p.channel_count()), 0.0);
  for (const TraceEvent& e : trace_->events) {
    if (e.kind != EventKind::kTransfer || e.bytes <= 0 || !(e.end_s > e.start_s)) continue;
    const auto src = device_of.find(e.device), dst = device_of.find(e.peer);
    if (src == device_of.end() || dst == device_of.end() || src->second < 0 || dst->second < 0) {
      continue;
    }
    auto [it, added] = route_channels.try_emplace({src->second, dst->second});
    if (added) {
      // The links the report counts (core/metrics: Platform::transfer_route): two processes on
      // one GPU exchange a tensor through host memory, over its PCIe link up and down.
      for (const core::Hop& hop : p.transfer_route(src->second, dst->second)) {
        it->second.push_back(p.channel_of(hop));
      }
    }
    const double rate = e.bytes / (e.end_s - e.start_s);
    for (int ch : it->second) {
      deltas[size_t(ch)].push_back({e.start_s, rate});
      deltas[size_t(ch)].push_back({e.end_s, -rate});
      total[size_t(ch)] += e.bytes;
    }
  }
  std::vector<int> order;
  for (int ch = 0; ch < p.channel_count(); ++ch) {
    if (p.channel_exists(ch) && total[size_t(ch)] > 0) order.push_back(ch);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return total[size_t(a)] / p.channel_bandwidth_bytes_per_s(a) >
           total[size_t(b)] / p.channel_bandwidth_bytes_per_s(b);
  });
  if (order.size() > size_t(kLinkTracks)) order.resize(size_t(kLinkTracks));
  for (int ch : order) {
    LinkTrack track{
        p.channel_name(ch), p.channel_bandwidth_bytes_per_s(ch), total[size_t(ch)], {}, {}};
    auto& d = deltas[size_t(ch)];
    std::sort(d.begin(), d.end());
    double rate = 0, moved = 0, previous = d.front().first;
    for (const auto& [t, delta] : d) {
      moved += rate * (t - previous);
      previous = t;
      rate += delta;
      if (!track.time_s.empty() && track.time_s.back() == t) {
        track.bytes_moved.back() = moved;
      } else {
        track.time_s.push_back(t);
        track.bytes_moved.push_back(moved);
      }
    }
    links_.push_back(std::move(track));
  }
}

// Waits of every worker, tower and in-graph client: the report's (core::wait_stretches), on the
// role's process. A trace the metrics cannot read (no run metadata) has none.
void TimelineModel::build_waits() {
  wait_of_process_.assign(layout_.processes.size(), -1);
  std::vector<core::WaitStretch> stretches;
  try {
    stretches = core::wait_stretches(*trace_, source_);
  } catch (const core::InputError&) {
    return;
  }
  std::unordered_map<uint32_t, int> process_of;
  for (int p = 0; p < process_count(); ++p) process_of[layout_.processes[size_t(p)].actor] = p;
  for (const core::WaitStretch& w : stretches) {
    const auto found = process_of.find(w.role);
    if (found == process_of.end()) continue;
    int& index = wait_of_process_[size_t(found->second)];
    if (index < 0) {
      index = int(waits_.size());
      waits_.emplace_back();
      waits_.back().process = found->second;
    }
    WaitLane& lane = waits_[size_t(index)];
    const int64_t end = core::timeline_ns(w.end_s);
    const int64_t start = std::max(core::timeline_ns(w.start_s),
                                   lane.end_ns.empty() ? int64_t(0) : lane.end_ns.back());
    if (end <= start) continue;  // within a nanosecond of the previous stretch
    lane.start_ns.push_back(start);
    lane.end_ns.push_back(end);
    lane.cause.push_back(w.cause);
  }
}

const WaitLane* TimelineModel::waits_of(int process) const {
  if (process < 0 || size_t(process) >= wait_of_process_.size()) return nullptr;
  const int w = wait_of_process_[size_t(process)];
  return w < 0 ? nullptr : &waits_[size_t(w)];
}

int TimelineModel::partner_slice(int slice) const {
  const auto& slices = layout_.slices;
  if (slice < 0 || size_t(slice) >= slices.size()) return -1;
  const core::TimelineSlice& s = slices[size_t(slice)];
  if (s.event->kind != EventKind::kTransfer) return -1;
  const int other = s.receiver_side ? slice - 1 : slice + 1;
  if (other < 0 || size_t(other) >= slices.size()) return -1;
  return slices[size_t(other)].event == s.event ? other : -1;
}

std::vector<RangeStatistic> TimelineModel::range_statistics(double from_s, double until_s) const {
  std::map<std::pair<int, uint32_t>, RangeStatistic> table;
  auto add = [&](const TraceEvent& e, double start, double end) {
    const Category category = category_of(e);
    RangeStatistic& row = table[{int(category), e.actor}];
    row.category = category;
    ++row.count;
    const double inside = std::max(0.0, std::min(end, until_s) - std::max(start, from_s));
    row.total_s += inside;
    row.mean_s += end - start;  // a sum until the end
    row.max_s = std::max(row.max_s, end - start);
  };
  for (const core::TimelineSlice& s : layout_.slices) {
    const TraceEvent& e = *s.event;
    if (s.receiver_side || e.end_s < from_s || e.start_s > until_s) continue;
    add(e, e.start_s, e.end_s);
  }
  for (const core::TimelineInstant& instant : layout_.instants) {
    const TraceEvent& e = *instant.event;
    const double end = (e.flags & core::kEventOpenEnded) ? e.start_s : std::max(e.start_s, e.end_s);
    if (end < from_s || e.start_s > until_s) continue;
    add(e, e.start_s, end);
  }
  for (const WaitLane& lane : waits_) {
    const auto [first, last] =
        lane.overlapping(core::timeline_ns(from_s), core::timeline_ns(until_s));
    if (first == last) continue;
    RangeStatistic& row =
        table[{int(Category::kWait), layout_.processes[size_t(lane.process)].actor}];
    row.category = Category::kWait;
    for (size_t i = first; i < last; ++i) {
      const double start = double(lane.start_ns[i]) * 1e-9, end = double(lane.end_ns[i]) * 1e-9;
      ++row.count;
      row.total_s += std::max(0.0, std::min(end, until_s) - std::max(start, from_s));
      row.mean_s += end - start;
      row.max_s = std::max(row.max_s, end - start);
    }
  }
  std::vector<RangeStatistic> rows;
  for (auto& [key, row] : table) {
    row.actor = key.second == core::kNoString ? "?" : trace_->str(key.second);
    row.mean_s /= double(row.count);
    rows.push_back(std::move(row));
  }
  return rows;
}

int TimelineModel::find_slice(const std::string& text, int after) const {
  if (text.empty() || layout_.slices.empty()) return -1;
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string needle = lower(text);
  std::vector<bool> matches(trace_->strings().size(), false);
  for (size_t id = 0; id < matches.size(); ++id) {
    matches[id] = lower(trace_->strings()[id]).find(needle) != std::string::npos;
  }
  const size_t n = layout_.slices.size();
  const size_t first = after < 0 ? 0 : size_t(after) + 1;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    const core::TimelineSlice& s = layout_.slices[i];
    if (s.receiver_side || s.event->label == core::kNoString) continue;
    if (matches[s.event->label]) return int(i);
  }
  return -1;
}

const core::RunMetrics* TimelineModel::metrics() const {
  if (!metrics_done_) {
    metrics_done_ = true;
    try {
      metrics_ = core::compute_metrics(*trace_, source_);
    } catch (const std::exception& e) {
      metrics_error_ = e.what();
    }
  }
  return metrics_ ? &*metrics_ : nullptr;
}

const std::string& TimelineModel::metrics_error() const {
  metrics();
  return metrics_error_;
}

}  // namespace replisim::gui
