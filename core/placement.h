// Variable placement policies: which parameter server shard holds each global variable.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace replisim::core {

// A registered placement policy. `assign` takes the byte size of every variable in creation
// order and the number of PS shards (> 0) and returns the shard index of each variable.
struct PlacementPolicy {
  std::string name;
  std::string description;
  std::function<std::vector<int>(const std::vector<double>& variable_bytes, int num_ps)> assign;
};

// round_robin: TF's replica_device_setter default: variable i -> shard i mod num_ps.
// greedy_by_bytes: TF's GreedyLoadBalancingStrategy with byte_size_load_fn: each variable goes,
// in creation order, to the shard holding the fewest bytes so far (lowest index on ties).
const std::vector<PlacementPolicy>& placement_policies();
const PlacementPolicy* find_placement_policy(const std::string& name);
std::vector<std::string> placement_policy_names();

}  // namespace replisim::core
