#include "core/metrics/validation.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

TEST(Validation, KolmogorovSmirnovDistance) {
  EXPECT_DOUBLE_EQ(ks_distance({1, 2, 3}, {1, 2, 3}), 0);
  EXPECT_DOUBLE_EQ(ks_distance({1, 2, 3}, {4, 5, 6}), 1);
  // F_a jumps to 1/2 at 1 and 1 at 3; F_b to 1/2 at 2 and 1 at 4: the largest gap is 1/2.
  EXPECT_DOUBLE_EQ(ks_distance({1, 3}, {2, 4}), 0.5);
  EXPECT_DOUBLE_EQ(ks_distance({}, {1}), 0);
  // Ties across the samples count together: at 2 both have reached 2/3 and 1/3.
  EXPECT_NEAR(ks_distance({1, 2, 2}, {2, 3, 4}), 2.0 / 3, 1e-12);
}

TEST(Validation, PhasesOfEvents) {
  TraceEvent e;
  e.kind = EventKind::kCompute;
  e.op = OpKind::kForward;
  EXPECT_EQ(phase_of(e), Phase::kCompute);
  e.op = OpKind::kApply;
  EXPECT_EQ(phase_of(e), Phase::kApply);
  e.op = OpKind::kTakeGradient;
  EXPECT_EQ(phase_of(e), Phase::kApply);
  e.op = OpKind::kTokenDequeue;
  EXPECT_EQ(phase_of(e), Phase::kToken);
  e.kind = EventKind::kTransfer;
  e.op = OpKind::kSend;
  e.producer = OpKind::kReadVariable;
  EXPECT_EQ(phase_of(e), Phase::kPull);
  e.producer = OpKind::kBackward;
  EXPECT_EQ(phase_of(e), Phase::kPush);
  e.producer = OpKind::kTokenEnqueue;
  EXPECT_EQ(phase_of(e), Phase::kToken);
  e.producer = OpKind::kSplit;
  EXPECT_EQ(phase_of(e), Phase::kOther);
  e.kind = EventKind::kStep;
  EXPECT_FALSE(phase_of(e).has_value());
}

class ValidationOfRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const nlohmann::json doc =
        test::scenario_json({test::machine("ps", "100 GFLOPS", {}, "1 Gbps"),
                             test::machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "1 Gbps"),
                             test::machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "1 Gbps")},
                            test::one_layer_model(4e6, "20 GFLOP"),
                            {{"replicas", {"w0/gpu0", "w1/gpu0"}},
                             {"ps", {"ps/cpu"}},
                             {"steps", 20},
                             {"warmup_steps", 3},
                             {"batch_per_replica", 4}});
    predicted_ = new Trace(test::simulate_trace(doc, "between_graph"));
  }
  static void TearDownTestSuite() { delete predicted_; }
  // The predicted trace with every compute op `factor` times longer, later events shifted so that
  // the steps stay whole (a measured run on a slower device, in effect).
  static Trace slowed_compute(double factor) {
    Trace t = *predicted_;
    for (TraceEvent& e : t.events) {
      if (e.kind == EventKind::kCompute && e.op == OpKind::kForward) {
        e.end_s = e.start_s + (e.end_s - e.start_s) * factor;
      }
    }
    return t;
  }
  static Trace* predicted_;
};
Trace* ValidationOfRuns::predicted_ = nullptr;

TEST_F(ValidationOfRuns, ARunAgainstItselfHasNoError) {
  const Validation v = validate_runs({predicted_}, {predicted_, predicted_}, 0.08);
  EXPECT_EQ(v.repeats, 2);
  ASSERT_EQ(v.metrics.size(), 6u);
  for (const Compared& c : v.metrics) EXPECT_EQ(c.relative_error(), 0) << c.name;
  ASSERT_EQ(v.phases.size(), size_t(kPhaseCount));
  for (const PhaseComparison& p : v.phases) {
    EXPECT_EQ(p.time_per_step_s.relative_error(), 0) << phase_name(p.phase);
    EXPECT_EQ(p.mean_abs_percentage_error, 0) << phase_name(p.phase);
  }
  // Both workers pull, compute, push and the PS applies: those phases have joined ops.
  EXPECT_GT(v.phases[int(Phase::kCompute)].joined_ops, 0u);
  EXPECT_GT(v.phases[int(Phase::kPull)].joined_ops, 0u);
  EXPECT_GT(v.phases[int(Phase::kPush)].joined_ops, 0u);
  EXPECT_GT(v.phases[int(Phase::kApply)].joined_ops, 0u);
  ASSERT_EQ(v.clients.size(), 2u);
  for (const StepDistribution& d : v.clients) {
    EXPECT_EQ(d.ks_distance, 0) << d.client;
    EXPECT_EQ(d.measured_steps, 2 * d.predicted_steps);
  }
  EXPECT_TRUE(v.within_tolerance);
  const std::string text = format_validation(v);
  EXPECT_NE(text.find("verdict: within ±8.0%"), std::string::npos) << text;
}

// training.steps "auto": the validation says where the prediction and each real run stopped, in
// the text, the Markdown and the JSON; a fixed step count says nothing of it.
TEST_F(ValidationOfRuns, StepsAutoSaysWhereEachRunStopped) {
  EXPECT_TRUE(validate_runs({predicted_}, {predicted_}, 0.08).steady_states.empty());
  Trace stopped = *predicted_, unsteady = *predicted_;
  SteadyStateRecord record;
  record.tolerance = 0.01;
  record.max_steps = 20;
  record.converged = true;
  record.stop_s = 1.5;
  record.half_width_fraction = 0.0089;
  record.updates = 364;
  stopped.outcome.steady_state = record;
  record.converged = false;
  record.half_width_fraction = 0.06;
  unsteady.outcome.steady_state = record;
  const Validation v = validate_runs({&stopped}, {&stopped, &unsteady}, 0.08);
  ASSERT_EQ(v.steady_states.size(), 3u);
  EXPECT_EQ(v.steady_states[0], "predicted: +-0.89% after 364 updates, stopped at 1.500 s");
  // A run that ended first: its interval over the report's own window.
  EXPECT_EQ(v.steady_states[2].rfind("real run 2: not within +-1.00% when the run ended (", 0), 0u)
      << v.steady_states[2];
  EXPECT_NE(format_validation(v).find("steady state (95% interval):\n  predicted: +-0.89%"),
            std::string::npos)
      << format_validation(v);
  EXPECT_NE(format_validation_markdown(v).find("- real run 1: +-0.89%"), std::string::npos);
  EXPECT_EQ(validation_to_json(v)["steady_states"].size(), 3u);
}

TEST_F(ValidationOfRuns, SlowerForwardOpsShowInTheComputePhaseOnly) {
  const Trace measured = slowed_compute(1.5);
  const Validation v = validate_runs({predicted_}, {&measured}, 0.08);
  const PhaseComparison& compute = v.phases[int(Phase::kCompute)];
  // Only forward ops are 50% longer: the compute phase's time per step grows by less, every
  // joined forward op by exactly 50% (the bias and the worst op say so).
  EXPECT_GT(compute.time_per_step_s.relative_error(), 0.05);
  EXPECT_LT(compute.time_per_step_s.relative_error(), 0.5);
  EXPECT_NEAR(compute.worst_error, 0.5, 1e-6);
  EXPECT_NE(compute.worst_op.find("forward"), std::string::npos) << compute.worst_op;
  EXPECT_GT(compute.bias, 0);
  EXPECT_EQ(v.phases[int(Phase::kPull)].mean_abs_percentage_error, 0);
  EXPECT_GE(compute.measured_p95_s, compute.predicted_p95_s);
}

TEST_F(ValidationOfRuns, TheVerdictAndTheBaseline) {
  Trace measured = *predicted_;
  // Every time 20% later: step times 20% longer, throughput 1/1.2.
  for (TraceEvent& e : measured.events) {
    e.start_s *= 1.2;
    e.end_s *= 1.2;
  }
  const Validation v = validate_runs({predicted_}, {&measured}, 0.1);
  EXPECT_NEAR(v.metrics[1].relative_error(), 0.2, 1e-6);  // step time p50
  EXPECT_NEAR(v.metrics[0].relative_error(), 1 / 1.2 - 1, 1e-3);
  EXPECT_FALSE(v.within_tolerance);
  ASSERT_EQ(v.outside.size(), 2u);
  const std::string text = format_validation(v);
  EXPECT_NE(text.find("verdict: outside ±10.0%: throughput"), std::string::npos) << text;
  // A baseline (an earlier validation) shows each error beside the one it had.
  const nlohmann::json earlier = validation_to_json(validate_runs({predicted_}, {predicted_}, 0.1));
  const std::string compared = format_validation(v, &earlier);
  EXPECT_NE(compared.find("+20.0% (was +0.0%)"), std::string::npos) << compared;
}

// Several predicted seeds: each figure is their mean, with their range; ops join the first's.
TEST_F(ValidationOfRuns, SeveralSeedsGiveTheMeanAndRangeOfThePrediction) {
  Trace slower = *predicted_;
  for (TraceEvent& e : slower.events) {
    e.start_s *= 1.5;
    e.end_s *= 1.5;
  }
  slower.meta.plan_hash = "another seed's plan";
  const Validation v = validate_runs({predicted_, &slower}, {predicted_}, 0.5);
  EXPECT_EQ(v.seeds, 2);
  const Compared& p50 = v.metrics[1];
  EXPECT_NEAR(p50.predicted_max / p50.predicted_min, 1.5, 1e-6);
  EXPECT_NEAR(p50.predicted, (p50.predicted_min + p50.predicted_max) / 2, 1e-12);
  EXPECT_NEAR(p50.relative_error(), 1 / 1.25 - 1, 1e-6);  // the measured run is the faster seed
  EXPECT_EQ(v.phases[int(Phase::kCompute)].mean_abs_percentage_error, 0);  // joined with seed 1
  EXPECT_NE(format_validation(v).find("predicted mean (min..max)"), std::string::npos);
}

TEST_F(ValidationOfRuns, RunsOfAnotherPlanAreRefused) {
  Trace other = *predicted_;
  other.meta.plan_hash = "0000000000000000";
  try {
    validate_runs({predicted_}, {&other}, 0.08, "x.json");
    FAIL() << "accepted a run of another plan";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("another plan"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_runs({predicted_}, {}, 0.08), InputError);
}

// A compute phase off while the transfers match: how much slower (or faster) compute ran; nothing
// when a transfer is off too, when compute is within the tolerance, or without transfers.
TEST(Validation, ComputeOffWhileTheTransfersMatchIsSaid) {
  const auto phase = [](Phase p, double predicted, double measured) {
    PhaseComparison c;
    c.phase = p;
    c.time_per_step_s.predicted = predicted;
    c.time_per_step_s.measured_mean = measured;
    return c;
  };
  Validation v;
  v.tolerance = 0.08;
  v.phases = {phase(Phase::kCompute, 0.100, 0.152), phase(Phase::kPull, 0.040, 0.041),
              phase(Phase::kPush, 0.040, 0.038),    phase(Phase::kApply, 0.001, 0.001),
              phase(Phase::kToken, 0, 0),           phase(Phase::kOther, 0, 0)};
  EXPECT_EQ(compute_mismatch(v), "compute ran 1.52× slower than calibrated");
  v.phases[0].time_per_step_s.measured_mean = 0.050;
  EXPECT_EQ(compute_mismatch(v), "compute ran 2.00× faster than calibrated");
  v.phases[0].time_per_step_s.measured_mean = 0.105;  // +5%: within the tolerance
  EXPECT_EQ(compute_mismatch(v), "");
  v.phases[0].time_per_step_s.measured_mean = 0.152;
  v.phases[1].time_per_step_s.measured_mean = 0.060;  // a transfer off by 50% too
  EXPECT_EQ(compute_mismatch(v), "");
  v.phases[1] = phase(Phase::kPull, 0, 0);
  v.phases[2] = phase(Phase::kPush, 0, 0);  // no transfers to match
  EXPECT_EQ(compute_mismatch(v), "");
}

}  // namespace
}  // namespace replisim::core
