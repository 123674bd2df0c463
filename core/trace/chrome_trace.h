// Chrome Trace Event JSON export (opens in Perfetto and chrome://tracing): one process per
// actor (role), one thread per lane, concurrent slices on numbered sub-lanes so slices nest,
// flow arrows from each send to its receive, global_step as a counter.
#pragma once

#include <cmath>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace replisim::core {

// One trace to export; `prefix` goes before every process name ("in_graph ") so several runs
// can share one file.
struct ChromeTraceInput {
  const Trace* trace = nullptr;
  std::string prefix;
};

// The part of the runs to export, in simulated seconds: slices that overlap [from_s, until_s]
// (whole, not clipped), instants and counter samples inside it. The default is everything.
struct ChromeTraceWindow {
  double from_s = 0;
  double until_s = std::numeric_limits<double>::infinity();
  bool whole() const { return from_s <= 0 && std::isinf(until_s); }
  bool overlaps(double start_s, double end_s) const {
    return end_s >= from_s && start_s <= until_s;
  }
};

// Streams the JSON object {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
// to `out`. Times are microseconds, quantised to whole nanoseconds so that nesting is exact.
// `provenance` goes into otherData (with "window_s": [from, until] when `window` is not whole).
// Throws std::runtime_error when the stream fails.
void write_chrome_trace(std::ostream& out, const std::vector<ChromeTraceInput>& inputs,
                        const nlohmann::json& provenance, const ChromeTraceWindow& window = {});

}  // namespace replisim::core
