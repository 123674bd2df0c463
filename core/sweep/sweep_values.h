// The values of one knob of a sweep as typed on the command line (`--vary KEY=VALUES`): lists,
// integer ranges, multipliers and quantities with units (docs/capacity-planning.md).
#pragma once

#include <string>
#include <vector>

namespace replisim::core {

// Expands VALUES, a comma-separated list whose items are kept as typed (trimmed) except integer
// ranges: "1..8" is every integer from 1 to 8, "1..64x2" starts at 1 and doubles while at most 64
// (any factor >= 2). Other items stay text for the knob to read: "4", "10 Gbps", "x2" (a factor
// of the scenario's own value), "round_robin". At most kMaxSweepValues values per knob.
// Throws InputError("", `flag`, ...) for an empty list or item, an empty range ("8..1"), a factor
// below 2, a range past the limit, or a value given twice.
std::vector<std::string> expand_sweep_values(const std::string& flag, const std::string& text);

inline constexpr size_t kMaxSweepValues = 4096;

}  // namespace replisim::core
