#include "core/trace/trace_sink.h"

#include <unistd.h>

#include <algorithm>
#include <new>

#include "core/base/error.h"

namespace replisim::core {

namespace {

// At least as many events as a run records in the common case: per step of each step graph, one
// per op (instant ops record none; a send's transfer and its serialisation, and the recv's
// deserialisation, are three events for two ops) plus its step and update events. Restarts,
// which run steps again, can pass it. At most a quarter of physical memory.
size_t expected_events(const TraceMeta& meta) {
  size_t per_step = 0;
  for (const TraceGraph& graph : meta.graphs) per_step += graph.ops.size() + 2;
  const size_t estimate = per_step * size_t(std::max(meta.steps, 0));
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return std::min(estimate, size_t(pages) * size_t(page_bytes) / 4 / sizeof(TraceEvent));
}

// A reservation more than this many times the events recorded is given back at the end.
constexpr size_t kMostOverReserved = 4;

}  // namespace

void TraceBuilder::begin(const TraceMeta& meta) {
  traces_.emplace_back();
  traces_.back().meta = meta;
  try {
    traces_.back().events.reserve(expected_events(meta));
  } catch (const std::bad_alloc&) {
    // Address space refused: the vector grows as it goes.
  }
}

void TraceBuilder::string(uint32_t id, const std::string& text) {
  REPLISIM_ASSERT(!traces_.empty(), "a string before the run began");
  Trace& t = traces_.back();
  REPLISIM_ASSERT(id == t.strings().size(), "trace strings out of order");
  t.intern(text);
  REPLISIM_ASSERT(t.strings().size() == size_t(id) + 1, "a trace string given twice");
}

void TraceBuilder::event(const TraceEvent& event) {
  traces_.back().events.push_back(event);
}

void TraceBuilder::counter(const CounterSample& sample) {
  traces_.back().counters.push_back(sample);
}

void TraceBuilder::end(const RunOutcome& outcome) {
  Trace& trace = traces_.back();
  trace.outcome = outcome;
  // A run that stopped early (steps "auto", a stall, a failure) leaves most of the reservation
  // unused: given back (a copy of what was recorded), as a kept trace's address space counts
  // against a strict overcommit limit.
  if (trace.events.capacity() > kMostOverReserved * trace.events.size()) {
    trace.events.shrink_to_fit();
  }
}

void TeeSink::begin(const TraceMeta& meta) {
  for (TraceSink* s : sinks_) s->begin(meta);
}
void TeeSink::string(uint32_t id, const std::string& text) {
  for (TraceSink* s : sinks_) s->string(id, text);
}
void TeeSink::event(const TraceEvent& event) {
  for (TraceSink* s : sinks_) s->event(event);
}
void TeeSink::counter(const CounterSample& sample) {
  for (TraceSink* s : sinks_) s->counter(sample);
}
void TeeSink::end(const RunOutcome& outcome) {
  for (TraceSink* s : sinks_) s->end(outcome);
}

void replay_trace(const Trace& trace, TraceSink& sink) {
  sink.begin(trace.meta);
  const std::vector<std::string>& strings = trace.strings();
  for (size_t i = 0; i < strings.size(); ++i) sink.string(uint32_t(i), strings[i]);
  for (const TraceEvent& e : trace.events) sink.event(e);
  for (const CounterSample& c : trace.counters) sink.counter(c);
  sink.end(trace.outcome);
}

}  // namespace replisim::core
