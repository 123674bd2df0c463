// The names of the strategies the registry holds (core/strategy/strategy.h), for code that lists
// or checks them without compiling plans (the viewer's lists, the classroom catalog).
#pragma once

#include <string>
#include <vector>

namespace replisim::core {

// "in_graph", "between_graph", ..., in the registry's order.
std::vector<std::string> strategy_names();
bool is_strategy_name(const std::string& name);

// The strategies a --strategy value (or a classroom entry's `strategy`) selects, in run order:
// "both" is in_graph then between_graph (TensorFlow's two replications, the comparison the seed
// scenario and the README make), "all" every strategy of the registry in its order, otherwise a
// comma-separated list of registry names ("in_graph,allreduce") in the order given. Throws
// InputError("", `flag`, ...) for an empty, unknown or repeated name, listing the valid values.
std::vector<std::string> parse_strategy_list(const std::string& text,
                                             const std::string& flag = "--strategy");
// "in_graph, between_graph, allreduce, a comma-separated list of them, both (in_graph and
// between_graph) or all": what parse_strategy_list takes, for help texts and errors.
std::string strategy_list_help();

}  // namespace replisim::core
