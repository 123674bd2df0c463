#include "core/trace.h"

#include <cstring>
#include <istream>
#include <ostream>

#include "core/error.h"
#include "core/json_cursor.h"

namespace replisim::core {
namespace {

constexpr char kMagic[8] = {'R', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr uint32_t kBinaryVersion = 1;
// Upper bounds that reject corrupt lengths before allocating.
constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxRecords = uint64_t(1) << 32;

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  template <typename T>
  void pod(const T& value) {
    out_.write(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void string(const std::string& s) {
    pod(uint64_t(s.size()));
    out_.write(s.data(), std::streamsize(s.size()));
  }

 private:
  std::ostream& out_;
};

class Reader {
 public:
  Reader(std::istream& in, const std::string& source) : in_(in), source_(source) {}
  template <typename T>
  T pod() {
    T value;
    in_.read(reinterpret_cast<char*>(&value), sizeof(T));
    if (!in_) fail("truncated trace");
    return value;
  }
  std::string string() {
    const uint64_t size = pod<uint64_t>();
    if (size > kMaxStringBytes) fail("string length out of range");
    std::string s(size_t(size), '\0');
    in_.read(&s[0], std::streamsize(size));
    if (!in_) fail("truncated trace");
    return s;
  }
  uint64_t count() {
    const uint64_t n = pod<uint64_t>();
    if (n > kMaxRecords) fail("record count out of range");
    return n;
  }
  [[noreturn]] void fail(const std::string& message) { throw InputError(source_, "", message); }

 private:
  std::istream& in_;
  const std::string& source_;
};

}  // namespace

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kCompute:
      return "compute";
    case EventKind::kTransfer:
      return "transfer";
    case EventKind::kStep:
      return "step";
    case EventKind::kUpdate:
      return "update";
  }
  return "?";
}

const char* lane_name(EventKind kind) {
  switch (kind) {
    case EventKind::kCompute:
      return "compute";
    case EventKind::kTransfer:
      return "send";
    case EventKind::kStep:
      return "step";
    case EventKind::kUpdate:
      return "update";
  }
  return "?";
}

uint32_t Trace::intern(const std::string& text) {
  auto found = index_.find(text);
  if (found != index_.end()) return found->second;
  const uint32_t id = uint32_t(strings_.size());
  strings_.push_back(text);
  index_.emplace(text, id);
  return id;
}

uint32_t Trace::find(const std::string& text) const {
  auto found = index_.find(text);
  return found == index_.end() ? kNoString : found->second;
}

const std::string& Trace::str(uint32_t index) const {
  static const std::string kEmpty;
  return index < strings_.size() ? strings_[index] : kEmpty;
}

void write_trace_binary(std::ostream& out, const Trace& trace) {
  Writer w(out);
  out.write(kMagic, sizeof kMagic);
  w.pod(kBinaryVersion);
  w.string(dump_json(trace.meta));
  w.pod(uint64_t(trace.strings().size()));
  for (const std::string& s : trace.strings()) w.string(s);
  w.pod(uint64_t(trace.events.size()));
  for (const TraceEvent& e : trace.events) {
    w.pod(uint8_t(e.kind));
    w.pod(e.actor);
    w.pod(e.device);
    w.pod(e.label);
    w.pod(e.client);
    w.pod(e.peer_actor);
    w.pod(e.peer);
    w.pod(e.step);
    w.pod(e.start_s);
    w.pod(e.end_s);
    w.pod(e.bytes);
    w.pod(e.flop);
    w.pod(e.message_id);
    w.pod(e.global_step_read);
    w.pod(e.global_step_after);
    w.pod(e.samples);
  }
  w.pod(uint64_t(trace.counters.size()));
  for (const CounterSample& c : trace.counters) {
    w.pod(c.name);
    w.pod(c.time_s);
    w.pod(c.value);
  }
  if (!out) throw std::runtime_error("cannot write trace");
}

Trace read_trace_binary(std::istream& in, const std::string& source) {
  Reader r(in, source);
  char magic[sizeof kMagic];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) r.fail("not a replisim binary trace");
  const uint32_t version = r.pod<uint32_t>();
  if (version != kBinaryVersion) {
    r.fail("unsupported trace version " + std::to_string(version) + " (this replisim reads " +
           std::to_string(kBinaryVersion) + ")");
  }
  Trace trace;
  try {
    trace.meta = nlohmann::json::parse(r.string());
  } catch (const nlohmann::json::parse_error&) {
    r.fail("corrupt trace metadata");
  }
  const uint64_t strings = r.count();
  for (uint64_t i = 0; i < strings; ++i) trace.intern(r.string());
  const uint64_t events = r.count();
  const uint32_t string_count = uint32_t(trace.strings().size());
  auto check_string = [&](uint32_t index) {
    if (index != kNoString && index >= string_count) r.fail("string index out of range");
    return index;
  };
  for (uint64_t i = 0; i < events; ++i) {
    TraceEvent e;
    const uint8_t kind = r.pod<uint8_t>();
    if (kind > uint8_t(EventKind::kUpdate)) r.fail("unknown event kind");
    e.kind = EventKind(kind);
    e.actor = check_string(r.pod<uint32_t>());
    e.device = check_string(r.pod<uint32_t>());
    e.label = check_string(r.pod<uint32_t>());
    e.client = check_string(r.pod<uint32_t>());
    e.peer_actor = check_string(r.pod<uint32_t>());
    e.peer = check_string(r.pod<uint32_t>());
    e.step = r.pod<int64_t>();
    e.start_s = r.pod<double>();
    e.end_s = r.pod<double>();
    e.bytes = r.pod<double>();
    e.flop = r.pod<double>();
    e.message_id = r.pod<int64_t>();
    e.global_step_read = r.pod<int64_t>();
    e.global_step_after = r.pod<int64_t>();
    e.samples = r.pod<int32_t>();
    trace.events.push_back(e);
  }
  const uint64_t counters = r.count();
  for (uint64_t i = 0; i < counters; ++i) {
    CounterSample c;
    c.name = check_string(r.pod<uint32_t>());
    c.time_s = r.pod<double>();
    c.value = r.pod<double>();
    trace.counters.push_back(c);
  }
  return trace;
}

}  // namespace replisim::core
