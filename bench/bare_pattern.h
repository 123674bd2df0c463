// A bare SimGrid program with replisim's activity pattern, as the speed baseline: N workers, each
// S steps of compute, a push of one slice to each of P parameter servers, and a pull of one slice
// back from each. Written directly against S4U, with nothing of replisim in it.
#pragma once

#include <cstdint>

namespace replisim::bench {

struct BarePattern {
  int workers = 64;
  int steps = 50;
  int ps = 8;
  double compute_flop = 1e10;  // per worker step
  double slice_bytes = 1e6;    // per PS, each way
  double worker_speed_flop_per_s = 1e13;
  double worker_nic_bytes_per_s = 1.25e9;
  double ps_nic_bytes_per_s = 1.25e10;
  double switch_bytes_per_s = 1e12;
  double latency_s = 10e-6;
};

struct BareResult {
  double wall_s = 0;  // Engine::run() only
  double simulated_s = 0;
  uint64_t activities = 0;  // execs + communications completed
};

// Runs the pattern in this process (one SimGrid engine per process: call it in a child).
BareResult run_bare_pattern(const BarePattern& pattern);

}  // namespace replisim::bench
