// The names of the strategies the registry holds (core/strategy/strategy.h), for code that lists
// or checks them without compiling plans (the viewer's lists, the classroom catalog).
#pragma once

#include <string>
#include <vector>

namespace replisim::core {

// "in_graph", "between_graph", ..., in the registry's order.
std::vector<std::string> strategy_names();
bool is_strategy_name(const std::string& name);

}  // namespace replisim::core
