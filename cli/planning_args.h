// The capacity-planning commands' flags (sweep, whatif, merge, plot; docs/cli.md), defined beside
// the other commands' in cli_args.cpp.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/cli_args.h"

namespace replisim::cli {

// Values kept as typed, checked by check_planning_values so that each message names its flag.
struct PlanningRaw {
  std::string jobs, shard, target;
};

// Adds the four subcommands to `app`. `add_plan_knobs` adds --strategy, --seed, --steps and
// --scale-compute (as simulate has them) to a subcommand.
void define_planning_commands(CLI::App& app, CliArgs& args, PlanningRaw& raw,
                              const std::function<void(CLI::App*)>& add_plan_knobs);

// --jobs (1..256; default: the cores of this machine) and --shard I/N. Throws core::InputError.
void check_planning_values(CliArgs& args, const PlanningRaw& raw);

}  // namespace replisim::cli
