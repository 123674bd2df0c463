// The synthetic teacher-student set, shards and mini-batches (data_set.h). The IDX reader is
// data_set_idx.cpp.
#include "core/model/data_set.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/base/error.h"
#include "core/base/random.h"

namespace replisim::core {
namespace {

// Stream tags that keep the seeded draws of different purposes apart.
constexpr uint64_t kTeacherStudentTag = 0x7465616368657231ULL;
constexpr uint64_t kShardTag = 0x7368617264730000ULL;
constexpr uint64_t kEpochTag = 0x65706f6368730000ULL;
constexpr double kPi = 3.14159265358979323846;

// Standard normal draws by the Box-Muller transform (Box and Muller 1958) over std::mt19937_64,
// whose output sequence the C++ standard fixes. std::normal_distribution is not used: its
// algorithm is left to the standard library (libstdc++ and libc++ give different numbers for the
// same engine), so a data set made with it would change with the library.
class GaussianDraws {
 public:
  explicit GaussianDraws(uint64_t seed) : generator_(seed) {}

  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = open_unit();  // (0, 1]: log(u1) is finite
    const double u2 = double(generator_() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * kPi * u2;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }
  // Uniform in (0, 1], from the top 53 bits of one draw.
  double open_unit() { return double((generator_() >> 11) + 1) * 0x1.0p-53; }

 private:
  std::mt19937_64 generator_;
  bool has_spare_ = false;
  double spare_ = 0;
};

void check_synthetic_spec(const SyntheticSetSpec& spec) {
  if (spec.train_samples < 1 || spec.test_samples < 1 || spec.features < 1 || spec.classes < 2) {
    throw InputError("", "",
                     "a synthetic data set needs at least 1 training and 1 test sample, 1 feature "
                     "and 2 classes");
  }
  const double floats = (double(spec.train_samples) + spec.test_samples) * spec.features +
                        double(spec.features) * spec.classes;
  if (floats > kMaxDataSetFloats) {
    throw InputError("", "",
                     "a synthetic data set of (" + std::to_string(spec.train_samples) + " + " +
                         std::to_string(spec.test_samples) + ") samples x " +
                         std::to_string(spec.features) + " features and a teacher of " +
                         std::to_string(spec.features) + " x " + std::to_string(spec.classes) +
                         " weights is larger than " + std::to_string(int64_t(kMaxDataSetFloats)) +
                         " floats");
  }
}

// `count` samples labelled by the teacher `weights` (features x classes, row-major).
DataSet draw_labelled(GaussianDraws& draws, const std::vector<double>& weights, int count,
                      int features, int classes) {
  DataSet data;
  data.features = features;
  data.classes = classes;
  data.x.resize(size_t(count) * size_t(features));
  data.labels.resize(size_t(count));
  std::vector<double> logits(static_cast<size_t>(classes));
  for (size_t i = 0; i < size_t(count); ++i) {
    float* x = data.x.data() + i * size_t(features);
    for (int j = 0; j < features; ++j) x[j] = float(draws.next());
    std::fill(logits.begin(), logits.end(), 0.0);
    for (int j = 0; j < features; ++j) {
      const double* w = weights.data() + size_t(j) * size_t(classes);
      for (int c = 0; c < classes; ++c) logits[size_t(c)] += double(x[j]) * w[c];
    }
    const double top = *std::max_element(logits.begin(), logits.end());
    double total = 0;
    for (double& l : logits) total += (l = std::exp(l - top));
    // The label: the first class whose cumulative probability passes a uniform draw.
    const double u = draws.open_unit() * total;
    double cumulative = 0;
    int label = classes - 1;
    for (int c = 0; c < classes; ++c) {
      cumulative += logits[size_t(c)];
      if (u <= cumulative) {
        label = c;
        break;
      }
    }
    data.labels[i] = label;
  }
  return data;
}

}  // namespace

BatchView whole(const DataSet& data) {
  return rows(data, 0, data.samples());
}

BatchView rows(const DataSet& data, size_t first, size_t count) {
  REPLISIM_ASSERT(first + count <= data.samples(), "rows past the data set's end");
  return BatchView{data.x.data() + first * size_t(data.features), data.labels.data() + first, count,
                   data.features, data.classes};
}

TrainTestSets make_teacher_student_set(const SyntheticSetSpec& spec) {
  check_synthetic_spec(spec);
  GaussianDraws draws(splitmix64(spec.seed ^ kTeacherStudentTag));
  std::vector<double> weights(size_t(spec.features) * size_t(spec.classes));
  const double scale = kTeacherLogitScale / std::sqrt(double(spec.features));
  for (double& w : weights) w = scale * draws.next();
  TrainTestSets sets;
  sets.train = draw_labelled(draws, weights, spec.train_samples, spec.features, spec.classes);
  sets.test = draw_labelled(draws, weights, spec.test_samples, spec.features, spec.classes);
  return sets;
}

std::vector<uint32_t> shard_indices(size_t samples, int workers, int worker, uint64_t seed) {
  REPLISIM_ASSERT(workers >= 1 && worker >= 0 && worker < workers, "worker outside [0, workers)");
  REPLISIM_ASSERT(size_t(workers) <= samples, "more workers than samples");
  REPLISIM_ASSERT(samples <= size_t(UINT32_MAX), "too many samples for 32-bit indices");
  std::vector<uint32_t> permutation(samples);
  for (size_t i = 0; i < samples; ++i) permutation[i] = uint32_t(i);
  std::mt19937_64 generator(splitmix64(seed ^ kShardTag));
  for (size_t i = samples; i > 1; --i) {
    std::swap(permutation[i - 1], permutation[uniform_below(generator, i)]);
  }
  const size_t begin = size_t(worker) * samples / size_t(workers);
  const size_t end = (size_t(worker) + 1) * samples / size_t(workers);
  return {permutation.begin() + std::ptrdiff_t(begin), permutation.begin() + std::ptrdiff_t(end)};
}

BatchIterator::BatchIterator(const DataSet& data, std::vector<uint32_t> shard, int batch,
                             uint64_t seed)
    : data_(&data), shard_(std::move(shard)), batch_(batch), seed_(seed) {
  REPLISIM_ASSERT(!shard_.empty(), "an empty shard");
  REPLISIM_ASSERT(batch_ >= 1, "a batch of no samples");
  for (uint32_t index : shard_) {
    REPLISIM_ASSERT(index < data.samples(), "a shard index past the data set's end");
  }
  x_.resize(size_t(batch_) * size_t(data.features));
  labels_.resize(size_t(batch_));
}

void BatchIterator::begin_epoch() {
  order_ = shard_;
  std::mt19937_64 generator(splitmix64(splitmix64(seed_ ^ kEpochTag) ^ epoch_));
  for (size_t i = order_.size(); i > 1; --i) {
    std::swap(order_[i - 1], order_[uniform_below(generator, i)]);
  }
  ++epoch_;
  position_ = 0;
}

BatchView BatchIterator::next() {
  const size_t features = size_t(data_->features);
  for (size_t i = 0; i < size_t(batch_); ++i) {
    if (epoch_ == 0 || position_ == order_.size()) begin_epoch();
    const uint32_t sample = order_[position_++];
    std::copy_n(data_->row(sample), features, x_.data() + i * features);
    labels_[i] = data_->labels[sample];
  }
  return BatchView{x_.data(), labels_.data(), size_t(batch_), data_->features, data_->classes};
}

}  // namespace replisim::core
