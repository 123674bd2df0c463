#include "core/values/optimizer.h"

#include <cmath>

namespace replisim::core {

void apply_gradient_descent(float* var, const float* grad, size_t n, float lr) {
  for (size_t i = 0; i < n; ++i) var[i] -= grad[i] * lr;
}

void apply_momentum(float* var, float* accum, const float* grad, size_t n, float lr,
                    float momentum) {
  for (size_t i = 0; i < n; ++i) {
    accum[i] = accum[i] * momentum + grad[i];
    var[i] -= accum[i] * lr;
  }
}

void apply_adam(float* var, float* m, float* v, const float* grad, size_t n, float lr, float beta1,
                float beta2, float epsilon, float beta1_power, float beta2_power) {
  const float alpha = lr * std::sqrt(1.0f - beta2_power) / (1.0f - beta1_power);
  for (size_t i = 0; i < n; ++i) {
    m[i] += (grad[i] - m[i]) * (1.0f - beta1);
    v[i] += (grad[i] * grad[i] - v[i]) * (1.0f - beta2);
    var[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + epsilon);
  }
}

}  // namespace replisim::core
