// Command-line flags of the `replisim` executable (docs/cli.md).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace replisim::cli {

struct CliArgs {
  std::string command;                   // "simulate", "plan", "report", "help", "version"
  std::string scenario;                  // simulate, plan: path of the scenario file
  std::vector<std::string> trace_files;  // report: native trace files, in the order given
  std::string strategy = "both";         // in_graph | between_graph | both
  uint64_t seed = 1;
  std::string json_path;     // simulate, report: --json FILE
  bool json_stdout = false;  // plan: --json (print the plan data)
  std::string trace_path;    // simulate, report: --trace FILE (Chrome Trace Event JSON)
  double trace_from_s = 0;   // simulate, report: --trace-window FROM..UNTIL (seconds)
  double trace_until_s = std::numeric_limits<double>::infinity();
  bool trace_window = false;      // --trace-window given
  std::string trace_out_path;     // simulate: --trace-out FILE (native trace)
  std::string csv_path;           // report: --csv FILE (events as CSV)
  bool force = false;             // overwrite existing output files
  bool strict = false;            // simulate: fail when a GPU cannot hold its share of the plan
  std::string progress = "auto";  // simulate: --progress auto|bar|json|none
  std::string command_line;       // as typed, for provenance
};

// Parses argv. Throws core::InputError("", "<flag>", message) on an unknown command or flag, a
// flag given twice, a missing or bad value, a missing or extra positional argument; an unknown
// flag suggests the nearest known one.
CliArgs parse_cli_args(int argc, const char* const* argv);

// The strategies a --strategy value selects ("both" = in_graph then between_graph).
std::vector<std::string> selected_strategies(const CliArgs& args);

std::string usage_text();

}  // namespace replisim::cli
