#include "core/trace/trace_sink.h"

#include <unistd.h>

#include <algorithm>
#include <new>

#include "core/base/error.h"

namespace replisim::core {

namespace {

// About as many events as the run will have: every op of every step graph once per step (an
// upper bound in practice: instant ops record nothing), at most a quarter of physical memory.
// Reserving address space costs no memory until it is written; growing by doubling instead
// copies the whole vector each time (4 million events: the last copy moves 440 MB), and a
// simulation streaming into this builder waits on its pipe meanwhile.
size_t expected_events(const TraceMeta& meta) {
  size_t ops = 0;
  for (const TraceGraph& graph : meta.graphs) ops += graph.ops.size();
  const size_t estimate = ops * size_t(std::max(meta.steps, 0));
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return std::min(estimate, size_t(pages) * size_t(page_bytes) / 4 / sizeof(TraceEvent));
}

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
  traces_.back().outcome = outcome;
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
