// What the validation's parts share (validation.cpp, validation_objective.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/metrics/validation.h"

namespace replisim::core::validation_detail {

// The mean of `v` (0 when empty).
double mean_of(const std::vector<double>& v);
// A metric predicted (the mean of `predicted`, with its min..max) against measured (mean, min,
// max). Both must be non-empty.
Compared compare(const std::string& name, const std::vector<double>& predicted,
                 const std::vector<double>& measured);

}  // namespace replisim::core::validation_detail
