// The training objective's model (training.objective): softmax regression or a ReLU MLP over one
// flat float parameter vector, with its loss, gradient, evaluation and FLOP counts, and plain SGD
// with a learning-rate schedule and staleness-aware scaling. GEMMs run through CBLAS (OpenBLAS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/data_set.h"
#include "core/model/model.h"

namespace replisim::core {

// One named variable of the flat parameter vector: `rows` x `columns` floats, row-major, at
// [offset, offset + size). A kernel is (inputs x outputs), a bias (1 x outputs), as Keras'
// Dense layer keeps them. Names: "hidden<i>/kernel", "hidden<i>/bias" for the MLP's hidden
// layers (i from 0), "logits/kernel", "logits/bias" for the last layer.
struct ObjectiveVariable {
  std::string name;
  size_t offset = 0;
  size_t size = 0;
  int rows = 0;
  int columns = 0;
};

struct LossAndGradient {
  double loss = 0;              // mean cross-entropy over the batch (nats)
  std::vector<float> gradient;  // d loss / d params, parameter_count() floats
};

struct ObjectiveEvaluation {
  double loss = 0;      // mean cross-entropy (nats)
  double accuracy = 0;  // fraction of samples whose largest logit is their label (first on ties)
};

// A stack of dense layers: widths w0 (features), w1 ... wL (classes); layer l computes
// z = a W_l + b_l, hidden layers then a = max(z, 0) (ReLU); the last layer's z are the logits of
// a softmax; the loss is the mean cross-entropy -log softmax(z)_label. No hidden layer is
// multinomial logistic (softmax) regression. Immutable once built; its functions are const and
// thread-safe (each call allocates its own scratch).
class ObjectiveModel {
 public:
  // features >= 1, classes >= 2, each hidden width >= 1. Throws InputError when the parameter
  // count exceeds kMaxObjectiveParameters.
  static ObjectiveModel softmax_regression(int features, int classes);
  static ObjectiveModel mlp(int features, const std::vector<int>& hidden, int classes);

  int features() const { return widths_.front(); }
  int classes() const { return widths_.back(); }
  // "softmax" or "mlp(128,64)".
  std::string name() const;
  size_t parameter_count() const { return parameter_count_; }
  // In the flat vector's order: per layer its kernel then its bias.
  const std::vector<ObjectiveVariable>& variables() const { return variables_; }

  // Kernels from Glorot and Bengio 2010's uniform initialisation, U[-l, l] with
  // l = sqrt(6 / (inputs + outputs)) (Keras' Dense default, glorot_uniform), drawn from
  // std::mt19937_64 seeded from `seed`; biases 0. The same seed gives bitwise the same vector.
  std::vector<float> initial_parameters(uint64_t seed) const;

  // The mean cross-entropy of `batch` at `params` and its gradient. The batch is cut into
  // `sub_batches` equal parts (batch.samples must be a multiple of it); each part's gradient is
  // the sum of its samples' gradients divided by its size, and the parts' gradients are then
  // averaged by average_gradients' arithmetic, in order. So this is bitwise the average of the
  // gradients of the parts computed one by one (sync training's N workers) and equal, up to
  // rounding, to the gradient of the mean over the whole batch. Every sum runs in a fixed order
  // (BLAS's on one machine and thread count), so a result repeats bitwise on one machine.
  // `params` has parameter_count() floats; batch.features and batch.classes must match.
  LossAndGradient loss_and_gradient(const std::vector<float>& params, const BatchView& batch,
                                    int sub_batches = 1) const;

  // Loss and accuracy over all of `data`, in chunks of kEvaluationChunk samples.
  ObjectiveEvaluation evaluate(const std::vector<float>& params, const BatchView& data) const;

  // FLOP per sample of the forward pass (with the loss) and of the backward pass; a
  // multiply-add counts as 2. Forward: per layer 2 in out (the GEMM) + out (bias); per hidden
  // layer out (ReLU); then 5 per class for softmax cross-entropy (exp, sum, log, subtract,
  // multiply: the convention of training.costs' loss_flop_per_sample). Backward: per class 1
  // (p - onehot); per layer 2 in out (kernel gradient) + out (bias gradient); per layer but the
  // first 2 in out (gradient of its input) + in (the ReLU mask of the layer below). Per batch
  // and not counted here: one division per parameter (the mean).
  double forward_flop_per_sample() const;
  double backward_flop_per_sample() const;
  // The model as replisim's cost model sees it (training.objective's timing "objective"): one
  // Layer per dense layer ("dense0", ..., "logits"), fp32, each with its parameters, its share
  // of the FLOP above (the softmax cross-entropy and its gradient on the logits layer) and its
  // output's bytes; the layers' sums are forward_flop_per_sample and backward_flop_per_sample.
  Model cost_model() const;

  static constexpr size_t kEvaluationChunk = 1024;

 private:
  explicit ObjectiveModel(std::vector<int> widths);
  // Forward and backward over `count` rows; `gradient` gets the sum of their gradients (not yet
  // divided). Returns the sum of their losses.
  double sum_loss_and_gradient(const float* params, const float* x, const int32_t* labels,
                               size_t count, float* gradient) const;
  // Logits of `count` rows into `logits` (count x classes); `activations` holds each hidden
  // layer's output.
  void forward(const float* params, const float* x, size_t count,
               std::vector<std::vector<float>>& activations, std::vector<float>& logits) const;

  std::vector<int> widths_;
  std::vector<ObjectiveVariable> variables_;  // layer l: variables_[2l] kernel, [2l+1] bias
  size_t parameter_count_ = 0;
};

// The most parameters an objective model may have (1 GiB of floats).
inline constexpr double kMaxObjectiveParameters = double(1 << 28);

// The mean of `gradients` (each `size` floats) into `out`: out = g0, out += g1, ..., in order,
// then out /= count when count > 1. The one arithmetic of every average of gradients, so
// that averages computed in different places agree bitwise. count >= 1.
void average_gradients(const std::vector<const float*>& gradients, size_t size, float* out);

// Plain SGD (TF's ApplyGradientDescent): params[i] -= float(learning_rate) * gradient[i].
void sgd_apply(std::vector<float>& params, const std::vector<float>& gradient,
               double learning_rate);

// The learning rate at a global step. kConstant: the base rate. kStepDecay: the base rate times
// decay_rate ^ floor(global_step / decay_steps), TF's tf.compat.v1.train.exponential_decay with
// staircase=True (PyTorch's StepLR with step_size = decay_steps, gamma = decay_rate).
struct LearningRateSchedule {
  enum class Kind { kConstant, kStepDecay };
  Kind kind = Kind::kConstant;
  int64_t decay_steps = 0;  // kStepDecay: >= 1
  double decay_rate = 1;    // kStepDecay: in (0, 1]

  double at(double base_learning_rate, int64_t global_step) const;
  // "constant", or "step decay x0.5 every 1000 steps".
  std::string describe() const;
};

// Staleness-aware async SGD (Zhang, Gupta, Lian and Liu 2016, "Staleness-aware Async-SGD for
// Distributed Deep Learning", IJCAI): a gradient computed `staleness` updates ago is applied with
// learning_rate / staleness. A gradient of staleness 0 (no update since its read) keeps the
// full rate, as one of staleness 1: the divisor is max(staleness, 1). staleness >= 0.
double staleness_aware_learning_rate(double learning_rate, int64_t staleness);

}  // namespace replisim::core
