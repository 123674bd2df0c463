// What the commands that compile a scenario share (simulate, run, plan, validate): the scenario
// loaded with its includes, the provenance every output records, and its plans.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_args.h"
#include "core/backend/backend.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"

namespace replisim::cli {

struct LoadedScenario {
  core::Scenario scenario;
  std::string hash;                // FNV-1a of the canonical JSON (whitespace-independent)
  std::vector<std::string> files;  // the scenario and every file it includes
};

// Reads and parses the scenario file and its includes. Throws core::InputError naming the file
// and JSON path.
LoadedScenario load(const std::string& file);

// {"replisim", "scenario_file", "scenario_hash", "seed", "command_line"} (docs/cli.md).
nlohmann::json provenance(const CliArgs& args, const LoadedScenario& loaded);

// The plans a command runs: the scenario (with --steps in place of its training.steps) compiled
// for each selected strategy with --seed and --scale-compute. Throws core::InputError.
std::vector<core::Plan> compile_plans(const LoadedScenario& loaded, const CliArgs& args);

// --strict: a GPU that cannot hold its share of `plan` is core::InputError at its "memory" field.
void require_memory_fits(const core::Scenario& scenario, const core::Plan& plan);

// What a real run of `plans` (compile_plans') refuses, as core::InputError naming the file and
// path: training.steps "auto" with a job restart (training.recovery: the estimate would start
// again in the restarted incarnation), and on loopback (no --isolate) a link fault.
void refuse_what_real_runs_cannot_do(const LoadedScenario& loaded, const CliArgs& args,
                                     const std::vector<core::Plan>& plans);

// core::run_to_trace, but an InputError the backend raises at a plan's "/faults/<i>" without a
// file is raised again at the scenario fault it came from, naming its file and path.
core::Trace run_naming_faults(core::Backend& backend, const core::Plan& plan,
                              const core::RunOptions& options, const LoadedScenario& loaded);

}  // namespace replisim::cli
