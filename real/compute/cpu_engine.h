// The CPU compute engine of real runs: a device of the plan becomes a queue of jobs served by as
// many threads as the device has cores (a GPU: one, its stream), so that one device runs one op
// per core at a time, as in the simulation; a compute op executes its FLOP as OpenBLAS SGEMMs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace replisim::real {

// The SGEMM block: n x n times n x n in float32, 2 n^3 FLOP (n = 128: 4.19 MFLOP, about 0.1 ms on
// a core), small enough that an op's FLOP is met to within one block's k-slice (2 n^2 = 32768).
inline constexpr int kGemmBlock = 128;

// Executes about `flop` FLOP (to within 2 * kGemmBlock^2) as SGEMMs (cblas_sgemm, one OpenBLAS
// thread per caller), spread over `threads` threads (the caller and threads - 1 helpers).
// Returns the FLOP executed. Thread-safe (each thread works on its own matrices).
double execute_flop(double flop, int threads);

// Sets OpenBLAS to one thread per call: the engine's threads are the parallelism. Call once per
// process before any SGEMM.
void configure_blas();

// One device: a FIFO of jobs and `cores` threads taking them in turn.
class DeviceEngine {
 public:
  // `name` for thread names ("pc1/gpu0"); `cores` >= 1.
  DeviceEngine(std::string name, int cores);
  ~DeviceEngine();  // stops and joins; jobs not started are dropped
  DeviceEngine(const DeviceEngine&) = delete;
  DeviceEngine& operator=(const DeviceEngine&) = delete;

  // Queues `job` (runs on one of the device's threads). Thread-safe.
  void submit(std::function<void()> job);
  // Jobs queued or running.
  size_t busy() const;
  const std::string& name() const { return name_; }

 private:
  void serve();
  std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace replisim::real
