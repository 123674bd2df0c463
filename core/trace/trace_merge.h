// A real run's parts: each task of a real run writes the events it saw into its own trace, all
// on the coordinator's clock; merged, they are the run's trace (what `run` gathers, what the
// coordinator gathers from nodes started by hand or by a cluster's launcher, and what
// `report --merge` rebuilds from the nodes' files). A run restarted after a job failure has a
// part per task and incarnation (provenance "incarnation": 0 for the first start, k after the
// k-th restart).
#pragma once

#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

// Where a part stands in its run, from its provenance ("task", "incarnation", "coordinator";
// "chief" in parts written before the coordinator ran the job) and its outcome ("killed_s").
struct PartPlace {
  std::string task;  // "" when the trace is no node's part
  int incarnation = 0;
  bool coordinator = false;
  bool killed = false;  // its task died by a fault of the plan
};
PartPlace part_place(const Trace& part);

// Emits the parts' strings, events (by end time; a part's own order breaks ties) and counters
// (by time) into `sink`, whose begin() has been called, and returns the run's outcome: that of
// the last incarnation's coordinator (or, when a fault killed it, of the first part of that
// incarnation that lived on), with every incarnation's restart records (each written by the
// coordinator that the restart started), an unrecovered job failure from the part of the last
// incarnation that recorded it with the highest global_step, the coordinator's clock offsets and
// every part's notes (each once).
RunOutcome emit_merged_parts(const std::vector<Trace>& parts, TraceSink& sink);

// The run whose parts these are. Every part must be of the same plan (plan hash) and real run
// (backend "real"), each (task, incarnation) once, one of them a coordinator's, and every task
// whose clock the last coordinator measured present in the last incarnation. Throws
// InputError(sources[i], ...) naming the part that does not fit.
Trace merge_parts(const std::vector<Trace>& parts, const std::vector<std::string>& sources);

}  // namespace replisim::core
