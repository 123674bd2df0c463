// Instruction counts of a benchmark, counted by Valgrind's callgrind tool: a count that does not
// depend on what else the machine runs, for changes too small for the wall-clock ratios of a
// shared host to resolve (docs/benchmarks.md).
//
// A benchmark given --callgrind runs itself again under
//   valgrind --quiet --tool=callgrind --trace-children=yes
//   --callgrind-out-file=<dir>/callgrind.out.%p
// with --callgrind replaced by --callgrind-inner (the inner run prints which process is which),
// echoes the inner run's output, and reads each process's total from its output file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace replisim::bench {

// What one run under callgrind printed and counted.
struct CallgrindRun {
  std::vector<std::string> lines;         // the inner run's standard output, line by line
  std::map<long, uint64_t> instructions;  // per process id: instructions executed (Ir)
};

// Whether argv holds `flag` ("--callgrind").
bool has_flag(int argc, char** argv, const char* flag);

// Runs this program (/proc/self/exe) under callgrind with argv[1..] (--callgrind replaced by
// --callgrind-inner) followed by `defaults`: bench_flags.h's lookups take a flag's first
// occurrence, so the user's flags win and `defaults` size the run when the user did not.
// Output files go to a private scratch directory, removed afterwards. Throws std::runtime_error
// with one line ("--callgrind: ...") when valgrind is not installed, the inner run fails, or a
// count cannot be read.
CallgrindRun run_under_callgrind(int argc, char** argv, const std::vector<std::string>& defaults);

// A figure the inner run printed as "callgrind <key>: <integer>"; throws std::runtime_error naming
// the key when it printed none (or a negative one).
long long value_of(const CallgrindRun& run, const std::string& key);

// The instructions of the one counted process whose id is not in `named` (the simulation child
// that SimBackend forks, whose id the benchmark never sees); throws std::runtime_error when a
// named process was not counted or there is not exactly one other.
uint64_t instructions_of_unnamed(const CallgrindRun& run, const std::vector<long long>& named);

// Prints "callgrind <key>: <value>" for the outer run to read (inner runs only): process ids
// ("process parent") and counts ("activities").
void print_value(const std::string& key, long long value);

// Runs `report` (a benchmark's --callgrind part) and returns the process's exit status: 0, or 2
// after printing the one line of an exception it threw on stderr (the scratch directory is gone by
// then).
int callgrind_main(const std::function<void()>& report);

// Sets this process's counts to zero (CALLGRIND_ZERO_STATS; nothing when not under valgrind or
// built without valgrind's headers). Called in the inner run's parent just before the part to be
// measured starts, so that a child forked after it counts only from there, not the program's
// start-up and whatever else the parent ran before (a forked child inherits its parent's counts).
void zero_counts();

// "1,234,567".
std::string with_commas(uint64_t n);

}  // namespace replisim::bench
