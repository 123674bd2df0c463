#include "core/model/placement.h"

#include <algorithm>

namespace replisim::core {
namespace {

std::vector<int> round_robin(const std::vector<double>& variable_bytes, int num_ps) {
  std::vector<int> shard(variable_bytes.size());
  for (size_t i = 0; i < shard.size(); ++i) shard[i] = int(i % size_t(num_ps));
  return shard;
}

std::vector<int> greedy_by_bytes(const std::vector<double>& variable_bytes, int num_ps) {
  std::vector<double> load(size_t(num_ps), 0.0);
  std::vector<int> shard(variable_bytes.size());
  for (size_t i = 0; i < shard.size(); ++i) {
    const auto lightest = std::min_element(load.begin(), load.end());
    shard[i] = int(lightest - load.begin());
    *lightest += variable_bytes[i];
  }
  return shard;
}

}  // namespace

const std::vector<PlacementPolicy>& placement_policies() {
  static const std::vector<PlacementPolicy> kPolicies = {
      {"round_robin", "variable i on PS i mod N, in creation order (TF replica_device_setter)",
       round_robin},
      {"greedy_by_bytes",
       "each variable on the PS with the fewest bytes so far (TF GreedyLoadBalancingStrategy)",
       greedy_by_bytes},
      {"partitioned",
       "variables above training.partition_min_bytes cut into one partition per PS (TF "
       "fixed_size_partitioner), then round_robin",
       round_robin, /*partitions=*/true},
  };
  return kPolicies;
}

const PlacementPolicy* find_placement_policy(const std::string& name) {
  for (const PlacementPolicy& p : placement_policies()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> placement_policy_names() {
  std::vector<std::string> names;
  for (const PlacementPolicy& p : placement_policies()) names.push_back(p.name);
  return names;
}

}  // namespace replisim::core
