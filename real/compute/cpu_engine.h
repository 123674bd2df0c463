// The compute engines of real runs: a device of the plan becomes a queue of jobs served by as
// many threads as the device has cores (a GPU: one, its stream), so that one device runs one op
// per core at a time, as in the simulation; a compute op executes its layers' GEMMs
// (gemm_shapes.h), OpenBLAS's on the CPU or cuBLAS's on a CUDA device (gpu.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "real/compute/gpu.h"

namespace replisim::real {

// The SGEMM block: n x n times n x n in float32, 2 n^3 FLOP (n = 128: 4.19 MFLOP, about 0.1 ms on
// a core), small enough that an op's FLOP is met to within one block's k-slice (2 n^2 = 32768).
inline constexpr int kGemmBlock = 128;

// The CPU's tiles are at most this many rows, columns and reduction: three 1024 x 1024 float
// matrices per thread (12 MiB), large enough that OpenBLAS runs a tile at its full rate.
inline constexpr int64_t kCpuTileDim = 1024;

// Executes `gemms` (cblas_sgemm, one OpenBLAS thread per caller) over `threads` threads (the
// caller and threads - 1 helpers): whole GEMMs in turn where a run repeats at least `threads`
// times, else each GEMM's tiles (gemm_tiles). Returns the FLOP executed. Thread-safe (each thread
// works on its own matrices; their values are constants, the results are not read).
// `stop` (may be null), once true, ends it within a tile on each thread.
double execute_gemms(const std::vector<GemmRun>& gemms, int threads,
                     const std::atomic<bool>* stop = nullptr);

// Executes about `flop` FLOP as kGemmBlock blocks (block_gemms; to within 2 * kGemmBlock^2).
double execute_flop(double flop, int threads);

// Sets OpenBLAS to one thread per call: the engine's threads are the parallelism. Call once per
// process before any SGEMM.
void configure_blas();

// One device: a FIFO of jobs and `cores` threads taking them in turn.
class DeviceEngine {
 public:
  // `name` for thread names ("pc1/gpu0"); `cores` >= 1. `gpu`: the CUDA device that runs this
  // device's FLOP (owned); null: OpenBLAS on the CPU. `stand_in_memory`: without `gpu`, the
  // device still keeps its tensors in a memory of its own, a StandInMemory (a plan's GPU that
  // found no CUDA device).
  DeviceEngine(std::string name, int cores, std::unique_ptr<GpuDevice> gpu = nullptr,
               bool stand_in_memory = false);
  ~DeviceEngine();  // stops and joins; jobs not started are dropped, a running op's GEMMs end
                    // within a tile
  DeviceEngine(const DeviceEngine&) = delete;
  DeviceEngine& operator=(const DeviceEngine&) = delete;

  // Stops and joins the threads, as the destructor does, keeping the device's memory: an owner
  // whose jobs use state it holds beside the engines stops every engine before that state goes (a
  // job still running at a job failure's stop would read it freed). Idempotent; from the owner's
  // thread, never from a job.
  void stop();
  // Queues `job` (runs on one of the device's threads). Thread-safe; after stop() it is dropped.
  void submit(std::function<void()> job);
  // Runs an op's `flop` on this device (from a job, on one of its threads): its GEMMs
  // `per_sample` (Plan::gemm_lists) stretched to `flop` (stretch_gemms), or, when null or empty,
  // square GEMMs of its FLOP (block_gemms on the CPU, gpu_gemm_shapes on a GPU); on the CPU over
  // `threads` threads. While a slowdown window is on (the plan's slowdown faults, windows on the
  // run's clock; overlapping windows multiply, as in the simulation) it works in slices of
  // kSlowPieceFlop's time, each advancing the op by `factor` of a slice, so that the op runs at
  // factor x speed inside the window and at full speed from its end. Returns the op's FLOP executed
  // (to within a rounding of each dimension; a slowdown's repeats not counted) and, on a GPU
  // outside slowdowns, the GPU's own time for it (ComputeResult::device_s).
  ComputeResult execute(double flop, const std::vector<SampleGemm>* per_sample, int threads);
  // An op without GEMM shapes: its FLOP executed.
  double execute(double flop, int threads) { return execute(flop, nullptr, threads).flop; }
  // Before any job: a slowdown window [from_s, until_s) of `factor` in (0, 1].
  void add_slowdown(double from_s, double until_s, double factor);
  // Before any job: the run's t = 0 on this machine's monotonic clock (s).
  void set_clock_origin(double origin_s) { origin_s_ = origin_s; }
  // Jobs queued or running.
  size_t busy() const;
  const std::string& name() const { return name_; }
  // The CUDA device behind it (its copies: tensors leaving or reaching it), or null.
  GpuDevice* gpu() const { return gpu_.get(); }
  // Where the device keeps the tensors of a run: the CUDA device's memory, the stand-in, or null
  // (a CPU: host memory is its own).
  DeviceMemory* memory() const { return gpu_ ? &gpu_->memory() : stand_in_.get(); }

 private:
  void serve();
  std::string name_;
  std::unique_ptr<GpuDevice> gpu_;
  std::unique_ptr<StandInMemory> stand_in_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::atomic<bool> cancelled_{false};  // the destructor's: ends a running op's GEMMs
  std::vector<std::thread> threads_;
  struct Slowdown {
    double from_s, until_s, factor;
  };
  std::vector<Slowdown> slowdowns_;  // set before any job, read-only after
  double origin_s_ = 0;
};

// Slowed compute runs in pieces of this many FLOP (16 SGEMM blocks: about a millisecond on a
// core; on a GPU 10^11, a few milliseconds), each at the factor of the window it starts in.
inline constexpr double kSlowPieceFlop = 16 * 2.0 * kGemmBlock * kGemmBlock * kGemmBlock;
inline constexpr double kSlowGpuPieceFlop = 1e11;

}  // namespace replisim::real
