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
  // partitioned: before `assign`, every variable larger than training.partition_min_bytes is cut
  // into one partition per PS (TF's fixed_size_partitioner(num_shards = number of PS)); the
  // partitions are variables of their own, created one after the other.
  bool partitions = false;
};

// round_robin: TF's replica_device_setter default: variable i -> shard i mod num_ps.
// greedy_by_bytes: TF's GreedyLoadBalancingStrategy with byte_size_load_fn: each variable goes,
// in creation order, to the shard holding the fewest bytes so far (lowest index on ties).
// partitioned: large variables cut into one partition per PS, then round_robin over all of
// them (replica_device_setter places each partition as a variable of its own).
const std::vector<PlacementPolicy>& placement_policies();
const PlacementPolicy* find_placement_policy(const std::string& name);
std::vector<std::string> placement_policy_names();

}  // namespace replisim::core
