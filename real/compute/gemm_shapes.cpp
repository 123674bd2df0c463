#include <algorithm>
#include <cmath>

#include "real/compute/gpu.h"

namespace replisim::real {

std::vector<GemmShape> gpu_gemm_shapes(double flop, int max_n) {
  std::vector<GemmShape> shapes;
  if (!(flop > 0)) return shapes;
  max_n = std::max(128, max_n / 128 * 128);
  // The largest multiple of 128 whose GEMM fits in the op, up to max_n: big GEMMs keep the GPU
  // busy (a GPU's SGEMM rate falls for n under a few thousand).
  const double cube = flop / 2.0;
  int n = int(std::floor(std::cbrt(cube) / 128.0)) * 128;
  n = std::clamp(n, 128, max_n);
  const double one = 2.0 * double(n) * n * n;
  const int64_t count = std::max<int64_t>(1, int64_t(std::floor(flop / one)));
  shapes.push_back({n, count});
  const double rest = flop - shapes.front().flop();
  if (n > 128 && rest > 0) {
    const int m = int(std::lround(std::cbrt(rest / 2.0) / 128.0)) * 128;
    if (m >= 128) shapes.push_back({std::min(m, n), 1});
  }
  return shapes;
}

}  // namespace replisim::real
