#include "core/trace/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

double ns_to_us(int64_t ns) {
  return double(ns) / 1000.0;
}

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

nlohmann::json slice_args(const Trace& trace, const TraceEvent& e) {
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
  return args;
}

nlohmann::json instant_json(const Trace& trace, const TraceEvent& e, int pid) {
  nlohmann::json j = {{"pid", pid}, {"tid", 0}, {"ts", ns_to_us(timeline_ns(e.start_s))}};
  if (e.kind == EventKind::kFault) {
    j.update({{"ph", "i"},
              {"s", "g"},
              {"name", "fault: " + trace.str(e.label)},
              {"cat", "fault"},
              {"args", {{"until_s", e.end_s}}}});
  } else if (e.kind == EventKind::kDropped) {
    j.update({{"ph", "i"},
              {"s", "t"},
              {"name", "dropped stale gradient " + trace.str(e.label)},
              {"cat", "dropped"},
              {"args",
               {{"worker", e.client == kNoString ? std::string() : trace.str(e.client)},
                {"step", e.step},
                {"local_step", e.global_step_read},
                {"accumulator_global_step", e.global_step_after}}}});
  } else {
    j.update(
        {{"ph", "i"},
         {"s", "p"},
         {"name", "global_step " + std::to_string(e.global_step_after)},
         {"cat", "update"},
         {"args",
          {{"step", e.step}, {"global_step_read", e.global_step_read}, {"samples", e.samples}}}});
  }
  return j;
}

// Writes one run's layout; its processes and threads get the ids after `pid_base`/`tid_base`.
class RunWriter {
 public:
  RunWriter(EventStream& stream, const ChromeTraceInput& input, const TimelineLayout& layout,
            int pid_base, int tid_base, int64_t flow_base)
      : stream_(stream),
        trace_(*input.trace),
        prefix_(input.prefix),
        layout_(layout),
        pid_base_(pid_base),
        tid_base_(tid_base),
        flow_base_(flow_base) {}

  void write() {
    declare_processes_up_to(layout_.roles_and_slices);
    for (size_t lane = 0; lane < layout_.lanes.size(); ++lane) {
      const int tid = tid_base_ + int(lane);
      const int pid = pid_of(layout_.lanes[lane].process);
      stream_.emit({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", pid},
                    {"tid", tid},
                    {"args", {{"name", layout_.lanes[lane].label()}}}});
      stream_.emit({{"ph", "M"},
                    {"name", "thread_sort_index"},
                    {"pid", pid},
                    {"tid", tid},
                    {"args", {{"sort_index", tid}}}});
    }
    for (const TimelineSlice& s : layout_.slices) write_slice(s);
    for (const TimelineInstant& i : layout_.instants) {
      declare_processes_up_to(size_t(i.process) + 1);
      stream_.emit(instant_json(trace_, *i.event, pid_of(i.process)));
    }
    for (const CounterSample* c : layout_.counters) {
      int pid = 0;
      if (layout_.counter_process >= 0) {
        declare_processes_up_to(size_t(layout_.counter_process) + 1);
        pid = pid_of(layout_.counter_process);
      }
      stream_.emit({{"ph", "C"},
                    {"name", trace_.str(c->name)},
                    {"pid", pid},
                    {"ts", ns_to_us(timeline_ns(c->time_s))},
                    {"args", {{"value", c->value}}}});
    }
  }

 private:
  int pid_of(int process) const { return pid_base_ + process; }

  // Process metadata comes just before the first record that names the process.
  void declare_processes_up_to(size_t count) {
    for (; declared_ < count; ++declared_) {
      const int pid = pid_of(int(declared_));
      stream_.emit(
          {{"ph", "M"},
           {"name", "process_name"},
           {"pid", pid},
           {"args", {{"name", prefix_ + trace_.str(layout_.processes[declared_].actor)}}}});
      stream_.emit({{"ph", "M"},
                    {"name", "process_sort_index"},
                    {"pid", pid},
                    {"args", {{"sort_index", pid}}}});
    }
  }

  void write_slice(const TimelineSlice& s) {
    const TraceEvent& e = *s.event;
    const int pid = pid_of(s.process), tid = tid_base_ + s.lane;
    stream_.emit({{"ph", "X"},
                  {"name", e.kind == EventKind::kStep ? "step " + std::to_string(e.step)
                                                      : trace_.str(e.label)},
                  {"cat", event_kind_name(e.kind)},
                  {"pid", pid},
                  {"tid", tid},
                  {"ts", ns_to_us(s.start_ns)},
                  {"dur", ns_to_us(s.end_ns - s.start_ns)},
                  {"args", slice_args(trace_, e)}});
    if (e.kind != EventKind::kTransfer) return;
    // Flow from the send slice to the receive slice (bound to the enclosing slices).
    nlohmann::json flow = {
        {"ph", s.receiver_side ? "f" : "s"}, {"name", "tensor"}, {"cat", "transfer"},
        {"id", flow_base_ + e.message_id},   {"pid", pid},       {"tid", tid},
        {"ts", ns_to_us(s.start_ns)}};
    if (s.receiver_side) flow["bp"] = "e";
    stream_.emit(flow);
  }

  EventStream& stream_;
  const Trace& trace_;
  const std::string& prefix_;
  const TimelineLayout& layout_;
  int pid_base_, tid_base_;
  int64_t flow_base_;
  size_t declared_ = 0;
};

}  // namespace

void write_chrome_trace(std::ostream& out, const std::vector<ChromeTraceInput>& inputs,
                        const nlohmann::json& provenance, const TimelineWindow& window) {
  out << "{\"traceEvents\":[";
  EventStream stream(out);
  int pid_base = 1, tid_base = 1;
  int64_t flow_base = 0;  // keeps flow ids of different runs apart
  for (const ChromeTraceInput& input : inputs) {
    const TimelineLayout layout = layout_timeline(*input.trace, window);
    RunWriter(stream, input, layout, pid_base, tid_base, flow_base).write();
    pid_base += int(layout.processes.size());
    tid_base += int(layout.lanes.size());
    flow_base += layout.max_message_id + 1;
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
  if (!out) throw OutputError("", "cannot write the Chrome trace");
}

}  // namespace replisim::core
