// What else this machine was doing while calibrate or validate measured it: the load average,
// the CPU time the hypervisor stole, and the CPU time of processes other than this one and its
// children (Linux: /proc/loadavg, /proc/stat, getrusage). A neighbour's load changes what one core
// sustains, and no model of the cluster describes it; calibrate refuses on it, validate names it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace replisim::cli {

// One reading of the machine's counters.
struct HostSnapshot {
  double load_average_1min = 0;  // /proc/loadavg's first figure (runnable + uninterruptible tasks)
  double wall_s = 0;             // steady clock
  // /proc/stat's "cpu" line, all cores together, in seconds (USER_HZ ticks / sysconf(_SC_CLK_TCK)).
  double busy_cpu_s = 0;   // user + nice + system + irq + softirq
  double steal_cpu_s = 0;  // steal: time a virtual CPU waited for the hypervisor
  double total_cpu_s = 0;  // every field but guest (counted in user)
  double own_cpu_s = 0;    // this process's and its reaped children's CPU time (getrusage)
  bool readable = false;   // /proc/stat and /proc/loadavg were read
};

// Reads the counters now (readable false where /proc is not Linux's: the figures stay 0).
HostSnapshot host_snapshot();

// The host between two snapshots.
struct HostLoad {
  double load_average_before = 0;  // 1-minute load average at `before`
  double load_average_after = 0;   // ... and at `after`
  double steal_fraction = 0;       // stolen / total CPU time in between (0..1)
  // Other processes' CPU in between, in cores: the machine's busy time less this process's and its
  // children's, over the wall time (0 when negative: rounding of the ticks).
  double other_cores = 0;
  double wall_s = 0;
  int cores = 1;  // online cores (sysconf)
  bool readable = false;
};
HostLoad host_load_between(const HostSnapshot& before, const HostSnapshot& after);

// As calibrate's and validate's JSON record it: {"load_average_before", "load_average_after",
// "steal_fraction", "other_cores", "cores", "wall_s"}.
nlohmann::json host_load_to_json(const HostLoad& load);
// "load average 9.6 before, 10.2 after; other processes used 1.4 of 2 cores; steal 0.0%".
std::string host_load_text(const HostLoad& load);

}  // namespace replisim::cli
