// training.objective in real runs (issue 40; real/node/objective_values.h): the worker, PS and
// all-reduce rank processes compute the proxy's SGD arithmetic, for every strategy. One async
// worker gives the simulator's curve bit for bit (both are plain sequential SGD), as do one sync
// worker, two in-graph towers and two all-reduce ranks; two workers learn, evaluate at the global
// steps due and the report gives the time to target; with two parameter servers the one holding
// global_step evaluates with the other's values; an objective a real run cannot carry is one line.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/metrics/metrics.h"
#include "core/metrics/report.h"
#include "core/model/data_set.h"
#include "core/model/objective_model.h"
#include "core/strategy/strategy.h"
#include "core/values/objective_setup.h"
#include "core/values/value_engine.h"
#include "tests/real/real_support.h"
#include "tests/support/test_support.h"

namespace replisim::real {
namespace {

using namespace testing;

constexpr uint64_t kSeed = 7;

nlohmann::json synthetic_objective(double target_accuracy, int features = 16, int classes = 4) {
  return {{"data",
           {{"set", "synthetic"},
            {"samples", 1024},
            {"test_samples", 256},
            {"features", features},
            {"classes", classes},
            {"seed", 3}}},
          {"model", "softmax"},
          {"learning_rate", 0.5},
          {"schedule", {{"step_decay", {{"decay_steps", 16}, {"decay_rate", 0.5}}}}},
          {"batch", 8},
          {"evaluate_every", 4},
          {"target", {{"accuracy", target_accuracy}}},
          {"timing", "scenario"},
          {"seed", kSeed}};
}

core::Plan objective_plan(int workers, int steps, const nlohmann::json& objective) {
  return core::compile_plan(
      test::parse(
          scenario(workers, {{"sync", "async"}, {"steps", steps}, {"objective", objective}})),
      "between_graph", {1});
}

// One evaluation as the trace has it: the global_step counter's value before it, then "loss",
// then "accuracy" (core/metrics/metrics_objective.cpp).
struct Evaluation {
  int64_t global_step = 0;
  double loss = 0;
  double accuracy = 0;
  double time_s = 0;
};

std::vector<Evaluation> evaluations(const core::Trace& trace) {
  const uint32_t global_step = trace.find("global_step");
  const uint32_t loss = trace.find("loss");
  const uint32_t accuracy = trace.find("accuracy");
  std::vector<Evaluation> out;
  int64_t now = 0;
  double last_loss = -1;
  for (const core::CounterSample& s : trace.counters) {
    if (s.name == global_step) now = int64_t(s.value);
    if (s.name == loss) last_loss = s.value;
    if (s.name == accuracy) out.push_back({now, last_loss, s.value, s.time_s});
  }
  return out;
}

// The evaluations plain sequential SGD makes over `updates` global steps, by hand, from the setup
// every process builds: at global step 0 and every evaluate_every_steps.
std::vector<core::ObjectiveEvaluation> sequential_sgd(const core::Plan& plan, int64_t updates) {
  const core::ObjectiveSetup setup(plan.objective, 1);
  std::vector<float> params = setup.initial_values();
  core::BatchIterator batches = setup.batches(0, plan.objective.batch);
  std::vector<core::ObjectiveEvaluation> expected{setup.evaluate(params, 0).result};
  const int every = plan.objective.evaluate_every_steps;
  for (int64_t t = 0; t < updates; ++t) {
    core::sgd_apply(params, setup.model().loss_and_gradient(params, batches.next()).gradient,
                    setup.learning_rate(t, 0));
    if ((t + 1) % every == 0) expected.push_back(setup.evaluate(params, t + 1).result);
  }
  return expected;
}

void expect_bitwise(const std::vector<Evaluation>& measured,
                    const std::vector<core::ObjectiveEvaluation>& expected, int every) {
  ASSERT_EQ(measured.size(), expected.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, int64_t(every * i));
    EXPECT_EQ(measured[i].loss, expected[i].loss) << "evaluation " << i;  // bitwise
    EXPECT_EQ(measured[i].accuracy, expected[i].accuracy) << "evaluation " << i;
  }
}

TEST(RealObjective, OneAsyncWorkerComputesTheSimulatorsCurveBitwise) {
  const core::Plan plan = objective_plan(1, 24, synthetic_objective(0.99));
  ASSERT_TRUE(core::objective_evaluated_by_real_run(plan));
  const RealRun real = run_real(plan);
  const std::vector<Evaluation> measured = evaluations(real.trace);
  ASSERT_EQ(measured.size(), 1u + 24 / 4);  // global steps 0, 4, ..., 24
  expect_bitwise(measured, sequential_sgd(plan, 24), 4);
  const std::vector<Evaluation> simulated = evaluations(test::run_plan(plan));
  ASSERT_EQ(simulated.size(), measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, simulated[i].global_step);
    EXPECT_EQ(measured[i].loss, simulated[i].loss) << "evaluation " << i;
    EXPECT_EQ(measured[i].accuracy, simulated[i].accuracy) << "evaluation " << i;
  }
  EXPECT_LT(measured.back().loss, measured.front().loss);  // it learned
  // The initial values at the PS's t = 0, on the run's clock (the chief's: within the offset).
  EXPECT_LT(std::abs(measured.front().time_s), 0.05);
  EXPECT_LT(measured.front().time_s, measured[1].time_s);
  bool noted = false;
  for (const std::string& n : real.trace.meta.notes) {
    noted |= n.find("a real run computes it too") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// granularity 1: both layers' variables are one slice, whose ops name the first; the read sends
// both buffers and the apply updates both, so the run is still sequential SGD over every
// parameter of the proxy.
TEST(RealObjective, ASliceOfSeveralVariablesCarriesEachOnesValues) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(1, {{"sync", "async"},
                                                  {"steps", 12},
                                                  {"granularity", 1},
                                                  {"objective", synthetic_objective(0.99)}})),
                         "between_graph", {1});
  int applies = 0;
  for (const core::Op& op : plan.clients.front().ops) applies += op.kind == OpKind::kApply;
  ASSERT_EQ(applies, 1);  // one slice: variables a and b
  ASSERT_EQ(plan.variables.size(), 3u);
  const std::vector<Evaluation> measured = evaluations(run_real(plan).trace);
  expect_bitwise(measured, sequential_sgd(plan, 12), 4);
  EXPECT_LT(measured.back().loss, measured.front().loss);
}

TEST(RealObjective, TwoAsyncWorkersLearnAndTheReportGivesTheTimeToTarget) {
  nlohmann::json objective = synthetic_objective(0.6);
  objective["schedule"] = "constant";
  objective["staleness_aware"] = true;
  const core::Plan plan = objective_plan(2, 20, objective);
  const RealRun real = run_real(plan);
  const std::vector<Evaluation> measured = evaluations(real.trace);
  ASSERT_EQ(measured.size(), 1u + 2 * 20 / 4);
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, int64_t(4 * i)) << "evaluation " << i;
    if (i > 0) {
      EXPECT_GE(measured[i].time_s, measured[i - 1].time_s);
    }
  }
  EXPECT_LT(measured.back().loss, 0.8 * measured.front().loss);
  EXPECT_LT(measured.front().accuracy, 0.6);
  const core::RunMetrics m = core::compute_metrics(real.trace);
  ASSERT_TRUE(m.objective.has_value());
  ASSERT_TRUE(m.objective->reached()) << "final accuracy " << m.objective->final_accuracy;
  EXPECT_GT(m.objective->time_to_target_s, 0);
  EXPECT_EQ(m.objective->global_steps_to_target % 4, 0);
  EXPECT_EQ(m.objective->evaluations, int(measured.size()));
  const std::string report = core::format_report({m}, "objective");
  EXPECT_NE(report.find("time to target (s)"), std::string::npos) << report;
  EXPECT_EQ(report.find("not reached"), std::string::npos) << report;
}

// Two parameter servers (a on ps1, b and global_step on ps0): each applies the proxy's updates to
// the floats it holds; ps0's process evaluates with ps1's slices, which it asks for at each
// evaluation. The last evaluation comes after every apply (the job's end waits for its answer):
// it is the evaluation of the values the run ended with.
TEST(RealObjective, SeveralParameterServersEvaluateWithEachOnesValues) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(2, {{"sync", "async"},
                                                  {"steps", 12},
                                                  {"ps", {"ps/cpu", "w1/cpu"}},
                                                  {"objective", synthetic_objective(0.6)}})),
                         "between_graph", {1});
  ASSERT_EQ(plan.ps_roles.size(), 2u);
  ASSERT_NE(plan.variables[1].ps, plan.variables[2].ps);
  ASSERT_TRUE(core::objective_evaluated_by_real_run(plan));
  const RealRun run = run_real(plan);
  const std::vector<Evaluation> measured = evaluations(run.trace);
  ASSERT_EQ(measured.size(), 1u + 2 * 12 / 4);
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, int64_t(4 * i)) << "evaluation " << i;
  }
  EXPECT_LT(measured.back().loss, 0.8 * measured.front().loss);
  EXPECT_FALSE(run.trace.meta.objective_target.empty());
  ASSERT_TRUE(core::compute_metrics(run.trace).objective.has_value());
  bool noted = false;
  for (const std::string& n : run.trace.meta.notes) {
    noted |= n.find("a round trip after the update") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // The values the run ended with, from each variable's first floats.
  const core::ObjectiveSetup setup(plan.objective, 2);
  const std::vector<float> initial = setup.initial_values();
  const std::vector<core::ValueSlice> slices =
      core::proportional_slices(plan.variables, initial.size());
  std::vector<float> final_values = initial;
  for (int v : {1, 2}) {
    const core::CheckpointTensor* t = run.final.find(v);
    ASSERT_NE(t, nullptr);
    const core::ValueSlice& s = slices[size_t(v)];
    ASSERT_GT(s.size, 0u);
    ASSERT_GE(t->values.size(), s.size);
    size_t moved = 0;
    for (size_t i = 0; i < s.size; ++i) {
      final_values[s.offset + i] = t->values[i];
      moved += t->values[i] != initial[s.offset + i];
    }
    EXPECT_GT(moved, s.size / 2) << plan.variables[size_t(v)].name;
  }
  const core::ValueEvaluation last = setup.evaluate(final_values, 24);
  EXPECT_EQ(measured.back().loss, last.result.loss);  // bitwise
  EXPECT_EQ(measured.back().accuracy, last.result.accuracy);
}

// The real run's curve against the simulator's: the same global steps, bitwise the same loss and
// accuracy (each gradient from the same batch at the same values, each average of the same
// gradients: a sum of two floats does not depend on their order).
void expect_the_simulators_curve(const core::Plan& plan, const RealRun& real) {
  const std::vector<Evaluation> measured = evaluations(real.trace);
  const std::vector<Evaluation> simulated = evaluations(test::run_plan(plan));
  ASSERT_EQ(measured.size(), simulated.size());
  ASSERT_GE(measured.size(), 3u);
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, simulated[i].global_step) << "evaluation " << i;
    EXPECT_EQ(measured[i].loss, simulated[i].loss) << "evaluation " << i;
    EXPECT_EQ(measured[i].accuracy, simulated[i].accuracy) << "evaluation " << i;
  }
  EXPECT_LT(measured.back().loss, 0.9 * measured.front().loss);  // it learned
  bool noted = false;
  for (const std::string& n : real.trace.meta.notes) {
    noted |= n.find("a real run computes it too") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// Synchronous training (SyncReplicasOptimizer): the PS's accumulators keep each fresh gradient,
// the chief's take averages them and its apply updates. One worker gives the simulator's curve
// bit for bit — not sequential SGD: the token queue's initial token lets the worker's second step
// run at the initial values, and that gradient arrives stale and is dropped, in both. Two workers
// learn: which gradients arrive stale depends on the run's timing, so only the shape is checked.
TEST(RealObjective, SyncWorkersComputeTheSimulatorsCurve) {
  const core::Plan one = core::compile_plan(
      test::parse(
          scenario(1, {{"sync", "sync"}, {"steps", 12}, {"objective", synthetic_objective(0.99)}})),
      "between_graph", {1});
  ASSERT_TRUE(core::objective_evaluated_by_real_run(one));
  expect_the_simulators_curve(one, run_real(one));
  const core::Plan two = core::compile_plan(
      test::parse(
          scenario(2, {{"sync", "sync"}, {"steps", 12}, {"objective", synthetic_objective(0.99)}})),
      "between_graph", {1});
  const std::vector<Evaluation> measured = evaluations(run_real(two).trace);
  ASSERT_EQ(measured.size(), 1u + 12 / 4);
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(measured[i].global_step, int64_t(4 * i)) << "evaluation " << i;
  }
  EXPECT_LT(measured.back().loss, 0.8 * measured.front().loss);
}

// distributed_replicated: each worker's copies come from the PS at the end of each step (after
// the applies) and its own gradient is applied there; one worker is sequential SGD.
TEST(RealObjective, DistributedReplicatedComputesSequentialSgdWithOneWorker) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(1, {{"sync", "distributed_replicated"},
                                                  {"steps", 12},
                                                  {"objective", synthetic_objective(0.99)}})),
                         "between_graph", {1});
  ASSERT_TRUE(core::objective_evaluated_by_real_run(plan));
  const RealRun real = run_real(plan);
  expect_bitwise(evaluations(real.trace), sequential_sgd(plan, 12), 4);
}

// In-graph over two towers on two machines: each tower's process computes the towers' average
// at the values it received, the aggregation averages those, and the client's apply updates the
// PS: the simulator's curve, whose one gradient per step cuts objective.batch x 2 samples in two.
// Also at granularity 1 (one slice of both variables: the client's aggregate hands the PS process
// on its machine the slice group's floats), and with the variables on a tower's GPU (the PS
// process hands that tower's process its reads directly, with their values).
TEST(RealObjective, InGraphTowersComputeTheSimulatorsCurve) {
  const nlohmann::json layouts[] = {nlohmann::json::object(),
                                    {{"granularity", 1}},
                                    {{"variables_on", "w0/gpu0"}, {"client", "w0"}}};
  for (const nlohmann::json& layout : layouts) {
    SCOPED_TRACE(layout.dump());
    nlohmann::json training = {{"steps", 12}, {"objective", synthetic_objective(0.99)}};
    training.update(layout);
    nlohmann::json doc = scenario(2, training);
    if (layout.contains("variables_on")) doc["training"].erase("ps");
    const core::Plan plan = core::compile_plan(test::parse(doc), "in_graph", {1});
    ASSERT_EQ(core::objective_sub_batches(plan, plan.clients.front()), 2);
    ASSERT_TRUE(core::objective_evaluated_by_real_run(plan));
    expect_the_simulators_curve(plan, run_real(plan));
  }
}

// All-reduce over two ranks: each computes at its own copy, the ring averages the gradients and
// each rank applies the average to its copy; the chief's copy is evaluated.
TEST(RealObjective, AllReduceRanksComputeTheSimulatorsCurve) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(2, {{"steps", 12},
                                                  {"allreduce", {{"algorithm", "ring"}}},
                                                  {"objective", synthetic_objective(0.99)}})),
                         "allreduce", {1});
  ASSERT_TRUE(core::objective_evaluated_by_real_run(plan));
  expect_the_simulators_curve(plan, run_real(plan));
}

// A model split across processes (in-graph model parallelism): a tower's process would lack the
// other part's values, so the real run computes nothing and the plan says so.
TEST(RealObjective, AModelSplitAcrossProcessesIsNotComputed) {
  nlohmann::json doc = scenario(2, {{"steps", 4}, {"objective", synthetic_objective(0.9)}});
  doc["training"]["placement"] = {{{"layers", "a"}, {"device", "w0/gpu0"}},
                                  {{"layers", "b"}, {"device", "w1/gpu0"}}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "in_graph", {1});
  EXPECT_FALSE(core::objective_computed_by_real_run(plan));
  bool noted = false;
  for (const std::string& n : plan.notes) {
    noted |= n.find("do not compute it for a model split across processes") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  const core::Plan data_parallel = core::compile_plan(
      test::parse(scenario(2, {{"steps", 4}, {"objective", synthetic_objective(0.9)}})), "in_graph",
      {1});
  EXPECT_TRUE(core::objective_computed_by_real_run(data_parallel));
}

void expect_one_line_error(const core::Plan& plan, const std::string& says) {
  try {
    run_real(plan);
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(says), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(RealObjective, AnObjectiveARealRunCannotComputeIsOneLine) {
  // 5,010 parameters of the proxy in a model of 4,000 floats: the variables cannot carry them.
  expect_one_line_error(objective_plan(1, 4, synthetic_objective(0.9, 500, 10)),
                        "/training/objective/model");
  // Fashion-MNIST where it is not (in a model that can carry its 7,850 parameters): the node
  // that reads it names the file.
  nlohmann::json missing = synthetic_objective(0.9);
  missing["data"] = {
      {"set", "fashion_mnist"}, {"dir", "/nonexistent-replisim-data"}, {"subset", 100}};
  nlohmann::json training = {{"batch_per_replica", 4},  {"steps", 4},          {"warmup_steps", 1},
                             {"replicas", {"w0/gpu0"}}, {"ps", {"ps/cpu"}},    {"client", "ps"},
                             {"sync", "async"},         {"objective", missing}};
  const core::Plan plan = core::compile_plan(
      test::parse(test::scenario_json(cluster_of(1), few_ms_model(), training, "lv08", "100 Gbps")),
      "between_graph", {1});
  // A failed run keeps its logs in its directory under TMPDIR (docs/real-runs.md): ours, removed.
  test::TempDir runs;
  const char* before = std::getenv("TMPDIR");
  const std::string tmpdir = before != nullptr ? before : "";
  ::setenv("TMPDIR", runs.path().c_str(), 1);
  expect_one_line_error(plan, "nonexistent-replisim-data");
  if (before != nullptr) {
    ::setenv("TMPDIR", tmpdir.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

}  // namespace
}  // namespace replisim::real
