// GPU compute for real runs: a device of the plan that is a GPU runs its ops' FLOP as cuBLAS
// SGEMMs on one stream of a CUDA device of this machine, and a tensor that leaves or reaches it
// crosses PCIe (a copy of the tensor's size between device memory and pinned host memory). Built
// with CUDA (REPLISIM_WITH_CUDA, gpu_cuda.cpp) or without (gpu_none.cpp: no GPU is ever usable).
// The tensors' values stay in host memory, where the parameter servers' arithmetic is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace replisim::real {

// What runs an op's FLOP on a device (cpu_engine.h's DeviceEngine calls it from the device's
// thread).
class FlopExecutor {
 public:
  virtual ~FlopExecutor() = default;
  // Executes about `flop` FLOP; returns the FLOP executed. `threads`: CPU threads (a GPU ignores
  // it). Throws std::runtime_error naming the device when the device fails.
  virtual double execute(double flop, int threads) = 0;
};

// One CUDA device as a plan's GPU: one stream, a cuBLAS handle, device matrices for the GEMMs,
// a device scratch buffer and a pinned host buffer for the copies. Used from one thread at a
// time (the device engine's).
class GpuDevice : public FlopExecutor {
 public:
  // Copies `bytes` host -> device (a tensor reaching the GPU) or device -> host (leaving it),
  // through pinned memory, on the device's stream, and waits for the copy.
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

// The SGEMMs a GPU op runs: n x n x n multiplications (2 n^3 FLOP each) of one size, `count`
// times, then at most one of a smaller size for the rest; n from 128 to `max_n` (a multiple of
// 128), so that an op of F FLOP runs about F. Plain C++: the same shapes with or without CUDA.
struct GemmShape {
  int n = 0;
  int64_t count = 0;
  double flop() const { return 2.0 * double(n) * double(n) * double(n) * double(count); }
};
std::vector<GemmShape> gpu_gemm_shapes(double flop, int max_n = 8192);

}  // namespace replisim::real
