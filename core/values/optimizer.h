// The update rules a parameter server applies, in float32, as TensorFlow's Apply* kernels compute
// them (tensorflow/core/kernels/training_ops.cc, the CPU functors): ApplyGradientDescent,
// ApplyMomentum (use_nesterov false) and ApplyAdam (use_nesterov false).
#pragma once

#include <cstddef>
#include <cstdint>

namespace replisim::core {

// var -= lr * grad.
void apply_gradient_descent(float* var, const float* grad, size_t n, float lr);
// accum = accum * momentum + grad; var -= accum * lr.
void apply_momentum(float* var, float* accum, const float* grad, size_t n, float lr,
                    float momentum);
// alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
// v += (grad^2 - v) * (1 - beta2); var -= m * alpha / (sqrt(v) + epsilon).
// beta*_power: beta^t for the t-th update (TF's beta1_power and beta2_power variables start at
// beta1 and beta2 and are multiplied by them after each apply_gradients).
void apply_adam(float* var, float* m, float* v, const float* grad, size_t n, float lr, float beta1,
                float beta2, float epsilon, float beta1_power, float beta2_power);

}  // namespace replisim::core
