// The real backend's CUDA engine against bare CUDA, in the same run: the FLOP/s the engine reaches
// on a plan's GEMM shapes (every GPU op of the plan, as a device engine runs it) next to a bare
// cuBLAS SGEMM loop over the same shapes (its own handle, stream and matrices; target: the engine
// at 90% or more, i.e. its own overhead under 10%), next to cuBLAS at 8192^3 (what the GPU can do
// in float32), and the engine's host <-> device copies next to a bare cudaMemcpy between pinned
// and device memory. Without a usable GPU it says why and exits 0. Usage:
//   bench_gpu [--scenario FILE] [--strategy between_graph|in_graph] [--repeat N]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_flags.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "real/compute/cpu_engine.h"
#include "real/compute/gpu.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace replisim;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_gpu: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "bench_gpu: %s: cuBLAS status %d\n", what, int(s));
    std::exit(1);
  }
}

// A bare cuBLAS loop: its own handle, stream and three max_n x max_n matrices.
class Bare {
 public:
  explicit Bare(int max_n) : max_n_(max_n) {
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream_), "cublasSetStream");
    const size_t bytes = size_t(max_n) * max_n * sizeof(float);
    for (float** m : {&a_, &b_, &c_}) {
      check(cudaMalloc(m, bytes), "cudaMalloc");
      check(cudaMemset(*m, 0, bytes), "cudaMemset");
    }
  }
  ~Bare() {
    cublasDestroy(handle_);
    for (float* m : {a_, b_, c_}) cudaFree(m);
    cudaStreamDestroy(stream_);
  }
  // The shapes one op runs, then a wait: as the engine does per op.
  void run(const std::vector<real::GemmShape>& shapes) {
    const float alpha = 1, beta = 0;
    for (const real::GemmShape& s : shapes) {
      for (int64_t i = 0; i < s.count; ++i) {
        check(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.n, s.n, &alpha, a_, s.n, b_,
                          s.n, &beta, c_, s.n),
              "cublasSgemm");
      }
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  int max_n_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
};

// The FLOP of every GPU op of the plan (one entry per op, per step).
std::vector<double> gpu_op_flops(const std::string& scenario, const std::string& strategy) {
  const core::Plan plan =
      core::compile_plan(core::load_scenario(scenario), strategy, core::CompileOptions{1});
  std::vector<double> flops;
  for (const core::ClientGraph* g : core::step_graphs(plan)) {
    for (const core::Op& op : g->ops) {
      if (op.compute_flop > 0 &&
          plan.platform.devices[size_t(op.device)].kind == core::DeviceKind::kGpu) {
        flops.push_back(op.compute_flop);
      }
    }
  }
  return flops;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = "scenarios/seed/two_machines.json", strategy = "between_graph";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--scenario") == 0) scenario = argv[i + 1];
    if (std::strcmp(argv[i], "--strategy") == 0) strategy = argv[i + 1];
  }
  const int repeat = std::max(1, bench::int_flag(argc, argv, "--repeat", 3));
  std::string why;
  if (real::gpu_count(&why) == 0) {
    std::printf("bench_gpu: no GPU to measure: %s\n", why.c_str());
    return 0;
  }
  const std::vector<double> flops = gpu_op_flops(scenario, strategy);
  double total = 0;
  for (double f : flops) total += f;
  std::printf("plan: %s (%s): %zu GPU ops a step, %.1f GFLOP\n", scenario.c_str(), strategy.c_str(),
              flops.size(), total / 1e9);
  std::map<int, int> sizes;
  for (double f : flops) {
    for (const real::GemmShape& s : real::gpu_gemm_shapes(f)) sizes[s.n] += int(s.count);
  }
  std::printf("GEMM shapes (n: count a step):");
  for (const auto& [n, count] : sizes) std::printf(" %d:%d", n, count);
  std::printf("\n");

  real::DeviceEngine engine("gpu0", 1, real::open_gpu(0, &why));
  if (engine.gpu() == nullptr) {
    std::printf("bench_gpu: the engine cannot open the GPU: %s\n", why.c_str());
    return 1;
  }
  std::printf("device: %s\n", engine.gpu()->description().c_str());
  Bare bare(8192);
  // Warm-up: one pass of each.
  for (double f : flops) engine.execute(f, 1);
  for (double f : flops) bare.run(real::gpu_gemm_shapes(f));
  std::vector<double> engine_s, bare_s;
  for (int r = 0; r < repeat; ++r) {  // alternating
    Clock::time_point t = Clock::now();
    for (double f : flops) engine.execute(f, 1);
    engine_s.push_back(seconds_since(t));
    t = Clock::now();
    for (double f : flops) bare.run(real::gpu_gemm_shapes(f));
    bare_s.push_back(seconds_since(t));
  }
  std::sort(engine_s.begin(), engine_s.end());
  std::sort(bare_s.begin(), bare_s.end());
  const double e = engine_s[engine_s.size() / 2], b = bare_s[bare_s.size() / 2];
  std::printf(
      "plan's shapes: engine %.1f TFLOP/s, bare cuBLAS %.1f TFLOP/s, ratio %.3f "
      "(target >= 0.90)\n",
      total / e / 1e12, total / b / 1e12, b / e);
  // What the GPU does at 8192^3 in float32.
  const std::vector<real::GemmShape> big = {{8192, 10}};
  bare.run(big);
  Clock::time_point t = Clock::now();
  bare.run(big);
  std::printf("cuBLAS SGEMM 8192^3: %.1f TFLOP/s\n", big[0].flop() / seconds_since(t) / 1e12);

  // Copies: the engine's (through its pinned staging buffer) against a bare cudaMemcpy.
  const size_t bytes = size_t(256) << 20;
  void *host = nullptr, *device = nullptr;
  check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  for (const bool up : {true, false}) {
    std::vector<double> ours, theirs;
    for (int r = 0; r < repeat + 1; ++r) {
      t = Clock::now();
      up ? engine.gpu()->to_device(bytes) : engine.gpu()->to_host(bytes);
      ours.push_back(seconds_since(t));
      t = Clock::now();
      check(cudaMemcpy(up ? device : host, up ? host : device, bytes,
                       up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
            "cudaMemcpy");
      theirs.push_back(seconds_since(t));
    }
    std::sort(ours.begin(), ours.end());
    std::sort(theirs.begin(), theirs.end());
    const double o = ours[ours.size() / 2], th = theirs[theirs.size() / 2];
    std::printf("%s 256 MiB: engine %.1f GB/s, bare cudaMemcpy %.1f GB/s, ratio %.3f\n",
                up ? "host->device" : "device->host", double(bytes) / o / 1e9,
                double(bytes) / th / 1e9, th / o);
  }
  cudaFreeHost(host);
  cudaFree(device);
  return 0;
}
