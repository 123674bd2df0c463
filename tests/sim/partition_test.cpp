// Partitioned variables: one big matrix pins one parameter server under round_robin; cutting it
// into one partition per PS (TF's fixed_size_partitioner) spreads its bytes and its traffic.
#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// One worker (100 Gbps) and four dedicated PS machines behind 10 Gbps NICs; an MLP whose first
// matrix (8192 x 4096 + bias, 134 MB) holds 99.9% of the bytes.
nlohmann::json mlp_doc(const std::string& placement) {
  nlohmann::json training = {{"replicas", {"w/gpu0"}},
                             {"ps",
                              {{"count", 4},
                               {"on", "dedicated"},
                               {"machine",
                                {{"cpu", {{"speed", "1 TFLOPS"}}},
                                 {"nic", {{"bandwidth", "10 Gbps"}, {"latency", "10 us"}}}}}}},
                             {"variable_placement", placement},
                             {"steps", 20},
                             {"warmup_steps", 4},
                             {"costs", "none"}};
  return test::scenario_json({test::machine("w", "1 TFLOPS", {"10 TFLOPS"}, "100 Gbps")},
                             {{"preset", "mlp"}, {"widths", {8192, 4096, 10}}}, training);
}

double max_over_mean(const std::vector<double>& bytes) {
  const double mean = std::accumulate(bytes.begin(), bytes.end(), 0.0) / double(bytes.size());
  return *std::max_element(bytes.begin(), bytes.end()) / mean;
}

TEST(PartitionedVariables, SpreadTheBigMatrixOverEveryPs) {
  const core::RunMetrics rr = test::simulate(mlp_doc("round_robin"), "between_graph");
  const core::RunMetrics parts = test::simulate(mlp_doc("partitioned"), "between_graph");
  ASSERT_EQ(rr.bytes_per_ps.size(), 4u);
  const double total = std::accumulate(rr.bytes_per_ps.begin(), rr.bytes_per_ps.end(), 0.0);
  const double biggest = *std::max_element(rr.bytes_per_ps.begin(), rr.bytes_per_ps.end());
  EXPECT_GE(biggest / total, 0.8);
  EXPECT_LE(max_over_mean(parts.bytes_per_ps), 1.2);
  EXPECT_NEAR(std::accumulate(parts.bytes_per_ps.begin(), parts.bytes_per_ps.end(), 0.0), total,
              1e-6 * total);
  // round_robin: the step follows the big PS's link: pull and push of 134 MB at 10 Gbps.
  const double link_s = 2 * biggest / 1.25e9;
  EXPECT_GE(rr.step_time_s.mean, link_s);
  EXPECT_LE(rr.step_time_s.mean, 1.1 * link_s);
  EXPECT_NE(rr.bottleneck.name.find("ps"), std::string::npos) << rr.bottleneck.name;
  // partitioned: four links carry a quarter each.
  EXPECT_LE(parts.step_time_s.mean, 0.3 * rr.step_time_s.mean);
  EXPECT_GE(parts.step_time_s.mean, link_s / 4);
}

TEST(PartitionedVariables, SmallVariablesStayWholeAndPlansRoundTrip) {
  nlohmann::json doc = mlp_doc("partitioned");
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  // global_step, fc1 in four partitions, fc2 (41 k parameters, under 256 KiB) whole.
  ASSERT_EQ(plan.variables.size(), 6u);
  EXPECT_EQ(plan.variables[1].name, "fc1/part_0");
  EXPECT_EQ(plan.variables[4].name, "fc1/part_3");
  EXPECT_EQ(plan.variables[5].name, "fc2");
  for (int k = 0; k < 4; ++k) EXPECT_EQ(plan.variables[size_t(1 + k)].ps, (1 + k) % 4);
  EXPECT_EQ(core::plan_to_json(core::plan_from_json(core::plan_to_json(plan), "p.json")),
            core::plan_to_json(plan));
  // A threshold above fc1's size keeps it whole.
  doc["training"]["partition_min_bytes"] = "1 GB";
  EXPECT_EQ(core::compile_plan(test::parse(doc), "between_graph", {}).variables.size(), 3u);
}

}  // namespace
}  // namespace replisim
