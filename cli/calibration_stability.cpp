#include "cli/calibration_stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace replisim::cli {

// The bounds. Figures of this project's 2-core build machine on quiet days
// (docs/validation-real.md): the one-core SGEMM rate 126.6 GFLOPS alone, 136.5 per core with both
// busy (ratio 1.08); reference plans within -3.4% to +4%. On a day its neighbours' load averaged
// 8-12 (issue 38): one core 10.6 GFLOPS, the all-busy rate half the one-core rate, the
// compute-bound reference -25%, and every later validation -18% to -29% off.
//  - load average per core 0.5: a quiet host's is near 0; above half a runnable task per core,
//    a neighbour takes a core for a good share of the two seconds SGEMM is measured over;
//  - other processes' CPU, a quarter of the cores: measured over the calibration itself, what the
//    load average (a minute's decaying mean) sees late;
//  - steal 5%: a virtual machine whose hypervisor takes more than that runs its cores slower than
//    they measure between the steals;
//  - the one-core SGEMM windows' spread 10%: a core alone runs the same blocks at the same rate
//    (a few percent of frequency and timer noise); more is a load coming and going;
//  - all-busy per core at least 0.75 of one core alone: shared memory bandwidth and turbo cost an
//    idle machine a few percent (this one gains 8%); half is a neighbour on the other cores;
//  - each checked reference plan within 15%: the document's target for the worst validation error
//    (docs/validation-real.md: median <= 8%, worst <= 15%).

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double spread_of(const std::vector<double>& windows) {
  if (windows.size() < 2) return 0;
  const double m = median_of(windows);
  if (!(m > 0)) return 0;
  const auto [lo, hi] = std::minmax_element(windows.begin(), windows.end());
  return (*hi - *lo) / m;
}

namespace {

std::string stability_fixed(double x, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
  return buffer;
}
std::string stability_percent(double fraction) {
  return stability_fixed(100 * fraction, 1) + "%";
}
std::string stability_signed_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * fraction);
  return buffer;
}

double all_busy_ratio(const CalibrationStability& s) {
  const double one = median_of(s.sgemm_one_core_windows);
  return one > 0 ? median_of(s.sgemm_all_busy_windows) / one : 0;
}

}  // namespace

std::vector<std::string> stability_problems(const CalibrationStability& s) {
  std::vector<std::string> problems;
  const double cores = std::max(1, s.host.cores);
  if (s.host.readable) {
    if (s.host.load_average_before > kMaxLoadAveragePerCore * cores) {
      problems.push_back("load average " + stability_fixed(s.host.load_average_before, 1) +
                         " before calibrating (at most " +
                         stability_fixed(kMaxLoadAveragePerCore * cores, 1) + " on " +
                         std::to_string(s.host.cores) + " cores)");
    }
    if (s.host.other_cores > kMaxOtherCoresFraction * cores) {
      problems.push_back("other processes used " + stability_fixed(s.host.other_cores, 2) + " of " +
                         std::to_string(s.host.cores) + " cores meanwhile (at most " +
                         stability_fixed(kMaxOtherCoresFraction * cores, 2) + ")");
    }
    if (s.host.steal_fraction > kMaxStealFraction) {
      problems.push_back("CPU steal " + stability_percent(s.host.steal_fraction) + " (at most " +
                         stability_percent(kMaxStealFraction) + ")");
    }
  }
  const double spread = spread_of(s.sgemm_one_core_windows);
  if (spread > kMaxSgemmSpread) {
    problems.push_back("one-core SGEMM varied " + stability_percent(spread) + " over " +
                       std::to_string(s.sgemm_one_core_windows.size()) + " windows (" +
                       stability_fixed(*std::min_element(s.sgemm_one_core_windows.begin(),
                                                         s.sgemm_one_core_windows.end()) /
                                           1e9,
                                       1) +
                       ".." +
                       stability_fixed(*std::max_element(s.sgemm_one_core_windows.begin(),
                                                         s.sgemm_one_core_windows.end()) /
                                           1e9,
                                       1) +
                       " GFLOPS; at most " + stability_percent(kMaxSgemmSpread) + ")");
  }
  const double ratio = all_busy_ratio(s);
  if (!s.sgemm_all_busy_windows.empty() && ratio < kMinAllBusyRatio) {
    problems.push_back("SGEMM per core with all " + std::to_string(s.host.cores) + " busy was " +
                       stability_fixed(ratio, 2) + " of one core alone (at least " +
                       stability_fixed(kMinAllBusyRatio, 2) + ")");
  }
  for (const CalibrationStability::Reference& r : s.references) {
    if (r.checked && !(std::fabs(r.relative_error) <= kMaxReferenceError)) {
      problems.push_back(r.name + " missed by " + stability_signed_percent(r.relative_error) +
                         " (at most ±" + stability_percent(kMaxReferenceError) + ")");
    }
  }
  return problems;
}

nlohmann::json stability_to_json(const CalibrationStability& s,
                                 const std::vector<std::string>& problems, bool accepted_unstable) {
  nlohmann::json references = nlohmann::json::array();
  for (const CalibrationStability::Reference& r : s.references) {
    references.push_back(
        {{"name", r.name}, {"relative_error", r.relative_error}, {"checked", r.checked}});
  }
  return {{"sgemm_flop_per_s_one_core_windows", s.sgemm_one_core_windows},
          {"sgemm_one_core_spread", spread_of(s.sgemm_one_core_windows)},
          {"sgemm_flop_per_s_all_busy_windows", s.sgemm_all_busy_windows},
          {"all_busy_over_one_core", all_busy_ratio(s)},
          {"host", host_load_to_json(s.host)},
          {"references", references},
          {"bounds",
           {{"load_average_per_core", kMaxLoadAveragePerCore},
            {"other_cores_fraction", kMaxOtherCoresFraction},
            {"steal_fraction", kMaxStealFraction},
            {"sgemm_one_core_spread", kMaxSgemmSpread},
            {"all_busy_over_one_core_min", kMinAllBusyRatio},
            {"reference_relative_error", kMaxReferenceError}}},
          {"problems", problems},
          {"accepted_unstable", accepted_unstable}};
}

std::string refusal_line(const std::vector<std::string>& problems) {
  std::string line = "this host was not stable enough to calibrate: ";
  for (size_t i = 0; i < problems.size(); ++i) line += (i ? "; " : "") + problems[i];
  return line + "; nothing written (--accept-unstable writes it anyway, saying so in the file)";
}

bool host_was_busy(const HostLoad& load) {
  return load.readable && (load.load_average_before > kMaxLoadAveragePerCore * load.cores ||
                           load.other_cores > kMaxOtherCoresFraction * load.cores ||
                           load.steal_fraction > kMaxStealFraction);
}

std::string real_run_host_line(const HostLoad& load) {
  if (!load.readable) return "";
  return "host during the run: " + host_load_text(load) +
         (host_was_busy(load) ? " (a busy host: the measured times include what other work took "
                                "of the cores; docs/validation-real.md)"
                              : "") +
         "\n";
}

}  // namespace replisim::cli
