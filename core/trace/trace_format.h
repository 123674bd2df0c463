// replisim's native trace format (docs/trace-format.md): a versioned, little-endian binary file of
// one or more runs, each with its metadata, string table, events, counters and a checksum.
// `simulate --trace-out` writes it, `report` reads it back, the simulation child ships it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace replisim::core {

// The version this replisim writes and the only one it reads.
inline constexpr uint32_t kTraceFormatVersion = 2;

// Limits a reader enforces before it allocates anything (docs/trace-format.md, "Limits").
inline constexpr uint32_t kMaxTraceRuns = uint32_t(1) << 16;
inline constexpr uint32_t kMaxTraceMetaBytes = uint32_t(64) << 20;
inline constexpr uint32_t kMaxTraceStrings = uint32_t(1) << 24;
inline constexpr uint32_t kMaxTraceStringBytes = uint32_t(1) << 20;
inline constexpr uint64_t kMaxTraceRecords = uint64_t(1) << 40;

// What precedes the events of one run: its metadata and string table.
struct TraceRunHeader {
  uint32_t run = 0;                  // index of this run in the file, from 0
  uint32_t runs = 0;                 // number of runs in the file
  nlohmann::json meta;               // a JSON object (Trace::meta)
  std::vector<std::string> strings;  // the table TraceEvent's string fields index (no repeats)
  uint64_t events = 0;               // number of events of this run that follow
};

using OnTraceRun = std::function<void(const TraceRunHeader&)>;
using OnTraceEvent = std::function<void(const TraceEvent&)>;
using OnTraceCounter = std::function<void(const CounterSample&)>;

// Reads a native trace from `in` one record at a time, holding no more than one run's header and
// one record: for each run, calls on_run with its header, then on_event for each event in file
// order, then on_counter for each counter sample. The header stays valid until on_run is called
// for the next run or this function returns. A null callback skips those records.
// Returns the number of runs. Blocks on `in`; a callback's exception propagates unchanged.
// Throws InputError(`source`, "", message) on: bad magic, another version, a run count of 0 or
// above kMaxTraceRuns, a length or count above its limit or longer than the rest of a seekable
// stream, truncation, metadata that is not a JSON object, a repeated string, a string index out
// of range, an unknown event kind, a non-finite or negative quantity, an event ending before it
// starts, a checksum mismatch, or bytes after the last run. Callbacks may already have been
// called for the records before the fault: a consumer must discard them when this throws (a run
// is known good once on_run is called for the next one, or this function returns).
uint32_t read_trace_stream(std::istream& in, const std::string& source, const OnTraceRun& on_run,
                           const OnTraceEvent& on_event, const OnTraceCounter& on_counter);

// Every run of the trace in `in`, built on read_trace_stream (same errors).
std::vector<Trace> read_traces_binary(std::istream& in, const std::string& source);

// The one run of the trace in `in`; throws InputError as above, and when it holds several runs.
Trace read_trace_binary(std::istream& in, const std::string& source);

// Every run of the trace file `path`. Throws InputError(path, ...) when it is missing,
// unreadable, a directory or not a regular file, or bad as for read_trace_stream.
std::vector<Trace> read_trace_file(const std::string& path);

// Writes `runs` (at least one) as one native trace file. Throws std::runtime_error when the
// stream fails, or when a run breaks what a reader accepts (a limit, an event the reader would
// reject): replisim never writes a trace it cannot read back.
void write_traces_binary(std::ostream& out, const std::vector<const Trace*>& runs);
void write_trace_binary(std::ostream& out, const Trace& trace);

}  // namespace replisim::core
