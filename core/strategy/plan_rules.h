// A plan held to its strategy's own rules, for code that reads plans without compiling them (a
// real node given a plan file): validate_plan's invariants, which every backend relies on, then
// the rules of the strategy the plan names (its registry entry's check_plan: a parameter server,
// every async client incrementing global_step, the sync modes it has). Only core/plan is needed
// to include this header.
#pragma once

#include <string>

#include "core/plan/plan.h"

namespace replisim::core {

// Throws InputError naming `file` and the JSON path of the first broken rule. A plan of a
// strategy this replisim does not know (Plan::strategy spelled as a registry name, see kinds.h)
// is held to validate_plan's invariants only: the backends run it as the ops it holds.
void check_plan_rules(const Plan& plan, const std::string& file);

}  // namespace replisim::core
