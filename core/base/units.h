// Quantities with units in scenario files ("10 Gbps", "50 us", "14 TFLOPS") parsed into SI base
// units (bytes, seconds, flop, bytes/s, flop/s), and formatted back for reports.
#pragma once

#include <stdexcept>
#include <string>

namespace replisim::core {

// What a quantity measures; fixes the accepted unit symbols and the SI base unit returned.
enum class Dimension {
  kBandwidth,  // "bps" (bits/s) or "Bps" (bytes/s) -> bytes/s
  kTime,       // "s", "ms", "us" (or "µs"), "ns" -> seconds
  kFlop,       // "FLOP" -> flop (an amount of work)
  kFlopRate,   // "FLOPS" -> flop/s (a speed)
  kBytes,      // "B" -> bytes
};

// Thrown by parse_quantity; the caller adds the file and JSON path.
class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Parses "<number>[ ]<prefix><unit>". Symbols are case-sensitive. Prefixes k M G T P are powers
// of 10; Ki Mi Gi Ti Pi are powers of 2 (so "10 Gbps" = 1.25e9 bytes/s, "1 KiB" = 1024 bytes).
// Returns the value in the SI base unit of `dimension`. The number must be finite; its sign is
// not checked here (validation decides). Throws UnitError with a message that shows an example.
double parse_quantity(const std::string& text, Dimension dimension);

// An example string for `dimension` ("10 Gbps", "50 us", ...), used in error messages.
const char* quantity_example(Dimension dimension);

// Formats an SI value for people: bandwidth in "GB/s", time in s/ms/us, flop and flop/s with
// k/M/G/T prefixes, bytes with k/M/G prefixes. `significant` digits (default 4).
std::string format_quantity(double value, Dimension dimension, int significant = 4);

}  // namespace replisim::core
