// Chrome Trace Event JSON export (opens in Perfetto and chrome://tracing): one process per
// actor (role), one thread per lane, concurrent slices on numbered sub-lanes so slices nest,
// flow arrows from each send to its receive, global_step as a counter.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace.h"

namespace replisim::core {

// One trace to export; `prefix` goes before every process name ("in_graph ") so several runs
// can share one file.
struct ChromeTraceInput {
  const Trace* trace = nullptr;
  std::string prefix;
};

// Streams the JSON object {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
// to `out`. Times are microseconds, quantised to whole nanoseconds so that nesting is exact.
// `provenance` goes into otherData. Throws std::runtime_error when the stream fails.
void write_chrome_trace(std::ostream& out, const std::vector<ChromeTraceInput>& inputs,
                        const nlohmann::json& provenance);

}  // namespace replisim::core
