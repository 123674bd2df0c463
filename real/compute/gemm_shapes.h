// The SGEMMs a real run's compute op executes, on the CPU engine (OpenBLAS) and the CUDA engine
// (cuBLAS) alike: the plan's GEMM shapes (core::PlanGemm, from each layer's shape) stretched to the
// op's FLOP, or, for an op whose layers have no shape, square GEMMs of its FLOP. And how one GEMM
// is cut into tiles that fit an engine's scratch matrices. Plain C++: the same shapes with or
// without CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace replisim::real {

// `count` row-major products C[m x n] = A[m x k] B[k x n] in float32: 2 m n k FLOP each.
struct GemmRun {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t count = 1;
  double flop() const { return 2.0 * double(m) * double(n) * double(k) * double(count); }
};

// One GEMM of an op per sample: core::PlanGemm's fields (the plan's gemm_lists), held here so that
// the compute engines stand on core's base alone. `batch_dim`: 'm' or 'k', the dimension that
// grows with the batch.
struct SampleGemm {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  char batch_dim = 'm';
  double flop() const { return 2.0 * double(m) * double(n) * double(k); }
};

// Total FLOP of `runs`.
double gemm_flop(const std::vector<GemmRun>& runs);

// The GEMMs of an op of `flop` FLOP whose per-sample GEMMs are `per_sample` (Plan::gemm_lists):
// each one's batch dimension (SampleGemm::batch_dim) multiplied by flop / (their per-sample FLOP),
// rounded, so that a forward op of a batch of b runs exactly its layers' products at batch b; the
// same factor carries what the GEMMs leave out (an objective layer's bias and activation), a
// jittered step and --scale-compute. Where the batch dimension would fall below 1 it is 1 and the
// rest of the factor shrinks n, then k (each at least 1), so an op keeps its FLOP to within a
// rounding of each dimension. Empty when flop <= 0 or per_sample is empty.
std::vector<GemmRun> stretch_gemms(const std::vector<SampleGemm>& per_sample, double flop);

// An op without GEMM shapes on the CPU: `block` x `block` x `block` products, then one
// block x block x k with k < block for the rest (to within 2 block^2 FLOP).
std::vector<GemmRun> block_gemms(double flop, int block);

// An op without GEMM shapes on a GPU: n x n x n products of one size, then at most one of a
// smaller size for the rest; n the largest multiple of 128 that fits in the op, from 128 to
// `max_n` (big GEMMs keep a GPU busy: its SGEMM rate falls for n under a few thousand).
std::vector<GemmRun> gpu_gemm_shapes(double flop, int max_n = 8192);

// One tile of a GEMM: rows [row, row + rows) of C, columns [col, col + cols), computed as
// ceil(k / tile_k) products of at most tile_k of the reduction each (the second and later ones
// accumulate: beta = 1), so that A's, B's and C's tiles are each at most `max_dim` x `max_dim`.
struct GemmTile {
  int64_t row = 0, rows = 0, col = 0, cols = 0;
};

// The tiles of one m x n product with at most `max_dim` rows and columns each, cut further (rows
// first, then columns) until there are at least `parts` of them where the product allows (an
// engine's threads take them in turn). max_dim >= 1, parts >= 1.
std::vector<GemmTile> gemm_tiles(int64_t m, int64_t n, int64_t max_dim, int parts);

}  // namespace replisim::real
