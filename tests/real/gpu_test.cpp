// GPU compute of real runs: the GEMM shapes a GPU op runs (everywhere), the CUDA engine on a GPU
// (skipped, saying why, on a machine without one), and a real run's GPU ops, which run on cuBLAS
// when a GPU is usable and on the CPU engine otherwise, the report saying which.
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/model/model.h"
#include "real/calibrate/microbench.h"
#include "real/compute/cpu_engine.h"
#include "real/compute/gpu.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;

TEST(GemmShapes, AnOpRunsAboutItsFlopInLargeGemms) {
  for (const double flop : {1e6, 4.2e6, 1e8, 3.3e9, 2.5e11, 1.1e12, 7e12}) {
    const std::vector<GemmRun> shapes = gpu_gemm_shapes(flop);
    ASSERT_FALSE(shapes.empty()) << flop;
    double total = 0;
    for (const GemmRun& s : shapes) {
      EXPECT_EQ(s.m, s.n);
      EXPECT_EQ(s.k, s.n);
      EXPECT_EQ(s.n % 128, 0);
      EXPECT_GE(s.n, 128);
      EXPECT_LE(s.n, 8192);
      EXPECT_GE(s.count, 1);
      total += s.flop();
    }
    // Within the smallest GEMM (2 * 128^3 FLOP), or 1% of a large op.
    EXPECT_LE(std::abs(total - flop), std::max(2.0 * 128 * 128 * 128, 0.01 * flop)) << flop;
  }
  EXPECT_EQ(gpu_gemm_shapes(1.1e13).front().n, 8192);  // the largest GEMMs, repeated
  EXPECT_EQ(gpu_gemm_shapes(1e12, 2048).front().n, 2048);
  EXPECT_TRUE(gpu_gemm_shapes(0).empty());
}

// The plan's per-sample GEMMs stretched to an op: a forward op of a batch of b runs its layers'
// products at m = rows x b (a weight gradient's reduction k = rows x b), whatever else stretches
// it; an op smaller than one sample's GEMMs shrinks n, then k.
TEST(GemmShapes, AnOpRunsItsLayersProductsAtItsBatch) {
  const std::vector<SampleGemm> conv = {{3136, 64, 576, 'm'}};  // a 3x3 conv at 56x56
  const double per_sample = 2.0 * 3136 * 64 * 576;
  std::vector<GemmRun> runs = stretch_gemms(conv, 32 * per_sample);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].m, 3136 * 32);
  EXPECT_EQ(runs[0].n, 64);
  EXPECT_EQ(runs[0].k, 576);
  const std::vector<SampleGemm> backward = {{3136, 576, 64, 'm'}, {576, 64, 3136, 'k'}};
  runs = stretch_gemms(backward, 2 * 8 * per_sample);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].m, 3136 * 8);
  EXPECT_EQ(runs[1].m, 576);
  EXPECT_EQ(runs[1].k, 3136 * 8);
  EXPECT_DOUBLE_EQ(gemm_flop(runs), 2 * 8 * per_sample);
  // A jittered or scaled op: within a rounding of the batch dimension.
  runs = stretch_gemms(conv, 1.3 * 32 * per_sample);
  EXPECT_NEAR(gemm_flop(runs), 1.3 * 32 * per_sample, 2.0 * 64 * 576);
  // Less than one row: n, then k, shrink (each at least 1).
  const std::vector<SampleGemm> dense = {{1, 1000, 2048, 'm'}};
  runs = stretch_gemms(dense, 2.0 * 1000 * 2048 / 100);
  EXPECT_EQ(runs[0].m, 1);
  EXPECT_EQ(runs[0].n, 10);
  EXPECT_EQ(runs[0].k, 2048);
  runs = stretch_gemms(dense, 2.0 * 512);
  EXPECT_EQ(runs[0].n, 1);
  EXPECT_EQ(runs[0].k, 512);
  EXPECT_TRUE(stretch_gemms(dense, 0).empty());
  EXPECT_TRUE(stretch_gemms({}, 1e9).empty());
}

// Tiles cover the product once, none larger than the engine's matrices, at least one per thread
// where the product has that many cells.
TEST(GemmShapes, TilesCoverTheProductOnceWithinTheEnginesMatrices) {
  for (const auto& [m, n, max_dim, parts] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int>>{{100352, 64, 1024, 1},
                                                               {64, 4096, 1024, 2},
                                                               {1, 1000, 1024, 4},
                                                               {3, 3, 2, 16},
                                                               {5000, 5000, 8192, 1}}) {
    const std::vector<GemmTile> tiles = gemm_tiles(m, n, max_dim, parts);
    int64_t cells = 0;
    for (const GemmTile& t : tiles) {
      EXPECT_GE(t.rows, 1);
      EXPECT_GE(t.cols, 1);
      EXPECT_LE(t.rows, max_dim);
      EXPECT_LE(t.cols, max_dim);
      EXPECT_LE(t.row + t.rows, m);
      EXPECT_LE(t.col + t.cols, n);
      cells += t.rows * t.cols;
    }
    EXPECT_EQ(cells, m * n) << m << " x " << n;
    EXPECT_GE(int64_t(tiles.size()), std::min<int64_t>(parts, m * n)) << m << " x " << n;
  }
}

// The CPU engine runs an op's plan shapes (one thread or two) and its square blocks without them,
// each to the op's FLOP.
TEST(GemmShapes, TheCpuEngineRunsAnOpsShapesToItsFlop) {
  configure_blas();
  DeviceEngine engine("w0/cpu", 1);
  const std::vector<SampleGemm> dense = {{1, 300, 200, 'm'}, {1, 10, 300, 'm'}};
  const double flop = 64 * 2.0 * (300 * 200 + 10 * 300);
  for (int threads : {1, 2}) {
    const ComputeResult done = engine.execute(flop, &dense, threads);
    EXPECT_DOUBLE_EQ(done.flop, flop) << threads;
    EXPECT_EQ(done.device_s, -1);  // the host's clock is a CPU's time
  }
  EXPECT_NEAR(engine.execute(flop, nullptr, 1).flop, flop, 2.0 * kGemmBlock * kGemmBlock);
  EXPECT_DOUBLE_EQ(execute_gemms({{1500, 1100, 2100, 2}}, 2), 2 * 2.0 * 1500 * 1100 * 2100);
}

// An engine being destroyed (a node cancelled by SIGTERM) ends the op it runs within a tile, not
// after the op's whole FLOP (here days of it).
TEST(GemmShapes, DestroyingAnEngineEndsItsRunningOpWithinATile) {
  configure_blas();
  std::atomic<bool> started{false};
  std::atomic<double> done{-1};
  auto engine = std::make_unique<DeviceEngine>("w0/cpu", 1);
  DeviceEngine* e = engine.get();
  e->submit([e, &started, &done] {
    started = true;
    done = e->execute(1e19, 1);
  });
  for (int i = 0; i < 5000 && !started; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(started);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  engine.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_GT(done.load(), 0);
  EXPECT_LT(done.load(), 1e12);
}

// calibrate's GPU figure is measured on a ResNet-50 step's products: three per layer, twice the
// forward FLOP for the backward pass (the plan's 2x rule), at its reference batch.
TEST(GemmShapes, TheGpuCalibrationRunsAResNet50StepsProducts) {
  const std::vector<GemmRun> runs = calibrate::gpu_reference_gemms();
  const core::Model resnet = core::find_model_preset("resnet50")->build({});
  EXPECT_EQ(runs.size(), 3 * resnet.layers.size());
  EXPECT_DOUBLE_EQ(gemm_flop(runs),
                   3 * resnet.forward_flop_per_sample() * calibrate::kGpuReferenceBatch);
  EXPECT_EQ(runs.front().m, 112 * 112 * calibrate::kGpuReferenceBatch);  // conv1's output
}

TEST(GpuEngine, ItRunsAnOpsFlopAndItsCopiesOnTheGpu) {
  std::string why;
  if (gpu_count(&why) == 0) GTEST_SKIP() << "no GPU here: " << why;
  std::unique_ptr<GpuDevice> gpu = open_gpu(0, &why);
  ASSERT_NE(gpu, nullptr) << why;
  const std::string name = gpu->description();
  EXPECT_FALSE(name.empty());
  DeviceEngine engine("w0/gpu0", 1, std::move(gpu));
  const double done = engine.execute(2e10, 1);
  EXPECT_NEAR(done, 2e10, 0.01 * 2e10);
  // A layer's product, timed by the GPU's events.
  const std::vector<SampleGemm> conv = {{3136, 64, 576, 'm'}};
  const ComputeResult shaped = engine.execute(64 * 2.0 * 3136 * 64 * 576, &conv, 1);
  EXPECT_DOUBLE_EQ(shaped.flop, 64 * 2.0 * 3136 * 64 * 576);
  EXPECT_GT(shaped.device_s, 0);
  engine.gpu()->to_device(size_t(100) << 20);
  engine.gpu()->to_host(size_t(100) << 20);
  // A slowdown window scales it too.
  engine.set_clock_origin(0);
  engine.add_slowdown(0, 1e12, 0.5);
  EXPECT_NEAR(engine.execute(2e10, 1), 2e10, 0.02 * 2e10);
}

// The same run either way; the report names what the GPU ops ran on.
TEST(GpuEngine, ARealRunsGpuOpsRunOnTheGpuOrSayWhyNot) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(2, {{"sync", "async"}})), "between_graph", {1});
  const RealRun run = run_real(plan);
  std::string why;
  const bool gpu = gpu_count(&why) > 0;
  const std::string said =
      gpu ? "GPU ops ran with cuBLAS" : "GPU ops ran on the CPU engine (OpenBLAS): " + why;
  bool named = false;
  for (const std::string& note : run.trace.outcome.notes) {
    named |= note.find(said) != std::string::npos;
  }
  EXPECT_TRUE(named) << said;
  Expected expected(plan);
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
  }
  expected.expect_equal(run.final);  // the arithmetic is the same on either engine
}

}  // namespace
}  // namespace replisim::real
