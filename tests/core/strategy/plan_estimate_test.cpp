// The plan's size is estimated before it is built (estimate_plan) and refused above a budget; a
// cluster too large to hold is refused while its machines are read (issue 37: a 361-byte scenario
// grew `plan` to 6 GiB in 15 s).
#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

namespace fs = std::filesystem;

double ops_of(const Plan& plan) {
  double ops = double(plan.sync_replicas.chief_graph.ops.size());
  for (const ClientGraph& c : plan.clients) ops += double(c.ops.size());
  return ops;
}

// On every bundled scenario the estimate lies between 0.8 and 2.5 times the compiled plan's ops
// (what the header promises), and within the default budget.
TEST(PlanEstimate, BundledScenariosAreEstimatedWithinTheirBounds) {
  const fs::path root = fs::path(test::scenario_path("seed")).parent_path();
  int compared = 0;
  for (const char* folder : {"seed", "classroom", "planning", "published"}) {
    for (const fs::directory_entry& entry : fs::directory_iterator(root / folder)) {
      if (entry.path().extension() != ".json") continue;
      const Scenario s = load_scenario(entry.path().string());
      for (const std::string& strategy : strategy_names()) {
        Plan plan;
        try {
          plan = compile_plan(s, strategy, {});
        } catch (const InputError&) {
          continue;  // for the other strategy
        }
        const PlanEstimate e = estimate_plan(s, strategy);
        const double ratio = e.ops / ops_of(plan);
        EXPECT_GE(ratio, 0.8) << entry.path() << " " << strategy << ": " << e.ops << " ops";
        EXPECT_LE(ratio, 2.5) << entry.path() << " " << strategy << ": " << e.ops << " ops";
        EXPECT_LT(e.ops, PlanBudget().max_ops);
        EXPECT_EQ(e.devices, double(plan.platform.devices.size()));
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 30);
}

nlohmann::json big_cluster(int machines, int gpus_per_machine) {
  nlohmann::json machine = test::machine("w", "1 TFLOPS", {}, "10 Gbps");
  machine["count"] = machines;
  machine["gpus"] = {{"count", gpus_per_machine}, {"speed", "10 TFLOPS"}};
  return {{"name", "big"},
          {"cluster", {{"machines", {machine}}}},
          {"model", {{"preset", "resnet50"}}},
          {"training", {{"batch_per_replica", 32}, {"replicas", "w*/gpu*"}, {"ps", {"w0/cpu"}}}}};
}

// 100,000 machines of 1,024 GPUs: refused while the machines are read, at once, naming the count.
TEST(PlanEstimate, AClusterTooLargeToHoldIsRefusedWhileItIsRead) {
  const auto start = std::chrono::steady_clock::now();
  try {
    parse_scenario(big_cluster(100000, 1024), "big.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/cluster/machines/0/count");
    EXPECT_NE(e.message().find("102500000 devices"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

// 10,000 machines of 8 GPUs (165 s and 1.85 GiB before): refused before compiling, in one line
// that gives the estimate and the flag; a larger budget lets the same scenario through the check.
TEST(PlanEstimate, APlanAboveTheBudgetIsRefusedNamingTheFlag) {
  const Scenario s = parse_scenario(big_cluster(10000, 8), "big.json");
  try {
    compile_plan(s, "between_graph", {});
    ADD_FAILURE() << "compiled";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "--max-plan-ops");
    EXPECT_NE(e.message().find("80,000 towers in 80,000 clients"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("--max-plan-ops raises it"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  const PlanEstimate e = estimate_plan(s, "between_graph");
  PlanBudget larger;
  larger.max_ops = 2 * e.ops;
  larger.max_bytes = 2 * e.bytes;
  EXPECT_NO_THROW(require_within_budget(e, larger));
  PlanBudget small_memory;
  small_memory.max_bytes = e.bytes / 2;
  small_memory.max_ops = 2 * e.ops;
  try {
    require_within_budget(e, small_memory);
    ADD_FAILURE() << "within the budget";
  } catch (const InputError& error) {
    EXPECT_EQ(error.json_path(), "--max-plan-memory");
  }
}

}  // namespace
}  // namespace replisim::core
