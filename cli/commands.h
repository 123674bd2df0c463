// The `replisim` commands, callable from main() and from tests.
#pragma once

#include <iosfwd>
#include <string>

#include "cli/cli_args.h"
#include "core/trace/trace.h"

namespace replisim::cli {

// Each returns the process exit code (0) and throws core::InputError (exit 2) or other
// exceptions (exit 1); main() maps them. Reports go to `out`.
int run_simulate(const CliArgs& args, std::ostream& out);
// run: the same report and outputs as simulate, from real processes of this machine (the "real"
// backend); one strategy (default between_graph).
int run_real(const CliArgs& args, std::ostream& out);
int run_plan(const CliArgs& args, std::ostream& out);
// Rebuilds the report of saved native traces (args.trace_files) without simulating; its table is
// byte for byte the one `simulate` printed for the same runs. Bad trace files throw InputError
// naming the file.
int run_report(const CliArgs& args, std::ostream& out);
// A node that gathered its run's trace (the coordinator of nodes a cluster's launcher started):
// the report `run` prints, titled with where the trace was written (`file`).
void print_gathered_report(const core::Trace& run, const std::string& file, std::ostream& out);

// "replisim 0.1.0 (git abc123), SimGrid 3.32.0".
std::string version_text();

}  // namespace replisim::cli
