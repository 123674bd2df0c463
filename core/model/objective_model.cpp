// Softmax regression and the ReLU MLP: forward, backward through CBLAS, evaluation, FLOP counts;
// SGD, the learning-rate schedule and staleness-aware scaling (objective_model.h).
#include "core/model/objective_model.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/base/error.h"
#include "core/base/random.h"

namespace replisim::core {
namespace {

constexpr uint64_t kInitialisationTag = 0x696e697469616c00ULL;
// Softmax cross-entropy per class: exp, sum, log, subtract, multiply (as training.costs'
// loss_flop_per_sample).
constexpr double kLossFlopPerClass = 5;

// Rows of `z` (count x width) plus `bias`, in place.
void add_bias(float* z, const float* bias, size_t count, int width) {
  for (size_t i = 0; i < count; ++i) {
    float* row = z + i * size_t(width);
    for (int j = 0; j < width; ++j) row[j] += bias[j];
  }
}

// The cross-entropy of one row of logits against `label`, and (when `delta` is given) its
// gradient with respect to the logits, softmax(z) - onehot(label), into `delta`. The largest
// logit is subtracted first (the log-sum-exp trick), so exp never overflows. `delta` may be `z`.
double cross_entropy_row(const float* z, int classes, int32_t label, float* delta) {
  const float top = *std::max_element(z, z + classes);
  float total = 0;
  for (int c = 0; c < classes; ++c) total += std::exp(z[c] - top);
  const double loss = double(std::log(total)) + double(top) - double(z[label]);
  if (delta != nullptr) {
    for (int c = 0; c < classes; ++c) delta[c] = std::exp(z[c] - top) / total;
    delta[label] -= 1.0f;
  }
  return loss;
}

}  // namespace

ObjectiveModel::ObjectiveModel(std::vector<int> widths) : widths_(std::move(widths)) {
  REPLISIM_ASSERT(widths_.size() >= 2, "a model needs its features and classes");
  for (int width : widths_) REPLISIM_ASSERT(width >= 1, "a layer of no width");
  REPLISIM_ASSERT(widths_.back() >= 2, "fewer than 2 classes");
  double parameters = 0;
  for (size_t l = 1; l < widths_.size(); ++l) {
    parameters += (double(widths_[l - 1]) + 1) * widths_[l];
  }
  if (parameters > kMaxObjectiveParameters) {
    throw InputError("", "",
                     "the objective model " + name() + " has " +
                         std::to_string(int64_t(parameters)) + " parameters, more than " +
                         std::to_string(int64_t(kMaxObjectiveParameters)));
  }
  size_t offset = 0;
  for (size_t l = 1; l < widths_.size(); ++l) {
    const std::string layer = l + 1 == widths_.size() ? "logits" : "hidden" + std::to_string(l - 1);
    const int in = widths_[l - 1];
    const int out = widths_[l];
    variables_.push_back({layer + "/kernel", offset, size_t(in) * size_t(out), in, out});
    offset += size_t(in) * size_t(out);
    variables_.push_back({layer + "/bias", offset, size_t(out), 1, out});
    offset += size_t(out);
  }
  parameter_count_ = offset;
}

ObjectiveModel ObjectiveModel::softmax_regression(int features, int classes) {
  return ObjectiveModel({features, classes});
}

ObjectiveModel ObjectiveModel::mlp(int features, const std::vector<int>& hidden, int classes) {
  std::vector<int> widths{features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  widths.push_back(classes);
  return ObjectiveModel(std::move(widths));
}

std::string ObjectiveModel::name() const {
  if (widths_.size() == 2) return "softmax";
  std::string text = "mlp(";
  for (size_t l = 1; l + 1 < widths_.size(); ++l) {
    text += (l > 1 ? "," : "") + std::to_string(widths_[l]);
  }
  return text + ")";
}

std::vector<float> ObjectiveModel::initial_parameters(uint64_t seed) const {
  std::vector<float> params(parameter_count_, 0.0f);
  std::mt19937_64 generator(splitmix64(seed ^ kInitialisationTag));
  for (size_t v = 0; v < variables_.size(); v += 2) {
    const ObjectiveVariable& kernel = variables_[v];
    const double limit = std::sqrt(6.0 / (double(kernel.rows) + kernel.columns));
    for (size_t i = 0; i < kernel.size; ++i) {
      const double u = double(generator() >> 11) * 0x1.0p-53;  // [0, 1)
      params[kernel.offset + i] = float((2 * u - 1) * limit);
    }
  }
  return params;
}

void ObjectiveModel::forward(const float* params, const float* x, size_t count,
                             std::vector<std::vector<float>>& activations,
                             std::vector<float>& logits) const {
  const size_t layers = widths_.size() - 1;
  activations.resize(layers - 1);
  const float* input = x;
  for (size_t l = 0; l < layers; ++l) {
    const int in = widths_[l];
    const int out = widths_[l + 1];
    std::vector<float>& z = l + 1 == layers ? logits : activations[l];
    z.resize(count * size_t(out));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(count), out, in, 1.0f, input, in,
                params + variables_[2 * l].offset, out, 0.0f, z.data(), out);
    add_bias(z.data(), params + variables_[2 * l + 1].offset, count, out);
    if (l + 1 < layers) {
      for (float& value : z) value = std::max(value, 0.0f);  // ReLU
    }
    input = z.data();
  }
}

double ObjectiveModel::sum_loss_and_gradient(const float* params, const float* x,
                                             const int32_t* labels, size_t count,
                                             float* gradient) const {
  const size_t layers = widths_.size() - 1;
  const int classes = widths_.back();
  std::vector<std::vector<float>> activations;
  std::vector<float> delta;  // d loss / d z of the current layer, count x width
  forward(params, x, count, activations, delta);
  double loss = 0;
  for (size_t i = 0; i < count; ++i) {
    float* row = delta.data() + i * size_t(classes);
    loss += cross_entropy_row(row, classes, labels[i], row);
  }
  std::vector<float> delta_below;
  for (size_t l = layers; l-- > 0;) {
    const int in = widths_[l];
    const int out = widths_[l + 1];
    const float* input = l == 0 ? x : activations[l - 1].data();
    // Kernel gradient: input^T (in x count) times delta (count x out).
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, int(count), 1.0f, input, in,
                delta.data(), out, 0.0f, gradient + variables_[2 * l].offset, out);
    // Bias gradient: delta's column sums, rows in order.
    float* bias = gradient + variables_[2 * l + 1].offset;
    std::fill(bias, bias + out, 0.0f);
    for (size_t i = 0; i < count; ++i) {
      const float* row = delta.data() + i * size_t(out);
      for (int j = 0; j < out; ++j) bias[j] += row[j];
    }
    if (l == 0) break;
    // The input's gradient, delta (count x out) times kernel^T (out x in), through the ReLU.
    delta_below.resize(count * size_t(in));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(count), in, out, 1.0f, delta.data(),
                out, params + variables_[2 * l].offset, out, 0.0f, delta_below.data(), in);
    for (size_t k = 0; k < delta_below.size(); ++k) {
      if (!(input[k] > 0.0f)) delta_below[k] = 0.0f;
    }
    delta.swap(delta_below);
  }
  return loss;
}

LossAndGradient ObjectiveModel::loss_and_gradient(const std::vector<float>& params,
                                                  const BatchView& batch, int sub_batches) const {
  REPLISIM_ASSERT(params.size() == parameter_count_, "a parameter vector of another model");
  REPLISIM_ASSERT(batch.features == features() && batch.classes == classes(),
                  "a batch of another shape than the model's");
  REPLISIM_ASSERT(sub_batches >= 1 && batch.samples > 0 && batch.samples % size_t(sub_batches) == 0,
                  "the batch does not split into equal sub-batches");
  const size_t part = batch.samples / size_t(sub_batches);
  const float scale = float(part);
  const size_t count = static_cast<size_t>(sub_batches);
  std::vector<std::vector<float>> parts(count, std::vector<float>(parameter_count_));
  std::vector<double> part_losses(count);
  for (size_t s = 0; s < size_t(sub_batches); ++s) {
    std::vector<float>& g = parts[s];
    part_losses[s] =
        sum_loss_and_gradient(params.data(), batch.x + s * part * size_t(batch.features),
                              batch.labels + s * part, part, g.data()) /
        double(part);
    for (float& value : g) value /= scale;
  }
  LossAndGradient result;
  result.gradient.resize(parameter_count_);
  std::vector<const float*> pointers;
  for (const std::vector<float>& g : parts) pointers.push_back(g.data());
  average_gradients(pointers, parameter_count_, result.gradient.data());
  for (double loss : part_losses) result.loss += loss;
  result.loss /= double(sub_batches);
  return result;
}

ObjectiveEvaluation ObjectiveModel::evaluate(const std::vector<float>& params,
                                             const BatchView& data) const {
  REPLISIM_ASSERT(params.size() == parameter_count_, "a parameter vector of another model");
  REPLISIM_ASSERT(data.features == features() && data.classes == classes(),
                  "data of another shape than the model's");
  REPLISIM_ASSERT(data.samples > 0, "an evaluation over no samples");
  const int classes = widths_.back();
  std::vector<std::vector<float>> activations;
  std::vector<float> logits;
  double loss = 0;
  size_t correct = 0;
  for (size_t first = 0; first < data.samples; first += kEvaluationChunk) {
    const size_t count = std::min(kEvaluationChunk, data.samples - first);
    forward(params.data(), data.x + first * size_t(data.features), count, activations, logits);
    for (size_t i = 0; i < count; ++i) {
      const float* row = logits.data() + i * size_t(classes);
      const int32_t label = data.labels[first + i];
      loss += cross_entropy_row(row, classes, label, nullptr);
      if (std::max_element(row, row + classes) - row == label) ++correct;
    }
  }
  return {loss / double(data.samples), double(correct) / double(data.samples)};
}

double ObjectiveModel::forward_flop_per_sample() const {
  double flop = kLossFlopPerClass * widths_.back();
  for (size_t l = 1; l < widths_.size(); ++l) {
    flop += 2.0 * widths_[l - 1] * widths_[l] + widths_[l];
    if (l + 1 < widths_.size()) flop += widths_[l];  // ReLU
  }
  return flop;
}

double ObjectiveModel::backward_flop_per_sample() const {
  double flop = widths_.back();  // softmax - onehot
  for (size_t l = 1; l < widths_.size(); ++l) {
    flop += 2.0 * widths_[l - 1] * widths_[l] + widths_[l];
    if (l > 1) flop += 2.0 * widths_[l - 1] * widths_[l] + widths_[l - 1];
  }
  return flop;
}

Model ObjectiveModel::cost_model() const {
  Model m;
  m.name = "objective " + name();
  m.input_bytes_per_sample = 4.0 * widths_.front();
  const size_t last = widths_.size() - 1;
  for (size_t l = 1; l <= last; ++l) {
    const double in = widths_[l - 1], out = widths_[l];
    Layer layer;
    layer.name = l == last ? "logits" : "dense" + std::to_string(l - 1);
    layer.params = in * out + out;
    // As forward_flop_per_sample and backward_flop_per_sample, layer by layer.
    layer.forward_flop_per_sample =
        2.0 * in * out + out + (l < last ? out : 0.0) + (l == last ? kLossFlopPerClass * out : 0.0);
    layer.backward_flop_per_sample =
        2.0 * in * out + out + (l > 1 ? 2.0 * in * out + in : 0.0) + (l == last ? out : 0.0);
    layer.activation_bytes_per_sample = 4.0 * out;
    layer.gemm = {1, int64_t(widths_[l]), int64_t(widths_[l - 1])};
    m.layers.push_back(std::move(layer));
  }
  return m;
}

void average_gradients(const std::vector<const float*>& gradients, size_t size, float* out) {
  REPLISIM_ASSERT(!gradients.empty(), "an average of no gradients");
  std::copy_n(gradients.front(), size, out);
  for (size_t k = 1; k < gradients.size(); ++k) {
    const float* g = gradients[k];
    for (size_t i = 0; i < size; ++i) out[i] += g[i];
  }
  if (gradients.size() > 1) {
    const float count = float(gradients.size());
    for (size_t i = 0; i < size; ++i) out[i] /= count;
  }
}

void sgd_apply(std::vector<float>& params, const std::vector<float>& gradient,
               double learning_rate) {
  REPLISIM_ASSERT(params.size() == gradient.size(), "a gradient of another shape");
  const float rate = float(learning_rate);
  for (size_t i = 0; i < params.size(); ++i) params[i] -= rate * gradient[i];
}

double LearningRateSchedule::at(double base_learning_rate, int64_t global_step) const {
  if (kind == Kind::kConstant) return base_learning_rate;
  REPLISIM_ASSERT(decay_steps >= 1, "step decay every 0 steps");
  return base_learning_rate *
         std::pow(decay_rate, double(std::max<int64_t>(global_step, 0) / decay_steps));
}

std::string LearningRateSchedule::describe() const {
  if (kind == Kind::kConstant) return "constant";
  char text[96];
  std::snprintf(text, sizeof text, "step decay x%g every %lld steps", decay_rate,
                static_cast<long long>(decay_steps));
  return text;
}

double staleness_aware_learning_rate(double learning_rate, int64_t staleness) {
  REPLISIM_ASSERT(staleness >= 0, "a negative staleness");
  return learning_rate / double(std::max<int64_t>(staleness, 1));
}

}  // namespace replisim::core
