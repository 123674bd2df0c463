#include "core/trace/chrome_trace.h"

#include "core/base/json_cursor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

namespace replisim::core {
namespace {

int64_t to_ns(double seconds) {
  return std::llround(seconds * 1e9);
}
double ns_to_us(int64_t ns) {
  return double(ns) / 1000.0;
}

// One slice before lane assignment.
struct Slice {
  const TraceEvent* event;
  int pid;
  std::string lane;  // base lane ("compute pc1/gpu0", "send", "recv", "step")
  int64_t start_ns;
  int64_t end_ns;
  bool receiver_side;
  int tid = 0;
};

class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void emit(const nlohmann::json& event) {
    out_ << (first_ ? "\n" : ",\n") << dump_json(event);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// Assigns every slice of one (pid, lane) to the first sub-lane free at its start.
void assign_sub_lanes(std::vector<Slice*>& slices, std::map<std::pair<int, std::string>, int>& tids,
                      int& next_tid, EventStream& stream) {
  std::stable_sort(slices.begin(), slices.end(), [](const Slice* a, const Slice* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  std::vector<int64_t> lane_end;
  for (Slice* s : slices) {
    size_t k = 0;
    while (k < lane_end.size() && lane_end[k] > s->start_ns) ++k;
    if (k == lane_end.size()) lane_end.push_back(0);
    lane_end[k] = s->end_ns;
    const std::string name = s->lane + "." + std::to_string(k);
    auto [it, inserted] = tids.emplace(std::make_pair(s->pid, name), next_tid);
    if (inserted) {
      stream.emit({{"ph", "M"},
                   {"name", "thread_name"},
                   {"pid", s->pid},
                   {"tid", next_tid},
                   {"args", {{"name", name}}}});
      stream.emit({{"ph", "M"},
                   {"name", "thread_sort_index"},
                   {"pid", s->pid},
                   {"tid", next_tid},
                   {"args", {{"sort_index", next_tid}}}});
      ++next_tid;
    }
    s->tid = it->second;
  }
}

nlohmann::json slice_json(const Trace& trace, const Slice& s) {
  const TraceEvent& e = *s.event;
  nlohmann::json args = {{"step", e.step}, {"client", trace.str(e.client)}};
  if (e.kind == EventKind::kCompute) {
    args["device"] = trace.str(e.device);
    args["flop"] = e.flop;
  } else if (e.kind == EventKind::kTransfer) {
    args["from"] = trace.str(e.device);
    args["to"] = trace.str(e.peer);
    args["bytes"] = e.bytes;
    args["message_id"] = e.message_id;
  } else if (e.kind == EventKind::kStep) {
    args["global_step_read"] = e.global_step_read;
  } else if (e.kind == EventKind::kCheckpoint) {
    args["bytes"] = e.bytes;
    args["global_step"] = e.global_step_after;
  } else if (e.kind == EventKind::kRecovery) {
    args["restored_global_step"] = e.global_step_read;
    args["global_step_at_failure"] = e.global_step_after;
  }
  return {
      {"ph", "X"},
      {"name", e.kind == EventKind::kStep ? "step " + std::to_string(e.step) : trace.str(e.label)},
      {"cat", event_kind_name(e.kind)},
      {"pid", s.pid},
      {"tid", s.tid},
      {"ts", ns_to_us(s.start_ns)},
      {"dur", ns_to_us(s.end_ns - s.start_ns)},
      {"args", std::move(args)}};
}

}  // namespace

void write_chrome_trace(std::ostream& out, const std::vector<ChromeTraceInput>& inputs,
                        const nlohmann::json& provenance, const ChromeTraceWindow& window) {
  out << "{\"traceEvents\":[";
  EventStream stream(out);
  int next_pid = 1;
  int next_tid = 1;
  int64_t flow_id_base = 0;  // keeps flow ids of different runs apart
  for (const ChromeTraceInput& input : inputs) {
    const Trace& trace = *input.trace;
    // One process per actor, in the order roles are listed in the metadata.
    std::map<uint32_t, int> pid_of;
    auto pid_for = [&](uint32_t actor) {
      auto [it, inserted] = pid_of.emplace(actor, next_pid);
      if (inserted) {
        stream.emit({{"ph", "M"},
                     {"name", "process_name"},
                     {"pid", next_pid},
                     {"args", {{"name", input.prefix + trace.str(actor)}}}});
        stream.emit({{"ph", "M"},
                     {"name", "process_sort_index"},
                     {"pid", next_pid},
                     {"args", {{"sort_index", next_pid}}}});
        ++next_pid;
      }
      return it->second;
    };
    if (trace.meta.contains("roles") && trace.meta["roles"].is_array()) {
      for (const auto& role : trace.meta["roles"]) {
        const uint32_t id = trace.find(role.is_object() ? role.value("name", "") : "");
        if (id != kNoString) pid_for(id);
      }
    }
    std::vector<Slice> slices;
    for (const TraceEvent& e : trace.events) {
      if (!window.overlaps(e.start_s, e.end_s)) continue;
      const int64_t start = to_ns(e.start_s), end = std::max(to_ns(e.end_s), to_ns(e.start_s));
      switch (e.kind) {
        case EventKind::kCompute:
          slices.push_back(
              {&e, pid_for(e.actor), "compute " + trace.str(e.device), start, end, false});
          break;
        case EventKind::kTransfer:
          slices.push_back({&e, pid_for(e.actor), "send", start, end, false});
          slices.push_back({&e, pid_for(e.peer_actor), "recv", start, end, true});
          break;
        case EventKind::kStep:
          slices.push_back({&e, pid_for(e.actor), "step", start, end, false});
          break;
        case EventKind::kCheckpoint:
          slices.push_back({&e, pid_for(e.actor), "checkpoint", start, end, false});
          break;
        case EventKind::kRecovery:
          slices.push_back({&e, pid_for(e.actor), "recovery", start, end, false});
          break;
        case EventKind::kUpdate:
        case EventKind::kDropped:
        case EventKind::kFault:
          break;
      }
    }
    std::map<std::pair<int, std::string>, std::vector<Slice*>> lanes;
    for (Slice& s : slices) lanes[{s.pid, s.lane}].push_back(&s);
    std::map<std::pair<int, std::string>, int> tids;
    for (auto& [key, lane_slices] : lanes) assign_sub_lanes(lane_slices, tids, next_tid, stream);
    for (const Slice& s : slices) {
      stream.emit(slice_json(trace, s));
      if (s.event->kind != EventKind::kTransfer) continue;
      // Flow from the send slice to the receive slice (bound to the enclosing slices).
      nlohmann::json flow = {{"ph", s.receiver_side ? "f" : "s"},
                             {"name", "tensor"},
                             {"cat", "transfer"},
                             {"id", flow_id_base + s.event->message_id},
                             {"pid", s.pid},
                             {"tid", s.tid},
                             {"ts", ns_to_us(s.start_ns)}};
      if (s.receiver_side) flow["bp"] = "e";
      stream.emit(flow);
    }
    for (const TraceEvent& e : trace.events) {
      if (!window.overlaps(e.start_s, std::max(e.start_s, e.end_s))) continue;
      if (e.kind == EventKind::kFault) {
        stream.emit({{"ph", "i"},
                     {"s", "g"},
                     {"name", "fault: " + trace.str(e.label)},
                     {"cat", "fault"},
                     {"pid", pid_for(e.actor)},
                     {"tid", 0},
                     {"ts", ns_to_us(to_ns(e.start_s))},
                     {"args", {{"until_s", e.end_s}}}});
        continue;
      }
      if (e.kind == EventKind::kDropped) {
        stream.emit({{"ph", "i"},
                     {"s", "t"},
                     {"name", "dropped stale gradient " + trace.str(e.label)},
                     {"cat", "dropped"},
                     {"pid", pid_for(e.actor)},
                     {"tid", 0},
                     {"ts", ns_to_us(to_ns(e.start_s))},
                     {"args",
                      {{"worker", e.client == kNoString ? std::string() : trace.str(e.client)},
                       {"step", e.step},
                       {"local_step", e.global_step_read},
                       {"accumulator_global_step", e.global_step_after}}}});
        continue;
      }
      if (e.kind != EventKind::kUpdate) continue;
      stream.emit(
          {{"ph", "i"},
           {"s", "p"},
           {"name", "global_step " + std::to_string(e.global_step_after)},
           {"cat", "update"},
           {"pid", pid_for(e.actor)},
           {"tid", 0},
           {"ts", ns_to_us(to_ns(e.start_s))},
           {"args",
            {{"step", e.step}, {"global_step_read", e.global_step_read}, {"samples", e.samples}}}});
    }
    // Counters (global_step) on the process of PS 0, which holds global_step.
    uint32_t counter_actor = kNoString;
    if (trace.meta.contains("ps") && trace.meta["ps"].is_array() && !trace.meta["ps"].empty() &&
        trace.meta["ps"][0].is_string()) {
      counter_actor = trace.find(trace.meta["ps"][0].get<std::string>());
    }
    for (const CounterSample& c : trace.counters) {
      if (!window.overlaps(c.time_s, c.time_s)) continue;
      const int pid = counter_actor != kNoString ? pid_for(counter_actor) : 0;
      stream.emit({{"ph", "C"},
                   {"name", trace.str(c.name)},
                   {"pid", pid},
                   {"ts", ns_to_us(to_ns(c.time_s))},
                   {"args", {{"value", c.value}}}});
    }
    int64_t max_id = -1;
    for (const TraceEvent& e : trace.events) max_id = std::max(max_id, e.message_id);
    flow_id_base += max_id + 1;
  }
  // An object, as the format wants: the provenance's fields, or {"provenance": [...]} when the
  // runs come from several simulations.
  nlohmann::json other =
      provenance.is_object() ? provenance : nlohmann::json{{"provenance", provenance}};
  if (!window.whole()) {
    other["window_s"] = {window.from_s, std::isinf(window.until_s)
                                            ? nlohmann::json()
                                            : nlohmann::json(window.until_s)};
  }
  out << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":" << dump_json(other) << "}\n";
  if (!out) throw std::runtime_error("cannot write the Chrome trace");
}

}  // namespace replisim::core
