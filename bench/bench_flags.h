// Command-line flags shared by the benchmark programs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <nlohmann/json.hpp>

namespace replisim::bench {

// The integer after `name` in argv ("--workers 256"), or `fallback`.
inline int int_flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// Whether `name` is one of the arguments ("--mac-cost").
inline bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

// The text after `name` in argv ("--network-engine simgrid"), or `fallback`.
inline const char* text_flag(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

// The simulator's settings from --network-engine simgrid|auto, --tolerance SECONDS and
// --chunk-by-chunk
// (sim/sim_settings.h), as core::RunOptions::settings.
inline nlohmann::json sim_settings_flags(int argc, char** argv) {
  nlohmann::json settings = {{"network_engine", text_flag(argc, argv, "--network-engine", "auto")}};
  const char* tolerance = text_flag(argc, argv, "--tolerance", nullptr);
  if (tolerance != nullptr) settings["tolerance_s"] = std::atof(tolerance);
  // --chunk-by-chunk: every all-reduce ring chunk by chunk (no fast ring; sim/sim_collectives.h).
  if (has_flag(argc, argv, "--chunk-by-chunk")) settings["collective_fast_path"] = false;
  return settings;
}

// Runs `run(argc, argv)`; anything it throws (a size of 0, an unknown engine) is one line on
// standard error naming `program`, and exit 2, not an uncaught exception.
inline int guarded_main(const char* program, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
}

}  // namespace replisim::bench
