// replisim's native trace format (docs/trace-format.md): a versioned, little-endian binary file of
// one or more runs. Version 4 (version 3's records, each event with its op index and what bounded
// a transfer) is a stream of records per run — its metadata, then strings (each
// before its first use), events and counter samples in the order they were emitted, then its
// outcome and a checksum — so a run can be written while it happens. Version 2 (metadata and the
// whole string table first, no op kinds) and version 3 are still read. `simulate --trace-out`
// writes version 4, `report` reads all three.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

// The version this replisim writes, and the oldest it reads.
// Version 5: version 4's layout, with all-reduce events (EventKind::kCollective,
// OpKind::kAllReduce).
inline constexpr uint32_t kTraceFormatVersion = 5;
inline constexpr uint32_t kOldestTraceFormatVersion = 2;

// Limits a reader enforces before it allocates anything (docs/trace-format.md, "Limits").
inline constexpr uint32_t kMaxTraceRuns = uint32_t(1) << 16;
inline constexpr uint32_t kMaxTraceMetaBytes = uint32_t(64) << 20;  // metadata, outcome
inline constexpr uint32_t kMaxTraceStrings = uint32_t(1) << 24;
inline constexpr uint32_t kMaxTraceStringBytes = uint32_t(1) << 20;
inline constexpr uint64_t kMaxTraceRecords = uint64_t(1) << 40;  // events, counters per run

// Reads a native trace from `in` one record at a time, holding no more than one record, and
// emits every run into `sink` (begin, strings, events, counters, end). Returns the number of runs.
// Blocks on `in`; an exception from `sink` propagates unchanged.
// Throws InputError(`source`, "", message naming the run and record) on: bad magic, an unknown
// version, no run, more than kMaxTraceRuns, a version 3 file without its end record, a length or
// count above its limit or longer than the rest of a seekable stream, truncation, metadata or an
// outcome that is not a valid JSON object (trace_meta.h), a repeated string, a string index not yet
// defined, an unknown record, event kind, op kind or flag, a non-finite or negative quantity, an
// event ending before it starts, a checksum mismatch, or bytes after the last run. The sink may
// already have received records before the fault: a consumer must discard the run when this throws.
uint32_t read_trace_stream(std::istream& in, const std::string& source, TraceSink& sink);

// Every run of the trace in `in`, built on read_trace_stream (same errors).
std::vector<Trace> read_traces_binary(std::istream& in, const std::string& source);

// The one run of the trace in `in`; throws InputError as above, and when it holds several runs.
Trace read_trace_binary(std::istream& in, const std::string& source);

// Every run of the trace file `path`. Throws InputError(path, ...) when it is missing,
// unreadable, a directory or not a regular file, or bad as for read_trace_stream.
std::vector<Trace> read_trace_file(const std::string& path);

// What a writer killed midway left in the trace file `path` (a real run's task killed from
// outside, its part written as it went): the first run's records up to where the file ends or
// breaks (its outcome, when it got that far; else a default one). nullopt when the file is
// missing or holds less than the run's metadata. Never throws: a cut file is what it expects.
std::optional<Trace> read_trace_prefix(const std::string& path);

// Writes a version 3 trace to `out` (not owned; it must outlive the writer) as runs are emitted
// into it: the file header at construction, each run's records as they come, flushing in pieces,
// and the end record (the number of runs) at finish(). A file without it reads as truncated, so
// a writer abandoned halfway never leaves a file that passes for whole. Throws
// std::runtime_error when a record breaks what a reader accepts (replisim never writes a trace it
// cannot read back) and OutputError (core/base/error.h) when the stream fails.
class NativeTraceWriter : public TraceSink {
 public:
  explicit NativeTraceWriter(std::ostream& out);
  void begin(const TraceMeta& meta) override;
  void string(uint32_t id, const std::string& text) override;
  void event(const TraceEvent& event) override;
  void counter(const CounterSample& sample) override;
  void end(const RunOutcome& outcome) override;
  // After the last run: the end record. Throws std::runtime_error inside a run or with no run.
  void finish();
  // Hands what is buffered to the stream and flushes it (a reader of the file, e.g. after the
  // writer was killed, sees every record emitted so far). Throws OutputError as above.
  void flush_now();

 private:
  void put(const std::string& bytes);
  void flush();
  std::ostream& out_;
  std::string buffer_;
  uint64_t hash_ = 0;
  uint32_t runs_ = 0;
  uint32_t strings_ = 0;
  uint64_t events_ = 0;
  uint64_t counters_ = 0;
  bool open_ = false;
};

// Writes `runs` (at least one) as one version 3 file (errors as NativeTraceWriter).
void write_traces_binary(std::ostream& out, const std::vector<const Trace*>& runs);
void write_trace_binary(std::ostream& out, const Trace& trace);

// The string, event and counter records of version 3 without a run's framing (no metadata,
// outcome or checksum): how a backend's child process ships a run to its parent as it happens.
// The encoders append one record to `out`; the event encoder throws std::runtime_error for an
// event a reader would refuse given `strings` strings defined so far.
void encode_string_record(std::string& out, const std::string& text);
void encode_event_record(std::string& out, const TraceEvent& event, uint32_t strings);
void encode_counter_record(std::string& out, const CounterSample& sample, uint32_t strings);

// Reads such records from `in` until its end into `sink` (string, event, counter), validating
// them as read_trace_stream does (InputError naming `source`). `strings` counts the strings
// defined so far and is updated.
void read_trace_records(std::istream& in, const std::string& source, TraceSink& sink,
                        uint32_t& strings);

}  // namespace replisim::core
