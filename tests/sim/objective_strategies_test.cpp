// training.objective for every strategy in the simulation (issue 40; core/values/value_engine.h):
// sync with N workers, in-graph with N towers and all-reduce with N ranks each equal one worker
// with the N batches together (bitwise); async replayed by hand from the trace's update events
// (each gradient at the values of the global step its update says it read, bitwise); and
// distributed_replicated learns.
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "core/values/value_engine.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

constexpr uint64_t kSeed = 7;
constexpr int kBatch = 8;
constexpr int kEvery = 3;
constexpr double kRate = 0.4;
const SyntheticSetSpec kData{1536, 384, 12, 3, 2};

// `speeds`: one worker (or tower, or rank) per entry, on a GPU of that speed.
nlohmann::json strategies_scenario(const std::vector<std::string>& speeds,
                                   const nlohmann::json& sync, int steps,
                                   bool staleness_aware = false) {
  std::vector<nlohmann::json> machines;
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t w = 0; w < speeds.size(); ++w) {
    machines.push_back(
        test::machine("w" + std::to_string(w), "400 GFLOPS", {speeds[w]}, "10 Gbps"));
    replicas.push_back("w" + std::to_string(w) + "/gpu0");
  }
  const nlohmann::json objective = {{"data",
                                     {{"set", "synthetic"},
                                      {"samples", kData.train_samples},
                                      {"test_samples", kData.test_samples},
                                      {"features", kData.features},
                                      {"classes", kData.classes},
                                      {"seed", kData.seed}}},
                                    {"model", "softmax"},
                                    {"learning_rate", kRate},
                                    {"staleness_aware", staleness_aware},
                                    {"batch", kBatch},
                                    {"evaluate_every", kEvery},
                                    {"target", {{"accuracy", 0.99}}},
                                    {"timing", "scenario"},
                                    {"seed", kSeed}};
  nlohmann::json training = {{"replicas", replicas},
                             {"steps", steps},
                             {"warmup_steps", 1},
                             {"granularity", 1},
                             {"objective", objective}};
  if (!sync.is_null()) training["sync"] = sync;
  return test::scenario_json(machines, {{"preset", "resnet50"}}, training);
}

std::vector<double> counter_series(const Trace& trace, const std::string& name) {
  std::vector<double> values;
  const uint32_t id = trace.find(name);
  for (const CounterSample& s : trace.counters) {
    if (s.name == id) values.push_back(s.value);
  }
  return values;
}

// Worker c's batches of shard c of `shards`, as the engine draws them.
BatchIterator worker_batches(const TrainTestSets& data, int shards, int c, int batch) {
  return BatchIterator(
      data.train, shard_indices(data.train.samples(), shards, c, ValueEngine::shard_seed(kSeed)),
      batch, ValueEngine::batch_seed(kSeed, c));
}

// The batches of `parts` side by side, in order: one batch of their samples.
struct Joined {
  std::vector<float> x;
  std::vector<int32_t> labels;
  BatchView view(int features, int classes) const {
    return {x.data(), labels.data(), labels.size(), features, classes};
  }
};
Joined join(std::vector<BatchIterator>& parts) {
  Joined j;
  for (BatchIterator& it : parts) {
    const BatchView b = it.next();
    j.x.insert(j.x.end(), b.x, b.x + b.samples * size_t(b.features));
    j.labels.insert(j.labels.end(), b.labels, b.labels + b.samples);
  }
  return j;
}

// Sequential SGD on `updates` batches made by `next_batch`, sub-batched in `parts` parts, with
// the evaluations every kEvery global steps (and at 0), as the trace's counters should have them.
template <class NextBatch>
std::vector<ObjectiveEvaluation> by_hand(int64_t updates, int parts, NextBatch next_batch) {
  const TrainTestSets data = make_teacher_student_set(kData);
  const ObjectiveModel model = ObjectiveModel::softmax_regression(kData.features, kData.classes);
  std::vector<float> params = model.initial_parameters(kSeed);
  std::vector<ObjectiveEvaluation> out{model.evaluate(params, whole(data.test))};
  for (int64_t t = 0; t < updates; ++t) {
    const Joined batch = next_batch(data);
    sgd_apply(
        params,
        model.loss_and_gradient(params, batch.view(kData.features, kData.classes), parts).gradient,
        kRate);
    if ((t + 1) % kEvery == 0) out.push_back(model.evaluate(params, whole(data.test)));
  }
  return out;
}

// The trace's evaluations equal `expected`, bitwise.
void expect_evaluations(const Trace& trace, const std::vector<ObjectiveEvaluation>& expected) {
  const std::vector<double> loss = counter_series(trace, "loss");
  const std::vector<double> accuracy = counter_series(trace, "accuracy");
  ASSERT_EQ(loss.size(), expected.size());
  ASSERT_EQ(accuracy.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(loss[i], expected[i].loss) << "evaluation " << i;
    EXPECT_EQ(accuracy[i], expected[i].accuracy) << "evaluation " << i;
  }
  EXPECT_LT(loss.back(), loss.front());  // it learned
}

int64_t updates_of(const Trace& trace) {
  const std::vector<double> steps = counter_series(trace, "global_step");
  return steps.empty() ? 0 : int64_t(steps.back());
}

// SyncReplicas (strict: one gradient per worker per global step) with three workers of
// different speeds, so that their gradients reach the accumulator in worker order: each take
// averages the three, which is one worker with the three batches together.
TEST(SimObjectiveStrategies, SyncWorkersAreOneWorkerWithTheirBatchesTogether) {
  const nlohmann::json sync = {{"replicas_to_aggregate", 3}, {"variant", "strict"}};
  const Trace trace = test::simulate_trace(
      strategies_scenario({"12 TFLOPS", "8 TFLOPS", "5 TFLOPS"}, sync, 10), "between_graph");
  const int64_t updates = updates_of(trace);
  ASSERT_GE(updates, 9);
  EXPECT_EQ(compute_metrics(trace).dropped_gradients, 0);
  std::vector<BatchIterator> workers;
  const std::vector<ObjectiveEvaluation> expected =
      by_hand(updates, 3, [&](const TrainTestSets& data) {
        if (workers.empty()) {
          for (int c = 0; c < 3; ++c) workers.push_back(worker_batches(data, 3, c, kBatch));
        }
        return join(workers);
      });
  expect_evaluations(trace, expected);
}

// In-graph: one client, a batch of kBatch samples per tower cut into one sub-batch per tower.
TEST(SimObjectiveStrategies, InGraphTowersAreOneWorkerWithTheirSubBatchesTogether) {
  const Trace trace = test::simulate_trace(
      strategies_scenario({"10 TFLOPS", "10 TFLOPS", "10 TFLOPS"}, nullptr, 9), "in_graph");
  const int64_t updates = updates_of(trace);
  ASSERT_GE(updates, 9);
  std::vector<BatchIterator> client;
  const std::vector<ObjectiveEvaluation> expected =
      by_hand(updates, 3, [&](const TrainTestSets& data) {
        if (client.empty()) client.push_back(worker_batches(data, 1, 0, 3 * kBatch));
        return join(client);
      });
  expect_evaluations(trace, expected);
}

// All-reduce: every rank's gradient averaged in rank order, applied once per step.
TEST(SimObjectiveStrategies, AllReduceRanksAreOneWorkerWithTheirBatchesTogether) {
  const Trace trace = test::simulate_trace(
      strategies_scenario({"10 TFLOPS", "7 TFLOPS", "10 TFLOPS"}, nullptr, 9), "allreduce");
  const int64_t updates = updates_of(trace);
  ASSERT_GE(updates, 9);
  std::vector<BatchIterator> ranks;
  const std::vector<ObjectiveEvaluation> expected =
      by_hand(updates, 3, [&](const TrainTestSets& data) {
        if (ranks.empty()) {
          for (int c = 0; c < 3; ++c) ranks.push_back(worker_batches(data, 3, c, kBatch));
        }
        return join(ranks);
      });
  expect_evaluations(trace, expected);
}

// Async, staleness-aware: the trace's update events, replayed by hand, give the trace's
// evaluations bitwise. Each update's gradient is taken at the values after exactly the
// global_step_read updates its event names, on its worker's next batch, and applied at the rate
// lr / max(global_step before the increment - global_step_read, 1): so the staleness each
// gradient was computed at is the trace's staleness for that update.
TEST(SimObjectiveStrategies, EachAsyncGradientIsAtTheGlobalStepItsUpdateEventSaysItRead) {
  const Trace trace = test::simulate_trace(
      strategies_scenario({"10 TFLOPS", "9 TFLOPS", "7 TFLOPS", "4 TFLOPS"}, "async", 12,
                          /*staleness_aware=*/true),
      "between_graph");
  std::map<uint32_t, int> worker_of;  // the client's role name -> its index
  for (size_t c = 0; c < trace.meta.clients.size(); ++c) {
    worker_of[trace.find(trace.meta.clients[c].role)] = int(c);
  }
  std::vector<const TraceEvent*> updates;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kUpdate) updates.push_back(&e);
  }
  std::sort(updates.begin(), updates.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->global_step_after < b->global_step_after;
  });
  ASSERT_GE(updates.size(), 40u);
  const TrainTestSets data = make_teacher_student_set(kData);
  const ObjectiveModel model = ObjectiveModel::softmax_regression(kData.features, kData.classes);
  std::vector<std::vector<float>> history{model.initial_parameters(kSeed)};
  std::vector<BatchIterator> batches;
  for (int c = 0; c < 4; ++c) batches.push_back(worker_batches(data, 4, c, kBatch));
  std::vector<ObjectiveEvaluation> expected{model.evaluate(history[0], whole(data.test))};
  int64_t stale = 0;
  for (size_t k = 0; k < updates.size(); ++k) {
    const TraceEvent& u = *updates[k];
    ASSERT_EQ(u.global_step_after, int64_t(k) + 1);
    ASSERT_LE(u.global_step_read, int64_t(k));
    const int64_t staleness = int64_t(k) - u.global_step_read;
    stale += staleness > 0;
    std::vector<float> params = history.back();
    const std::vector<float> g = model
                                     .loss_and_gradient(history[size_t(u.global_step_read)],
                                                        batches[size_t(worker_of[u.client])].next())
                                     .gradient;
    sgd_apply(params, g, staleness_aware_learning_rate(kRate, staleness));
    history.push_back(std::move(params));
    if ((k + 1) % kEvery == 0) expected.push_back(model.evaluate(history.back(), whole(data.test)));
  }
  EXPECT_GT(stale, int64_t(updates.size()) / 2);  // most gradients were stale: the test can fail
  expect_evaluations(trace, expected);
}

// distributed_replicated: every worker applies its own gradient, then meets the others at the
// barrier; its objective learns and is evaluated at every kEvery-th global step.
TEST(SimObjectiveStrategies, DistributedReplicatedLearns) {
  const Trace trace = test::simulate_trace(
      strategies_scenario({"10 TFLOPS", "8 TFLOPS"}, "distributed_replicated", 12),
      "between_graph");
  const int64_t updates = updates_of(trace);
  ASSERT_GE(updates, 12);
  const std::vector<double> loss = counter_series(trace, "loss");
  EXPECT_EQ(int64_t(loss.size()), 1 + updates / kEvery);
  EXPECT_LT(loss.back(), loss.front());
}

// Elastic all-reduce: a rank dies, the survivors go back to the last commit and train on with
// three ranks; the values go back with them (the engine restores the commit), and it learns.
TEST(SimObjectiveStrategies, AnElasticAllReduceJobGoesBackToTheCommittedValues) {
  nlohmann::json doc =
      strategies_scenario({"10 TFLOPS", "10 TFLOPS", "10 TFLOPS", "10 TFLOPS"}, nullptr, 15);
  doc["training"]["allreduce"] = {{"elastic", true}, {"rendezvous", "1 s"}};
  doc["faults"] = {{{"kind", "role"}, {"role", "worker3"}, {"at", "0.5 s"}}};
  const Trace trace = test::simulate_trace(doc, "allreduce");
  EXPECT_FALSE(trace.outcome.job_failure.has_value());
  EXPECT_EQ(updates_of(trace), 15);
  const std::vector<double> loss = counter_series(trace, "loss");
  ASSERT_GE(loss.size(), 4u);
  EXPECT_LT(loss.back(), loss.front());
  int64_t dead_rank_steps = 0;
  for (const TraceEvent* e : test::events_of(trace, EventKind::kStep, "worker3")) {
    dead_rank_steps += e->end_s > 0;
  }
  EXPECT_GT(dead_rank_steps, 0);  // it died mid-run
  EXPECT_LT(dead_rank_steps, 14);
}

// Timing "objective": the plan's forward and backward ops cost the proxy's own FLOP (its one
// dense layer, per sample times the batch), the scenario's ResNet-50 is gone from the clock, and
// the values are the same as under timing "scenario" (the clock does not change one async
// worker's arithmetic).
TEST(SimObjectiveStrategies, TimingObjectiveRunsOnTheProxysOwnCosts) {
  nlohmann::json doc = strategies_scenario({"10 TFLOPS"}, "async", 9);
  const Plan by_scenario = compile_plan(test::parse(doc), "between_graph", {});
  doc["training"]["objective"]["timing"] = "objective";
  const Plan by_objective = compile_plan(test::parse(doc), "between_graph", {});
  const ObjectiveModel model = ObjectiveModel::softmax_regression(kData.features, kData.classes);
  double forward = 0, backward = 0;
  for (const Op& op : by_objective.clients[0].ops) {
    forward += op.kind == OpKind::kForward ? op.compute_flop : 0;
    backward += op.kind == OpKind::kBackward ? op.compute_flop : 0;
  }
  EXPECT_DOUBLE_EQ(forward, model.forward_flop_per_sample() * kBatch);
  EXPECT_DOUBLE_EQ(backward, model.backward_flop_per_sample() * kBatch);
  EXPECT_EQ(by_objective.variables.size(), 2u);  // global_step and the one dense layer
  bool noted = false;
  for (const std::string& n : by_objective.notes) {
    noted |= n.find("the proxy's own costs") != std::string::npos &&
             n.find("objective softmax") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  const Trace fast = test::run_plan(by_objective);
  const Trace slow = test::run_plan(by_scenario);
  EXPECT_LT(test::client_step_time(compute_metrics(fast), "worker0"),
            0.1 * test::client_step_time(compute_metrics(slow), "worker0"));
  EXPECT_EQ(counter_series(fast, "loss"), counter_series(slow, "loss"));
}

// A job failure and restart: the values go back to the restored checkpoint's, and the restarted
// worker's input pipeline starts its shard afresh (a new TF 1.x process). One async worker, so
// the whole curve is sequential SGD by hand: up to the failure, then again from the checkpoint.
TEST(SimObjectiveStrategies, ARestartGoesBackToTheCheckpointsValues) {
  nlohmann::json doc = strategies_scenario({"10 TFLOPS"}, "async", 40);
  doc["training"]["checkpoint"] = {{"every", "1 s"}, {"disk_bandwidth", "2 GBps"}};
  doc["training"]["recovery"] = {{"detect_timeout", "0.2 s"}, {"restart_delay", "0.2 s"}};
  doc["faults"] = {{{"kind", "role"}, {"role", "ps0"}, {"at", "2.5 s"}}};
  const Trace trace = test::simulate_trace(doc, "between_graph");
  const std::vector<const TraceEvent*> recoveries = test::events_of(trace, EventKind::kRecovery);
  ASSERT_EQ(recoveries.size(), 1u);
  const int64_t restored = recoveries[0]->global_step_read;
  int64_t before_failure = 0;
  for (const TraceEvent* e : test::events_of(trace, EventKind::kUpdate)) {
    if (e->end_s <= recoveries[0]->start_s) before_failure = e->global_step_after;
  }
  const int64_t last = updates_of(trace);
  ASSERT_GT(restored, 0);
  ASSERT_GT(before_failure, restored);  // work was lost: the values must go back
  ASSERT_GT(last, before_failure);

  const TrainTestSets data = make_teacher_student_set(kData);
  const ObjectiveModel model = ObjectiveModel::softmax_regression(kData.features, kData.classes);
  std::vector<float> params = model.initial_parameters(kSeed);
  std::vector<float> at_checkpoint;
  std::vector<ObjectiveEvaluation> expected{model.evaluate(params, whole(data.test))};
  auto train = [&](int64_t from, int64_t to) {
    BatchIterator batches = worker_batches(data, 1, 0, kBatch);
    for (int64_t t = from; t < to; ++t) {
      if (t == restored) at_checkpoint = params;
      sgd_apply(params, model.loss_and_gradient(params, batches.next()).gradient, kRate);
      if ((t + 1) % kEvery == 0) expected.push_back(model.evaluate(params, whole(data.test)));
    }
  };
  train(0, before_failure);
  ASSERT_FALSE(at_checkpoint.empty());
  params = at_checkpoint;
  train(restored, last);
  expect_evaluations(trace, expected);
}

// A proxy that diverges (an MLP at learning rate 10): the run ends as planned, its evaluations
// stop at the first whose loss is not finite, and a note says so.
TEST(SimObjectiveStrategies, ADivergingProxyEndsTheCurveWithANote) {
  nlohmann::json doc = strategies_scenario({"10 TFLOPS", "10 TFLOPS"}, "async", 30);
  doc["training"]["objective"]["model"] = {{"mlp", {64, 64}}};
  doc["training"]["objective"]["learning_rate"] = 1e4;
  const Trace trace = test::simulate_trace(doc, "between_graph");
  EXPECT_EQ(updates_of(trace), 60);
  for (double loss : counter_series(trace, "loss")) EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(counter_series(trace, "loss").size(), size_t(1 + 60 / kEvery));
  bool noted = false;
  for (const std::string& n : trace.meta.notes) noted |= n.find("diverged") != std::string::npos;
  for (const std::string& n : trace.outcome.notes) noted |= n.find("diverged") != std::string::npos;
  EXPECT_TRUE(noted);
}

// All-reduce with training.recovery: a rank's death fails the job, the restart brings every rank
// back, and the values (restored from the checkpoint) train on with every rank's gradient.
TEST(SimObjectiveStrategies, AnAllReduceRestartTrainsOnWithEveryRank) {
  nlohmann::json doc = strategies_scenario({"10 TFLOPS", "10 TFLOPS"}, nullptr, 30);
  doc["training"]["checkpoint"] = {{"every", "0.5 s"}, {"disk_bandwidth", "2 GBps"}};
  doc["training"]["recovery"] = {{"detect_timeout", "0.2 s"}, {"restart_delay", "0.2 s"}};
  doc["faults"] = {{{"kind", "role"}, {"role", "worker1"}, {"at", "1 s"}}};
  const Trace trace = test::simulate_trace(doc, "allreduce");
  EXPECT_EQ(test::events_of(trace, EventKind::kRecovery).size(), 1u);
  EXPECT_EQ(updates_of(trace), 30);
  const std::vector<double> loss = counter_series(trace, "loss");
  ASSERT_GE(loss.size(), 4u);
  EXPECT_LT(loss.back(), loss.front());
}

// A model-parallel placement names the scenario's layers: timing "objective" (the proxy's layers)
// cannot keep it, and says so in one line naming the key.
TEST(SimObjectiveStrategies, TimingObjectiveWithAPlacementIsOneLine) {
  nlohmann::json doc = strategies_scenario({"10 TFLOPS", "10 TFLOPS"}, nullptr, 5);
  doc["training"]["placement"] = {{{"layers", "*"}, {"device", "w0/gpu0"}}};
  doc["training"]["objective"]["timing"] = "objective";
  try {
    compile_plan(test::parse(doc), "in_graph", {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/training/objective/timing"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("training.placement"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replisim::core
