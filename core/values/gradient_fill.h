// The gradients a real run's backward ops produce. replisim runs the plan's compute (SGEMMs of
// the plan's flop), not a model, so the values a backward op hands on are a fixed pattern: every
// value a small multiple of 1/64, so sums, means over towers and replicas, and the updates of
// gradient descent at a power-of-two learning rate are exact in float32 and a test can predict
// the variables' final values bit for bit from the trace.
#pragma once

#include <cstddef>
#include <cstdint>

namespace replisim::core {

// The gradient of variable `variable` (Plan::variables index) that backward op `op` of step
// graph `graph` produces at step `step`, element `i`: (1 + (7 graph + 3 step + 5 variable +
// 11 op + i) mod 8) / 64, in [1/64, 1/8].
// The pattern's offset for element 0: gradient_value is (1 + (offset + i) mod 8) / 64 (so a
// device can make it from eight values and copies: real/compute/device_memory.h fill_pattern).
inline uint64_t gradient_offset(int64_t graph, int64_t step, int64_t variable, int64_t op) {
  return uint64_t(7 * graph + 3 * step + 5 * variable + 11 * op);
}

inline float gradient_value(int64_t graph, int64_t step, int64_t variable, int64_t op, size_t i) {
  const uint64_t k = gradient_offset(graph, step, variable, op) + uint64_t(i);
  return float(1 + k % 8) / 64.0f;
}

// Fills out[0, n) with gradient_value(graph, step, variable, op, i).
inline void fill_gradient(float* out, size_t n, int64_t graph, int64_t step, int64_t variable,
                          int64_t op) {
  for (size_t i = 0; i < n; ++i) out[i] = gradient_value(graph, step, variable, op, i);
}

}  // namespace replisim::core
