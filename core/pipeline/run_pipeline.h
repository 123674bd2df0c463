// One run pipeline for every command that runs a scenario — simulate, run, validate, simulate
// --seeds, calibrate, and a sweep's points: load (the file and its includes), compile (each
// strategy, the steps override, seed and compute scale, the plan budget), check (memory under
// --strict, what a real run cannot do), run on a backend (an error at a plan's fault named at the
// scenario's fault), and measure (a measurement error named at the scenario's field, or at the
// flag that gave the steps). The commands keep only their own flags, outputs and reports.
#pragma once

#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/metrics/metrics.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace.h"

namespace replisim::core {

struct LoadedScenario {
  Scenario scenario;
  std::string hash;                // FNV-1a of the canonical merged JSON (whitespace-independent)
  std::vector<std::string> files;  // the scenario and every file it includes
};

// Reads and parses the scenario file and its includes. Throws InputError naming the file and
// JSON path.
LoadedScenario load_run_scenario(const std::string& file);

// What to compile and what to check before anything runs.
struct PlanRequest {
  std::vector<std::string> strategies;  // registry names, in the order the plans come back
  // > 0: replaces training.steps (and a steady-state "auto": a fixed count); must exceed the
  // warm-up. Errors name `steps_flag`.
  int steps = 0;
  std::string steps_flag = "--steps";
  CompileOptions compile;
  // A GPU that cannot hold its share of a plan is bad input at its "memory" field (--strict).
  bool require_memory = false;
  // The plans run for real: refused where a real run cannot do them (run_checks below).
  bool real = false;
  bool shaped_links = false;  // real runs on shaped network namespaces (--isolate netns)
  // The plans are for runs (simulate, run, validate): their objective's data must be there
  // (require_objective_data). False for `plan`, which reads no data.
  bool runs = true;
};

// The scenario compiled for each strategy, then checked (when request.runs, the objective's data
// files open: require_objective_data). Throws InputError naming the file and JSON path (or the
// flag).
std::vector<Plan> prepare_plans(const LoadedScenario& loaded, const PlanRequest& request);

// What a real run of `plans` refuses, as InputError naming the file and path: training.steps
// "auto" with a job restart (training.recovery: the estimate would start again in the restarted
// incarnation), without shaped links a link fault, and with them a machine of several NICs
// (nic.count: one shaped veth per machine). prepare_plans calls it when request.real.
void refuse_what_real_runs_cannot_do(const LoadedScenario& loaded, bool shaped_links,
                                     const std::vector<Plan>& plans);

// A GPU that cannot hold its share of `plan`: InputError at its "memory" field.
void require_memory_fits(const Scenario& scenario, const Plan& plan);
// training.objective's Fashion-MNIST files can be opened (prepare_plans checks it before any run,
// so that a missing data set is the scenario's one line, not a node's failure after the start):
// InputError at /training/objective/data naming the first file that cannot, and why. Checks
// only that each file opens (a truncated or corrupt one is found when a run reads it).
void require_objective_data(const Scenario& scenario);

// run_to_trace, but an InputError the backend raises at a plan's "/faults/<i>" without a file is
// raised again at the scenario fault it came from, naming its file and path.
Trace run_prepared(Backend& backend, const Plan& plan, const RunOptions& options,
                   const LoadedScenario& loaded);

// The InputError a MeasurementError of a run of `request` is to the user: at the scenario field it
// names (its file from `loaded`), or at request.steps_flag when the steps came from the flag
// ("raise --steps (N now)"). Callers that compute metrics their own way (validate_runs) map with
// it.
InputError measurement_input_error(const MeasurementError& e, const LoadedScenario& loaded,
                                   const PlanRequest& request);

// compute_metrics of a fresh run of the plans of `request`: the one figure that can fail on it,
// the measurement window, is InputError at the scenario field it names (its file from
// `loaded`), or at request.steps_flag when the steps came from the flag (whose warnings then say
// "raise --steps (N now)" too). `source` names the trace in other errors (compute_metrics').
RunMetrics measure_run(const Trace& trace, const LoadedScenario& loaded, const PlanRequest& request,
                       const std::string& source);

// compute_metrics, except for a real run that a death from outside (no fault of the plan) cut
// short before its window: its whole run is the window, with a warning saying so. Throws
// MeasurementError as compute_metrics does otherwise, and BackendError when such a run measured
// nothing. `report` reads a run's trace with it, as `run` measured it.
RunMetrics measure_trace(const Trace& trace, const std::string& source);

}  // namespace replisim::core
