// CPU cores: a CPU runs up to `cores` ops at once (a PS applying several variables in parallel),
// and the input pipeline can be given per core.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::machine;

// Four async workers, one PS whose applies are the bottleneck (10 kFLOP per parameter, four
// layers of 1 M parameters on 1 TFLOPS cores: 10 ms per apply, 160 ms of applies per round of
// the four workers' steps on one core).
nlohmann::json ps_bound(int ps_cores) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  machines[0]["cpu"]["cores"] = ps_cores;
  for (int i = 0; i < 4; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"10 TFLOPS"}, "100 Gbps"));
  }
  nlohmann::json model = {{"layers", nlohmann::json::array()}};
  for (int l = 0; l < 4; ++l) {
    model["layers"].push_back({{"name", "l" + std::to_string(l)},
                               {"params", 1e6},
                               {"forward_flops_per_sample", "1 MFLOP"},
                               {"activation_bytes_per_sample", "4 kB"}});
  }
  return test::scenario_json(
      machines, model,
      {{"replicas", "w*/gpu0"},
       {"ps", {"p/cpu"}},
       {"steps", 20},
       {"warmup_steps", 4},
       {"costs", {{"apply_flop_per_param", 10000}, {"input_samples_per_s", 0}}}});
}

TEST(CpuCores, APsWithMoreCoresAppliesInParallel) {
  const core::RunMetrics one = test::simulate(ps_bound(1), "between_graph");
  const core::RunMetrics four = test::simulate(ps_bound(4), "between_graph");
  EXPECT_EQ(one.bottleneck.name, "p/cpu");
  EXPECT_GT(one.bottleneck.utilization, 0.9);
  EXPECT_GT(four.throughput_samples_per_s, 3 * one.throughput_samples_per_s);
  for (const core::ResourceUse& d : four.devices) EXPECT_LE(d.utilization, 1 + 1e-9) << d.name;
}

TEST(CpuCores, InputPipelinePerCoreUsesEveryCore) {
  // One worker, input-bound: 32 samples at 100 samples/s per core on 8 cores = 40 ms a batch.
  nlohmann::json doc = test::scenario_json(
      {machine("w", "1 TFLOPS", {"100 TFLOPS"}, "100 Gbps"),
       machine("p", "1 TFLOPS", {}, "100 Gbps")},
      test::one_layer_model(1e3, "1 kFLOP"),
      {{"replicas", {"w/gpu0"}},
       {"ps", {"p/cpu"}},
       {"jitter", 0},
       {"costs", {{"input_samples_per_s_per_core", 100}, {"per_message_overhead", "0 s"}}}});
  doc["cluster"]["machines"][0]["cpu"]["cores"] = 8;
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  EXPECT_NEAR(m.step_time_s.mean, 0.040, 0.004);
  doc["training"]["costs"]["input_samples_per_s"] = 100;
  EXPECT_THROW(test::parse(doc), core::InputError);
  doc["training"]["costs"].erase("input_samples_per_s");
  doc["cluster"]["machines"][0]["cpu"]["cores"] = 0;
  EXPECT_THROW(test::parse(doc), core::InputError);
}

}  // namespace
}  // namespace replisim
