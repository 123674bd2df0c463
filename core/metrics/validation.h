// Predicted against measured: the comparison `replisim validate` prints (docs/validation-real.md).
// One predicted run (the simulator's trace of a plan) and N measured runs (real traces of the same
// plan) are compared per metric (throughput, step time p50/p95, update interval, staleness, bytes
// per PS) and per phase of the steps (compute, pull, push, apply, token, other), the ops joined by
// (role, step, op name); the per-step step-time distributions of each client are compared by
// their Kolmogorov–Smirnov distance. Reads traces only (core/trace, core/metrics), so it compares
// any two backends' runs of one plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/metrics.h"
#include "core/trace/trace.h"

namespace replisim::core {

// What part of a step an event's time is (docs/validation-real.md, "Phases"):
//   compute: input, forward, backward, loss, the in-graph client's split and aggregate;
//   pull: variable reads and the transfers of their values;
//   push: the transfers of gradients; all-reduce: a rank's phases of its collectives (kCollective;
//         their chunk transfers count there, not again);
//   apply: applies, accumulates, takes and the global step increment on the PS;
//   token: sync token dequeues and enqueues and the transfers of tokens;
//   other: any other transfer (the in-graph sub-batches, activations between towers, ...).
enum class Phase { kCompute, kPull, kPush, kApply, kToken, kOther };
inline constexpr int kPhaseCount = 6;
const char* phase_name(Phase phase);
// The phase of a compute, transfer or collective event; nullopt for the other kinds (steps,
// updates, ...) and for an all-reduce's chunk transfers.
std::optional<Phase> phase_of(const TraceEvent& event);

// A value predicted (the mean over the predicted seeds, with their min..max) and measured (over
// the repeats).
struct Compared {
  std::string name;  // "throughput (samples/s)", "compute"
  double predicted = 0;
  double predicted_min = 0;
  double predicted_max = 0;
  double measured_mean = 0;
  double measured_min = 0;
  double measured_max = 0;
  // Set when the runs cannot have the figure (kNoUpdatesText: a forward-only run's update
  // interval, staleness, push and apply): printed instead of the values and the error.
  std::string absent;
  // (measured_mean - predicted) / predicted: > 0 the prediction is too low. NaN when predicted
  // is 0 and measured is not (0 when both are).
  double relative_error() const;
};

// A phase: its time per measured step (summed over the phase's events of every client's steps in
// the measurement window, divided by those steps), and its ops joined by (role, step, op).
struct PhaseComparison {
  Phase phase = Phase::kOther;
  Compared time_per_step_s;
  size_t joined_ops = 0;  // (role, step, op) found in both, over every repeat
  // Over the joined ops whose predicted duration is above kMinJoinedDurationS: mean |error|,
  // the worst op and its error, and the signed mean error (> 0: measured longer than predicted).
  double mean_abs_percentage_error = 0;
  double worst_error = 0;
  std::string worst_op;  // "worker0 step 12 forward/conv1"
  double bias = 0;
  // Durations of the joined ops (s): 50th and 95th percentiles, predicted and measured.
  double predicted_p50_s = 0, predicted_p95_s = 0;
  double measured_p50_s = 0, measured_p95_s = 0;
};

// Joined ops shorter than this in the prediction are left out of the percentage errors (a
// zero-cost read or a token handed over at once has no meaningful relative error). Seconds.
inline constexpr double kMinJoinedDurationS = 1e-6;

// Per client: the Kolmogorov–Smirnov distance (sup |F_pred - F_meas|, in [0, 1]) between its
// predicted step times in the window and its measured ones (every repeat pooled).
struct StepDistribution {
  std::string client;
  size_t predicted_steps = 0, measured_steps = 0;
  double ks_distance = 0;
};

// training.objective's curves, predicted against measured (issue 40): the time and global steps
// to the target and the final accuracy as metrics; and the accuracy curves' distance, in points
// of accuracy (0.01 = 1 point). Over global steps: each measured evaluation against the predicted
// one of the same global step (evaluations come every evaluate_every global steps in both): near
// zero when the updates land in the same order. Over time: each measured evaluation against the
// predicted curve at the same instant (its last evaluation at or before it): the timing error.
struct ObjectiveComparison {
  std::string target;  // "test accuracy >= 0.7500"
  Compared time_to_target_s;
  Compared global_steps_to_target;
  Compared final_accuracy;
  // Runs that reached the target: the predicted seeds', the measured repeats'.
  int predicted_reached = 0, measured_reached = 0;
  int measured_evaluated = 0;  // repeats that recorded evaluations (0: the curves are not compared)
  size_t joined_by_global_step = 0;  // (measured evaluation, predicted one) pairs, all repeats
  double max_distance_by_global_step = 0, mean_distance_by_global_step = 0;
  size_t joined_by_time = 0;
  double max_distance_by_time = 0, mean_distance_by_time = 0;
  // The targets: the predicted time to target within kTimeToTargetTolerance of the
  // measured mean, or within the measured min..max where that is wider (met too when no run of
  // either side reached the target: nothing to compare); the curves over global steps within
  // kCurveTolerancePoints at every joined evaluation.
  bool time_to_target_within = false;
  bool curves_within = false;
};
inline constexpr double kTimeToTargetTolerance = 0.10;
inline constexpr double kCurveTolerancePoints = 0.01;

// The comparison of the runs' objective curves; nullopt when the predicted run has no objective.
std::optional<ObjectiveComparison> compare_objective(const std::vector<const Trace*>& predicted,
                                                     const std::vector<const Trace*>& measured);

struct Validation {
  std::string scenario, strategy;
  int repeats = 0;
  int seeds = 1;                  // predicted runs (one per seed)
  std::vector<Compared> metrics;  // throughput, step p50, step p95, update interval, staleness,
                                  // bytes per PS (max)
  std::vector<PhaseComparison> phases;  // the six phases, in Phase order
  std::vector<StepDistribution> clients;
  // training.objective's curves (when the plan has one); its targets join the verdict.
  std::optional<ObjectiveComparison> objective;
  // The faults and restarts of the runs, predicted against measured, a line each ("worker1
  // dies: predicted at 4.000 s (lost 350 ms of work), measured at 4.003 s (lost 280 ms ..
  // 410 ms)"); and the runs' own warnings (too few measured steps, ...), each once, saying whose.
  std::vector<std::string> faults;
  // training.steps "auto": where the predicted run and each real one stopped ("predicted: +-0.89%
  // after 364 updates, stopped at 6.612 s", "real run 1: ..."); empty for a fixed step count.
  std::vector<std::string> steady_states;
  std::vector<std::string> warnings;
  // What the host did meanwhile, a line each, set by the caller that ran the real runs (validate:
  // how the runs' tasks shared the cores, the host's load during them, and compute_mismatch's
  // line with the load that explains it).
  std::vector<std::string> host;
  double tolerance = 0;  // relative (0.08: 8%)
  // Within tolerance: throughput and step time p50 errors (the headline figures; the others are
  // listed with their errors for a person to judge), and with an objective, its two targets.
  bool within_tolerance = false;
  std::vector<std::string> outside;  // the headline metrics outside the tolerance
};

// The Kolmogorov–Smirnov two-sample distance of `a` and `b` (0 when either is empty).
double ks_distance(std::vector<double> a, std::vector<double> b);

// Compares `predicted` (one simulated trace per seed; the first of the plan the real runs ran, the
// others of the same scenario with the next seeds, whose start-up stagger and jitter draws move a
// prediction of async workers by tens of percent) with `measured` (one trace per repeat). Each
// predicted figure is the mean over the seeds (with their range); ops are joined with the first
// seed's; step times of every seed are pooled for the Kolmogorov–Smirnov distance. Throws
// InputError(source, ...) as compute_metrics does, when `measured` is empty or a trace is of
// another plan (meta.plan_hash differs), and when a run has no step wholly inside its measurement
// window (there is then nothing to compare).
Validation validate_runs(const std::vector<const Trace*>& predicted,
                         const std::vector<const Trace*>& measured, double tolerance,
                         const std::string& source = "<trace>");

// The transfers (the pull and push phases that took time in the prediction) "match" within this
// relative error: the document's bound on the worst validation error (docs/validation-real.md).
inline constexpr double kTransfersMatch = 0.15;

// When the compute phase is off by more than the tolerance while every transfer phase matches
// (kTransfersMatch), and there are transfers to match: "compute ran 1.52× slower than calibrated"
// (or "faster"): the machine's cores ran at another speed than the calibration's, which the
// links did not see (a neighbour's load, a frequency change). "" otherwise.
std::string compute_mismatch(const Validation& v);

// The validation as JSON (validate --json; read back by --baseline), and the report's text.
// `baseline`: an earlier validation's JSON of the same scenario and strategy, whose errors are
// shown beside today's ("was +12.0%").
nlohmann::json validation_to_json(const Validation& v);
std::string format_validation(const Validation& v, const nlohmann::json* baseline = nullptr);
// The same as Markdown tables under a "### <scenario> (<strategy>, N runs)" heading
// (validate --markdown; docs/validation-real.md is made of these).
std::string format_validation_markdown(const Validation& v,
                                       const nlohmann::json* baseline = nullptr);

}  // namespace replisim::core
