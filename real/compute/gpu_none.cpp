// A replisim built without CUDA (REPLISIM_WITH_CUDA=OFF, or no CUDA toolkit found): no GPU is
// usable, and every GPU op of a plan runs on the CPU engine (the report says so).
#include "real/compute/gpu.h"

namespace replisim::real {

namespace {
constexpr const char* kWhy = "this replisim was built without CUDA (REPLISIM_WITH_CUDA=OFF)";
}

int gpu_count(std::string* why_not) {
  if (why_not != nullptr) *why_not = kWhy;
  return 0;
}

std::unique_ptr<GpuDevice> open_gpu(int, std::string* why_not) {
  if (why_not != nullptr) *why_not = kWhy;
  return nullptr;
}

}  // namespace replisim::real
