// Reading version 2 native traces (written by replisim before op kinds and flags were recorded
// per event): the run's metadata held its outcome, the whole string table came first, and events
// were 93 bytes. The op kind of each event, the kind of op whose tensor a transfer carries, and
// the flags are derived here, once, from the labels and times that version 2 wrote, using the op
// names its strategy compilers gave (core/strategy/step_graph_parts.cpp at that version).
#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_format_detail.h"

namespace replisim::core::trace_format_detail {
namespace {

constexpr size_t kEventBytesV2 = 1 + kEventBodyBytes;
// Version 2 marked a fault window without an end by ending it a year after the start of time.
constexpr double kOpenEndV2S = 86400.0 * 365;

// The op kind of a version 2 op name: its first path component ("forward/conv1" -> kForward),
// the sync token queue's two ops by their full names.
std::optional<OpKind> op_kind_of_name(const std::string& name) {
  static const std::map<std::string, OpKind> kByName = {
      {"input", OpKind::kInput},
      {"split", OpKind::kSplit},
      {"read", OpKind::kReadVariable},
      {"local", OpKind::kReadVariable},
      {"forward", OpKind::kForward},
      {"loss", OpKind::kLoss},
      {"backward", OpKind::kBackward},
      {"aggregate", OpKind::kAggregate},
      {"apply", OpKind::kApply},
      {"global_step", OpKind::kGlobalStepIncrement},
      {"send", OpKind::kSend},
      {"recv", OpKind::kRecv},
      {"accumulate", OpKind::kAccumulate},
      {"sync_token_q/dequeue", OpKind::kTokenDequeue},
      {"local_step", OpKind::kLocalStep},
      {"take_grad", OpKind::kTakeGradient},
      {"sync_token_q/enqueue", OpKind::kTokenEnqueue}};
  const std::string whole = name.substr(0, name.find(':'));  // "loss:1" -> "loss"
  auto found = kByName.find(whole);
  if (found == kByName.end()) found = kByName.find(whole.substr(0, whole.find('/')));
  if (found == kByName.end()) return std::nullopt;
  return found->second;
}

// What version 3 records per event and version 2 left to the label.
void derive_kinds(TraceEvent& e, const std::vector<std::string>& strings) {
  const std::string& label = e.label < strings.size() ? strings[e.label] : std::string();
  switch (e.kind) {
    case EventKind::kCompute:
      e.op = op_kind_of_name(label);
      break;
    case EventKind::kTransfer:
      e.op = OpKind::kSend;
      if (label.rfind("send/", 0) == 0) e.producer = op_kind_of_name(label.substr(5));
      break;
    case EventKind::kUpdate:
      e.op = OpKind::kGlobalStepIncrement;
      break;
    case EventKind::kDropped:
      e.op = OpKind::kAccumulate;
      break;
    case EventKind::kFault:
      if (e.end_s >= kOpenEndV2S) e.flags |= kEventOpenEnded;
      break;
    case EventKind::kCheckpoint:
      if (label == "summaries") e.flags |= kEventSummaries;
      break;
    case EventKind::kStep:
    case EventKind::kRecovery:
    case EventKind::kCollective:  // version 5 on: never in a version 2 trace
      break;
  }
}

std::vector<std::string> read_strings(Decoder& d, uint32_t run) {
  d.at(run, "string table");
  const uint32_t count = d.u32();
  d.check_count(count, kMaxTraceStrings, 4, "string count");
  std::vector<std::string> strings;  // grown as strings arrive, not reserved from `count`
  for (uint32_t i = 0; i < count; ++i) {
    d.at(run, "string", i);
    const uint32_t size = d.u32();
    d.check_count(size, kMaxTraceStringBytes, 1, "length");
    strings.push_back(d.text(size));
  }
  std::vector<uint32_t> order(count);
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return strings[a] != strings[b] ? strings[a] < strings[b] : a < b;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    if (strings[order[i]] == strings[order[i - 1]]) {
      d.at(run, "string", order[i]);
      d.fail("repeats string " + std::to_string(order[i - 1]));
    }
  }
  return strings;
}

void read_events(Decoder& d, uint32_t run, const std::vector<std::string>& strings,
                 TraceSink& sink) {
  d.at(run);
  const uint64_t events = d.u64();
  d.check_count(events, kMaxTraceRecords, kEventBytesV2, "event count");
  char record[kEventBytesV2];
  for (uint64_t i = 0; i < events; ++i) {
    d.at(run, "event", i);
    d.read(record, kEventBytesV2);
    TraceEvent e;
    e.kind = EventKind(uint8_t(record[0]));
    decode_event_body(record + 1, e);
    const std::string problem = event_problem(e, uint32_t(strings.size()));
    if (!problem.empty()) d.fail(problem);
    derive_kinds(e, strings);
    sink.event(e);
  }
}

void read_run(Decoder& d, uint32_t run, TraceSink& sink) {
  d.reset_hash();
  d.at(run, "metadata");
  nlohmann::json meta = d.json_object();
  const TraceMeta parsed = in_run(run, [&] { return trace_meta_from_json(meta, d.source()); });
  meta.erase("notes");  // version 2 kept every note, the plan's and the run's, in the metadata
  const RunOutcome outcome =
      in_run(run, [&] { return run_outcome_from_json(meta, d.source(), "/meta"); });
  const std::vector<std::string> strings = read_strings(d, run);
  sink.begin(parsed);
  for (size_t i = 0; i < strings.size(); ++i) sink.string(uint32_t(i), strings[i]);
  read_events(d, run, strings, sink);
  d.at(run);
  const uint64_t counters = d.u64();
  d.check_count(counters, kMaxTraceRecords, kCounterBytes, "counter count");
  char record[kCounterBytes];
  for (uint64_t i = 0; i < counters; ++i) {
    d.at(run, "counter", i);
    d.read(record, kCounterBytes);
    const CounterSample c = decode_counter(record);
    const std::string problem = counter_problem(c, uint32_t(strings.size()));
    if (!problem.empty()) d.fail(problem);
    sink.counter(c);
  }
  d.at(run);
  const uint64_t computed = d.hash();
  if (d.u64(false) != computed) d.fail("checksum mismatch: the file is corrupt");
  sink.end(outcome);
}

}  // namespace

void read_runs_v2(Decoder& d, uint32_t runs, TraceSink& sink) {
  for (uint32_t run = 0; run < runs; ++run) read_run(d, run, sink);
}

}  // namespace replisim::core::trace_format_detail
