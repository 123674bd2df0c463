// training.objective in the simulation (issue 40; sim/sim_values.cpp): one asynchronous worker
// is plain sequential SGD, bitwise; four workers reach the target and the report, live or from
// the saved trace, gives the time to it.
#include <sstream>

#include <gtest/gtest.h>

#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace_format.h"
#include "core/values/value_engine.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

constexpr uint64_t kObjectiveSeed = 4;

nlohmann::json sim_objective_scenario(int workers, int steps, double target_accuracy,
                                      const std::string& sync = "async") {
  std::vector<nlohmann::json> machines;
  nlohmann::json replicas = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) {
    machines.push_back(
        test::machine("w" + std::to_string(w), "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps"));
    replicas.push_back("w" + std::to_string(w) + "/gpu0");
  }
  nlohmann::json objective = test::synthetic_objective(target_accuracy, "scenario", kObjectiveSeed);
  objective["schedule"] = {{"step_decay", {{"decay_steps", 10}, {"decay_rate", 0.5}}}};
  return test::scenario_json(machines, {{"preset", "resnet50"}},
                             {{"replicas", replicas},
                              {"ps", {"w0/cpu"}},
                              {"sync", sync},
                              {"steps", steps},
                              {"warmup_steps", 2},
                              {"objective", objective}});
}

// The trace's samples of counter `name`, in recording order.
std::vector<double> counter_values(const Trace& trace, const std::string& name) {
  std::vector<double> values;
  const uint32_t id = trace.find(name);
  for (const CounterSample& s : trace.counters) {
    if (s.name == id) values.push_back(s.value);
  }
  return values;
}

TEST(SimObjective, OneAsyncWorkerIsPlainSequentialSgdBitwise) {
  const Plan plan =
      compile_plan(test::parse(sim_objective_scenario(1, 22, 0.99)), "between_graph", {});
  ASSERT_TRUE(objective_computed_by_simulator(plan));
  const Trace trace = test::run_plan(plan);
  const std::vector<double> global_steps = counter_values(trace, "global_step");
  ASSERT_FALSE(global_steps.empty());
  const int64_t updates = int64_t(global_steps.back());
  ASSERT_GE(updates, 20);

  // Plain SGD by hand: the same data, initial values, shard and batches, lr 0.5 x 0.5^(t / 10).
  SyntheticSetSpec spec{2048, 512, 16, 4, 1};
  const TrainTestSets data = make_teacher_student_set(spec);
  const ObjectiveModel model = ObjectiveModel::softmax_regression(16, 4);
  std::vector<float> params = model.initial_parameters(kObjectiveSeed);
  BatchIterator batches(data.train,
                        shard_indices(2048, 1, 0, ValueEngine::shard_seed(kObjectiveSeed)), 16,
                        ValueEngine::batch_seed(kObjectiveSeed, 0));
  LearningRateSchedule schedule;
  schedule.kind = LearningRateSchedule::Kind::kStepDecay;
  schedule.decay_steps = 10;
  schedule.decay_rate = 0.5;
  std::vector<ObjectiveEvaluation> expected{model.evaluate(params, whole(data.test))};
  for (int64_t t = 0; t < updates; ++t) {
    sgd_apply(params, model.loss_and_gradient(params, batches.next()).gradient,
              schedule.at(0.5, t));
    if ((t + 1) % 4 == 0) expected.push_back(model.evaluate(params, whole(data.test)));
  }
  const std::vector<double> loss = counter_values(trace, "loss");
  const std::vector<double> accuracy = counter_values(trace, "accuracy");
  ASSERT_EQ(loss.size(), expected.size());
  ASSERT_EQ(accuracy.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(loss[i], expected[i].loss) << "evaluation " << i;  // bitwise
    EXPECT_EQ(accuracy[i], expected[i].accuracy) << "evaluation " << i;
  }
  EXPECT_LT(loss.back(), loss.front());  // it learned
}

TEST(SimObjective, FourAsyncWorkersReachTheTargetAndTheReportSaysWhen) {
  const nlohmann::json doc = sim_objective_scenario(4, 40, 0.75);
  const Trace trace = test::simulate_trace(doc, "between_graph");
  const RunMetrics r = compute_metrics(trace);
  ASSERT_TRUE(r.objective.has_value());
  const ObjectiveMetrics& o = *r.objective;
  std::printf(
      "4 async workers: %d evaluations, final accuracy %.4f loss %.4f at global step "
      "%lld (%.3f s); target reached at %.3f s, global step %lld; staleness mean %.2f\n",
      o.evaluations, o.final_accuracy, o.final_loss, (long long)o.final_global_step, o.final_s,
      o.time_to_target_s, (long long)o.global_steps_to_target, r.staleness_mean);
  EXPECT_GT(r.staleness_mean, 0.5);  // several workers: stale gradients
  ASSERT_TRUE(o.reached());
  EXPECT_GT(o.time_to_target_s, 0);
  EXPECT_GT(o.global_steps_to_target, 0);
  EXPECT_EQ(o.global_steps_to_target % 4, 0);  // an evaluation's global step
  EXPECT_LE(o.time_to_target_s, o.final_s);
  EXPECT_GE(o.final_accuracy, 0.75);
  EXPECT_LT(counter_values(trace, "accuracy").front(), 0.75);  // not reached at the start

  const std::string report = format_report({r}, "objective");
  EXPECT_NE(report.find("time to target (s)"), std::string::npos) << report;
  EXPECT_NE(report.find("global steps to target"), std::string::npos) << report;
  EXPECT_EQ(report.find("not reached"), std::string::npos) << report;
  const nlohmann::json j = summary_json({r}, nlohmann::json::object());
  EXPECT_EQ(j["runs"][0]["objective"]["time_to_target_s"].get<double>(), o.time_to_target_s);

  // `report` of the saved trace reads the same counters.
  std::stringstream saved;
  write_trace_binary(saved, trace);
  const Trace back = read_trace_binary(saved, "saved");
  const RunMetrics again = compute_metrics(back);
  ASSERT_TRUE(again.objective.has_value());
  EXPECT_EQ(again.objective->time_to_target_s, o.time_to_target_s);
  EXPECT_EQ(again.objective->global_steps_to_target, o.global_steps_to_target);
  EXPECT_EQ(again.objective->final_accuracy, o.final_accuracy);
  EXPECT_EQ(format_report({again}, "objective"), report);
}

}  // namespace
}  // namespace replisim::core
