// GPU compute of real runs: the GEMM shapes a GPU op runs (everywhere), the CUDA engine on a GPU
// (skipped, saying why, on a machine without one), and a real run's GPU ops, which run on cuBLAS
// when a GPU is usable and on the CPU engine otherwise, the report saying which.
#include <cmath>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "real/compute/cpu_engine.h"
#include "real/compute/gpu.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;

TEST(GemmShapes, AnOpRunsAboutItsFlopInLargeGemms) {
  for (const double flop : {1e6, 4.2e6, 1e8, 3.3e9, 2.5e11, 1.1e12, 7e12}) {
    const std::vector<GemmShape> shapes = gpu_gemm_shapes(flop);
    ASSERT_FALSE(shapes.empty()) << flop;
    double total = 0;
    for (const GemmShape& s : shapes) {
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
