// Multi-GPU workers (tf_cnn_benchmarks' distributed_replicated): one worker with a tower per GPU
// reads each variable from its PS once, sums its towers' gradients locally and pushes once, so
// the network carries one worker's traffic instead of one per GPU.
#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::machine;

// A 4-GPU machine and a PS machine on 1 Gbps; a 25 M-parameter layer (100 MB), light compute.
nlohmann::json four_gpu_doc(const nlohmann::json& replicas) {
  return test::scenario_json(
      {machine("w", "1 TFLOPS", {"10 TFLOPS", "10 TFLOPS", "10 TFLOPS", "10 TFLOPS"}, "1 Gbps"),
       machine("p", "1 TFLOPS", {}, "1 Gbps")},
      test::one_layer_model(25e6, "1 GFLOP"),
      {{"replicas", replicas},
       {"ps", {"p/cpu"}},
       {"steps", 20},
       {"warmup_steps", 4},
       {"costs", "none"},
       {"jitter", 0}});
}

int count(const core::ClientGraph& g, core::OpKind kind) {
  int n = 0;
  for (const core::Op& op : g.ops) n += op.kind == kind;
  return n;
}

TEST(MultiGpuWorkers, OneWorkerTalksToThePsOncePerStep) {
  const core::Plan plan =
      core::compile_plan(test::parse(four_gpu_doc({{{"towers", "w/gpu*"}}})), "between_graph", {});
  ASSERT_EQ(plan.clients.size(), 1u);
  const core::ClientGraph& worker = plan.clients.front();
  EXPECT_EQ(worker.samples_per_step, 4 * 32);
  EXPECT_EQ(count(worker, core::OpKind::kForward), 4);
  EXPECT_EQ(count(worker, core::OpKind::kLoss), 4);
  EXPECT_EQ(count(worker, core::OpKind::kAggregate), 1);
  EXPECT_EQ(count(worker, core::OpKind::kApply), 1);
  // Transfers that cross machines: one pull and one push of the layer (plus global_step's
  // control edges, which carry no bytes).
  const int ps_cpu = plan.platform.find_device("p/cpu");
  int pulls = 0, pushes = 0;
  for (const core::Op& op : worker.ops) {
    if (op.kind != core::OpKind::kSend || op.bytes == 0) continue;
    const int to = worker.ops[size_t(op.peer)].device;
    pulls += op.device == ps_cpu;
    pushes += to == ps_cpu;
  }
  EXPECT_EQ(pulls, 1);
  EXPECT_EQ(pushes, 1);
}

// As tf_cnn_benchmarks' VariableMgrDistributedReplicated: the worker's copy of the variables and
// the sum of its towers' gradients live on its CPU; each tower gets the copy, and gives its
// gradient, over its own PCIe link, and no tensor goes from one GPU to another.
TEST(MultiGpuWorkers, EachTowerTakesItsCopyOverItsOwnLink) {
  const core::Plan plan =
      core::compile_plan(test::parse(four_gpu_doc({{{"towers", "w/gpu*"}}})), "between_graph", {});
  const core::ClientGraph& worker = plan.clients.front();
  const core::Platform& p = plan.platform;
  const int cpu = p.find_device("w/cpu");
  const double layer_bytes = 4 * 25e6;
  std::vector<int> copies_in(p.devices.size(), 0), gradients_out(p.devices.size(), 0);
  for (const core::Op& op : worker.ops) {
    if (op.kind != core::OpKind::kSend || op.bytes != layer_bytes) continue;
    const int from = op.device, to = worker.ops[size_t(op.peer)].device;
    EXPECT_FALSE(p.devices[size_t(from)].pcie_link >= 0 && p.devices[size_t(to)].pcie_link >= 0)
        << op.name << ": GPU to GPU";
    if (from == cpu && to != cpu) ++copies_in[size_t(to)];
    if (to == cpu && from != cpu) ++gradients_out[size_t(from)];
  }
  for (const char* gpu : {"w/gpu0", "w/gpu1", "w/gpu2", "w/gpu3"}) {
    EXPECT_EQ(copies_in[size_t(p.find_device(gpu))], 1) << gpu;
    EXPECT_EQ(gradients_out[size_t(p.find_device(gpu))], 1) << gpu;
  }
  for (const core::Op& op : worker.ops) {
    if (op.kind == core::OpKind::kAggregate) {
      EXPECT_EQ(op.device, cpu) << op.name;
    }
  }
}

// Every tower holds its own copy of the weights, even one on the PS's own GPU (its copy comes
// from the worker's CPU, not from the variable beside it); the CPU holds the copy and the sum.
TEST(MultiGpuWorkers, EachTowerHoldsItsOwnCopyInMemory) {
  nlohmann::json doc = four_gpu_doc({{{"towers", "w/gpu*"}}});
  doc["training"]["ps"] = {"w/gpu0"};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Platform& p = plan.platform;
  const double layer_bytes = 4 * 25e6;
  auto memory = [&](const char* device) {
    for (const core::DeviceMemory& m : plan.memory) {
      if (m.device == p.find_device(device)) return m;
    }
    return core::DeviceMemory{};
  };
  // gpu0: the PS's variables (the layer and global_step's 8 bytes) and tower 0's own copy.
  EXPECT_DOUBLE_EQ(memory("w/gpu0").weights_bytes, 2 * layer_bytes + 8);
  EXPECT_DOUBLE_EQ(memory("w/gpu1").weights_bytes, layer_bytes);
  EXPECT_DOUBLE_EQ(memory("w/cpu").weights_bytes, layer_bytes);
  EXPECT_DOUBLE_EQ(memory("w/cpu").gradients_bytes, layer_bytes);
}

TEST(MultiGpuWorkers, LocalAggregationBeatsOneWorkerPerGpuOnASlowNetwork) {
  const core::RunMetrics towers =
      test::simulate(four_gpu_doc({{{"towers", "w/gpu*"}}}), "between_graph");
  const core::RunMetrics per_gpu = test::simulate(four_gpu_doc("w/gpu*"), "between_graph");
  // Per step the 4-tower worker pulls and pushes 100 MB once over the 1 Gbps link (0.8 s each
  // way, one after the other) for 128 samples; four per-GPU workers move four times the bytes
  // for the same samples, their pulls and pushes overlapping (3.2 s per direction).
  const double link_s = 2 * 100e6 / 1.25e8;
  EXPECT_GE(towers.step_time_s.mean, link_s);
  EXPECT_LE(towers.step_time_s.mean, 1.1 * link_s);  // + local copies, compute, aggregation
  EXPECT_GT(towers.throughput_samples_per_s, 1.7 * per_gpu.throughput_samples_per_s);
  EXPECT_NEAR(towers.throughput_samples_per_s, 128 / towers.step_time_s.mean,
              0.05 * towers.throughput_samples_per_s);
  // The per-GPU workers' bound (pulls and pushes overlapping perfectly); without jitter they run
  // in lockstep and get half of it.
  const double per_gpu_bound = 128 / (4 * 100e6 / 1.25e8);
  EXPECT_LE(per_gpu.throughput_samples_per_s, 1.02 * per_gpu_bound);
  EXPECT_GT(towers.throughput_samples_per_s, 1.8 * per_gpu_bound);
}

TEST(MultiGpuWorkers, SyncCountsWorkersNotTowers) {
  nlohmann::json doc =
      four_gpu_doc({{{"towers", {"w/gpu0", "w/gpu1"}}}, {{"towers", {"w/gpu2", "w/gpu3"}}}});
  doc["training"]["sync"] = "sync";
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  ASSERT_TRUE(m.synchronous);
  EXPECT_EQ(m.total_num_replicas, 2);
  // Each global step applies R = 2 worker gradients of 2 x 32 samples.
  EXPECT_NEAR(m.throughput_samples_per_s, 128 / m.update_interval_s,
              1e-6 * m.throughput_samples_per_s);
}

}  // namespace
}  // namespace replisim
