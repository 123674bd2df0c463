// A sweep point's training objective (training.objective, issue 40): the time and global steps to
// the target and the final accuracy, read from the point's simulate --json summary
// (`runs[0].objective`, core/metrics/report.cpp), and how a sweep's JSON and CSV files hold them
// (docs/capacity-planning.md#results). The target may be overridden by --objective-target.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/json_cursor.h"

namespace replisim::core {

struct SweepObjective {
  std::string target;  // "accuracy" (reached at >= target_value) or "loss" (at <= target_value)
  double target_value = 0;
  int evaluations = 0;  // 0: the run computed no evaluation (a plan the backend does not value)
  // The first evaluation that reached the target: simulated seconds from the run's start and
  // the global step it evaluated; unset when none did.
  std::optional<double> time_to_target_s;
  std::optional<int64_t> global_steps_to_target;
  double final_accuracy = 0;  // fraction of the test set, at the last evaluation
  double final_loss = 0;      // mean cross-entropy (nats), at the last evaluation
};

// The objective of a summary's run (`run` is `runs[0]`); unset when the run has none (its
// scenario has no training.objective). Throws InputError(file, json path) on a malformed one.
std::optional<SweepObjective> sweep_objective_from_summary(const JsonCursor& run);

// A row's "objective" in the sweep's JSON: null, or {"target", "target_value", "evaluations",
// "time_to_target_s" (null: not reached), "global_steps_to_target" (null), "final_accuracy",
// "final_loss"}.
nlohmann::json sweep_objective_to_json(const std::optional<SweepObjective>& objective);
// Reads what sweep_objective_to_json wrote (`row` is the row; a row without the key: unset).
std::optional<SweepObjective> sweep_objective_from_json(const JsonCursor& row);

// The CSV cells of time_to_target_s, global_steps_to_target and final_accuracy, each after a
// comma: empty without an objective; the first two empty when the target was not reached, the
// third when nothing was evaluated.
std::string sweep_objective_csv_cells(const std::optional<SweepObjective>& objective);
inline constexpr const char* kSweepObjectiveCsvHeader =
    "time_to_target_s,global_steps_to_target,final_accuracy";
inline constexpr int kSweepObjectiveCsvColumns = 3;

// An --objective-target flag's value, "accuracy=0.8" or "loss=0.35": the target's JSON for
// training.objective.target ({"accuracy": 0.8}). Throws InputError naming `flag` for another kind,
// a value that is not a number, or one out of the scenario's range (accuracy in (0, 1], loss in
// (0, 1e6]).
nlohmann::json parse_objective_target(const std::string& text, const std::string& flag);

// `document` (a scenario) with training.objective.target set to `target` (parse_objective_target's
// result). Throws InputError(file, "/training/objective", ...) when the scenario has no objective.
void set_objective_target(nlohmann::json& document, const nlohmann::json& target,
                          const std::string& file, const std::string& flag);

}  // namespace replisim::core
