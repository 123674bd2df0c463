// Chrome Trace Event JSON export (opens in Perfetto and chrome://tracing) of the shared timeline
// layout (timeline_layout.h): one process per actor, one thread per lane and sub-lane so slices
// nest, flow arrows from each send to its receive, instants for faults, dropped gradients and
// updates, global_step as a counter.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/timeline_layout.h"
#include "core/trace/trace.h"

namespace replisim::core {

// One trace to export; `prefix` goes before every process name ("in_graph ") so several runs
// can share one file.
struct ChromeTraceInput {
  const Trace* trace = nullptr;
  std::string prefix;
};

// Streams the JSON object {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
// to `out`. Times are microseconds, quantised to whole nanoseconds so that nesting is exact.
// Process and thread ids number the runs' layouts one after the other. `provenance` goes into
// otherData (with "window_s": [from, until] when `window` is not whole). Throws OutputError
// when the stream fails.
void write_chrome_trace(std::ostream& out, const std::vector<ChromeTraceInput>& inputs,
                        const nlohmann::json& provenance, const TimelineWindow& window = {});

}  // namespace replisim::core
