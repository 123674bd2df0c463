// Steady-state stopping: the batch-means estimator against hand-computed intervals, and the
// scenario fields that ask for it.
#include "core/runtime/steady_state.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/plan/plan_text.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

TEST(SteadyState, EvenlySpacedUpdatesGiveTheirRateAndAQuantisationInterval) {
  SteadyStateEstimator e;
  // 400 updates of 10 samples, one every 10 ms from t = 5 ms: 1,000 samples/s.
  for (int i = 1; i <= 400; ++i) e.add_update(0.01 * i - 0.005, 10);
  const SteadyStateEstimator::Estimate est = e.estimate(0, 4.0);
  ASSERT_TRUE(est.valid);
  EXPECT_EQ(est.updates, 400);
  EXPECT_NEAR(est.throughput, 1000, 1e-9);
  // 20 batches of 0.2 s hold 20 updates each (none on an edge): no spread between the batches,
  // so the interval is the resolution of 400 whole updates.
  EXPECT_NEAR(est.half_width_fraction, 1.0 / 400, 1e-12);
  EXPECT_NEAR(est.half_width, 1000.0 / 400, 1e-9);
}

TEST(SteadyState, HalfWidthIsStudentTOverTheBatchesSpread) {
  SteadyStateEstimator e;
  // Batches of 1 s alternate 5 and 3 updates of 1 sample (at the batch's middle): mean 4 samples/s,
  // sample standard deviation sqrt(20 / 19), half width 2.093 x that / sqrt(20).
  for (int b = 0; b < 20; ++b) {
    const int n = b % 2 == 0 ? 5 : 3;
    for (int k = 0; k < n; ++k) e.add_update(b + 0.1 + 0.1 * k, 1);
  }
  const SteadyStateEstimator::Estimate est = e.estimate(0, 20);
  ASSERT_TRUE(est.valid);
  EXPECT_NEAR(est.throughput, 4, 1e-12);
  const double half_width = 2.093 * std::sqrt(20.0 / 19.0) / std::sqrt(20.0);
  EXPECT_NEAR(est.half_width, half_width, 1e-12);
  EXPECT_NEAR(est.half_width_fraction, half_width / 4, 1e-12);
}

TEST(SteadyState, TooFewUpdatesGiveNoEstimateAndDiscardDropsRolledBackOnes) {
  SteadyStateEstimator e;
  for (int i = 1; i <= SteadyStateEstimator::kMinUpdates - 1; ++i) e.add_update(i, 1);
  EXPECT_FALSE(e.estimate(0, 100).valid);
  e.add_update(100, 1);
  EXPECT_TRUE(e.estimate(0, 100).valid);
  // Updates in (10, 30] rolled back: 60 left, the window's throughput falls with them.
  e.discard(10, 30);
  const SteadyStateEstimator::Estimate est = e.estimate(0, 100);
  EXPECT_EQ(est.updates, SteadyStateEstimator::kMinUpdates - 20);
  EXPECT_FALSE(est.valid);
  EXPECT_NEAR(est.throughput, 0.6, 1e-12);
  // Only updates ending in (start, now] count, as the metrics count them.
  EXPECT_EQ(e.estimate(10, 50).updates, 20);
}

nlohmann::json with_training(const nlohmann::json& training) {
  nlohmann::json t = {{"replicas", {"pc1/gpu0"}}};
  t.update(training, true);
  return test::scenario_json({test::machine("pc1", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps")},
                             test::one_layer_model(1e6, "1 GFLOP"), t);
}

void expect_error(const nlohmann::json& training, const std::string& path,
                  const std::string& needle) {
  try {
    parse_scenario(with_training(training), "s.json");
    ADD_FAILURE() << "expected an error at " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
  }
}

TEST(SteadyState, AutoStepsReadTheirBoundsAndRefuseBadOnes) {
  const Scenario s = parse_scenario(with_training({{"steps", "auto"}}), "s.json");
  EXPECT_TRUE(s.training.steady_state.enabled);
  EXPECT_EQ(s.training.steps, 1000);  // max_steps' default
  EXPECT_DOUBLE_EQ(s.training.steady_state.tolerance, 0.01);
  const Scenario t = parse_scenario(
      with_training({{"steps", "auto"}, {"max_steps", 300}, {"steady_tolerance", 0.02}}), "s.json");
  EXPECT_EQ(t.training.steps, 300);
  EXPECT_DOUBLE_EQ(t.training.steady_state.tolerance, 0.02);
  // The plan says so (its steps are the bound).
  EXPECT_NE(format_plan(compile_plan(t, "between_graph", {}))
                .find("steps: auto, stopping once the throughput's 95% interval is within +-2%, "
                      "at most 300 ("),
            std::string::npos);
  EXPECT_FALSE(
      parse_scenario(with_training({{"steps", 50}}), "s.json").training.steady_state.enabled);

  expect_error({{"steps", "auto"}, {"warmup_steps", 20}, {"max_steps", 20}}, "/training/max_steps",
               "greater than warmup_steps");
  expect_error({{"steps", "auto"}, {"steady_tolerance", 0}}, "/training/steady_tolerance",
               "strictly between 0 and 1");
  expect_error({{"steps", "auto"}, {"steady_tolerance", 1}}, "/training/steady_tolerance",
               "strictly between 0 and 1");
  expect_error({{"steps", "auto"}, {"steady_tolerance", -0.5}}, "/training/steady_tolerance",
               "strictly between 0 and 1");
  expect_error({{"steps", 50}, {"max_steps", 100}}, "/training/max_steps",
               "only with \"steps\": \"auto\"");
  expect_error({{"steps", "forever"}}, "/training/steps", "\"auto\"");
}

}  // namespace
}  // namespace replisim::core
