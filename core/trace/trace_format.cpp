// The native trace format, versions 3 and 4 (docs/trace-format.md): writer, reader, and what both
// versions share (event validation, the Decoder).
#include "core/trace/trace_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <ostream>
#include <unordered_set>

#include <sys/stat.h>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_format_detail.h"

namespace replisim::core {

namespace {

using namespace trace_format_detail;

// Version 3 and 4 record tags and sizes.
constexpr char kBeginRecord = 'B';
constexpr char kStringRecord = 'S';
constexpr char kEventRecord = 'E';
constexpr char kCounterRecord = 'C';
constexpr char kEndRecord = 'Z';
constexpr char kFileEndRecord = 'F';
constexpr uint8_t kNoKind = 0xFF;
constexpr size_t kEventBytesV3 = 4 + kEventBodyBytes;  // kind, op, producer, flags, the body
constexpr size_t kEventBytes = kEventBytesV3 + 8;      // version 4: then op_index, bound

uint8_t kind_byte(const std::optional<OpKind>& kind) {
  return kind ? uint8_t(*kind) : kNoKind;
}
std::optional<OpKind> kind_of_byte(uint8_t byte) {
  if (byte == kNoKind) return std::nullopt;
  return OpKind(byte);
}

[[noreturn]] void refuse(uint32_t run, const std::string& why) {
  throw std::runtime_error("cannot write trace run " + std::to_string(run) + ": " + why);
}

// A JSON object with its length first.
void put_json(std::string& out, const nlohmann::json& value, uint32_t run) {
  const std::string text = dump_json(value);
  if (text.size() > kMaxTraceMetaBytes) refuse(run, "metadata or outcome above the size limit");
  put_u32(out, uint32_t(text.size()));
  out += text;
}

// Reads the records of one run after its begin record, up to and including its end record.
class RunReader {
 public:
  // `version`: 3 or 4 (the events' size).
  RunReader(Decoder& d, uint32_t run, TraceSink& sink, uint32_t version)
      : d_(d), run_(run), sink_(sink), version_(version) {}

  // Reads S, E and C records into the sink: when `framed`, up to the end record that closes
  // them (consumed); otherwise up to the end of the stream.
  void read_records(bool framed) {
    char record[kEventBytes];
    for (;;) {
      if (!framed && d_.at_end()) return;
      d_.at(run_);
      const char tag = char(d_.u8());
      if (tag == kStringRecord) {
        read_string();
      } else if (tag == kEventRecord) {
        d_.at(run_, "event", events_);
        d_.check_count(events_ + 1, kMaxTraceRecords, 0, "event count");
        d_.read(record, version_ >= 4 ? kEventBytes : kEventBytesV3);
        sink_.event(decode_event(record));
        ++events_;
      } else if (tag == kCounterRecord) {
        d_.at(run_, "counter", counters_);
        d_.check_count(counters_ + 1, kMaxTraceRecords, 0, "counter count");
        d_.read(record, kCounterBytes);
        const CounterSample c = decode_counter(record);
        const std::string problem = counter_problem(c, strings_);
        if (!problem.empty()) d_.fail(problem);
        sink_.counter(c);
        ++counters_;
      } else if (tag == kEndRecord && framed) {
        return;
      } else if (tag == kBeginRecord || tag == kFileEndRecord) {
        d_.fail(std::string(tag == kBeginRecord ? "another run begins"
                                                : "the file's end record comes") +
                " before this run's end record");
      } else {
        d_.fail("unknown record type " + std::to_string(int(uint8_t(tag))));
      }
    }
  }
  uint32_t strings() const { return strings_; }
  void set_strings(uint32_t strings) { strings_ = strings; }

 private:
  void read_string() {
    d_.at(run_, "string", strings_);
    if (strings_ >= kMaxTraceStrings) {
      d_.fail("more strings than the limit of " + std::to_string(kMaxTraceStrings));
    }
    const uint32_t size = d_.u32();
    d_.check_count(size, kMaxTraceStringBytes, 1, "length");
    std::string text = d_.text(size);
    // A repeat would shift the indices of a table rebuilt by interning: reject it.
    if (!seen_.insert(text).second) d_.fail("repeats an earlier string");
    sink_.string(strings_++, text);
  }

  TraceEvent decode_event(const char* p) {
    TraceEvent e;
    e.kind = EventKind(uint8_t(p[0]));
    const uint8_t op = uint8_t(p[1]), producer = uint8_t(p[2]);
    e.flags = uint8_t(p[3]);
    decode_event_body(p + 4, e);
    if (version_ >= 4) {
      e.op_index = int32_t(load_u32(p + kEventBytesV3));
      e.bound = load_u32(p + kEventBytesV3 + 4);
    }
    if ((op != kNoKind && op >= all_op_kinds().size()) ||
        (producer != kNoKind && producer >= all_op_kinds().size())) {
      d_.fail("unknown op kind");
    }
    e.op = kind_of_byte(op);
    e.producer = kind_of_byte(producer);
    const std::string problem = event_problem(e, strings_);
    if (!problem.empty()) d_.fail(problem);
    return e;
  }

  Decoder& d_;
  uint32_t run_;
  TraceSink& sink_;
  uint32_t version_;
  uint32_t strings_ = 0;
  uint64_t events_ = 0;
  uint64_t counters_ = 0;
  std::unordered_set<std::string> seen_;
};

// One run, after its begin record's tag (the run's hash covers the tag).
void read_run_v3(Decoder& d, uint32_t run, TraceSink& sink, uint32_t version) {
  d.at(run, "metadata");
  const nlohmann::json meta = d.json_object();
  sink.begin(in_run(run, [&] { return trace_meta_from_json(meta, d.source()); }));
  RunReader reader(d, run, sink, version);
  reader.read_records(true);
  d.at(run, "outcome");
  const nlohmann::json outcome = d.json_object();
  const RunOutcome parsed = in_run(run, [&] { return run_outcome_from_json(outcome, d.source()); });
  const uint64_t computed = d.hash();
  d.at(run);
  if (d.u64(false) != computed) d.fail("checksum mismatch: the file is corrupt");
  sink.end(parsed);
}

// Runs until the end record; returns how many.
uint32_t read_runs_v3(Decoder& d, TraceSink& sink, uint32_t version) {
  uint32_t run = 0;
  for (;;) {
    d.at(run);
    if (d.at_end()) {
      d.fail(run == 0 ? "the trace holds no runs (it ends after its header)"
                      : "truncated: the file ends without its end record (after " +
                            std::to_string(run) + " complete runs)");
    }
    d.reset_hash(version);
    const char tag = char(d.u8());
    if (tag == kFileEndRecord && run > 0) {
      const uint32_t counted = d.u32();
      if (counted != run) {
        d.fail("the end record counts " + std::to_string(counted) + " runs but the file holds " +
               std::to_string(run));
      }
      return run;
    }
    if (tag != kBeginRecord) {
      d.fail(tag == kFileEndRecord ? "the trace holds no runs" : "does not start with a run");
    }
    if (run >= kMaxTraceRuns)
      d.fail("more runs than the limit of " + std::to_string(kMaxTraceRuns));
    read_run_v3(d, run, sink, version);
    ++run;
  }
}

}  // namespace

uint32_t read_trace_stream(std::istream& in, const std::string& source, TraceSink& sink) {
  Decoder d(in, source);
  // The magic is checked on what arrived, so a short file that is not a trace is named as such.
  char header[12];
  const size_t got = d.read_up_to(header, sizeof header);
  if (got == 0) d.fail("empty: no trace");
  if (std::memcmp(header, kMagic, std::min(got, sizeof kMagic)) != 0) {
    d.fail("not a replisim native trace (the file does not start with \"RSTRACE\")");
  }
  if (got < sizeof header) d.fail("truncated: the data ends at byte " + std::to_string(got));
  const uint32_t version = load_u32(header + 8);
  uint32_t runs = 0;
  if (version == 2) {
    runs = d.u32();
    if (runs == 0) d.fail("the trace holds no runs");
    if (runs > kMaxTraceRuns) {
      d.fail("run count " + std::to_string(runs) + " above the limit of " +
             std::to_string(kMaxTraceRuns));
    }
    read_runs_v2(d, runs, sink);
  } else if (version == 3 || version == 4 || version == kTraceFormatVersion) {
    runs = read_runs_v3(d, sink, version);
  } else {
    d.fail("unsupported trace format version " + std::to_string(version) +
           " (this replisim reads versions " + std::to_string(kOldestTraceFormatVersion) + " to " +
           std::to_string(kTraceFormatVersion) + ")");
  }
  d.at(-1);
  if (!d.at_end()) {
    d.fail("unexpected data after the last run (at byte " + std::to_string(d.offset()) + ")");
  }
  return runs;
}

std::vector<Trace> read_traces_binary(std::istream& in, const std::string& source) {
  TraceBuilder builder;
  read_trace_stream(in, source, builder);
  return std::move(builder.traces());
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

std::optional<Trace> read_trace_prefix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  TraceBuilder builder;
  try {
    read_trace_stream(in, path, builder);
  } catch (const std::exception&) {
    // Cut (or broken at the cut): the records before it stand.
  }
  if (builder.traces().empty()) return std::nullopt;
  return std::move(builder.traces().front());
}

NativeTraceWriter::NativeTraceWriter(std::ostream& out) : out_(out) {
  std::string header(kMagic, sizeof kMagic);
  put_u32(header, kTraceFormatVersion);
  out_.write(header.data(), std::streamsize(header.size()));
  if (!out_) throw OutputError("", "cannot write the trace");
}

void NativeTraceWriter::begin(const TraceMeta& meta) {
  if (open_) refuse(runs_, "a run began before the previous one ended");
  if (runs_ >= kMaxTraceRuns) refuse(runs_, "more runs than the limit");
  open_ = true;
  hash_ = run_hash_basis(kTraceFormatVersion);
  strings_ = 0;
  events_ = counters_ = 0;
  std::string record(1, kBeginRecord);
  put_json(record, trace_meta_to_json(meta), runs_);
  put(record);
}

void NativeTraceWriter::string(uint32_t id, const std::string& text) {
  if (id != strings_) refuse(runs_, "string " + std::to_string(id) + " out of order");
  if (strings_ >= kMaxTraceStrings) refuse(runs_, "more strings than the limit");
  std::string record;
  encode_string_record(record, text);
  put(record);
  ++strings_;
}

void NativeTraceWriter::event(const TraceEvent& event) {
  if (++events_ > kMaxTraceRecords) refuse(runs_, "more events than the limit");
  std::string record;
  try {
    encode_event_record(record, event, strings_);
  } catch (const std::runtime_error& e) {
    refuse(runs_, "event " + std::to_string(events_ - 1) + ": " + e.what());
  }
  put(record);
}

void NativeTraceWriter::counter(const CounterSample& sample) {
  if (++counters_ > kMaxTraceRecords) refuse(runs_, "more counters than the limit");
  std::string record;
  try {
    encode_counter_record(record, sample, strings_);
  } catch (const std::runtime_error& e) {
    refuse(runs_, "counter " + std::to_string(counters_ - 1) + ": " + e.what());
  }
  put(record);
}

void NativeTraceWriter::end(const RunOutcome& outcome) {
  if (!open_) refuse(runs_, "a run ended before it began");
  std::string record(1, kEndRecord);
  put_json(record, run_outcome_to_json(outcome), runs_);
  put(record);
  flush();
  std::string checksum;
  put_u64(checksum, hash_);
  out_.write(checksum.data(), std::streamsize(checksum.size()));
  out_.flush();
  if (!out_) throw OutputError("", "cannot write the trace");
  open_ = false;
  ++runs_;
}

void NativeTraceWriter::finish() {
  if (open_) refuse(runs_, "the file ended inside a run");
  if (runs_ == 0) refuse(runs_, "a trace file needs at least one run");
  std::string record(1, kFileEndRecord);
  put_u32(record, runs_);
  out_.write(record.data(), std::streamsize(record.size()));
  out_.flush();
  if (!out_) throw OutputError("", "cannot write the trace");
}

void NativeTraceWriter::put(const std::string& bytes) {
  buffer_ += bytes;
  if (buffer_.size() >= kChunkBytes) flush();
}

void NativeTraceWriter::flush_now() {
  flush();
  out_.flush();
  if (!out_) throw OutputError("", "cannot write the trace");
}

void NativeTraceWriter::flush() {
  hash_ = fnv1a(hash_, buffer_.data(), buffer_.size());
  out_.write(buffer_.data(), std::streamsize(buffer_.size()));
  buffer_.clear();
  if (!out_) throw OutputError("", "cannot write the trace");
}

void write_traces_binary(std::ostream& out, const std::vector<const Trace*>& runs) {
  if (runs.empty() || runs.size() > kMaxTraceRuns) {
    throw std::runtime_error("cannot write a trace of " + std::to_string(runs.size()) + " runs");
  }
  NativeTraceWriter writer(out);
  for (const Trace* trace : runs) replay_trace(*trace, writer);
  writer.finish();
}

void write_trace_binary(std::ostream& out, const Trace& trace) {
  write_traces_binary(out, {&trace});
}

void encode_string_record(std::string& out, const std::string& text) {
  if (text.size() > kMaxTraceStringBytes) {
    throw std::runtime_error("a string above the size limit");
  }
  out.push_back(kStringRecord);
  put_u32(out, uint32_t(text.size()));
  out += text;
}

void encode_event_record(std::string& out, const TraceEvent& event, uint32_t strings) {
  const std::string problem = event_problem(event, strings);
  if (!problem.empty()) throw std::runtime_error(problem);
  out.push_back(kEventRecord);
  out.push_back(char(uint8_t(event.kind)));
  out.push_back(char(kind_byte(event.op)));
  out.push_back(char(kind_byte(event.producer)));
  out.push_back(char(event.flags));
  encode_event_body(out, event);
  put_u32(out, uint32_t(event.op_index));
  put_u32(out, event.bound);
}

void encode_counter_record(std::string& out, const CounterSample& sample, uint32_t strings) {
  const std::string problem = counter_problem(sample, strings);
  if (!problem.empty()) throw std::runtime_error(problem);
  out.push_back(kCounterRecord);
  put_u32(out, sample.name);
  put_f64(out, sample.time_s);
  put_f64(out, sample.value);
}

void read_trace_records(std::istream& in, const std::string& source, TraceSink& sink,
                        uint32_t& strings) {
  Decoder d(in, source);
  RunReader reader(d, 0, sink, kTraceFormatVersion);
  reader.set_strings(strings);
  try {
    reader.read_records(false);
  } catch (...) {
    strings = reader.strings();
    throw;
  }
  strings = reader.strings();
}

}  // namespace replisim::core
