// Executes a plan inside one SimGrid engine in this process (SimGrid allows one engine per
// process: use SimBackend, which forks a child for each run).
#pragma once

#include <functional>

#include "core/backend/backend.h"
#include "core/plan/plan.h"
#include "core/trace/trace_sink.h"
#include "sim/sim_settings.h"

namespace replisim::sim {

struct SimResult {
  core::RunOutcome outcome;
  double engine_wall_s = 0;  // wall-clock seconds SimGrid's engine ran
  // Wall-clock seconds before it ran: the engine made, the platform built, the actors created.
  double setup_wall_s = 0;
  SharingStats sharing;  // what the exact sharing model did
};

// Runs `plan` (valid) to completion, emitting its strings, events and counters into `sink`
// (begin() and end() are the caller's), and calling `progress`, when set, every 200 ms of wall
// time or so. Throws core::BackendError when the simulation deadlocks before every client
// finished. `settings`: the network engine and tolerance (sim/sim_settings.h). `finished`, when
// set, gets the result before the engine is torn down (a child that reports it and exits there
// skips the teardown: about a second at a thousand workers); it may not return.
SimResult run_plan_in_this_process(const core::Plan& plan, core::TraceSink& sink,
                                   const std::function<void(const core::RunProgress&)>& progress,
                                   const SimSettings& settings = {},
                                   const std::function<void(const SimResult&)>& finished = {});

}  // namespace replisim::sim
