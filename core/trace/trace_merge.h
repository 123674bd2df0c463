// A real run's parts: each task of a real run writes the events it saw into its own trace, all
// on the coordinator's clock; merged, they are the run's trace (what `run` gathers, and what
// `report --merge` rebuilds from hand-started nodes' files).
#pragma once

#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

// Emits the parts' strings, events (by end time; a part's own order breaks ties) and counters
// (by time) into `sink`, whose begin() has been called, and returns the outcome of
// parts[reference] (the coordinator's) with every other part's notes after its own (each once).
RunOutcome emit_merged_parts(const std::vector<Trace>& parts, size_t reference, TraceSink& sink);

// The run whose parts these are. Every part must be of the same plan (plan hash) and real run
// (backend "real"), each task once, one of them the coordinator's (provenance "coordinator": true;
// "chief": true in parts written before the coordinator ran the job), and
// every task of its metadata's roles present. Throws InputError(sources[i], ...) naming the
// part that does not fit.
Trace merge_parts(const std::vector<Trace>& parts, const std::vector<std::string>& sources);

}  // namespace replisim::core
