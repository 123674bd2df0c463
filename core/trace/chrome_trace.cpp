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
  void emit(const nlohmann::json& event) { emit_text(dump_json(event)); }
  // An event already serialised as dump_json would (ObjectText).
  void emit_text(const std::string& text) {
    out_ << (first_ ? "\n" : ",\n") << text;
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// One flat JSON object written straight into `out`, byte for byte as dump_json writes the
// equivalent nlohmann::json: members in the order the caller gives, which must be the keys' sorted
// order (nlohmann's objects are std::maps); integers in decimal; doubles as nlohmann's dump_float
// (its own to_chars: the shortest round trip, ".0" after an integral value, null if not finite);
// strings given already quoted and escaped. Slices and flows are nearly every event of a Chrome
// trace: building them as nlohmann objects took most of the export's time (1.7 GB in 27 s).
class ObjectText {
 public:
  explicit ObjectText(std::string& out) : out_(out) { out_ += '{'; }
  ObjectText& key(const char* name) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += name;
    out_ += "\":";
    return *this;
  }
  ObjectText& integer(const char* name, int64_t value) {
    key(name);
    out_ += std::to_string(value);
    return *this;
  }
  ObjectText& number(const char* name, double value) {
    key(name);
    if (!std::isfinite(value)) {
      out_ += "null";
      return *this;
    }
    char buffer[64];
    const char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, size_t(end - buffer));
    return *this;
  }
  ObjectText& quoted(const char* name, const std::string& json_string) {
    key(name);
    out_ += json_string;
    return *this;
  }
  void close() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

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

  // A trace string as a JSON string literal, escaped once per string (dump_json's escaping).
  const std::string& quoted(uint32_t id) {
    static const std::string kEmpty = "\"\"";  // Trace::str of kNoString or a bad index
    if (id >= trace_.strings().size()) return kEmpty;
    if (id >= quoted_.size()) quoted_.resize(trace_.strings().size());
    std::string& q = quoted_[id];
    if (q.empty()) q = dump_json(nlohmann::json(trace_.str(id)));
    return q;
  }

  // The slice's args by its kind (step and client always; a compute's device and FLOP; a
  // transfer's ends, bytes and message; ...), keys in sorted order.
  void write_args(ObjectText& args, const TraceEvent& e) {
    switch (e.kind) {
      case EventKind::kCompute:
        args.quoted("client", quoted(e.client))
            .quoted("device", quoted(e.device))
            .number("flop", e.flop)
            .integer("step", e.step);
        break;
      case EventKind::kTransfer:
        args.number("bytes", e.bytes)
            .quoted("client", quoted(e.client))
            .quoted("from", quoted(e.device))
            .integer("message_id", e.message_id)
            .integer("step", e.step)
            .quoted("to", quoted(e.peer));
        break;
      case EventKind::kStep:
        args.quoted("client", quoted(e.client))
            .integer("global_step_read", e.global_step_read)
            .integer("step", e.step);
        break;
      case EventKind::kCheckpoint:
        args.number("bytes", e.bytes)
            .quoted("client", quoted(e.client))
            .integer("global_step", e.global_step_after)
            .integer("step", e.step);
        break;
      case EventKind::kCollective:
        // A rank's phase of an all-reduce under Horovod's timeline name (the slice's name): the
        // fused buffer's bytes and the collective's number, as Horovod's timeline gives them.
        args.number("bytes", e.bytes)
            .quoted("client", quoted(e.client))
            .integer("collective", e.message_id)
            .quoted("device", quoted(e.device))
            .integer("step", e.step);
        break;
      case EventKind::kRecovery:
        args.quoted("client", quoted(e.client))
            .integer("global_step_at_failure", e.global_step_after)
            .integer("restored_global_step", e.global_step_read)
            .integer("step", e.step);
        break;
      default:
        args.quoted("client", quoted(e.client)).integer("step", e.step);
        break;
    }
    args.close();
  }

  void write_slice(const TimelineSlice& s) {
    const TraceEvent& e = *s.event;
    const int pid = pid_of(s.process), tid = tid_base_ + s.lane;
    text_.clear();
    ObjectText slice(text_);
    slice.key("args");
    ObjectText args(text_);
    write_args(args, e);
    slice.quoted("cat", "\"" + std::string(event_kind_name(e.kind)) + "\"")
        .number("dur", ns_to_us(s.end_ns - s.start_ns))
        .quoted("name", e.kind == EventKind::kStep ? "\"step " + std::to_string(e.step) + "\""
                                                   : quoted(e.label))
        .quoted("ph", "\"X\"")
        .integer("pid", pid)
        .integer("tid", tid)
        .number("ts", ns_to_us(s.start_ns))
        .close();
    stream_.emit_text(text_);
    if (e.kind != EventKind::kTransfer) return;
    // Flow from the send slice to the receive slice (bound to the enclosing slices).
    text_.clear();
    ObjectText flow(text_);
    if (s.receiver_side) flow.quoted("bp", "\"e\"");
    flow.quoted("cat", "\"transfer\"")
        .integer("id", flow_base_ + e.message_id)
        .quoted("name", "\"tensor\"")
        .quoted("ph", s.receiver_side ? "\"f\"" : "\"s\"")
        .integer("pid", pid)
        .integer("tid", tid)
        .number("ts", ns_to_us(s.start_ns))
        .close();
    stream_.emit_text(text_);
  }

  EventStream& stream_;
  const Trace& trace_;
  const std::string& prefix_;
  const TimelineLayout& layout_;
  int pid_base_, tid_base_;
  int64_t flow_base_;
  size_t declared_ = 0;
  std::vector<std::string> quoted_;  // per trace string: its JSON literal, once needed
  std::string text_;                 // the event being written
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
