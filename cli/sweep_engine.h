// What `sweep` and `whatif` share: each point resolved against the scenario, its result taken from
// the cache or computed by a `replisim simulate` child process (--jobs at once), and progress.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/progress.h"
#include "cli/scenario_plans.h"
#include "core/sweep/sweep_points.h"
#include "core/sweep/sweep_results.h"

namespace replisim::cli {

struct SweepSettings {
  std::string scenario_file;
  std::string default_strategy = "between_graph";
  uint64_t seed = 1;
  int steps = 0;  // --steps (0: each point's scenario's)
  double scale_compute = 1;
  core::PlanBudget plan_budget;         // --max-plan-ops, --max-plan-memory
  std::string network_engine = "auto";  // each point's simulate --network-engine
  int jobs = 1;
  std::string cache_dir;  // where point results are kept (sweep_cache_dir)
  ProgressMode progress = ProgressMode::kAuto;
};

// --cache, or $XDG_CACHE_HOME/replisim/sweep, or $HOME/.cache/replisim/sweep.
std::string sweep_cache_dir(const std::string& flag_value);
// The settings of sweep's and whatif's flags. Throws core::InputError (--cache, --progress,
// --network-engine).
SweepSettings sweep_settings(const CliArgs& args);

// --objective-target, when given: sets training.objective.target of `document` (the scenario's
// merged JSON), so every point simulates with it and keys its cache with it. Throws
// core::InputError for a bad value or a scenario without training.objective.
void apply_objective_target(const CliArgs& args, nlohmann::json& document);

// A point resolved and keyed: its scenario document (what the child simulates) and the facts its
// row needs (not the parsed scenario, large at thousands of machines).
struct PreparedPoint {
  core::SweepPoint point;
  nlohmann::json document;
  core::SweepPointFacts facts;
  std::string key;
};

// Resolves `point` and computes its cache key (compiling its plan for the plan hash). Throws
// core::InputError as resolve_sweep_point does, or for --steps not above the point's warm-up.
PreparedPoint prepare_point(const LoadedScenario& base, const nlohmann::json& document,
                            const SweepSettings& settings, const core::SweepPoint& point);

// prepare_point for each point, in order, stopping with core::RunCancelled when the user
// interrupts. Two points that are one configuration (replicas=2 and replicas=x2 of a count of 1)
// are refused: core::InputError naming both.
std::vector<PreparedPoint> prepare_points(const LoadedScenario& base,
                                          const nlohmann::json& document,
                                          const SweepSettings& settings,
                                          const std::vector<core::SweepPoint>& points);

struct SweepCounts {
  size_t cached = 0, computed = 0, failed = 0;
  std::vector<int> exit_codes;  // per point: its simulation's exit code (0 when cached)
};

// The rows of `points` in their order: cached ones read back, the others simulated in child
// processes (results cached as they end; a failed point gets a row with its error and is not
// cached). Progress on standard error per settings.progress. Throws core::RunCancelled after
// killing the children when the user interrupts (cached points stay), core::OutputError when the
// cache cannot be written.
std::vector<core::SweepRow> run_prepared_points(const std::vector<PreparedPoint>& points,
                                                const SweepSettings& settings, SweepCounts* counts);

// The table sweep, merge and whatif print: columns padded to their widest cell, two spaces apart.
void print_columns(const std::vector<std::vector<std::string>>& rows, std::ostream& out);
// `value` with `decimals` digits after the point ("%.*f").
std::string fixed_decimals(double value, int decimals);
// What bound the point, as simulate's "bound by (critical path)" row: "w0 network 51%, compute
// 45%" ("-" when it measured no step).
std::string bound_by_text(const core::SweepRow& row);
// The objective's cells of a table: time to target (s), global steps to it, final accuracy (%);
// "not reached" (or "not computed": no evaluation) and "-" where the target was not reached, "-"
// for each without an objective.
std::vector<std::string> objective_cells(const std::optional<core::SweepObjective>& objective);
// The target as the report writes it: "test accuracy >= 0.8" ("" without an objective).
std::string objective_target_text(const std::optional<core::SweepObjective>& objective);
// The busiest resource: "ps0/nic/up 97% (ps nic)".
std::string bottleneck_text(const core::SweepRow& row);

}  // namespace replisim::cli
