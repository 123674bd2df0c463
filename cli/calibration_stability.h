// calibrate's check of itself (docs/validation-real.md, "When calibrate refuses"): whether the
// figures it measured describe this machine or a neighbour's load on it. A calibration made on a
// loaded host predicts every later validation wrong (its one-core SGEMM rate is the CPU speed of
// every scenario), so calibrate refuses to write one that fails a check, unless told to.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/host_load.h"

namespace replisim::cli {

// What calibrate measured of its own stability.
struct CalibrationStability {
  // SGEMM flop/s of one core, per window (the core alone; then every core busy).
  std::vector<double> sgemm_one_core_windows;
  std::vector<double> sgemm_all_busy_windows;
  HostLoad host;  // over the whole calibration
  struct Reference {
    std::string name;
    double relative_error = 0;  // measured against predicted throughput
    // Whether calibrate expects the model to predict it here: on loopback the transfer-bound
    // plan is not (loopback's copies take the cores the model gives the ops), so its error is
    // reported, not checked.
    bool checked = true;
  };
  std::vector<Reference> references;
};

// The bounds (sources and reasons: calibration_stability.cpp).
inline constexpr double kMaxLoadAveragePerCore = 0.5;
inline constexpr double kMaxOtherCoresFraction = 0.25;
inline constexpr double kMaxStealFraction = 0.05;
inline constexpr double kMaxSgemmSpread = 0.10;
inline constexpr double kMinAllBusyRatio = 0.75;
inline constexpr double kMaxReferenceError = 0.15;

// The median of `v` (0 when empty).
double median_of(std::vector<double> v);
// (max - min) / median of the windows (0 for fewer than two).
double spread_of(const std::vector<double>& windows);

// Each check that failed, as "<what> <by how much> (<the bound>)", in a fixed order: the load
// average before, other processes' CPU, steal, the one-core SGEMM spread, the all-busy/alone
// ratio, each checked reference plan's error. Empty: calibrate can trust itself.
std::vector<std::string> stability_problems(const CalibrationStability& s);

// calibration.stability in the file: every figure, the bounds, the problems found and whether
// the file was written despite them (--accept-unstable).
nlohmann::json stability_to_json(const CalibrationStability& s,
                                 const std::vector<std::string>& problems, bool accepted_unstable);

// The one line of a refusal: "this host was not stable enough to calibrate: <problems joined by
// "; ">; nothing written (--accept-unstable writes it anyway, saying so in the file)".
std::string refusal_line(const std::vector<std::string>& problems);

// Whether the host was loaded beyond the bounds above between two snapshots (its load average
// before, other processes' CPU, steal; not what calibrate's own runs add): a real run's measured
// times then include what other work took of the cores. False where /proc was not read.
bool host_was_busy(const HostLoad& load);

// A real run's last report line: "host during the run: <host_load_text>", with "(a busy host: ...)"
// when host_was_busy, and a newline; "" where /proc was not read.
std::string real_run_host_line(const HostLoad& load);

}  // namespace replisim::cli
