#include "core/trace/trace_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <ostream>

#include <sys/stat.h>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

constexpr char kMagic[8] = {'R', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr size_t kEventBytes = 93;
constexpr size_t kCounterBytes = 20;
// Writers flush and readers grow long strings in pieces of this size.
constexpr size_t kChunkBytes = size_t(64) << 10;

// Little-endian encoding, whatever the host's byte order.
void put_u64(std::string& out, uint64_t value, int bytes = 8) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(value >> (8 * i))));
}
void put_u32(std::string& out, uint32_t value) {
  put_u64(out, value, 4);
}
void put_f64(std::string& out, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_u64(out, bits);
}
uint64_t load_u64(const char* p, int bytes = 8) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | uint8_t(p[i]);
  return value;
}
uint32_t load_u32(const char* p) {
  return uint32_t(load_u64(p, 4));
}
double load_f64(const char* p) {
  const uint64_t bits = load_u64(p);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::string number_text(double value) {
  return dump_json(nlohmann::json(value));
}

// Why `e` is not a valid event of a run whose string table has `strings` entries ("" if valid).
std::string event_problem(const TraceEvent& e, uint32_t strings) {
  if (uint8_t(e.kind) > uint8_t(EventKind::kRecovery)) {
    return "unknown event kind " + std::to_string(int(e.kind));
  }
  for (uint32_t index : {e.actor, e.device, e.label, e.client, e.peer_actor, e.peer}) {
    if (index != kNoString && index >= strings) {
      return "string index " + std::to_string(index) + " out of range (the table has " +
             std::to_string(strings) + " strings)";
    }
  }
  if (!std::isfinite(e.start_s) || !std::isfinite(e.end_s)) return "start_s or end_s not finite";
  if (e.end_s < e.start_s) {
    return "ends (end_s " + number_text(e.end_s) + ") before it starts (start_s " +
           number_text(e.start_s) + ")";
  }
  if (!std::isfinite(e.bytes) || e.bytes < 0) return "bytes not a finite number >= 0";
  if (!std::isfinite(e.flop) || e.flop < 0) return "flop not a finite number >= 0";
  if (e.samples < 0) return "samples below 0";
  for (int64_t value : {e.step, e.message_id, e.global_step_read, e.global_step_after}) {
    if (value < -1) return "step, message_id or a global_step below -1 (-1 means absent)";
  }
  return "";
}

std::string counter_problem(const CounterSample& c, uint32_t strings) {
  if (c.name >= strings) {
    return "name index " + std::to_string(c.name) + " out of range (the table has " +
           std::to_string(strings) + " strings)";
  }
  if (!std::isfinite(c.time_s) || !std::isfinite(c.value)) return "time_s or value not finite";
  return "";
}

void encode_event(std::string& out, const TraceEvent& e) {
  out.push_back(char(uint8_t(e.kind)));
  for (uint32_t index : {e.actor, e.device, e.label, e.client, e.peer_actor, e.peer}) {
    put_u32(out, index);
  }
  put_u64(out, uint64_t(e.step));
  for (double value : {e.start_s, e.end_s, e.bytes, e.flop}) put_f64(out, value);
  for (int64_t value : {e.message_id, e.global_step_read, e.global_step_after}) {
    put_u64(out, uint64_t(value));
  }
  put_u32(out, uint32_t(e.samples));
}

TraceEvent decode_event(const char* p) {
  TraceEvent e;
  e.kind = EventKind(uint8_t(p[0]));
  e.actor = load_u32(p + 1);
  e.device = load_u32(p + 5);
  e.label = load_u32(p + 9);
  e.client = load_u32(p + 13);
  e.peer_actor = load_u32(p + 17);
  e.peer = load_u32(p + 21);
  e.step = int64_t(load_u64(p + 25));
  e.start_s = load_f64(p + 33);
  e.end_s = load_f64(p + 41);
  e.bytes = load_f64(p + 49);
  e.flop = load_f64(p + 57);
  e.message_id = int64_t(load_u64(p + 65));
  e.global_step_read = int64_t(load_u64(p + 73));
  e.global_step_after = int64_t(load_u64(p + 81));
  e.samples = int32_t(load_u32(p + 89));
  return e;
}

// Writes one run: everything from the metadata length to the counters goes through `put`, which
// also hashes it; the checksum follows.
class RunWriter {
 public:
  RunWriter(std::ostream& out, size_t run) : out_(out), run_(run) {}

  void write(const Trace& trace) {
    const std::string meta =
        dump_json(trace.meta.is_null() ? nlohmann::json::object() : trace.meta);
    if (!trace.meta.is_null() && !trace.meta.is_object()) refuse("metadata is not a JSON object");
    if (meta.size() > kMaxTraceMetaBytes) refuse("metadata above the size limit");
    put_u32(buffer_, uint32_t(meta.size()));
    buffer_ += meta;
    const std::vector<std::string>& strings = trace.strings();
    if (strings.size() > kMaxTraceStrings) refuse("more strings than the limit");
    put_u32(buffer_, uint32_t(strings.size()));
    for (const std::string& s : strings) {
      if (s.size() > kMaxTraceStringBytes) refuse("a string above the size limit");
      put_u32(buffer_, uint32_t(s.size()));
      buffer_ += s;
      flush_if_full();
    }
    const uint32_t string_count = uint32_t(strings.size());
    put_u64(buffer_, trace.events.size());
    for (size_t i = 0; i < trace.events.size(); ++i) {
      const std::string problem = event_problem(trace.events[i], string_count);
      if (!problem.empty()) refuse("event " + std::to_string(i) + ": " + problem);
      encode_event(buffer_, trace.events[i]);
      flush_if_full();
    }
    put_u64(buffer_, trace.counters.size());
    for (size_t i = 0; i < trace.counters.size(); ++i) {
      const CounterSample& c = trace.counters[i];
      const std::string problem = counter_problem(c, string_count);
      if (!problem.empty()) refuse("counter " + std::to_string(i) + ": " + problem);
      put_u32(buffer_, c.name);
      put_f64(buffer_, c.time_s);
      put_f64(buffer_, c.value);
      flush_if_full();
    }
    flush();
    put_u64(buffer_, hash_);
    out_.write(buffer_.data(), std::streamsize(buffer_.size()));
  }

 private:
  void flush() {
    hash_ = fnv1a(hash_, buffer_.data(), buffer_.size());
    out_.write(buffer_.data(), std::streamsize(buffer_.size()));
    buffer_.clear();
  }
  void flush_if_full() {
    if (buffer_.size() >= kChunkBytes) flush();
  }
  [[noreturn]] void refuse(const std::string& why) const {
    throw std::runtime_error("cannot write trace run " + std::to_string(run_) + ": " + why);
  }

  std::ostream& out_;
  size_t run_;
  std::string buffer_;
  uint64_t hash_ = kFnv1aBasis;
};

// Reads bytes from the stream, tracking the offset, the running checksum of the current run,
// and (when the stream can seek) how many bytes are left, so that no count or length is trusted
// beyond what the input holds.
class Decoder {
 public:
  Decoder(std::istream& in, const std::string& source) : in_(in), source_(source) { measure(); }

  // Where messages say the fault is: "run 1, event 17".
  void at(int64_t run, const char* section = nullptr, uint64_t index = kNoIndex) {
    run_ = run;
    section_ = section;
    index_ = index;
  }
  void reset_hash() { hash_ = kFnv1aBasis; }
  uint64_t hash() const { return hash_; }
  uint64_t offset() const { return offset_; }

  void read(char* out, size_t size, bool hashed = true) {
    in_.read(out, std::streamsize(size));
    const size_t got = size_t(in_.gcount());
    offset_ += got;
    if (got != size) fail("truncated: the data ends at byte " + std::to_string(offset_));
    if (hashed) hash_ = fnv1a(hash_, out, size);
  }
  uint32_t u32() {
    char bytes[4];
    read(bytes, sizeof bytes);
    return load_u32(bytes);
  }
  uint64_t u64(bool hashed = true) {
    char bytes[8];
    read(bytes, sizeof bytes, hashed);
    return load_u64(bytes);
  }
  // `size` bytes, grown piece by piece so a corrupt length cannot allocate more than arrived.
  std::string text(uint32_t size) {
    std::string out;
    while (out.size() < size) {
      const size_t piece = std::min(kChunkBytes, size - out.size());
      const size_t done = out.size();
      out.resize(done + piece);
      read(&out[done], piece);
    }
    return out;
  }
  // Rejects `count` records of `record_bytes` each when above `limit` or beyond the input's end.
  void check_count(uint64_t count, uint64_t limit, uint64_t record_bytes, const char* what) {
    if (count > limit) {
      fail(std::string(what) + " " + std::to_string(count) + " above the limit of " +
           std::to_string(limit));
    }
    if (size_known_ && count * record_bytes > size_ - std::min(size_, offset_)) {
      fail("truncated: " + std::string(what) + " " + std::to_string(count) + " needs " +
           std::to_string(count * record_bytes) + " bytes but only " +
           std::to_string(size_ - std::min(size_, offset_)) + " are left");
    }
  }
  bool at_end() { return in_.peek() == std::char_traits<char>::eof(); }

  [[noreturn]] void fail(const std::string& message) const {
    std::string where;
    if (run_ >= 0) {
      where = "run " + std::to_string(run_);
      if (section_ != nullptr) where += std::string(", ") + section_;
      if (index_ != kNoIndex) where += " " + std::to_string(index_);
      where += ": ";
    }
    throw InputError(source_, "", where + message);
  }

 private:
  static constexpr uint64_t kNoIndex = ~uint64_t(0);

  void measure() {
    const std::streampos here = in_.tellg();
    if (here == std::streampos(-1)) {
      in_.clear();
      return;
    }
    in_.seekg(0, std::ios::end);
    const std::streampos end = in_.tellg();
    in_.clear();
    in_.seekg(here);
    if (end != std::streampos(-1) && end >= here) {
      size_known_ = true;
      size_ = uint64_t(end - here);
    }
  }

  std::istream& in_;
  const std::string& source_;
  uint64_t offset_ = 0;
  bool size_known_ = false;
  uint64_t size_ = 0;
  uint64_t hash_ = kFnv1aBasis;
  int64_t run_ = -1;
  const char* section_ = nullptr;
  uint64_t index_ = kNoIndex;
};

uint32_t read_file_header(Decoder& d) {
  char header[16];
  d.read(header, sizeof header, false);
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0) {
    d.fail("not a replisim native trace (the file does not start with \"RSTRACE\")");
  }
  const uint32_t version = load_u32(header + 8);
  if (version != kTraceFormatVersion) {
    d.fail("unsupported trace format version " + std::to_string(version) +
           " (this replisim reads version " + std::to_string(kTraceFormatVersion) + ")");
  }
  const uint32_t runs = load_u32(header + 12);
  if (runs == 0) d.fail("the trace holds no runs");
  if (runs > kMaxTraceRuns) {
    d.fail("run count " + std::to_string(runs) + " above the limit of " +
           std::to_string(kMaxTraceRuns));
  }
  return runs;
}

nlohmann::json read_meta(Decoder& d, const std::string& source, int64_t run) {
  d.at(run, "metadata");
  const uint32_t size = d.u32();
  d.check_count(size, kMaxTraceMetaBytes, 1, "metadata length");
  const std::string text = d.text(size);
  nlohmann::json meta;
  try {
    meta = parse_json_text(text, source);
  } catch (const InputError& e) {
    d.fail(e.message());
  }
  if (!meta.is_object()) d.fail("not a JSON object");
  return meta;
}

std::vector<std::string> read_strings(Decoder& d, int64_t run) {
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
  // Repeats would shift the indices of a table rebuilt by interning: reject them.
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

void read_run(Decoder& d, const std::string& source, uint32_t run, uint32_t runs,
              const OnTraceRun& on_run, const OnTraceEvent& on_event,
              const OnTraceCounter& on_counter) {
  d.reset_hash();
  TraceRunHeader header;
  header.run = run;
  header.runs = runs;
  header.meta = read_meta(d, source, run);
  header.strings = read_strings(d, run);
  const uint32_t strings = uint32_t(header.strings.size());
  d.at(run);
  header.events = d.u64();
  d.check_count(header.events, kMaxTraceRecords, kEventBytes, "event count");
  if (on_run) on_run(header);
  char record[kEventBytes];
  for (uint64_t i = 0; i < header.events; ++i) {
    d.at(run, "event", i);
    d.read(record, kEventBytes);
    const TraceEvent e = decode_event(record);
    const std::string problem = event_problem(e, strings);
    if (!problem.empty()) d.fail(problem);
    if (on_event) on_event(e);
  }
  d.at(run);
  const uint64_t counters = d.u64();
  d.check_count(counters, kMaxTraceRecords, kCounterBytes, "counter count");
  for (uint64_t i = 0; i < counters; ++i) {
    d.at(run, "counter", i);
    d.read(record, kCounterBytes);
    const CounterSample c{load_u32(record), load_f64(record + 4), load_f64(record + 12)};
    const std::string problem = counter_problem(c, strings);
    if (!problem.empty()) d.fail(problem);
    if (on_counter) on_counter(c);
  }
  d.at(run);
  const uint64_t computed = d.hash();
  if (d.u64(false) != computed) d.fail("checksum mismatch: the file is corrupt");
}

}  // namespace

uint32_t read_trace_stream(std::istream& in, const std::string& source, const OnTraceRun& on_run,
                           const OnTraceEvent& on_event, const OnTraceCounter& on_counter) {
  Decoder d(in, source);
  const uint32_t runs = read_file_header(d);
  for (uint32_t run = 0; run < runs; ++run) {
    read_run(d, source, run, runs, on_run, on_event, on_counter);
  }
  d.at(-1);
  if (!d.at_end()) {
    d.fail("unexpected data after the last run (at byte " + std::to_string(d.offset()) + ")");
  }
  return runs;
}

std::vector<Trace> read_traces_binary(std::istream& in, const std::string& source) {
  std::vector<Trace> traces;
  read_trace_stream(
      in, source,
      [&](const TraceRunHeader& header) {
        traces.emplace_back();
        Trace& t = traces.back();
        t.meta = header.meta;
        // No reserve from the announced count: a pipe's count cannot be checked against its
        // size, so the vectors grow only as records actually arrive.
        for (const std::string& s : header.strings) t.intern(s);
      },
      [&](const TraceEvent& e) { traces.back().events.push_back(e); },
      [&](const CounterSample& c) { traces.back().counters.push_back(c); });
  return traces;
}

Trace read_trace_binary(std::istream& in, const std::string& source) {
  std::vector<Trace> traces = read_traces_binary(in, source);
  if (traces.size() != 1) {
    throw InputError(source, "",
                     "holds " + std::to_string(traces.size()) + " runs where one was expected");
  }
  return std::move(traces.front());
}

std::vector<Trace> read_trace_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) throw InputError(path, "", "is a directory, not a trace file");
  if (!S_ISREG(info.st_mode)) throw InputError(path, "", "is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  return read_traces_binary(in, path);
}

void write_traces_binary(std::ostream& out, const std::vector<const Trace*>& runs) {
  if (runs.empty() || runs.size() > kMaxTraceRuns) {
    throw std::runtime_error("cannot write a trace of " + std::to_string(runs.size()) + " runs");
  }
  std::string header(kMagic, sizeof kMagic);
  put_u32(header, kTraceFormatVersion);
  put_u32(header, uint32_t(runs.size()));
  out.write(header.data(), std::streamsize(header.size()));
  for (size_t i = 0; i < runs.size(); ++i) RunWriter(out, i).write(*runs[i]);
  if (!out) throw std::runtime_error("cannot write trace");
}

void write_trace_binary(std::ostream& out, const Trace& trace) {
  write_traces_binary(out, {&trace});
}

}  // namespace replisim::core
