// The real backend's CUDA engine against bare CUDA, in the same run: the FLOP/s the engine reaches
// on a plan's GEMM shapes (every GPU op of a step, as a device engine runs it, and the plan's three
// largest products alone) next to a bare cuBLAS SGEMM loop over the same products (its own handle,
// stream and matrices, each product whole where the engine cuts tiles; target: the engine at 90%
// or more, i.e. its own overhead under 10%), next to cuBLAS at 8192^3 (what the GPU can do
// in float32), and a run's host <-> device copies (DeviceMemory) next to a bare cudaMemcpy from
// pinned memory and from ordinary memory. Without a usable GPU it says why and exits 0. Usage:
//   bench_gpu [--scenario FILE] [--strategy between_graph|in_graph] [--repeat N]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
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

// A bare cuBLAS loop: its own handle and stream, and matrices as large as the largest of `runs`
// needs (whole products, not tiles).
class Bare {
 public:
  explicit Bare(const std::vector<real::GemmRun>& runs) {
    size_t a = 1, b = 1, c = 1;
    for (const real::GemmRun& r : runs) {
      a = std::max(a, size_t(r.m * r.k));
      b = std::max(b, size_t(r.k * r.n));
      c = std::max(c, size_t(r.m * r.n));
    }
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cublasCreate(&handle_), "cublasCreate");
    check(cublasSetStream(handle_, stream_), "cublasSetStream");
    for (auto [m, size] : {std::pair{&a_, a}, std::pair{&b_, b}, std::pair{&c_, c}}) {
      check(cudaMalloc(m, size * sizeof(float)), "cudaMalloc");
      check(cudaMemset(*m, 0, size * sizeof(float)), "cudaMemset");
    }
  }
  ~Bare() {
    cublasDestroy(handle_);
    for (float* m : {a_, b_, c_}) cudaFree(m);
    cudaStreamDestroy(stream_);
  }
  // The products one op runs (row-major C = A B as column-major C^T = B^T A^T), then a wait: as
  // the engine does per op.
  void run(const std::vector<real::GemmRun>& runs) {
    const float alpha = 1, beta = 0;
    for (const real::GemmRun& r : runs) {
      for (int64_t i = 0; i < r.count; ++i) {
        check(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(r.n), int(r.m), int(r.k), &alpha,
                          b_, int(r.n), a_, int(r.k), &beta, c_, int(r.n)),
              "cublasSgemm");
      }
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  float *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
};

// Every GPU op of the plan's steps: its FLOP and its layers' per-sample GEMMs (empty: none).
struct GpuOp {
  double flop = 0;
  std::vector<real::SampleGemm> per_sample;  // empty: none
};

std::vector<GpuOp> gpu_ops(const core::Plan& plan) {
  std::vector<GpuOp> ops;
  for (const core::ClientGraph* g : core::step_graphs(plan)) {
    for (const core::Op& op : g->ops) {
      if (op.compute_flop > 0 &&
          plan.platform.devices[size_t(op.device)].kind == core::DeviceKind::kGpu) {
        GpuOp& gpu_op = ops.emplace_back(GpuOp{op.compute_flop, {}});
        if (op.gemms < 0) continue;
        for (const core::PlanGemm& g : plan.gemm_lists[size_t(op.gemms)]) {
          gpu_op.per_sample.push_back({g.m, g.n, g.k, g.batch_dim});
        }
      }
    }
  }
  return ops;
}

// The products an op runs, as the engine computes them (gemm_shapes.h).
std::vector<real::GemmRun> runs_of(const GpuOp& op) {
  return op.per_sample.empty() ? real::gpu_gemm_shapes(op.flop)
                               : real::stretch_gemms(op.per_sample, op.flop);
}

// Median seconds of `repeat` alternating runs of `ours` and `theirs`.
std::pair<double, double> alternate(int repeat, const std::function<void()>& ours,
                                    const std::function<void()>& theirs) {
  std::vector<double> a, b;
  for (int r = 0; r < repeat; ++r) {
    Clock::time_point t = Clock::now();
    ours();
    a.push_back(seconds_since(t));
    t = Clock::now();
    theirs();
    b.push_back(seconds_since(t));
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return {a[a.size() / 2], b[b.size() / 2]};
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
  const core::Plan plan =
      core::compile_plan(core::load_scenario(scenario), strategy, core::CompileOptions{1});
  const std::vector<GpuOp> ops = gpu_ops(plan);
  double total = 0;
  std::vector<real::GemmRun> all;
  for (const GpuOp& op : ops) {
    total += op.flop;
    for (const real::GemmRun& r : runs_of(op)) all.push_back(r);
  }
  std::printf("plan: %s (%s): %zu GPU ops a step, %.1f GFLOP, %zu GEMMs\n", scenario.c_str(),
              strategy.c_str(), ops.size(), total / 1e9, all.size());
  if (ops.empty()) return 0;
  real::DeviceEngine engine("gpu0", 1, real::open_gpu(0, &why));
  if (engine.gpu() == nullptr) {
    std::printf("bench_gpu: the engine cannot open the GPU: %s\n", why.c_str());
    return 1;
  }
  std::printf("device: %s\n", engine.gpu()->description().c_str());
  Bare bare(all);
  // Warm-up: one pass of each.
  for (const GpuOp& op : ops) engine.execute(op.flop, &op.per_sample, 1);
  for (const GpuOp& op : ops) bare.run(runs_of(op));
  const auto [e, b] = alternate(
      repeat,
      [&] {
        for (const GpuOp& op : ops) engine.execute(op.flop, &op.per_sample, 1);
      },
      [&] {
        for (const GpuOp& op : ops) bare.run(runs_of(op));
      });
  std::printf(
      "a step's GPU ops: engine %.1f TFLOP/s, bare cuBLAS %.1f TFLOP/s, ratio %.3f "
      "(target >= 0.90)\n",
      total / e / 1e12, total / b / 1e12, b / e);
  // The plan's three largest products, each alone (the engine in its tiles, timed by its events;
  // bare cuBLAS whole).
  std::sort(all.begin(), all.end(), [](const real::GemmRun& x, const real::GemmRun& y) {
    return x.flop() / double(x.count) > y.flop() / double(y.count);
  });
  std::vector<real::GemmRun> largest;
  for (const real::GemmRun& r : all) {
    const bool seen = std::any_of(largest.begin(), largest.end(), [&](const real::GemmRun& l) {
      return l.m == r.m && l.n == r.n && l.k == r.k;
    });
    if (!seen && largest.size() < 3) largest.push_back({r.m, r.n, r.k, 1});
  }
  for (const real::GemmRun& r : largest) {
    const std::vector<real::GemmRun> one = {r};
    const auto [ours, theirs] = alternate(
        repeat + 2, [&] { engine.gpu()->execute(one, 1); }, [&] { bare.run(one); });
    std::printf(
        "GEMM %lld x %lld x %lld: engine %.1f TFLOP/s, bare cuBLAS %.1f TFLOP/s, ratio %.3f "
        "(target >= 0.90)\n",
        (long long)r.m, (long long)r.n, (long long)r.k, r.flop() / ours / 1e12,
        r.flop() / theirs / 1e12, theirs / ours);
  }
  // What the GPU does at 8192^3 in float32.
  const std::vector<real::GemmRun> big = {{8192, 8192, 8192, 10}};
  Bare big_bare(big);
  big_bare.run(big);
  Clock::time_point t = Clock::now();
  big_bare.run(big);
  std::printf("cuBLAS SGEMM 8192^3: %.1f TFLOP/s\n", big[0].flop() / seconds_since(t) / 1e12);

  // Copies: a run's (DeviceMemory's upload and download of a tensor from and to ordinary host
  // memory, where tensors arrive and leave, through its double-buffered pinned staging on a
  // stream per direction) against a bare cudaMemcpy from pinned memory (the best case) and from
  // the same ordinary memory.
  const size_t bytes = size_t(256) << 20;
  void *host = nullptr, *device = nullptr;
  check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  std::vector<uint8_t> pageable(bytes, uint8_t(1));
  real::DeviceMemory& memory = engine.gpu()->memory();
  const real::DeviceTensor tensor = memory.allocate(bytes);
  for (const bool up : {true, false}) {
    std::vector<double> ours, pinned, paged;
    for (int r = 0; r < repeat + 1; ++r) {
      t = Clock::now();
      up ? memory.upload(tensor, pageable.data(), bytes)
         : memory.download(tensor, pageable.data(), bytes);
      ours.push_back(seconds_since(t));
      for (auto [from, times] :
           {std::pair{host, &pinned}, std::pair{(void*)pageable.data(), &paged}}) {
        t = Clock::now();
        check(cudaMemcpy(up ? device : from, up ? from : device, bytes,
                         up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
              "cudaMemcpy");
        times->push_back(seconds_since(t));
      }
    }
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double o = median(ours), p = median(pinned), q = median(paged);
    std::printf(
        "%s 256 MiB: a run's copy %.1f GB/s; bare cudaMemcpy from pinned %.1f GB/s "
        "(ratio %.3f, target >= 0.90), from the same pageable memory %.1f GB/s (ratio "
        "%.3f)\n",
        up ? "host->device" : "device->host", double(bytes) / o / 1e9, double(bytes) / p / 1e9,
        p / o, double(bytes) / q / 1e9, q / o);
  }
  cudaFreeHost(host);
  cudaFree(device);
  return 0;
}
