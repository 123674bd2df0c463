// Command-line flags shared by the benchmark programs.
#pragma once

#include <cstdlib>
#include <cstring>

namespace replisim::bench {

// The integer after `name` in argv ("--workers 256"), or `fallback`.
inline int int_flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace replisim::bench
