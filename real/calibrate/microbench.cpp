#include "real/calibrate/microbench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "real/compute/cpu_engine.h"
#include "real/compute/gpu.h"
#include "real/state/optimizer.h"

namespace replisim::real::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_s(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Repeats `once` (which returns the work it did) for about `seconds`; the rate of each repeat.
template <typename F>
std::vector<double> rates(double seconds, F once) {
  std::vector<double> out;
  const Clock::time_point begin = Clock::now();
  do {
    const Clock::time_point t = Clock::now();
    const double work = once();
    const double s = elapsed_s(t);
    if (s > 0) out.push_back(work / s);
  } while (elapsed_s(begin) < seconds || out.size() < 3);
  return out;
}

}  // namespace

double sgemm_flop_per_s(int busy_cores, double seconds) {
  configure_blas();
  busy_cores = std::max(1, busy_cores);
  // 64 blocks of 128 (268 MFLOP, a few milliseconds) per repeat.
  const double flop = 64 * 2.0 * kGemmBlock * kGemmBlock * kGemmBlock;
  std::vector<std::vector<double>> per_thread(static_cast<size_t>(busy_cores));
  std::vector<std::thread> threads;
  for (int t = 0; t < busy_cores; ++t) {
    threads.emplace_back([&, t] {
      per_thread[size_t(t)] = rates(seconds, [flop] { return execute_flop(flop, 1); });
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  for (const auto& r : per_thread) all.insert(all.end(), r.begin(), r.end());
  return median(all);
}

double sgd_apply_s_per_param(double seconds) {
  const size_t n = 8u << 20;  // 8 Mi floats: 32 MiB
  std::vector<float> var(n, 1.0f), grad(n, 0.5f);
  const std::vector<double> per_s = rates(seconds, [&] {
    apply_gradient_descent(var.data(), grad.data(), n, 0.01f);
    return double(n);
  });
  return 1.0 / median(per_s);
}

double gpu_sgemm_flop_per_s(double seconds) {
  std::string why_not;
  const std::unique_ptr<GpuDevice> gpu = open_gpu(0, &why_not);
  if (!gpu) return 0;
  gpu->execute(1e9, 1);  // warm up: cuBLAS's handle, the first kernels
  return median(rates(seconds, [&gpu] { return gpu->execute(8e9, 1); }));
}

double copy_bytes_per_s(double seconds) {
  const size_t bytes = 64u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  return median(rates(seconds, [&] {
    std::memcpy(b.data(), a.data(), bytes);
    std::swap(a, b);
    return double(bytes);
  }));
}

}  // namespace replisim::real::calibrate
