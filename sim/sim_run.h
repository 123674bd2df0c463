// Executes a plan inside one SimGrid engine: per device, a compute actor (one op at a time, the
// GPU stream / CPU), a sender actor and a receiver actor (transfers run concurrently); per client
// a step loop driven by op completions. Records every event into a core::Trace.
// One SimRun per process (SimGrid allows one engine per process): use SimBackend, which forks.
#pragma once

#include "core/plan/plan.h"
#include "core/trace/trace.h"

namespace replisim::sim {

// Runs `plan` (validated) to completion in this process and returns its trace.
// Throws core::BackendError when the simulation deadlocks before every client finished.
// `engine_wall_s`, when given, receives the wall-clock seconds SimGrid's engine ran.
core::Trace run_plan_in_this_process(const core::Plan& plan, double* engine_wall_s = nullptr);

}  // namespace replisim::sim
