// What the commands that run a scenario share (simulate, run, plan, validate, --seeds, calibrate,
// sweep and whatif points): the core run pipeline (core/pipeline/run_pipeline.h) with the
// command line's flags, and the provenance every output records.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_args.h"
#include "core/pipeline/run_pipeline.h"

namespace replisim::cli {

using core::LoadedScenario;

// core::load_run_scenario.
inline LoadedScenario load(const std::string& file) {
  return core::load_run_scenario(file);
}

// {"replisim", "scenario_file", "scenario_hash", "seed", "command_line"} (docs/cli.md).
nlohmann::json provenance(const CliArgs& args, const LoadedScenario& loaded);

// The pipeline's request from the flags: the selected strategies, --steps, --seed,
// --scale-compute, the plan budget, --strict's memory check, and (`real`: the plans run as
// processes) what a real run refuses, with --isolate's shaped links.
core::PlanRequest plan_request(const CliArgs& args, bool real);

// core::prepare_plans(loaded, plan_request(args, real)), without the objective data check (the
// plans of `plan`, or compiled again for a hash or another seed). Throws core::InputError.
std::vector<core::Plan> compile_plans(const LoadedScenario& loaded, const CliArgs& args,
                                      bool real = false);

}  // namespace replisim::cli
