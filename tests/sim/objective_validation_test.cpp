// validate's comparison of training.objective's curves (core/metrics/validation.h,
// ObjectiveComparison; issue 40): a run against itself is within every target; a measured run
// whose curve is slower in time, or lower in accuracy, falls outside, and the verdict says which.
#include <gtest/gtest.h>

#include "core/metrics/validation.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

nlohmann::json validated_scenario() {
  nlohmann::json replicas = nlohmann::json::array();
  std::vector<nlohmann::json> machines = {test::machine("ps", "400 GFLOPS", {}, "10 Gbps")};
  for (int w = 0; w < 2; ++w) {
    machines.push_back(
        test::machine("w" + std::to_string(w), "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps"));
    replicas.push_back("w" + std::to_string(w) + "/gpu0");
  }
  const nlohmann::json objective = test::synthetic_objective(0.7, "objective", 3);
  return test::scenario_json(machines, {{"preset", "resnet50"}},
                             {{"replicas", replicas},
                              {"ps", {"ps/cpu"}},
                              {"steps", 60},
                              {"warmup_steps", 2},
                              {"objective", objective}});
}

// `trace` with its evaluations moved: times x `time_factor`, accuracies + `accuracy_shift`.
Trace moved(Trace trace, double time_factor, double accuracy_shift) {
  const uint32_t accuracy = trace.find("accuracy");
  const uint32_t loss = trace.find("loss");
  for (CounterSample& s : trace.counters) {
    if (s.name == accuracy || s.name == loss) s.time_s *= time_factor;
    if (s.name == accuracy) s.value += accuracy_shift;
  }
  return trace;
}

TEST(ObjectiveValidation, ARunAgainstItselfIsWithinEveryTarget) {
  const Trace trace = test::simulate_trace(validated_scenario(), "between_graph");
  const Validation v = validate_runs({&trace}, {&trace, &trace}, 0.08);
  ASSERT_TRUE(v.objective.has_value());
  const ObjectiveComparison& o = *v.objective;
  EXPECT_EQ(o.measured_evaluated, 2);
  EXPECT_EQ(o.measured_reached, 2);
  EXPECT_GT(o.time_to_target_s.predicted, 0);
  EXPECT_EQ(o.time_to_target_s.relative_error(), 0);
  EXPECT_EQ(o.max_distance_by_global_step, 0);
  EXPECT_EQ(o.max_distance_by_time, 0);
  EXPECT_EQ(o.joined_by_global_step, 2 * size_t(objective_metrics(trace)->evaluations));
  EXPECT_TRUE(o.time_to_target_within);
  EXPECT_TRUE(o.curves_within);
  EXPECT_TRUE(v.within_tolerance) << format_validation(v);
  const std::string text = format_validation(v);
  EXPECT_NE(text.find("objective (test accuracy >= 0.7000)"), std::string::npos) << text;
  EXPECT_NE(text.find("accuracy over global steps: max 0.00 points apart"), std::string::npos)
      << text;
}

TEST(ObjectiveValidation, ASlowerOrLowerMeasuredCurveIsOutside) {
  const Trace trace = test::simulate_trace(validated_scenario(), "between_graph");
  // 30% slower in time: the same curve over global steps, the time to target outside 10%.
  const Trace slower = moved(trace, 1.3, 0);
  Validation v = validate_runs({&trace}, {&slower}, 0.08);
  ASSERT_TRUE(v.objective.has_value());
  EXPECT_FALSE(v.objective->time_to_target_within);
  EXPECT_TRUE(v.objective->curves_within);
  EXPECT_GT(v.objective->max_distance_by_time, 0);
  EXPECT_FALSE(v.within_tolerance);
  EXPECT_NE(format_validation(v).find("time to target +30.0%"), std::string::npos)
      << format_validation(v);
  // 2 points lower over global steps: outside the 1-point curve target.
  const Trace lower = moved(trace, 1.0, -0.02);
  v = validate_runs({&trace}, {&lower}, 0.08);
  EXPECT_FALSE(v.objective->curves_within);
  EXPECT_NEAR(v.objective->max_distance_by_global_step, 0.02, 1e-9);
  EXPECT_NE(format_validation(v).find(
                "accuracy over global steps 2.00 points apart (its bound: 1 point)"),
            std::string::npos)
      << format_validation(v);
  // Neither side reached the target: they agree, nothing to compare, not outside.
  Trace never = moved(trace, 1.0, -1.0);
  v = validate_runs({&never}, {&never}, 0.08);
  EXPECT_EQ(v.objective->predicted_reached, 0);
  EXPECT_TRUE(v.objective->time_to_target_within);
  EXPECT_TRUE(v.within_tolerance) << format_validation(v);
  // A measured run with no evaluation (a backend that does not compute it): not compared.
  Trace none = trace;
  none.counters.clear();
  v = validate_runs({&trace}, {&none}, 0.08);
  ASSERT_TRUE(v.objective.has_value());
  EXPECT_EQ(v.objective->measured_evaluated, 0);
  EXPECT_NE(format_validation(v).find("recorded no evaluation"), std::string::npos);
}

}  // namespace
}  // namespace replisim::core
