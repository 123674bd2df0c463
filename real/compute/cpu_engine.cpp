#include "real/compute/cpu_engine.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace replisim::real {
namespace {

// The tile (row, col, rows x cols) of an m x n x k product, as ceil(k / kCpuTileDim) products on
// this thread's own matrices (grown to the largest tile, filled with constants once).
double run_tile(const GemmRun& g, const GemmTile& t) {
  thread_local std::vector<float> a, b, c;
  const int64_t depth = std::min(g.k, kCpuTileDim);
  auto grow = [](std::vector<float>& m, size_t size, float value) {
    if (m.size() < size) m.assign(size, value);
  };
  grow(a, size_t(t.rows * depth), 0.001f);
  grow(b, size_t(depth * t.cols), 0.002f);
  grow(c, size_t(t.rows * t.cols), 0.0f);
  double flop = 0;
  for (int64_t done = 0; done < g.k; done += depth) {
    const int64_t piece = std::min(depth, g.k - done);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(t.rows), int(t.cols), int(piece),
                1.0f, a.data(), int(piece), b.data(), int(t.cols), done == 0 ? 0.0f : 1.0f,
                c.data(), int(t.cols));
    flop += 2.0 * double(t.rows) * double(t.cols) * double(piece);
  }
  return flop;
}

// Thread `t` of `threads`'s share of `gemms` (execute_gemms), until `stop`.
double run_share(const std::vector<GemmRun>& gemms, int t, int threads,
                 const std::atomic<bool>* stop) {
  const auto stopped = [stop] { return stop != nullptr && stop->load(std::memory_order_relaxed); };
  double flop = 0;
  for (const GemmRun& g : gemms) {
    const bool whole = g.count >= threads;  // whole GEMMs in turn, else each one's tiles
    const std::vector<GemmTile> tiles = gemm_tiles(g.m, g.n, kCpuTileDim, whole ? 1 : threads);
    const int64_t repeats = whole ? g.count / threads + (t < g.count % threads ? 1 : 0) : g.count;
    const size_t first = whole ? 0 : size_t(t), step = whole ? 1 : size_t(threads);
    for (int64_t i = 0; i < repeats; ++i) {
      for (size_t k = first; k < tiles.size(); k += step) {
        if (stopped()) return flop;
        flop += run_tile(g, tiles[k]);
      }
    }
  }
  return flop;
}

}  // namespace

void configure_blas() {
  openblas_set_num_threads(1);
}

double execute_gemms(const std::vector<GemmRun>& gemms, int threads,
                     const std::atomic<bool>* stop) {
  threads = std::max(1, threads);
  std::vector<double> flop(size_t(threads), 0.0);
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    helpers.emplace_back([&gemms, &flop, t, threads, stop] {
      flop[size_t(t)] = run_share(gemms, t, threads, stop);
    });
  }
  flop[0] = run_share(gemms, 0, threads, stop);
  for (std::thread& h : helpers) h.join();
  double total = 0;
  for (double f : flop) total += f;
  return total;
}

double execute_flop(double flop, int threads) {
  return execute_gemms(block_gemms(flop, kGemmBlock), threads);
}

DeviceEngine::DeviceEngine(std::string name, int cores, std::unique_ptr<GpuDevice> gpu,
                           bool stand_in_memory)
    : name_(std::move(name)), gpu_(std::move(gpu)) {
  if (!gpu_ && stand_in_memory) stand_in_ = std::make_unique<StandInMemory>(name_);
  for (int i = 0; i < std::max(1, cores); ++i) threads_.emplace_back([this] { serve(); });
}

DeviceEngine::~DeviceEngine() {
  stop();
}

void DeviceEngine::stop() {
  cancelled_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void DeviceEngine::add_slowdown(double from_s, double until_s, double factor) {
  slowdowns_.push_back({from_s, until_s, factor});
}

ComputeResult DeviceEngine::execute(double flop, const std::vector<SampleGemm>* per_sample,
                                    int threads) {
  const auto run = [this, per_sample, threads](double f) {
    std::vector<GemmRun> gemms;
    if (per_sample != nullptr && !per_sample->empty()) {
      gemms = stretch_gemms(*per_sample, f);
    } else {
      gemms = gpu_ ? gpu_->square_gemms(f) : block_gemms(f, kGemmBlock);
    }
    return gpu_ ? gpu_->execute(gemms, threads, &cancelled_)
                : ComputeResult{execute_gemms(gemms, threads, &cancelled_), -1};
  };
  if (slowdowns_.empty()) return run(flop);
  // A piece of about a millisecond's work at a time, so that a window's end is seen within one:
  // at factor f a piece does f of it (taking what the whole would at full speed).
  const double slice = gpu_ ? kSlowGpuPieceFlop : kSlowPieceFlop;
  double done = 0;
  for (double left = flop; left > 0 && !cancelled_.load(std::memory_order_relaxed);) {
    const double now_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() -
        origin_s_;
    double factor = 1;
    for (const Slowdown& s : slowdowns_) {
      if (now_s >= s.from_s && now_s < s.until_s) factor *= s.factor;
    }
    const double piece = std::min(left, slice * factor);
    done += run(piece / factor).flop * factor;
    left -= piece;
  }
  return {done, -1};
}

void DeviceEngine::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
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
