// Synchronous between-graph training (SyncReplicasOptimizer): a straggler sets the pace without
// backup workers and stops mattering with one; async loses only the straggler's missing half;
// the tf and strict token variants differ in what they compute and drop.
#include <algorithm>
#include <cstdio>
#include <map>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace replisim::sync_test {
namespace {

using test::machine;

constexpr double kBatch = 32;

// Workers at the given GPU speeds on their own machines, one PS on a machine of its own; the
// network is ample (100 Gbps, ideal) so compute sets the pace; costs off.
nlohmann::json workers_doc(const std::vector<std::string>& gpu_speeds, const nlohmann::json& sync,
                           int steps = 60) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t i = 0; i < gpu_speeds.size(); ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {gpu_speeds[i]}, "100 Gbps"));
    replicas.push_back("w" + std::to_string(i) + "/gpu0");
  }
  return test::scenario_json(machines, test::one_layer_model(1e6, "1 GFLOP"),
                             {{"replicas", replicas},
                              {"ps", {"p/cpu"}},
                              {"steps", steps},
                              {"warmup_steps", 10},
                              {"batch_per_replica", kBatch},
                              {"costs", "none"},
                              {"sync", sync}});
}

const std::vector<std::string> kWithStraggler = {"2 TFLOPS", "2 TFLOPS", "2 TFLOPS", "1 TFLOPS"};
const std::vector<std::string> kWithoutStraggler = {"2 TFLOPS", "2 TFLOPS", "2 TFLOPS", "2 TFLOPS"};

nlohmann::json strict(int replicas_to_aggregate) {
  return {{"replicas_to_aggregate", replicas_to_aggregate}, {"variant", "strict"}};
}

TEST(SyncReplicas, WithoutBackupsTheStragglerSetsTheGlobalStep) {
  const core::RunMetrics m =
      test::simulate(workers_doc(kWithStraggler, strict(4)), "between_graph");
  // The straggler's own step time, alone: one worker at 1 TFLOPS, synchronous with itself.
  const core::RunMetrics alone =
      test::simulate(workers_doc({"1 TFLOPS"}, strict(1)), "between_graph");
  const double straggler_step_s = test::client_step_time(alone, "worker0");
  EXPECT_NEAR(m.update_interval_s, straggler_step_s, 0.05 * straggler_step_s);
  EXPECT_GE(m.update_interval_s, 3 * 1e9 * kBatch / 1e12);  // its compute alone
  // Every gradient counts: R = T, one per worker per global step.
  EXPECT_EQ(m.dropped_gradients, 0);
  EXPECT_NEAR(m.computed_samples_per_s, m.throughput_samples_per_s,
              0.05 * m.throughput_samples_per_s);
  EXPECT_NEAR(m.throughput_samples_per_s, 4 * kBatch / m.update_interval_s,
              1e-6 * m.throughput_samples_per_s);
  EXPECT_EQ(m.staleness_max, 0);
  EXPECT_TRUE(m.synchronous);
}

TEST(SyncReplicas, OneBackupWorkerHidesTheStraggler) {
  const core::RunMetrics with =
      test::simulate(workers_doc(kWithStraggler, strict(3)), "between_graph");
  const core::RunMetrics without =
      test::simulate(workers_doc(kWithoutStraggler, strict(3)), "between_graph");
  EXPECT_NEAR(with.update_interval_s, without.update_interval_s, 0.05 * without.update_interval_s);
  EXPECT_NEAR(with.throughput_samples_per_s, 3 * kBatch / with.update_interval_s,
              1e-6 * with.throughput_samples_per_s);
  // The straggler's gradients arrive after the take: stale, dropped, computed for nothing.
  EXPECT_GT(with.dropped_gradients, 0);
  EXPECT_GT(with.computed_samples_per_s, with.throughput_samples_per_s);
  // Without backups the same straggler costs about half the rate.
  const core::RunMetrics no_backup =
      test::simulate(workers_doc(kWithStraggler, strict(4)), "between_graph");
  EXPECT_GT(no_backup.update_interval_s, 1.6 * with.update_interval_s);
}

TEST(SyncReplicas, AsyncLosesOnlyTheStragglersMissingHalf) {
  const core::RunMetrics with =
      test::simulate(workers_doc(kWithStraggler, "async"), "between_graph");
  const core::RunMetrics without =
      test::simulate(workers_doc(kWithoutStraggler, "async"), "between_graph");
  const double expected = (4 - 0.5) / 4 * without.throughput_samples_per_s;
  EXPECT_NEAR(with.throughput_samples_per_s, expected, 0.03 * expected);
  EXPECT_FALSE(with.synchronous);
}

// Per worker (--json's clients): the straggler's dropped gradients, and async staleness that adds
// up to the run's.
TEST(SyncReplicas, DroppedGradientsAndStalenessPerWorker) {
  const core::RunMetrics sync =
      test::simulate(workers_doc(kWithStraggler, strict(3)), "between_graph");
  ASSERT_EQ(sync.clients.size(), 4u);
  int dropped = 0;
  for (const core::ClientMetrics& c : sync.clients) dropped += c.dropped_gradients;
  EXPECT_EQ(dropped, sync.dropped_gradients);
  // The straggler (worker3, half speed) arrives after the take: most drops are its own.
  EXPECT_GT(sync.clients[3].dropped_gradients, dropped / 2) << dropped;

  const core::RunMetrics async =
      test::simulate(workers_doc(kWithStraggler, "async"), "between_graph");
  int updates = 0;
  double staleness_sum = 0, staleness_max = 0;
  for (const core::ClientMetrics& c : async.clients) {
    int in_histogram = 0;
    for (int n : c.staleness_histogram) in_histogram += n;
    EXPECT_EQ(in_histogram, c.updates) << c.name;
    EXPECT_EQ(int(c.staleness_histogram.size()) - 1, int(c.staleness_max)) << c.name;
    updates += c.updates;
    staleness_sum += c.staleness_mean * c.updates;
    staleness_max = std::max(staleness_max, c.staleness_max);
  }
  EXPECT_EQ(updates, async.updates_in_window);
  EXPECT_NEAR(staleness_sum / updates, async.staleness_mean, 1e-9);
  EXPECT_EQ(staleness_max, async.staleness_max);
  EXPECT_GT(async.staleness_mean, 0);  // four async workers: others' updates come in between
}

TEST(SyncReplicas, TfTokensLetAWorkerContributeTwice) {
  // R = 4 gradients per global step from T = 2 workers: with TF's shared queue (max(T, R) = 4
  // tokens per global step) each worker takes two tokens and gives two gradients per global
  // step, so a global step takes two worker steps.
  const core::RunMetrics m = test::simulate(
      workers_doc({"2 TFLOPS", "2 TFLOPS"}, {{"replicas_to_aggregate", 4}}), "between_graph");
  const double worker_step_s = test::client_step_time(m, "worker0");
  EXPECT_NEAR(m.update_interval_s, 2 * worker_step_s, 0.05 * 2 * worker_step_s);
  EXPECT_NEAR(m.throughput_samples_per_s, 4 * kBatch / m.update_interval_s,
              1e-6 * m.throughput_samples_per_s);
}

TEST(SyncReplicas, TfSpareTokensCostMoreThanStrictWithAStraggler) {
  // R = 3 of T = 4 with a straggler: TF enqueues 4 tokens per global step, the straggler takes
  // fewer, and the spare ones, holding an older global_step, wait at the head of the queue; a
  // fast worker that takes one computes a gradient the accumulators drop. The strict variant
  // hands each worker the newest global_step instead, so only the straggler's work is dropped.
  const core::RunMetrics tf =
      test::simulate(workers_doc(kWithStraggler, {{"replicas_to_aggregate", 3}, {"variant", "tf"}}),
                     "between_graph");
  const core::RunMetrics one_each =
      test::simulate(workers_doc(kWithStraggler, strict(3)), "between_graph");
  EXPECT_EQ(tf.sync_variant, "tf");
  EXPECT_EQ(one_each.sync_variant, "strict");
  EXPECT_LT(tf.throughput_samples_per_s, 0.9 * one_each.throughput_samples_per_s);
  EXPECT_GT(tf.dropped_gradients, one_each.dropped_gradients);
  for (const core::RunMetrics* m : {&tf, &one_each}) {
    EXPECT_NEAR(m->throughput_samples_per_s, 3 * kBatch / m->update_interval_s,
                1e-6 * m->throughput_samples_per_s);
    EXPECT_GT(m->computed_samples_per_s, m->throughput_samples_per_s);
  }
}

TEST(SyncReplicas, IdenticalWorkersWithoutJitterDoNotStall) {
  // Without jitter, every worker's token arrives in the same instant and their reads queue on
  // the PS's connections together: none may be left behind (a connection going idle while a
  // tensor was queued on it once stalled global_step at 2).
  for (const nlohmann::json& sync : {nlohmann::json("sync"), strict(2)}) {
    nlohmann::json doc = workers_doc({"2 TFLOPS", "2 TFLOPS"}, sync, 40);
    doc["training"]["jitter"] = 0;
    doc["cluster"]["network_model"] = "lv08";
    const core::RunMetrics m = test::simulate(doc, "between_graph");
    EXPECT_FALSE(m.stalled) << sync.dump() << ": " << m.stall_cause;
    EXPECT_GT(m.throughput_samples_per_s, 0);
  }
}

TEST(SyncReplicas, SyncIsBetweenGraphOnly) {
  const core::RunMetrics m = test::simulate(workers_doc(kWithoutStraggler, "sync"), "in_graph");
  EXPECT_FALSE(m.synchronous);
  bool noted = false;
  for (const std::string& note : m.notes) noted |= note.find("training.sync") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace replisim::sync_test

namespace replisim::sync_test {
namespace {

// 64 workers, R = 60 of T = 64, worker i holding 100 + 10 i steps of data.
nlohmann::json data_limited_doc(const std::string& variant) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  nlohmann::json w = machine("w", "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps");
  w["count"] = 64;
  machines.push_back(w);
  nlohmann::json data = nlohmann::json::array();
  for (int i = 0; i < 64; ++i) data.push_back(100 + 10 * i);
  return test::scenario_json(machines, test::one_layer_model(1e5, "1 GFLOP"),
                             {{"replicas", "w*/gpu0"},
                              {"ps", {"p/cpu"}},
                              {"steps", 2000},
                              {"warmup_steps", 10},
                              {"batch_per_replica", kBatch},
                              {"costs", "none"},
                              {"data_steps_per_worker", data},
                              {"sync", {{"replicas_to_aggregate", 60}, {"variant", variant}}}});
}

struct Timeline {
  std::vector<double> exits_s;    // each worker's last step end, sorted
  std::vector<double> updates_s;  // global_step increments, sorted
  double worker_step_s = 0;       // mean worker step while all 64 are live
};

Timeline timeline(const core::Trace& trace) {
  Timeline t;
  std::map<uint32_t, double> last;
  std::vector<std::pair<double, double>> steps;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep) {
      last[e.client] = std::max(last[e.client], e.end_s);
      steps.emplace_back(e.start_s, e.end_s);
    }
    if (e.kind == core::EventKind::kUpdate) t.updates_s.push_back(e.end_s);
  }
  for (const auto& [client, end] : last) t.exits_s.push_back(end);
  std::sort(t.exits_s.begin(), t.exits_s.end());
  std::sort(t.updates_s.begin(), t.updates_s.end());
  double sum = 0;
  int n = 0;
  for (const auto& [start, end] : steps) {
    if (end < t.exits_s.front()) sum += end - start, ++n;
  }
  t.worker_step_s = sum / n;
  return t;
}

TEST(DataLimits, AnAsyncWorkerOutOfDataExitsAndTheOthersGoOn) {
  nlohmann::json doc = workers_doc(kWithoutStraggler, "async");
  doc["training"]["data_steps_per_worker"] = {60, 60, 60, 30};
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  std::map<std::string, int> steps;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kStep) ++steps[trace.str(e.client)];
  }
  EXPECT_EQ(steps["worker0"], 60);
  EXPECT_EQ(steps["worker3"], 30);
  const core::RunMetrics m = core::compute_metrics(trace);
  EXPECT_FALSE(m.stalled);
  EXPECT_GT(m.throughput_samples_per_s, 0);
}

TEST(SyncReplicas, StrictStallsWhenTheFifthWorkerLeaves) {
  const nlohmann::json doc = data_limited_doc("strict");
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  const Timeline t = timeline(trace);
  ASSERT_EQ(t.exits_s.size(), 64u);
  // Four workers may leave (64 - 4 = R); the fifth leaving stops global_step: its last gradient
  // makes the last global step, 140 (its data), and nothing follows.
  ASSERT_TRUE(m.stalled);
  EXPECT_EQ(m.stall_global_step, 140);
  EXPECT_NEAR(m.stall_start_s, t.exits_s[4], 0.5 * t.worker_step_s);
  EXPECT_GT(m.stall_start_s, t.exits_s[3]);
  EXPECT_NE(m.stall_cause.find("live workers (59) < replicas_to_aggregate (60)"), std::string::npos)
      << m.stall_cause;
  EXPECT_EQ(t.updates_s.back(), m.stall_start_s);
}

TEST(SyncReplicas, TfKeepsGoingWithFewerWorkersThanItAggregates) {
  const core::Trace strict_trace =
      test::simulate_trace(data_limited_doc("strict"), "between_graph");
  const core::Trace tf_trace = test::simulate_trace(data_limited_doc("tf"), "between_graph");
  const core::RunMetrics strict = core::compute_metrics(strict_trace);
  const core::RunMetrics tf = core::compute_metrics(tf_trace);
  ASSERT_TRUE(tf.stalled);
  EXPECT_GT(tf.stall_start_s, strict.stall_start_s);
  EXPECT_GT(tf.stall_global_step, 2 * strict.stall_global_step);
  EXPECT_NE(tf.stall_cause.find("every worker ran out of data"), std::string::npos)
      << tf.stall_cause;
  // While L < 60 workers remain, each global step needs 60 fresh gradients from L workers, so
  // the rate is at most (L / 60) x one worker's step rate; TF's accumulators also drop every
  // gradient in flight when a take completes, which costs up to one more round per global step
  // (docs/metrics.md), so it stays above half of that.
  const Timeline t = timeline(tf_trace);
  double expected_steps = 0;
  int steps = 0;
  for (size_t k = 4; k + 1 < t.exits_s.size(); ++k) {
    const int live = 64 - int(k) - 1;  // after the (k + 1)-th exit
    const double from = t.exits_s[k], to = t.exits_s[k + 1];
    expected_steps += double(live) / 60.0 / t.worker_step_s * (to - from);
    steps += int(std::upper_bound(t.updates_s.begin(), t.updates_s.end(), to) -
                 std::upper_bound(t.updates_s.begin(), t.updates_s.end(), from));
  }
  std::printf("tf, L < 60 live workers: %d global steps, %.1f at (L / 60) x the worker rate\n",
              steps, expected_steps);
  EXPECT_LE(steps, 1.05 * expected_steps);
  EXPECT_GE(steps, 0.5 * expected_steps);
}

}  // namespace
}  // namespace replisim::sync_test
