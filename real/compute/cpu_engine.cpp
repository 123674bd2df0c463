#include "real/compute/cpu_engine.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace replisim::real {
namespace {

constexpr double kBlockFlop = 2.0 * kGemmBlock * kGemmBlock * kGemmBlock;

// `blocks` n x n x n SGEMMs and one n x n x k, on this thread's own matrices.
void run_gemms(long blocks, int k_rest) {
  thread_local std::vector<float> a, b, c;
  const size_t n2 = size_t(kGemmBlock) * kGemmBlock;
  if (a.size() != n2) {
    a.assign(n2, 0.001f);
    b.assign(n2, 0.002f);
    c.assign(n2, 0.0f);
  }
  const int n = kGemmBlock;
  for (long i = 0; i < blocks; ++i) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  }
  if (k_rest > 0) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, k_rest, 1.0f, a.data(), k_rest,
                b.data(), n, 0.0f, c.data(), n);
  }
}

}  // namespace

void configure_blas() {
  openblas_set_num_threads(1);
}

double execute_flop(double flop, int threads) {
  if (!(flop > 0)) return 0;
  const long blocks = long(std::floor(flop / kBlockFlop));
  const double rest = flop - double(blocks) * kBlockFlop;
  const int k_rest = std::min(kGemmBlock, int(std::lround(rest / (2.0 * kGemmBlock * kGemmBlock))));
  threads = std::max(1, std::min(threads, int(std::max(1L, blocks))));
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    const long share = blocks / threads + (t < blocks % threads ? 1 : 0);
    helpers.emplace_back([share] { run_gemms(share, 0); });
  }
  run_gemms(blocks / threads + (0 < blocks % threads ? 1 : 0), k_rest);
  for (std::thread& h : helpers) h.join();
  return double(blocks) * kBlockFlop + 2.0 * kGemmBlock * kGemmBlock * k_rest;
}

DeviceEngine::DeviceEngine(std::string name, int cores, std::unique_ptr<GpuDevice> gpu)
    : name_(std::move(name)), gpu_(std::move(gpu)) {
  for (int i = 0; i < std::max(1, cores); ++i) threads_.emplace_back([this] { serve(); });
}

DeviceEngine::~DeviceEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void DeviceEngine::add_slowdown(double from_s, double until_s, double factor) {
  slowdowns_.push_back({from_s, until_s, factor});
}

double DeviceEngine::execute(double flop, int threads) {
  const auto run = [this, threads](double f) {
    return gpu_ ? gpu_->execute(f, threads) : execute_flop(f, threads);
  };
  if (slowdowns_.empty()) return run(flop);
  // A piece of about a millisecond's work at a time, so that a window's end is seen within one:
  // at factor f a piece does f of it (taking what the whole would at full speed).
  const double slice = gpu_ ? kSlowGpuPieceFlop : kSlowPieceFlop;
  double done = 0;
  for (double left = flop; left > 0;) {
    const double now_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() -
        origin_s_;
    double factor = 1;
    for (const Slowdown& s : slowdowns_) {
      if (now_s >= s.from_s && now_s < s.until_s) factor *= s.factor;
    }
    const double piece = std::min(left, slice * factor);
    done += run(piece / factor) * factor;
    left -= piece;
  }
  return done;
}

void DeviceEngine::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

size_t DeviceEngine::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.size() + running_;
}

void DeviceEngine::serve() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    job();
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

}  // namespace replisim::real
