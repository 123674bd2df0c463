// A human-readable summary of a plan (what `replisim plan` prints without --json).
#pragma once

#include <string>

#include "core/plan/plan.h"

namespace replisim::core {

// Platform, roles, variables per PS, and per client graph: op counts by kind, work per device
// and bytes per device pair (the transfers partitioning inserted).
std::string format_plan(const Plan& plan);

}  // namespace replisim::core
