#include "core/model/placement.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

double max_over_mean(const std::vector<double>& bytes, const std::vector<int>& shard, int n) {
  std::vector<double> load(size_t(n), 0.0);
  for (size_t i = 0; i < bytes.size(); ++i) load[size_t(shard[i])] += bytes[i];
  const double mean = std::accumulate(load.begin(), load.end(), 0.0) / n;
  return *std::max_element(load.begin(), load.end()) / mean;
}

// Four PS, variables in creation order: one holding 30% of the bytes, then seven of 10%.
const std::vector<double> kSkewed = {30, 10, 10, 10, 10, 10, 10, 10};

TEST(Placement, RoundRobinFollowsCreationOrder) {
  const std::vector<int> shard = find_placement_policy("round_robin")->assign(kSkewed, 4);
  EXPECT_EQ(shard, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_NEAR(max_over_mean(kSkewed, shard, 4), 1.6, 1e-12);
}

TEST(Placement, GreedyByBytesBalances) {
  const std::vector<int> shard = find_placement_policy("greedy_by_bytes")->assign(kSkewed, 4);
  EXPECT_NEAR(max_over_mean(kSkewed, shard, 4), 1.2, 1e-12);
}

// The same through a compiled plan, where global_step (8 bytes) is created first on PS 0.
TEST(Placement, PlansReportBytesPerPs) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < kSkewed.size(); ++i) {
    layers.push_back({{"name", "l" + std::to_string(i)},
                      {"params", kSkewed[i] * 1e6},
                      {"forward_flops_per_sample", "1 MFLOP"},
                      {"activation_bytes_per_sample", "1 kB"}});
  }
  for (const auto& [policy, expected] : std::vector<std::pair<std::string, double>>{
           {"round_robin", 1.6}, {"greedy_by_bytes", 1.2}}) {
    const nlohmann::json doc =
        test::scenario_json({test::machine("w", "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps"),
                             test::machine("p", "1 TFLOPS", {}, "10 Gbps")},
                            {{"layers", layers}},
                            {{"replicas", {"w/gpu0"}},
                             {"ps", {"p/cpu", "p/cpu", "p/cpu", "p/cpu"}},
                             {"variable_placement", policy}});
    const Plan plan = compile_plan(test::parse(doc), "between_graph", {});
    std::vector<double> load(4, 0.0);
    for (const Variable& v : plan.variables) load[size_t(v.ps)] += v.bytes;
    const double mean = std::accumulate(load.begin(), load.end(), 0.0) / 4;
    EXPECT_NEAR(*std::max_element(load.begin(), load.end()) / mean, expected, 1e-6) << policy;
    EXPECT_EQ(plan.variables.front().name, "global_step");
    EXPECT_EQ(plan.variables.front().ps, 0);
  }
}

}  // namespace
}  // namespace replisim::core
