// The native trace format: round trips, the streaming reader, the documented byte layout, and
// rejection of every truncation, corruption and oversized count as an InputError.
#include "core/trace/trace_format.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <streambuf>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "tests/support/run_binary.h"

namespace replisim::core {
namespace {

// A stream that cannot seek (like a pipe), so the reader cannot learn its size up front.
class NoSeekBuffer : public std::streambuf {
 public:
  explicit NoSeekBuffer(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

// The smallest platform a trace's metadata accepts: one machine with a CPU.
Platform one_machine() {
  Platform p;
  p.links = {{"switch", 1e12, 0, false}, {"pc1/nic", 1.25e9, 1e-5, true}};
  p.switch_link = 0;
  p.machines = {{"pc1", {1}, {0}}};
  p.devices = {{"pc1/cpu", 0, DeviceKind::kCpu, 1e11, 1, -1, 0}};
  return p;
}

Trace sample_trace(const std::string& strategy) {
  Trace t;
  t.meta.scenario = "sample";
  t.meta.strategy = strategy;
  t.meta.steps = 3;
  t.meta.platform = one_machine();
  t.meta.roles = {{"worker0", RoleKind::kWorker, "pc1/cpu", true},
                  {"ps0", RoleKind::kParameterServer, "pc1/cpu", false}};
  t.meta.clients = {{"worker0", 32, 0.5, 0}};
  t.meta.ps = {"ps0"};
  t.meta.variables = {{"global_step", 8, 0}};
  t.meta.graphs = {{"worker0",
                    {{"read/global_step", OpKind::kReadVariable, 1, 0, 0, {}},
                     {"send/grad", OpKind::kSend, 0, 0, -1, {0}}}}};
  t.meta.notes = {"a plan note"};
  t.meta.backend = "sim";
  t.meta.provenance = {{"nested", {{"x", 1.25}}}};
  t.outcome.end_s = 2.75;
  t.outcome.notes = {"a run note"};
  TraceEvent transfer;
  transfer.kind = EventKind::kTransfer;
  transfer.op = OpKind::kSend;
  transfer.producer = OpKind::kBackward;
  transfer.actor = t.intern("worker0");
  transfer.device = t.intern("pc1/gpu0");
  transfer.peer_actor = t.intern("ps0");
  transfer.peer = t.intern("pc2/cpu");
  transfer.label = t.intern("send/grad");
  transfer.client = transfer.actor;
  transfer.step = 3;
  transfer.start_s = 1.5;
  transfer.end_s = 2.25;
  transfer.bytes = 4e6;
  transfer.message_id = 42;
  transfer.op_index = 1;
  transfer.bound = t.intern("pc1/nic/up");
  TraceEvent compute;
  compute.op = OpKind::kForward;
  compute.actor = transfer.actor;
  compute.device = transfer.device;
  compute.label = t.intern("forward/" + strategy);
  compute.start_s = 0.1;
  compute.end_s = 0.3;
  compute.flop = 1e12;
  TraceEvent update;
  update.kind = EventKind::kUpdate;
  update.op = OpKind::kGlobalStepIncrement;
  update.actor = transfer.actor;
  update.start_s = update.end_s = 2.5;
  update.global_step_read = 6;
  update.global_step_after = 7;
  update.samples = 32;
  TraceEvent fault;
  fault.kind = EventKind::kFault;
  fault.flags = kEventOpenEnded;
  fault.actor = fault.device = transfer.device;
  fault.label = t.intern("pc1/gpu0 slowed to 0.5x");
  fault.start_s = 1;
  fault.end_s = 3e7;
  t.events = {transfer, compute, update, fault};
  t.counters.push_back({t.intern("global_step"), 2.5, 7});
  return t;
}

std::string encode(const std::vector<const Trace*>& runs) {
  std::ostringstream out;
  write_traces_binary(out, runs);
  return out.str();
}

std::vector<Trace> decode(const std::string& bytes, bool seekable = true) {
  if (seekable) {
    std::istringstream in(bytes);
    return read_traces_binary(in, "t.rstrace");
  }
  NoSeekBuffer buffer(bytes);
  std::istream in(&buffer);
  return read_traces_binary(in, "t.rstrace");
}

// The message of the InputError that decoding `bytes` throws ("" if it throws none).
std::string decode_error(const std::string& bytes, bool seekable = true) {
  try {
    decode(bytes, seekable);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.rstrace");
    return e.message();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

void expect_same(const Trace& a, const Trace& b) {
  EXPECT_EQ(trace_meta_to_json(a.meta), trace_meta_to_json(b.meta));
  EXPECT_EQ(run_outcome_to_json(a.outcome), run_outcome_to_json(b.outcome));
  EXPECT_EQ(a.strings(), b.strings());
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent &x = a.events[i], &y = b.events[i];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(std::vector<uint32_t>({x.actor, x.device, x.label, x.client, x.peer_actor, x.peer}),
              std::vector<uint32_t>({y.actor, y.device, y.label, y.client, y.peer_actor, y.peer}));
    EXPECT_EQ(
        std::vector<int64_t>({x.step, x.message_id, x.global_step_read, x.global_step_after}),
        std::vector<int64_t>({y.step, y.message_id, y.global_step_read, y.global_step_after}));
    EXPECT_EQ(std::vector<double>({x.start_s, x.end_s, x.bytes, x.flop}),
              std::vector<double>({y.start_s, y.end_s, y.bytes, y.flop}));
    EXPECT_EQ(x.samples, y.samples);
    EXPECT_EQ(x.op_index, y.op_index);
    EXPECT_EQ(x.bound, y.bound);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.producer, y.producer);
    EXPECT_EQ(x.flags, y.flags);
  }
  ASSERT_EQ(a.counters.size(), b.counters.size());
  for (size_t i = 0; i < a.counters.size(); ++i) {
    EXPECT_EQ(a.counters[i].name, b.counters[i].name);
    EXPECT_EQ(a.counters[i].time_s, b.counters[i].time_s);
    EXPECT_EQ(a.counters[i].value, b.counters[i].value);
  }
}

std::string le(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(value >> (8 * i))));
  return out;
}

std::string file_header(uint32_t version = kTraceFormatVersion) {
  return std::string("RSTRACE\0", 8) + le(version, 4);
}

// A run's records: 'B' and the metadata, then whatever `body` holds.
std::string begin_record(const Trace& t) {
  const std::string meta = dump_json(trace_meta_to_json(t.meta));
  return "B" + le(meta.size(), 4) + meta;
}

// Offset of the first event record of the only run of a file encoding `t`.
size_t first_event_offset(const Trace& t) {
  size_t offset = 12 + begin_record(t).size();
  for (const std::string& s : t.strings()) offset += 5 + s.size();
  return offset;
}

constexpr size_t kEventRecordBytes = 105;

TEST(TraceFormat, RoundTripKeepsEveryField) {
  const Trace t = sample_trace("in_graph");
  std::istringstream in(encode({&t}));
  expect_same(read_trace_binary(in, "mem"), t);
}

// Version 3 (96-byte events, no op index or bound): the same file less the last 8 bytes of each
// event record, under version 3 and its own checksum.
TEST(TraceFormat, Version3FilesReadWithoutOpIndices) {
  const Trace t = sample_trace("in_graph");
  const std::string v4 = encode({&t});
  std::string v3 = file_header(3);
  size_t at = 12;
  const size_t run_start = v3.size();
  auto u32_at = [&](size_t offset) {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= uint32_t(uint8_t(v4[offset + size_t(i)])) << (8 * i);
    return value;
  };
  for (;;) {
    const char tag = v4[at];
    size_t size = 0;
    if (tag == 'B' || tag == 'S' || tag == 'Z') size = 5 + u32_at(at + 1);
    if (tag == 'E') size = kEventRecordBytes;
    if (tag == 'C') size = 21;
    ASSERT_GT(size, 0u) << "tag " << int(tag);
    v3 += v4.substr(at, tag == 'E' ? size - 8 : size);
    at += size;
    if (tag == 'Z') break;
  }
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = run_start; i < v3.size(); ++i) {
    hash ^= uint8_t(v3[i]);
    hash *= 1099511628211ULL;
  }
  v3 += le(hash, 8) + "F" + le(1, 4);
  std::istringstream in(v3);
  const Trace back = read_trace_binary(in, "v3");
  ASSERT_EQ(back.events.size(), t.events.size());
  EXPECT_EQ(back.events[0].message_id, 42);
  EXPECT_EQ(back.events[0].op_index, -1);
  EXPECT_EQ(back.events[0].bound, kNoString);
}

TEST(TraceFormat, OneFileHoldsSeveralRuns) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  const std::string bytes = encode({&a, &b});
  for (bool seekable : {true, false}) {
    const std::vector<Trace> back = decode(bytes, seekable);
    ASSERT_EQ(back.size(), 2u);
    expect_same(back[0], a);
    expect_same(back[1], b);
  }
  std::istringstream in(bytes);
  try {
    read_trace_binary(in, "both.rstrace");
    FAIL() << "read two runs as one";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("holds 2 runs"), std::string::npos) << e.what();
  }
}

// Logs what a reader emits, one line per call.
class LoggingSink : public TraceSink {
 public:
  std::vector<std::string> log;
  void begin(const TraceMeta& meta) override { log.push_back("begin " + meta.strategy); }
  void string(uint32_t id, const std::string& text) override {
    strings_.resize(id + 1);
    strings_[id] = text;
  }
  void event(const TraceEvent& e) override {
    log.push_back(std::string(event_kind_name(e.kind)) + " " +
                  (e.label == kNoString ? "-" : strings_.at(e.label)));
  }
  void counter(const CounterSample& c) override { log.push_back("counter " + strings_.at(c.name)); }
  void end(const RunOutcome& o) override { log.push_back("end " + dump_json(o.notes)); }

 private:
  std::vector<std::string> strings_;
};

TEST(TraceFormat, StreamingReaderEmitsEachRecordIntoTheSink) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  NoSeekBuffer buffer(encode({&a, &b}));
  std::istream in(&buffer);
  LoggingSink sink;
  EXPECT_EQ(read_trace_stream(in, "pipe", sink), 2u);
  std::vector<std::string> expected;
  for (const char* strategy : {"in_graph", "between_graph"}) {
    const std::vector<std::string> run = {std::string("begin ") + strategy,
                                          "transfer send/grad",
                                          std::string("compute forward/") + strategy,
                                          "update -",
                                          "fault pc1/gpu0 slowed to 0.5x",
                                          "counter global_step",
                                          "end [\"a run note\"]"};
    expected.insert(expected.end(), run.begin(), run.end());
  }
  EXPECT_EQ(sink.log, expected);
}

TEST(TraceFormat, LayoutIsLittleEndianAsDocumented) {
  const Trace t = sample_trace("in_graph");
  const std::string bytes = encode({&t});
  EXPECT_EQ(bytes.substr(0, 12), file_header());
  const std::string begin = begin_record(t);
  EXPECT_EQ(bytes.substr(12, begin.size()), begin);
  EXPECT_EQ(bytes.substr(12 + begin.size(), 1 + 4 + 7), "S" + le(7, 4) + "worker0");
  const size_t event = first_event_offset(t);
  EXPECT_EQ(bytes[event], 'E');
  EXPECT_EQ(bytes[event + 1], char(EventKind::kTransfer));
  EXPECT_EQ(bytes[event + 2], char(OpKind::kSend));
  EXPECT_EQ(bytes[event + 3], char(OpKind::kBackward));
  EXPECT_EQ(bytes[event + 4], char(0));  // flags
  EXPECT_EQ(bytes.substr(event + 5, 4), le(t.events[0].actor, 4));
  EXPECT_EQ(bytes.substr(event + 29, 8), le(3, 8));  // step
  uint64_t bits = 0;
  const double start_s = 1.5;
  std::memcpy(&bits, &start_s, 8);
  EXPECT_EQ(bytes.substr(event + 37, 8), le(bits, 8));
  EXPECT_EQ(bytes.substr(event + 69, 8), le(42, 8));                     // message_id
  EXPECT_EQ(bytes.substr(event + 77, 8), le(uint64_t(int64_t(-1)), 8));  // global_step_read
  EXPECT_EQ(bytes.substr(event + 97, 4), le(1, 4));                      // op_index
  EXPECT_EQ(bytes.substr(event + 101, 4), le(t.events[0].bound, 4));     // bound
  EXPECT_EQ(bytes.substr(event + kEventRecordBytes + 97, 4), le(0xFFFFFFFFu, 4));  // none
  EXPECT_EQ(bytes[event + kEventRecordBytes + 3], char(0xFF));  // a compute: no producer
  EXPECT_EQ(bytes[event + 3 * kEventRecordBytes + 4], char(kEventOpenEnded));
  const size_t counter = event + 4 * kEventRecordBytes;
  EXPECT_EQ(bytes[counter], 'C');
  const std::string outcome = dump_json(run_outcome_to_json(t.outcome));
  const size_t end = counter + 21;
  EXPECT_EQ(bytes.substr(end, 5 + outcome.size()), "Z" + le(outcome.size(), 4) + outcome);
  const size_t checksum = end + 5 + outcome.size();
  EXPECT_EQ(bytes.size(), checksum + 8 + 5);
  EXPECT_EQ(bytes.substr(checksum + 8), "F" + le(1, 4));  // the end record: one run
  // The checksum: FNV-1a 64 of the file's version (4 bytes, as in the header) and of the run's
  // bytes, from its 'B' to the end of its outcome.
  uint64_t hash = 0xcbf29ce484222325ULL;  // the standard FNV-1a 64 offset basis
  for (size_t i = 8; i < 12; ++i) {
    hash ^= uint8_t(bytes[i]);
    hash *= 1099511628211ULL;
  }
  for (size_t i = 12; i < checksum; ++i) {
    hash ^= uint8_t(bytes[i]);
    hash *= 1099511628211ULL;
  }
  EXPECT_EQ(bytes.substr(checksum, 8), le(hash, 8));
}

TEST(TraceFormat, EveryTruncationIsRejected) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  const std::string bytes = encode({&a, &b});
  for (bool seekable : {true, false}) {
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      const std::string message = decode_error(bytes.substr(0, cut), seekable);
      EXPECT_FALSE(message.empty()) << cut;
    }
  }
  EXPECT_NE(decode_error(bytes.substr(0, 10), false).find("truncated"), std::string::npos);
}

TEST(TraceFormat, EverySingleByteChangeIsRejected) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  const std::string bytes = encode({&a, &b});
  for (bool seekable : {true, false}) {
    for (size_t at = 0; at < bytes.size(); ++at) {
      for (uint8_t flip : {0x01, 0x80, 0xFF}) {
        std::string corrupt = bytes;
        corrupt[at] = char(uint8_t(corrupt[at]) ^ flip);
        EXPECT_FALSE(decode_error(corrupt, seekable).empty()) << at << " ^ " << int(flip);
      }
    }
  }
}

TEST(TraceFormat, RandomDamageIsAnInputErrorNeverACrash) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  const std::string bytes = encode({&a, &b});
  std::mt19937_64 random(20240611);
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = bytes;
    const int edits = 1 + int(random() % 8);
    for (int k = 0; k < edits; ++k) {
      const size_t at = random() % damaged.size();
      switch (random() % 4) {
        case 0:  // random byte
          damaged[at] = char(random());
          break;
        case 1:  // a large little-endian count or length
          damaged.replace(at, std::min<size_t>(4, damaged.size() - at), le(0xFFFFFFF0u, 4));
          break;
        case 2:  // bytes lost
          damaged.erase(at, 1 + random() % 16);
          break;
        default:  // bytes inserted
          damaged.insert(at, std::string(1 + random() % 16, char(random())));
      }
      if (damaged.empty()) damaged = "x";
    }
    EXPECT_THROW(decode(damaged, round % 2 == 0), InputError) << "round " << round;
  }
}

TEST(TraceFormat, BadHeadersAndOversizedLengthsAreRejectedBeforeAllocating) {
  auto has = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  has(decode_error("{\"traceEvents\": []}"), "not a replisim native trace");
  // A file shorter than the header is named by what it holds: another file, or a cut trace.
  has(decode_error("{\"a\":1}\n"), "not a replisim native trace");
  has(decode_error("hello", false), "not a replisim native trace");
  has(decode_error(std::string("RSTRACE\0", 8)), "truncated: the data ends at byte 8");
  has(decode_error("RST"), "truncated: the data ends at byte 3");
  has(decode_error(""), "empty: no trace");
  has(decode_error(file_header(1)), "unsupported trace format version 1");
  has(decode_error(file_header(6)), "reads versions 2 to 5");
  has(decode_error(file_header()), "no runs");
  has(decode_error(file_header() + "X"), "run 0: does not start with a run");
  has(decode_error(file_header() + "B" + le(0xFFFFFFFFu, 4)), "metadata: length 4294967295 above");
  // Within the limit but beyond the data: a seekable stream says so, a pipe reads until it ends.
  const std::string long_meta = file_header() + "B" + le(60u << 20, 4) + "{}";
  has(decode_error(long_meta, true), "only 2 are left");
  has(decode_error(long_meta, false), "truncated");
  has(decode_error(file_header() + "B" + le(2, 4) + "[]"), "metadata: not a JSON object");
  has(decode_error(file_header() + "B" + le(2, 4) + "{x"), "metadata: not valid JSON");
  has(decode_error(file_header() + "B" + le(2, 4) + "{}"), "required field missing");
  const Trace t = sample_trace("in_graph");
  const std::string begin = file_header() + begin_record(t);
  has(decode_error(begin + "S" + le(0xFFFFFFF0u, 4)), "run 0, string 0: length");
  has(decode_error(begin + "S" + le(1, 4) + "a" + "S" + le(1, 4) + "a"),
      "run 0, string 1: repeats an earlier string");
  has(decode_error(begin + "?"), "run 0: unknown record type 63");
  has(decode_error(encode({&t}) + "x"), "unexpected data after the last run");
  std::string no_end = encode({&t});
  no_end.resize(no_end.size() - 5);
  has(decode_error(no_end), "run 1: truncated: the file ends without its end record (after 1");
}

TEST(TraceFormat, BadRecordsNameTheirRunAndIndex) {
  const Trace t = sample_trace("in_graph");
  const std::string bytes = encode({&t});
  const size_t event = first_event_offset(t);
  auto patched = [&](size_t offset, const std::string& with) {
    std::string out = bytes;
    out.replace(offset, with.size(), with);
    return decode_error(out);
  };
  auto has = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  has(patched(event + 1, std::string(1, '\x09')), "run 0, event 0: unknown event kind 9");
  has(patched(event + 2, std::string(1, '\x40')), "run 0, event 0: unknown op kind");
  has(patched(event + 4, std::string(1, '\x80')), "run 0, event 0: unknown flags 128");
  has(patched(event + 5, le(99, 4)), "run 0, event 0: string index 99 not defined");
  has(patched(event + kEventRecordBytes + 45, le(0, 8)), "run 0, event 1: ends");
  uint64_t nan_bits = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(&nan_bits, &nan, 8);
  has(patched(event + 37, le(nan_bits, 8)), "not finite");
  has(patched(event + kEventRecordBytes + 93, le(uint32_t(-5), 4)), "event 1: samples below 0");
  has(patched(event + 4 * kEventRecordBytes + 1, le(77, 4)), "run 0, counter 0: name index 77");
  has(patched(event + 69, le(43, 8)), "run 0: checksum mismatch");
  // A string used before it is defined: the first event moved ahead of the strings.
  std::string early = file_header() + begin_record(t);
  early += bytes.substr(event, kEventRecordBytes);
  has(decode_error(early), "run 0, event 0: string index");
}

// Metadata that breaks what a trace means is refused, naming the run and the member.
TEST(TraceFormat, MetadataIsCheckedMemberByMember) {
  auto error_with = [](const std::function<void(Trace&)>& edit) {
    const Trace a = sample_trace("in_graph");
    Trace b = sample_trace("between_graph");
    edit(b);
    std::string bytes;
    {
      // Bypass the writer's own checks: the metadata goes as JSON, checked only when read.
      std::ostringstream out;
      write_traces_binary(out, {&a, &b});
      bytes = out.str();
    }
    return decode_error(bytes);
  };
  auto has = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  has(error_with([](Trace& t) { t.meta.strategy = "in graph"; }),
      "run 1, /meta/strategy: \"in graph\" is no strategy's name");
  has(error_with([](Trace& t) { t.meta.sync = "sometimes"; }), "run 1, /meta/sync");
  // A step graph's op whose input is not an earlier op, or whose device does not exist.
  has(error_with([](Trace& t) { t.meta.graphs[0].ops[0].inputs = {1}; }),
      "run 1, /meta/graphs/0/ops/0/5/0");
  has(error_with([](Trace& t) { t.meta.graphs[0].ops[1].device = 7; }),
      "run 1, /meta/graphs/0/ops/1/3");
  has(error_with([](Trace& t) { t.meta.roles.push_back(t.meta.roles[0]); }),
      "run 1, /meta/roles/2/name: repeated role");
  has(error_with([](Trace& t) { t.meta.clients[0].role = "nobody"; }),
      "run 1, /meta/clients/0/role: names no role of the trace");
  has(error_with([](Trace& t) { t.meta.ps = {"ps9"}; }), "run 1, /meta/ps/0: names no role");
  has(error_with([](Trace& t) { t.meta.variables[0].bytes = -1; }), "/meta/variables/0/bytes");
  has(error_with([](Trace& t) {
        t.meta.memory = {{"pc1/gpu0", -5, 16e9, 0, 0, 0, 0}};
      }),
      "/meta/memory/0/needed_bytes");
  has(error_with([](Trace& t) { t.outcome.end_s = 1e300; }), "run 1, /outcome/simulated_time_s");
}

TEST(TraceFormat, WriterRefusesWhatReadersReject) {
  Trace t = sample_trace("in_graph");
  t.events[1].end_s = 0;
  std::ostringstream out;
  EXPECT_THROW(write_trace_binary(out, t), std::runtime_error);
  t = sample_trace("in_graph");
  t.events[0].peer = 1000;
  EXPECT_THROW(write_trace_binary(out, t), std::runtime_error);
  EXPECT_THROW(write_traces_binary(out, {}), std::runtime_error);
  // Strings come in order, once each.
  NativeTraceWriter writer(out);
  writer.begin(sample_trace("in_graph").meta);
  EXPECT_THROW(writer.string(1, "not the first"), std::runtime_error);
}

// Version 2 (tests/fixtures/trace_v2): the op kinds, producers and flags that version 3 records
// are derived from the labels and times version 2 wrote.
TEST(TraceFormat, Version2TracesReadWithTheirKindsDerived) {
  const std::vector<Trace> runs = read_trace_file(
      std::string(REPLISIM_SOURCE_DIR) + "/tests/fixtures/trace_v2/sync_faults.v2.rstrace");
  ASSERT_EQ(runs.size(), 2u);
  const Trace& between = runs[1];
  EXPECT_EQ(between.meta.strategy, "between_graph");
  EXPECT_TRUE(between.meta.synchronous());
  EXPECT_EQ(between.meta.notes.size(), 1u);  // every note of version 2 stays in the metadata
  EXPECT_TRUE(between.outcome.notes.empty());
  EXPECT_GT(between.outcome.end_s, 0.9);
  std::map<std::string, int> seen;
  for (const TraceEvent& e : between.events) {
    const std::string& label = between.str(e.label);
    if (e.kind == EventKind::kCompute && label.rfind("forward/", 0) == 0) {
      EXPECT_EQ(e.op, OpKind::kForward);
      ++seen["forward"];
    }
    if (e.kind == EventKind::kCompute && label.rfind("accumulate/", 0) == 0) {
      EXPECT_EQ(e.op, OpKind::kAccumulate);
      ++seen["accumulate"];
    }
    if (e.kind == EventKind::kTransfer) {
      EXPECT_EQ(e.op, OpKind::kSend);
      if (label == "send/sync_token_q/dequeue") {
        EXPECT_EQ(e.producer, OpKind::kTokenDequeue);
        ++seen["token"];
      }
      if (label.rfind("send/read/", 0) == 0) {
        EXPECT_EQ(e.producer, OpKind::kReadVariable);
      }
    }
    if (e.kind == EventKind::kDropped) {
      EXPECT_EQ(e.op, OpKind::kAccumulate);
    }
    if (e.kind == EventKind::kUpdate) {
      EXPECT_EQ(e.op, OpKind::kGlobalStepIncrement);
    }
    if (e.kind == EventKind::kFault) {
      EXPECT_EQ((e.flags & kEventOpenEnded) != 0, label == "w2/gpu0 slowed to 0.5x") << label;
      ++seen["fault"];
    }
    if (e.kind == EventKind::kCheckpoint) {
      EXPECT_EQ((e.flags & kEventSummaries) != 0, label == "summaries");
      ++seen[label];
    }
  }
  for (const char* kind : {"forward", "accumulate", "token", "fault", "checkpoint", "summaries"}) {
    EXPECT_GT(seen[kind], 0) << kind;
  }
}

TEST(TraceFormat, TraceFilesNameThemselvesInErrors) {
  test::TempDir dir;
  for (const std::string& path : {dir.file("missing.rstrace"), dir.path(),
                                  dir.write("empty.rstrace", ""), std::string("/dev/null")}) {
    try {
      read_trace_file(path);
      ADD_FAILURE() << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
    }
  }
  const Trace t = sample_trace("in_graph");
  const std::vector<Trace> back = read_trace_file(dir.write("t.rstrace", encode({&t})));
  ASSERT_EQ(back.size(), 1u);
  expect_same(back[0], t);
}

// TraceBuilder reserves about the run's events from its metadata (a large trace is not copied as
// it grows), and gives back a reservation the run left mostly unused.
TEST(TraceBuilder, ReservesTheRunsEventsAndGivesBackWhatItDidNotUse) {
  TraceMeta meta;
  meta.steps = 100;
  meta.graphs = {{"worker0", std::vector<TraceOp>(8)}};  // (8 ops + 2) x 100 steps: 1,000
  TraceBuilder full;
  full.begin(meta);
  full.event(TraceEvent{});
  const TraceEvent* first = full.traces().back().events.data();
  for (int i = 1; i < 1000; ++i) full.event(TraceEvent{});
  EXPECT_EQ(full.traces().back().events.data(), first) << "the vector grew by copying";
  full.end(RunOutcome{});
  EXPECT_EQ(full.traces().back().events.size(), 1000u);
  EXPECT_GE(full.traces().back().events.capacity(), 1000u);

  TraceBuilder early;  // a run that stopped after 10 events
  early.begin(meta);
  for (int i = 0; i < 10; ++i) early.event(TraceEvent{});
  EXPECT_GE(early.traces().back().events.capacity(), 1000u);
  early.end(RunOutcome{});
  EXPECT_EQ(early.traces().back().events.size(), 10u);
  EXPECT_LE(early.traces().back().events.capacity(), 40u);
}

}  // namespace
}  // namespace replisim::core
