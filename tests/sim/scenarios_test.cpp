// The scenarios under scenarios/ are regression tests: each one's key figures are checked.
#include <gtest/gtest.h>

#include "core/base/json_cursor.h"
#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

core::RunMetrics run(const std::string& file, const std::string& strategy) {
  const core::Scenario s = core::load_scenario(test::scenario_path(file));
  return core::compute_metrics(test::run_plan(core::compile_plan(s, strategy, {})));
}

TEST(Scenarios, SeedTwoMachines) {
  const core::RunMetrics in_graph = run("seed/two_machines.json", "in_graph");
  const core::RunMetrics between = run("seed/two_machines.json", "between_graph");
  // The seed's claim: between-graph scales better; in-graph waits for both towers each step.
  EXPECT_GT(between.throughput_samples_per_s, 1.5 * in_graph.throughput_samples_per_s);
  EXPECT_EQ(in_graph.staleness_max, 0);
  EXPECT_NEAR(between.staleness_mean, 1.0, 0.1);  // two async workers
  // ResNet-50 on a 5 TFLOPS GPU: 3 x 8.2 GFLOP x 32 samples = 157 ms of compute per step.
  EXPECT_GE(in_graph.step_time_s.mean, 0.157);
  // The remote worker (pc2, 5 TFLOPS) runs at about half the local one's rate.
  const double w0 = test::client_step_time(between, "worker0");
  const double w1 = test::client_step_time(between, "worker1");
  EXPECT_GT(w1, 1.6 * w0);
  EXPECT_EQ(in_graph.bytes_per_ps.size(), 1u);
  EXPECT_NEAR(in_graph.bytes_per_ps[0], 25.557e6 * 4, 0.01 * 25.557e6 * 4);
}

TEST(Scenarios, Heterogeneous) {
  const core::RunMetrics in_graph = run("classroom/heterogeneous.json", "in_graph");
  const core::RunMetrics between = run("classroom/heterogeneous.json", "between_graph");
  // In-graph: every step waits for the slow towers (4 TFLOPS: 196 ms of compute per step).
  EXPECT_GE(in_graph.step_time_s.mean, 0.196);
  // Between-graph: the fast worker is not held back by the slow ones.
  const double fast = test::client_step_time(between, "worker0");
  for (const char* slow : {"worker1", "worker2", "worker3"}) {
    EXPECT_GT(test::client_step_time(between, slow), 2.5 * fast) << slow;
  }
  EXPECT_GT(between.throughput_samples_per_s, 2 * in_graph.throughput_samples_per_s);
  for (const core::ClientMetrics& c : between.clients) EXPECT_GE(c.measured_steps, 5) << c.name;
}

TEST(Scenarios, PsBottleneck) {
  const core::RunMetrics between = run("classroom/ps_bottleneck.json", "between_graph");
  EXPECT_TRUE(between.bottleneck.name == "ps/nic/up" || between.bottleneck.name == "ps/nic/down")
      << between.bottleneck.name;
  // Bound: batch x PS NIC bandwidth per direction / parameter bytes.
  const double bound = 32 * 1.25e8 / (25.557e6 * 4);
  EXPECT_LE(between.throughput_samples_per_s, bound);
  EXPECT_GE(between.throughput_samples_per_s, 0.5 * bound);
  double network = 0;
  for (const core::WaitBreakdown& w : core::average_waits_by_kind(between.waits)) {
    if (w.role_kind == "worker") network = w.network;
  }
  EXPECT_GT(network, 0.9);
}

TEST(Scenarios, ModelParallel) {
  const core::RunMetrics in_graph = run("classroom/model_parallel.json", "in_graph");
  // VGG-16's convolutions on pc1's GPU: 3 x 2 x 15.47 G multiply-adds x 32 / 10 TFLOPS = 297 ms a
  // step; the dense layers on pc2 take 2 ms. pc1's GPU is the bottleneck.
  EXPECT_EQ(in_graph.bottleneck.name, "pc1/gpu0");
  EXPECT_GE(in_graph.step_time_s.mean, 0.297);
  EXPECT_LT(in_graph.step_time_s.mean, 0.297 * 1.25);
  ASSERT_FALSE(in_graph.memory.empty());
  EXPECT_GT(in_graph.memory.front().headroom_bytes(), 0);
}

TEST(Scenarios, PlanningResNet50On16Gpus) {
  const core::Scenario s =
      core::load_scenario(test::scenario_path("planning/resnet50_16gpu_10gbe.json"));
  EXPECT_EQ(s.training.replicas.size(), 16u);
  EXPECT_EQ(s.training.ps.size(), 4u);
  const core::RunMetrics between = run("planning/resnet50_16gpu_10gbe.json", "between_graph");
  // 16 workers pull and push ResNet-50 through 4 PS NICs at 10 Gbps: the PS side limits.
  EXPECT_EQ(between.bottleneck.name.rfind("ps", 0), 0u) << between.bottleneck.name;
  EXPECT_EQ(between.clients.size(), 16u);
}

TEST(Scenarios, PlanningRacksWithOversubscribedUplinks) {
  const core::RunMetrics m = run("planning/racks_3to1.json", "between_graph");
  // Racks 1 to 3 reach the PSes (rack 0) through uplinks of 8 x 25 Gbit/s / 3: they are the
  // busiest resources, and rack 0's workers (w0..w7) step faster than the others.
  EXPECT_NE(m.bottleneck.name.find("/uplink/"), std::string::npos) << m.bottleneck.name;
  EXPECT_GT(m.bottleneck.utilization, 0.6);
  EXPECT_LT(test::client_step_time(m, "worker0"), 0.85 * test::client_step_time(m, "worker8"));
}

TEST(Scenarios, SyncStraggler) {
  const core::RunMetrics m = run("classroom/sync_straggler.json", "between_graph");
  ASSERT_TRUE(m.synchronous);
  EXPECT_EQ(m.replicas_to_aggregate, 3);
  // One backup worker: the global step keeps the fast workers' pace (ResNet-50, batch 64 at
  // 15 TFLOPS: 3 x 8.2 GFLOP x 64 = 105 ms of compute), not the straggler's (twice that).
  EXPECT_GE(m.update_interval_s, 0.105);
  EXPECT_LT(m.update_interval_s, 0.15);
  EXPECT_NEAR(test::client_step_time(m, "worker3"), 2 * test::client_step_time(m, "worker0"),
              0.3 * test::client_step_time(m, "worker0"));
  EXPECT_GT(m.dropped_gradients, 0);  // the straggler's, every step
  EXPECT_GT(m.computed_samples_per_s, m.throughput_samples_per_s);
}

TEST(Scenarios, PsFailure) {
  const core::RunMetrics m = run("classroom/ps_failure.json", "between_graph");
  ASSERT_EQ(m.recoveries.size(), 1u);
  const core::RecoveryRecord& k = m.recoveries[0];
  EXPECT_EQ(k.cause, "ps1 dies");
  // Restored from the checkpoint saved at about 30 s: at most one period (15 s) of work lost.
  EXPECT_GT(k.checkpoint_global_step, 0);
  EXPECT_GT(k.lost_global_steps, 0);
  EXPECT_GT(k.lost_work_s, 0);
  EXPECT_LT(k.lost_work_s, 15 + 1);
  // 5 s to detect, 10 s to restart, ResNet-50's 102.2 MB restored at 500 MB/s.
  EXPECT_NEAR(k.recovery_time_s, 5 + 10 + 102.2e6 / 500e6, 0.01);
  // Each worker's first poll after the restore: 30 s after it came up, the last of them within
  // the start-up stagger (about one step) of the restart.
  EXPECT_GE(k.workers_resumed_s - k.fault_s, 15 + 30);
  EXPECT_LT(k.workers_resumed_s - k.fault_s, 15 + 30 + 1);
  EXPECT_GE(m.checkpoints_written, 4);
}

// The classroom's "PS vs all-reduce": on the same cluster the ring, spread over every worker's NIC,
// beats one PS's NIC; the ring's step is at least its closed form's bytes time, 2(N-1)/N x S / B
// (nccl-tests' PERFORMANCE.md), and its path names a ring link.
TEST(Scenarios, PsVsAllReduce) {
  const core::RunMetrics between = run("classroom/ps_vs_allreduce.json", "between_graph");
  const core::RunMetrics ring = run("classroom/ps_vs_allreduce.json", "allreduce");
  EXPECT_GT(ring.throughput_samples_per_s, 1.5 * between.throughput_samples_per_s);
  EXPECT_TRUE(between.bottleneck.name == "ps/nic/up" || between.bottleneck.name == "ps/nic/down")
      << between.bottleneck.name;
  EXPECT_TRUE(ring.bytes_per_ps.empty());
  const double gradient_bytes = 25.557e6 * 4;
  EXPECT_GE(ring.step_time_s.mean, 2.0 * 3 / 4 * gradient_bytes / 1.25e9);
  ASSERT_FALSE(ring.bound_by.shares.empty());
  const core::PathShare& first = ring.bound_by.shares.front();
  EXPECT_NE(first.name.find(" network"), std::string::npos) << first.name;
  ASSERT_FALSE(first.directions.empty());
  EXPECT_EQ(first.directions.front().first, "allreduce");
  for (const core::WaitBreakdown& w : core::average_waits_by_kind(ring.waits)) {
    if (w.role_kind == "worker") {
      EXPECT_GT(w.collective, 0.5);
    }
  }
}

TEST(Scenarios, AllScenarioFilesParse) {
  for (const char* file :
       {"seed/two_machines.json", "classroom/heterogeneous.json", "classroom/ps_bottleneck.json",
        "classroom/model_parallel.json", "classroom/sync_straggler.json",
        "classroom/ps_failure.json", "classroom/ps_vs_allreduce.json",
        "planning/resnet50_16gpu_10gbe.json", "planning/racks_3to1.json",
        "published/resnet50_64gpu.json", "published/inception_v3_1gpu.json"}) {
    EXPECT_NO_THROW(core::load_scenario(test::scenario_path(file))) << file;
  }
}

}  // namespace
}  // namespace replisim

namespace replisim {
namespace {

// scenarios/validation/ (docs/validation-real.md): each takes its devices' speeds and the NIC
// latency from the bundled calibration, and shows what it says it shows.
TEST(Scenarios, ValidationScenariosUseTheCalibration) {
  const core::Scenario one =
      core::load_scenario(test::scenario_path("validation/one_worker_one_ps.json"));
  ASSERT_TRUE(one.calibration.is_object());
  const double cpu = one.calibration["measured"]["sgemm_flop_per_s_one_core_alone"].get<double>();
  for (const core::MachineSpec& m : one.cluster.machines) {
    EXPECT_NEAR(m.cpu_speed_flop_per_s, cpu, 0.001 * cpu) << m.name;
    EXPECT_DOUBLE_EQ(m.nic.bandwidth_bytes_per_s, 125e6) << m.name;  // its own, 1 Gbps
  }
  const core::Scenario towers =
      core::load_scenario(test::scenario_path("validation/worker_two_towers.json"));
  EXPECT_NEAR(towers.cluster.machines.at(1).gpus.at(1).speed_flop_per_s, cpu, 0.001 * cpu);

  const core::RunMetrics two = run("validation/two_async_workers.json", "between_graph");
  // Two workers pull and push 25 MB a step each through the PS's 1 Gbit/s NIC: it binds.
  EXPECT_EQ(two.bottleneck.name.rfind("ps/nic", 0), 0u) << two.bottleneck.name;
  const core::RunMetrics killed = run("validation/async_worker_killed.json", "between_graph");
  ASSERT_EQ(killed.faults.size(), 1u);
  EXPECT_EQ(killed.faults.front().target, "worker1");
  const core::RunMetrics degraded = run("validation/degraded_link.json", "between_graph");
  EXPECT_GT(degraded.step_time_s.p95, 1.3 * degraded.step_time_s.p50);  // steps in the window
  const core::RunMetrics sync = run("validation/sync_two_workers.json", "between_graph");
  EXPECT_TRUE(sync.synchronous);
  const core::RunMetrics in_graph = run("validation/in_graph_two_towers.json", "in_graph");
  EXPECT_GT(in_graph.throughput_samples_per_s, 0);
  // training.objective's scenario: the proxy reaches 72% test accuracy after about 60 global
  // steps, where an evaluation falls (scripts/validate-real compares it with real runs).
  const core::RunMetrics learns =
      run("validation/two_async_workers_objective.json", "between_graph");
  ASSERT_TRUE(learns.objective.has_value());
  ASSERT_TRUE(learns.objective->reached());
  EXPECT_GE(learns.objective->global_steps_to_target, 40);
  EXPECT_LE(learns.objective->global_steps_to_target, 80);
  EXPECT_EQ(learns.objective->global_steps_to_target % 4, 0);
  EXPECT_GT(learns.objective->final_accuracy, 0.74);
}

}  // namespace
}  // namespace replisim
