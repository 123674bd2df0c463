// Per-replica batches in the simulator (training.batch_per_replica as a list; field report F17,
// workers of different batch sizes under SyncReplicas), against closed forms.
//
// Closed form (network_model "ideal", costs "none", jitter 0, a model of 1,000 parameters on fast
// NICs: compute-bound): a replica of batch b on a device of speed S computes F b (1 + 2) / S a
// step (forward F per sample, backward twice that). A synchronous global step, an in-graph step
// and an all-reduce step wait for every replica, so the largest b / S paces them, and each applies
// the sum of the batches. Async workers each run at their own pace.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

// One worker machine per entry of `gpu_speeds`, a dedicated PS machine, 100 Gbps NICs.
nlohmann::json mixed(const std::vector<std::string>& gpu_speeds, const nlohmann::json& batches,
                     const nlohmann::json& training_extra = nullptr) {
  std::vector<nlohmann::json> machines = {test::machine("p", "1 TFLOPS", {}, "100 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t w = 0; w < gpu_speeds.size(); ++w) {
    machines.push_back(
        test::machine("w" + std::to_string(w), "100 GFLOPS", {gpu_speeds[w]}, "100 Gbps"));
    replicas.push_back("w" + std::to_string(w) + "/gpu0");
  }
  nlohmann::json t = {{"replicas", replicas}, {"ps", {"p/cpu"}},
                      {"client", "p"},        {"batch_per_replica", batches},
                      {"steps", 14},          {"warmup_steps", 4},
                      {"costs", "none"},      {"jitter", 0}};
  if (!training_extra.is_null()) t.update(training_extra);
  return test::scenario_json(machines, test::one_layer_model(1000, "100 MFLOP"), t, "ideal",
                             "1 TBps");
}

const std::vector<std::string> kFourEqualGpus = {"1 TFLOPS", "1 TFLOPS", "1 TFLOPS", "1 TFLOPS"};

// Sync R = T = 4 with one worker at twice the others' batch: the global step waits for it, so it
// takes as long as when every worker has the large batch, and applies 32 + 32 + 32 + 64 samples.
TEST(ReplicaBatchesSim, ASyncStepWaitsForTheLargestBatch) {
  const core::RunMetrics one_large =
      test::simulate(mixed(kFourEqualGpus, {32, 32, 32, 64}, {{"sync", "sync"}}), "between_graph");
  const core::RunMetrics all_large =
      test::simulate(mixed(kFourEqualGpus, 64, {{"sync", "sync"}}), "between_graph");
  const double expected = all_large.throughput_samples_per_s * (32 + 32 + 32 + 64) / (4.0 * 64);
  EXPECT_NEAR(one_large.throughput_samples_per_s, expected, 0.02 * expected);
  std::printf("sync, batches 32/32/32/64: %.1f samples/s (closed form %.1f; all 64: %.1f)\n",
              one_large.throughput_samples_per_s, expected, all_large.throughput_samples_per_s);
  // The small-batch workers wait for a token about half of each step.
  for (const char* fast : {"worker0", "worker1", "worker2"}) {
    const double ratio =
        test::client_step_time(one_large, fast) / test::client_step_time(one_large, "worker3");
    EXPECT_NEAR(ratio, 1.0, 0.03) << fast << ": every worker's step is a global step";
  }
}

// One backup worker (R = 3 of T = 4, strict): the large batch's worker is mostly late, its
// gradients dropped; an update counts the batches of the gradients its takes averaged (three
// small ones: 96 samples, or with the large one 128), not R times the mean batch (120).
TEST(ReplicaBatchesSim, AnUpdateCountsTheGradientsItTook) {
  const nlohmann::json backup = {
      {"sync", {{"replicas_to_aggregate", 3}, {"total_num_replicas", 4}, {"variant", "strict"}}}};
  const core::Trace trace =
      test::simulate_trace(mixed(kFourEqualGpus, {32, 32, 32, 64}, backup), "between_graph");
  std::map<int, int> updates_of_samples;
  for (const core::TraceEvent* e : test::events_of(trace, core::EventKind::kUpdate)) {
    ++updates_of_samples[e->samples];
  }
  ASSERT_FALSE(updates_of_samples.empty());
  for (const auto& [samples, updates] : updates_of_samples) {
    EXPECT_TRUE(samples == 96 || samples == 128 || samples == 160)
        << updates << " update(s) of " << samples << " samples";
  }
  EXPECT_GT(updates_of_samples[96], 0) << "the three small batches alone";
  EXPECT_GT(core::compute_metrics(trace).dropped_gradients, 0);
}

// Async: each worker runs at its own batch's pace (twice the batch, twice the step), and every
// worker contributes the same samples per second.
TEST(ReplicaBatchesSim, AsyncWorkersRunAtTheirOwnBatchsPace) {
  // 100 steps: the measurement window (every worker past its warm-up, none finished) then holds
  // about 45 of the large batch's steps, so one step more or less in it moves the rate < 1%.
  const nlohmann::json steps = {{"steps", 100}};
  const core::RunMetrics m =
      test::simulate(mixed(kFourEqualGpus, {32, 32, 32, 64}, steps), "between_graph");
  const double small = test::client_step_time(m, "worker0");
  const double large = test::client_step_time(m, "worker3");
  EXPECT_NEAR(large / small, 2.0, 0.04);
  const core::RunMetrics all_small =
      test::simulate(mixed(kFourEqualGpus, 32, steps), "between_graph");
  EXPECT_NEAR(m.throughput_samples_per_s, all_small.throughput_samples_per_s,
              0.03 * all_small.throughput_samples_per_s);
}

// In-graph over a 2 TFLOPS and a 1 TFLOPS GPU: sub-batches split 2:1 keep both busy, so 96
// samples a step take as long as 32 on the slow GPU; an even split (48 each) waits for the slow
// GPU's 48: 1.5 times the throughput.
TEST(ReplicaBatchesSim, AnUnevenInGraphSplitBalancesUnequalGpus) {
  const std::vector<std::string> gpus = {"2 TFLOPS", "1 TFLOPS"};
  const core::RunMetrics balanced = test::simulate(mixed(gpus, {64, 32}), "in_graph");
  const core::RunMetrics even = test::simulate(mixed(gpus, 48), "in_graph");
  EXPECT_NEAR(balanced.throughput_samples_per_s / even.throughput_samples_per_s, 1.5, 0.04);
  const double step_s = 100e6 * 3 * 32 / 1e12;  // the slow GPU's 32 samples
  EXPECT_NEAR(balanced.throughput_samples_per_s, 96 / step_s, 0.05 * 96 / step_s);
  std::printf("in-graph 2:1 GPUs: 64/32 split %.1f samples/s, 48/48 split %.1f samples/s\n",
              balanced.throughput_samples_per_s, even.throughput_samples_per_s);
}

// All-reduce: every step waits for the rank with the largest batch and applies every rank's.
TEST(ReplicaBatchesSim, AnAllReduceStepAppliesEveryRanksBatch) {
  const std::vector<std::string> gpus = {"1 TFLOPS", "1 TFLOPS", "1 TFLOPS"};
  const core::RunMetrics mixed_ranks = test::simulate(mixed(gpus, {16, 32, 64}), "allreduce");
  const core::RunMetrics all_large = test::simulate(mixed(gpus, 64), "allreduce");
  const double expected = all_large.throughput_samples_per_s * (16 + 32 + 64) / (3.0 * 64);
  EXPECT_NEAR(mixed_ranks.throughput_samples_per_s, expected, 0.03 * expected);
}

// F17: scenarios/field/f17_mixed_batch_sync.json. One worker of batch 64 among three of 32 under
// SyncReplicas (R = T = 4): every step waits for it, so the job is slower than with every worker at
// 32, each step as long as with every worker at 64; with one backup worker its gradients are
// dropped and the updates count fewer samples than the steps computed.
TEST(ReplicaBatchesSim, F17OneLargeBatchSlowsEverySyncStep) {
  std::ifstream in(test::scenario_path("field/f17_mixed_batch_sync.json"));
  const nlohmann::json mixed_doc = nlohmann::json::parse(in);
  auto with = [&](const nlohmann::json& batches, const nlohmann::json& sync) {
    nlohmann::json doc = mixed_doc;
    doc["training"]["batch_per_replica"] = batches;
    doc["training"]["sync"] = sync;
    return test::simulate(doc, "between_graph");
  };
  const core::RunMetrics mixed_run = test::simulate(mixed_doc, "between_graph");
  const core::RunMetrics all_32 = with(32, "sync");
  const core::RunMetrics all_64 = with(64, "sync");
  std::printf("F17: 32/32/32/64 %.1f images/s; all 32 %.1f; all 64 %.1f\n",
              mixed_run.throughput_samples_per_s, all_32.throughput_samples_per_s,
              all_64.throughput_samples_per_s);
  EXPECT_LT(mixed_run.throughput_samples_per_s, 0.85 * all_32.throughput_samples_per_s);
  const double mixed_step = 160 / mixed_run.throughput_samples_per_s;
  const double large_step = 256 / all_64.throughput_samples_per_s;
  EXPECT_NEAR(mixed_step, large_step, 0.03 * large_step);
  // The small-batch workers wait for their tokens; the large one hardly does.
  double small_token = 0, large_token = 0;
  for (const core::WaitBreakdown& w : mixed_run.waits) {
    if (w.role == "worker0") small_token = w.token;
    if (w.role == "worker3") large_token = w.token;
  }
  EXPECT_GT(small_token, 0.3);
  EXPECT_LT(large_token, 0.1);
  const nlohmann::json backup = {
      {"replicas_to_aggregate", 3}, {"total_num_replicas", 4}, {"variant", "strict"}};
  const core::RunMetrics backed = with(mixed_doc["training"]["batch_per_replica"], backup);
  EXPECT_GT(backed.dropped_gradients, 0);
  EXPECT_LT(backed.throughput_samples_per_s, 0.9 * backed.computed_samples_per_s);
  std::printf("F17 with one backup worker (strict): %.1f images/s applied, %.1f computed\n",
              backed.throughput_samples_per_s, backed.computed_samples_per_s);
}

}  // namespace
}  // namespace replisim
