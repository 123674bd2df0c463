// What a run is emitted into, one record at a time: the metadata, each string before the first
// event that uses it, the events and counter samples as they happen, then the outcome. Every
// backend writes through this interface (via TraceRecorder), the native file reader calls it, and
// its implementations keep the run in memory (TraceBuilder), write it to a file
// (NativeTraceWriter, trace_format.h) or hand it to several others (TeeSink).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace replisim::core {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Once per run, first.
  virtual void begin(const TraceMeta& meta) = 0;
  // String `id` of the run's table: ids are 0, 1, 2, ... in the order given, each before the
  // first event or counter that names it.
  virtual void string(uint32_t id, const std::string& text) = 0;
  virtual void event(const TraceEvent& event) = 0;
  virtual void counter(const CounterSample& sample) = 0;
  // Once per run, last.
  virtual void end(const RunOutcome& outcome) = 0;
};

// Keeps every run emitted into it as a Trace, in order. Checks that string ids come in order
// (throws InternalError otherwise: a producer's bug).
class TraceBuilder : public TraceSink {
 public:
  // Reserves room for about the events the run will record (its step graphs' ops plus two, per
  // step; at most a quarter of physical memory; nothing if the address space is refused), so
  // that a large trace is not copied each time it outgrows its vector. end() gives most of an
  // unused reservation back.
  void begin(const TraceMeta& meta) override;
  void string(uint32_t id, const std::string& text) override;
  void event(const TraceEvent& event) override;
  void counter(const CounterSample& sample) override;
  void end(const RunOutcome& outcome) override;

  // The runs so far (the last one possibly still open). Moving them out leaves the builder empty.
  std::vector<Trace>& traces() { return traces_; }

 private:
  std::vector<Trace> traces_;
};

// Passes every record to each of `sinks` in turn (not owned; they must outlive the tee).
class TeeSink : public TraceSink {
 public:
  explicit TeeSink(std::vector<TraceSink*> sinks) : sinks_(std::move(sinks)) {}
  void begin(const TraceMeta& meta) override;
  void string(uint32_t id, const std::string& text) override;
  void event(const TraceEvent& event) override;
  void counter(const CounterSample& sample) override;
  void end(const RunOutcome& outcome) override;

 private:
  std::vector<TraceSink*> sinks_;
};

// Emits `trace` into `sink` as one run: begin, every string, every event, every counter, end.
void replay_trace(const Trace& trace, TraceSink& sink);

}  // namespace replisim::core
