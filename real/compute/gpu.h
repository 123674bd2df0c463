// GPU compute for real runs: a device of the plan that is a GPU runs its ops' GEMMs (gemm_shapes.h)
// as cuBLAS SGEMMs on one stream of a CUDA device of this machine, timed by CUDA events, and a
// tensors it holds live in its memory (memory(): device_memory.h), reached through pinned host
// buffers. Built with CUDA (REPLISIM_WITH_CUDA, gpu_cuda.cpp) or without (gpu_none.cpp: no GPU is
// ever usable).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "real/compute/device_memory.h"
#include "real/compute/gemm_shapes.h"

namespace replisim::real {

// What an op's GEMMs took.
struct ComputeResult {
  double flop = 0;  // executed
  // The device's own time for them (a GPU: CUDA events recorded on its stream around them); -1:
  // none (the CPU: the host's clock around the call is their time).
  double device_s = -1;
};

// What runs an op's GEMMs on a device (cpu_engine.h's DeviceEngine calls it from the device's
// thread).
class FlopExecutor {
 public:
  virtual ~FlopExecutor() = default;
  // Executes `gemms` (gemm_shapes.h). `threads`: CPU threads (a GPU ignores it). `stop` (may be
  // null), once true, ends it early (within a tile; the FLOP returned are those done). Throws
  // std::runtime_error naming the device when the device fails.
  virtual ComputeResult execute(const std::vector<GemmRun>& gemms, int threads,
                                const std::atomic<bool>* stop = nullptr) = 0;
  // The GEMMs of an op of `flop` FLOP without GEMM shapes (block_gemms or gpu_gemm_shapes).
  virtual std::vector<GemmRun> square_gemms(double flop) const = 0;
};

// One CUDA device as a plan's GPU: one stream, a cuBLAS handle, device matrices for the GEMMs'
// tiles (gemm_tiles: at most 8192 x 8192 each, less where a quarter of the free memory cannot hold
// three), a device scratch buffer and a pinned host buffer for the copies. Used from one thread at
// a time (the device engine's).
class GpuDevice : public FlopExecutor {
 public:
  // The device's memory, for the tensors a run keeps on it (owned by the device).
  virtual DeviceMemory& memory() = 0;
  // Copies `bytes` host -> device or device -> host between a scratch buffer and pinned memory,
  // on the device's stream, and waits for the copy: the copy rate calibrate and bench_gpu measure.
  virtual void to_device(size_t bytes) = 0;
  virtual void to_host(size_t bytes) = 0;
  // "NVIDIA H200 (device 0)".
  virtual std::string description() const = 0;
};

// How many CUDA devices this process can use (0: none, with `why_not` saying why: built without
// CUDA, no driver, no device).
int gpu_count(std::string* why_not);

// Opens CUDA device `ordinal` (0-based) for a plan's GPU; nullptr (and `why_not`) when there is
// none to use. Thread-safe.
std::unique_ptr<GpuDevice> open_gpu(int ordinal, std::string* why_not);

}  // namespace replisim::real
