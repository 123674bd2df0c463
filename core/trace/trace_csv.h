// Trace events as CSV for spreadsheets and scripts (`replisim report --csv`, docs/cli.md): a
// provenance comment line, a header row, then one row per event of every run.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace replisim::core {

// The header row's column names, in order.
const std::vector<std::string>& csv_columns();

// `field` quoted per RFC 4180 when it holds a comma, a double quote, CR or LF (quotes doubled),
// else unchanged.
std::string csv_field(const std::string& field);

// Writes "# replisim trace events; provenance: <compact JSON>\n", the header row, then one row
// per event, run after run in the order given and events in trace order. `run` is the index of
// the run in `runs`, `strategy` its metadata's strategy; absent strings and -1 integers (no step,
// message or global_step) are empty fields; whole numbers below 2^53 are written in full, other
// numbers as the shortest decimal that reads back to the same double. Lines end with LF. Throws
// OutputError when the stream fails.
void write_events_csv(std::ostream& out, const std::vector<const Trace*>& runs,
                      const nlohmann::json& provenance);

}  // namespace replisim::core
