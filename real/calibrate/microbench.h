// The in-process microbenchmarks of `replisim calibrate` (docs/validation-real.md, "Calibrate"):
// what one core of this machine sustains on the work real runs do — SGEMM in the blocks the CPU
// engine executes, a PS's SGD apply, a memory copy. Each runs for about `seconds` of wall time
// and reports the median of its repeats (a neighbour's load moves the mean more than the median);
// `cancelled` (polled between repeats, every few milliseconds) true ends it early.
#pragma once

#include <functional>
#include <vector>

#include "real/compute/gemm_shapes.h"

namespace replisim::real::calibrate {

// SGEMM flop/s of one core running the CPU engine's blocks (execute_flop, kGemmBlock), while
// `busy_cores` - 1 other threads run the same (1: the core alone; the machine's core count: every
// core busy, memory bandwidth and turbo shared), over `windows` consecutive windows of
// `seconds` / `windows` each: one rate per window, the median over the threads' repeats that
// ended in it. Their median is the figure; their spread shows a neighbour's load coming and going
// (calibrate's stability check). At least one window; empty only when cancelled at once.
std::vector<double> sgemm_flop_per_s(int busy_cores, double seconds, int windows,
                                     const std::function<bool()>& cancelled = {});

// Seconds per parameter of ApplyGradientDescent (core/values/optimizer.h) over a 128 MiB variable
// and gradient (out of cache, as a PS's variables are).
double sgd_apply_s_per_param(double seconds, const std::function<bool()>& cancelled = {});

// The GPU's reference products: a ResNet-50 step's GEMMs at kGpuReferenceBatch images (each
// layer's forward, input-gradient and weight-gradient product: the shapes a real run's GPU ops
// run, core::LayerGemm), 1.6 TFLOP.
inline constexpr int kGpuReferenceBatch = 64;
std::vector<GemmRun> gpu_reference_gemms();

// SGEMM flop/s of the first CUDA GPU over gpu_reference_gemms (the median of repeats of the
// whole step); 0 without a GPU (or a build without CUDA).
double gpu_sgemm_flop_per_s(double seconds, const std::function<bool()>& cancelled = {});

// Half the median round trip of one byte over TCP (TCP_NODELAY), 200 round trips: between two
// machines of a shaped network when `shaped` (its own namespaces: root), else over loopback.
// Throws core::BackendError when a socket fails.
double tcp_one_way_latency_s(bool shaped);

// memcpy of 64 MiB buffers (out of cache): bytes per second.
double copy_bytes_per_s(double seconds, const std::function<bool()>& cancelled = {});

}  // namespace replisim::real::calibrate
