#include "real/compute/gemm_shapes.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace replisim::real {
namespace {

constexpr double kMaxRepeats = 4.6e18;  // about 2^62

// `value` x `factor` rounded, at least 1 and at most INT_MAX (BLAS dimensions are ints); the
// factor left for the next dimension when it falls below 1 (1 when it does not).
int64_t scaled_dimension(int64_t value, double factor, double* left) {
  const double exact = double(value) * factor;
  if (exact >= 1) {
    *left = 1;
    return std::min<int64_t>(INT_MAX, std::max<int64_t>(1, std::llround(exact)));
  }
  *left = exact;
  return 1;
}

}  // namespace

double gemm_flop(const std::vector<GemmRun>& runs) {
  double flop = 0;
  for (const GemmRun& r : runs) flop += r.flop();
  return flop;
}

std::vector<GemmRun> stretch_gemms(const std::vector<SampleGemm>& per_sample, double flop) {
  std::vector<GemmRun> runs;
  double per_sample_flop = 0;
  for (const SampleGemm& g : per_sample) per_sample_flop += g.flop();
  if (!(flop > 0) || !(per_sample_flop > 0)) return runs;
  const double factor = flop / per_sample_flop;
  for (const SampleGemm& g : per_sample) {
    GemmRun run{g.m, g.n, g.k, 1};
    // The batch dimension first, then n, then the third.
    int64_t* batch = g.batch_dim == 'k' ? &run.k : &run.m;
    int64_t* third = g.batch_dim == 'k' ? &run.m : &run.k;
    double left = 1;
    *batch = scaled_dimension(*batch, factor, &left);
    if (left < 1) run.n = scaled_dimension(run.n, left, &left);
    if (left < 1) *third = scaled_dimension(*third, left, &left);
    runs.push_back(run);
  }
  return runs;
}

std::vector<GemmRun> block_gemms(double flop, int block) {
  std::vector<GemmRun> runs;
  if (!(flop > 0) || block < 1) return runs;
  const double block_flop = 2.0 * block * block * block;
  // At most 2^62 repeats: an op beyond that (10^25 FLOP) runs until cancelled, without overflow.
  const int64_t blocks = int64_t(std::min(std::floor(flop / block_flop), kMaxRepeats));
  const double rest = std::clamp(flop - double(blocks) * block_flop, 0.0, block_flop);
  const int64_t k_rest = std::min<int64_t>(block, std::llround(rest / (2.0 * block * block)));
  if (blocks > 0) runs.push_back({block, block, block, blocks});
  if (k_rest > 0) runs.push_back({block, block, k_rest, 1});
  return runs;
}

std::vector<GemmRun> gpu_gemm_shapes(double flop, int max_n) {
  std::vector<GemmRun> runs;
  if (!(flop > 0)) return runs;
  max_n = std::max(128, max_n / 128 * 128);
  int n = int(std::floor(std::cbrt(flop / 2.0) / 128.0)) * 128;
  n = std::clamp(n, 128, max_n);
  const double one = 2.0 * double(n) * n * n;
  const int64_t count =
      std::max<int64_t>(1, int64_t(std::min(std::floor(flop / one), kMaxRepeats)));
  runs.push_back({n, n, n, count});
  const double rest = flop - runs.front().flop();
  if (n > 128 && rest > 0) {
    const int m = int(std::lround(std::cbrt(rest / 2.0) / 128.0)) * 128;
    if (m >= 128) {
      const int64_t s = std::min(m, n);
      runs.push_back({s, s, s, 1});
    }
  }
  return runs;
}

std::vector<GemmTile> gemm_tiles(int64_t m, int64_t n, int64_t max_dim, int parts) {
  max_dim = std::max<int64_t>(1, max_dim);
  parts = std::max(1, parts);
  int64_t tile_rows = std::min(m, max_dim), tile_cols = std::min(n, max_dim);
  auto count = [&] {
    return ((m + tile_rows - 1) / tile_rows) * ((n + tile_cols - 1) / tile_cols);
  };
  while (count() < parts && (tile_rows > 1 || tile_cols > 1)) {
    if (tile_rows > 1) {
      tile_rows = (tile_rows + 1) / 2;
    } else {
      tile_cols = (tile_cols + 1) / 2;
    }
  }
  std::vector<GemmTile> tiles;
  for (int64_t row = 0; row < m; row += tile_rows) {
    for (int64_t col = 0; col < n; col += tile_cols) {
      tiles.push_back({row, std::min(tile_rows, m - row), col, std::min(tile_cols, n - col)});
    }
  }
  return tiles;
}

}  // namespace replisim::real
