// A real run's parts: each task of a real run writes the events it saw into its own trace, all
// on the chief's clock; merged, they are the run's trace (what `run` gathers, and what
// `report --merge` rebuilds from hand-started nodes' files).
#pragma once

#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

// Emits the parts' strings, events (by end time; a part's own order breaks ties) and counters
// (by time) into `sink`, whose begin() has been called, and returns the chief's outcome with
// every other part's notes after its own (each once). `chief` indexes `parts`.
RunOutcome emit_merged_parts(const std::vector<Trace>& parts, size_t chief, TraceSink& sink);

// The run whose parts these are. Every part must be of the same plan (plan hash) and real run
// (backend "real"), each task once, one of them the chief's (provenance "chief": true), and
// every task of its metadata's roles present. Throws InputError(sources[i], ...) naming the
// part that does not fit.
Trace merge_parts(const std::vector<Trace>& parts, const std::vector<std::string>& sources);

}  // namespace replisim::core
