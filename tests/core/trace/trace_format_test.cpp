// The native trace format: round trips, the streaming reader, the documented byte layout, and
// rejection of every truncation, corruption and oversized count as an InputError.
#include "core/trace/trace_format.h"

#include <cmath>
#include <cstring>
#include <limits>
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

Trace sample_trace(const std::string& strategy) {
  Trace t;
  t.meta = {{"strategy", strategy}, {"steps", 3}, {"nested", {{"x", 1.25}}}};
  TraceEvent transfer;
  transfer.kind = EventKind::kTransfer;
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
  TraceEvent compute;
  compute.actor = transfer.actor;
  compute.device = transfer.device;
  compute.label = t.intern("forward/" + strategy);
  compute.start_s = 0.1;
  compute.end_s = 0.3;
  compute.flop = 1e12;
  TraceEvent update;
  update.kind = EventKind::kUpdate;
  update.actor = transfer.actor;
  update.start_s = update.end_s = 2.5;
  update.global_step_read = 6;
  update.global_step_after = 7;
  update.samples = 32;
  TraceEvent step;
  step.kind = EventKind::kStep;
  step.actor = transfer.actor;
  step.step = 3;
  step.end_s = 2.5;
  t.events = {transfer, compute, update, step};
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
  EXPECT_EQ(a.meta, b.meta);
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

std::string file_header(uint32_t version = kTraceFormatVersion, uint32_t runs = 1) {
  return std::string("RSTRACE\0", 8) + le(version, 4) + le(runs, 4);
}

// Offset of the first event of the only run of a file encoding `t`.
size_t first_event_offset(const Trace& t) {
  size_t offset = 16 + 4 + dump_json(t.meta).size() + 4;
  for (const std::string& s : t.strings()) offset += 4 + s.size();
  return offset + 8;
}

TEST(TraceFormat, RoundTripKeepsEveryField) {
  const Trace t = sample_trace("in_graph");
  std::istringstream in(encode({&t}));
  expect_same(read_trace_binary(in, "mem"), t);
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

TEST(TraceFormat, StreamingReaderDeliversRecordsOneAtATime) {
  const Trace a = sample_trace("in_graph"), b = sample_trace("between_graph");
  NoSeekBuffer buffer(encode({&a, &b}));
  std::istream in(&buffer);
  std::vector<std::string> log;
  const TraceRunHeader* current = nullptr;
  const uint32_t runs = read_trace_stream(
      in, "pipe",
      [&](const TraceRunHeader& h) {
        current = &h;
        log.push_back("run " + std::to_string(h.run) + "/" + std::to_string(h.runs) + " " +
                      h.meta.at("strategy").get<std::string>() + " events " +
                      std::to_string(h.events));
      },
      [&](const TraceEvent& e) {
        ASSERT_NE(current, nullptr);
        log.push_back(std::string(event_kind_name(e.kind)) + " " +
                      (e.label == kNoString ? "-" : current->strings.at(e.label)));
      },
      [&](const CounterSample& c) { log.push_back("counter " + current->strings.at(c.name)); });
  EXPECT_EQ(runs, 2u);
  const std::vector<std::string> expected = {"run 0/2 in_graph events 4",
                                             "transfer send/grad",
                                             "compute forward/in_graph",
                                             "update -",
                                             "step -",
                                             "counter global_step",
                                             "run 1/2 between_graph events 4",
                                             "transfer send/grad",
                                             "compute forward/between_graph",
                                             "update -",
                                             "step -",
                                             "counter global_step"};
  EXPECT_EQ(log, expected);
  // Null callbacks skip records.
  std::istringstream again(encode({&a}));
  EXPECT_EQ(read_trace_stream(again, "x", nullptr, nullptr, nullptr), 1u);
}

TEST(TraceFormat, LayoutIsLittleEndianAsDocumented) {
  const Trace t = sample_trace("in_graph");
  const std::string bytes = encode({&t});
  const std::string meta = dump_json(t.meta);
  EXPECT_EQ(bytes.substr(0, 16), file_header());
  EXPECT_EQ(bytes.substr(16, 4), le(meta.size(), 4));
  EXPECT_EQ(bytes.substr(20, meta.size()), meta);
  EXPECT_EQ(bytes.substr(20 + meta.size(), 4), le(t.strings().size(), 4));
  EXPECT_EQ(bytes.substr(24 + meta.size(), 4 + 7), le(7, 4) + "worker0");
  const size_t event = first_event_offset(t);
  EXPECT_EQ(bytes.substr(event - 8, 8), le(4, 8));  // event count
  EXPECT_EQ(bytes[event], char(EventKind::kTransfer));
  EXPECT_EQ(bytes.substr(event + 1, 4), le(t.events[0].actor, 4));
  EXPECT_EQ(bytes.substr(event + 25, 8), le(3, 8));  // step
  uint64_t bits = 0;
  const double start_s = 1.5;
  std::memcpy(&bits, &start_s, 8);
  EXPECT_EQ(bytes.substr(event + 33, 8), le(bits, 8));
  EXPECT_EQ(bytes.substr(event + 65, 8), le(42, 8));                     // message_id
  EXPECT_EQ(bytes.substr(event + 73, 8), le(uint64_t(int64_t(-1)), 8));  // global_step_read
  const size_t counters = event + 4 * 93;
  EXPECT_EQ(bytes.substr(counters, 8), le(1, 8));
  EXPECT_EQ(bytes.size(), counters + 8 + 20 + 8);
  // The checksum: FNV-1a 64 of the run's bytes, from the metadata length to the last counter.
  uint64_t hash = 0xcbf29ce484222325ULL;  // the standard FNV-1a 64 offset basis
  for (size_t i = 16; i < bytes.size() - 8; ++i) {
    hash ^= uint8_t(bytes[i]);
    hash *= 1099511628211ULL;
  }
  EXPECT_EQ(bytes.substr(bytes.size() - 8), le(hash, 8));
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

TEST(TraceFormat, BadHeadersAndOversizedCountsAreRejectedBeforeAllocating) {
  auto has = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  has(decode_error("{\"traceEvents\": []}"), "not a replisim native trace");
  has(decode_error(file_header(1)), "unsupported trace format version 1");
  has(decode_error(file_header(3)), "version 3");
  has(decode_error(file_header(2, 0)), "no runs");
  has(decode_error(file_header(2, 1u << 20)), "above the limit");
  has(decode_error(file_header() + le(0xFFFFFFFFu, 4)), "metadata length 4294967295 above");
  // Within the limit but beyond the data: a seekable stream says so, a pipe reads until it ends.
  const std::string long_meta = file_header() + le(60u << 20, 4) + "{}";
  has(decode_error(long_meta, true), "only 2 are left");
  has(decode_error(long_meta, false), "truncated");
  const std::string meta = file_header() + le(2, 4) + "{}";
  has(decode_error(meta + le(0xFFFFFFFFu, 4)), "string count 4294967295 above the limit");
  has(decode_error(meta + le(1, 4) + le(0xFFFFFFF0u, 4)), "string 0: length");
  has(decode_error(meta + le(0, 4) + le(uint64_t(1) << 41, 8)), "event count");
  has(decode_error(meta + le(0, 4) + le(1000000, 8) + "short"), "only 5 are left");
  has(decode_error(meta + le(0, 4) + le(0, 8) + le(uint64_t(1) << 50, 8)), "counter count");
  has(decode_error(file_header() + le(2, 4) + "[]"), "metadata: not a JSON object");
  has(decode_error(file_header() + le(2, 4) + "{x"), "metadata: not valid JSON");
  has(decode_error(meta + le(2, 4) + le(1, 4) + "a" + le(1, 4) + "a"),
      "string 1: repeats string 0");
  const Trace t = sample_trace("in_graph");
  has(decode_error(encode({&t}) + "x"), "unexpected data after the last run");
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
  has(patched(event, std::string(1, '\x09')), "run 0, event 0: unknown event kind 9");
  has(patched(event + 1, le(99, 4)), "run 0, event 0: string index 99 out of range");
  has(patched(event + 93 + 41, le(0, 8)), "run 0, event 1: ends");
  uint64_t nan_bits = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(&nan_bits, &nan, 8);
  has(patched(event + 33, le(nan_bits, 8)), "not finite");
  has(patched(event + 93 + 89, le(uint32_t(-5), 4)), "event 1: samples below 0");
  has(patched(event + 4 * 93 + 8, le(77, 4)), "run 0, counter 0: name index 77");
  has(patched(event + 65, le(43, 8)), "run 0: checksum mismatch");
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

}  // namespace
}  // namespace replisim::core
