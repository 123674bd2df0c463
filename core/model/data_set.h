// Labelled data sets in memory for the training objective (training.objective): a seeded
// synthetic teacher-student set, Fashion-MNIST read from its IDX files, each worker's shard of
// the training set and a mini-batch iterator over it. Everything seeded is bitwise reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace replisim::core {

// Samples with `features` float features each (row-major: sample i is x[i * features ...]) and
// an integer label in [0, classes) each.
struct DataSet {
  int features = 0;
  int classes = 0;
  std::vector<float> x;         // samples x features
  std::vector<int32_t> labels;  // samples

  size_t samples() const { return labels.size(); }
  const float* row(size_t sample) const { return x.data() + sample * size_t(features); }
};

// A contiguous run of samples seen by the model: `samples` rows of `features` floats at `x`,
// their labels at `labels` (not owned: the DataSet or Batch they point into must outlive it).
struct BatchView {
  const float* x = nullptr;
  const int32_t* labels = nullptr;
  size_t samples = 0;
  int features = 0;
  int classes = 0;
};
BatchView whole(const DataSet& data);
// Samples [first, first + count) of `data`; first + count must not exceed its samples.
BatchView rows(const DataSet& data, size_t first, size_t count);

struct TrainTestSets {
  DataSet train;
  DataSet test;
};

// The synthetic teacher-student set: inputs x ~ N(0, I) in `features` dimensions; a fixed random
// teacher, softmax regression with weights W ~ N(0, kTeacherLogitScale^2 / features) and no bias
// (so each logit has standard deviation kTeacherLogitScale), gives each input a label drawn from
// its softmax probabilities. A student softmax regression can therefore learn it, but not to 100%
// (the labels are noisy where the teacher is unsure): the setting of Saad and Solla 1995 and
// the teacher-student studies since, here with a softmax teacher.
struct SyntheticSetSpec {
  int train_samples = 0;  // >= 1
  int test_samples = 0;   // >= 1
  int features = 0;       // >= 1
  int classes = 0;        // >= 2
  uint64_t seed = 0;
};
inline constexpr double kTeacherLogitScale = 3.0;
// The same spec gives bitwise the same sets on one machine (Gaussian draws use std::log, std::cos
// and std::sqrt of the C library; every other step is integer or exact). Throws InputError for a
// spec outside the bounds above or larger than kMaxDataSetFloats.
TrainTestSets make_teacher_student_set(const SyntheticSetSpec& spec);

// The most floats a data set may hold (1 GiB): a bound on what a scenario can ask for.
inline constexpr double kMaxDataSetFloats = double(1 << 28);

// Where Debian's dataset-fashion-mnist package installs the four files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// The sets' sizes (Xiao, Rasul and Vollgraf 2017, "Fashion-MNIST: a Novel Image Dataset for
// Benchmarking Machine Learning Algorithms", arXiv:1708.07747): 28 x 28 grey images, 10 classes.
inline constexpr int kFashionMnistTrainSamples = 60000;
inline constexpr int kFashionMnistTestSamples = 10000;
inline constexpr int kFashionMnistFeatures = 28 * 28;
inline constexpr int kFashionMnistClasses = 10;

// Fashion-MNIST from `dir`'s train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz, pixels scaled to [0, 1] (value / 255).
// `subset` > 0 keeps the first `subset` samples of each set (the test set keeps min(subset,
// 10,000)); 0 keeps all. Throws InputError naming the file for a missing or unreadable file, a
// wrong magic number, a truncated file, dimensions other than Fashion-MNIST's, or image and label
// files whose counts disagree.
TrainTestSets load_fashion_mnist(const std::string& dir = kFashionMnistDir, size_t subset = 0);
// The four files load_fashion_mnist reads from `dir`: the training images and labels, then the
// test set's ("<dir>/train-images-idx3-ubyte.gz", ...).
std::vector<std::string> fashion_mnist_files(const std::string& dir);

// One IDX pair (LeCun's MNIST format, gzip-compressed or not: zlib reads both): an idx3 image
// file of unsigned bytes (magic 0x00000803, then count, rows, columns, big-endian) and an idx1
// label file (magic 0x00000801, then count). Reads the first `max_samples` samples (0: all);
// pixels become value / 255. Labels must lie in [0, classes). Throws InputError as above.
DataSet read_idx_images_and_labels(const std::string& images_file, const std::string& labels_file,
                                   int classes, size_t max_samples = 0);

// The data split over `workers` workers: a permutation of [0, samples) seeded by `seed`
// (Fisher-Yates over std::mt19937_64), cut into `workers` contiguous pieces whose sizes differ by
// at most one (worker w gets positions [w * samples / workers, (w + 1) * samples / workers)).
// The shards partition the samples; the same seed gives the same shards. Returns worker
// `worker`'s sample indices, in the permutation's order. Requires 0 <= worker < workers and
// workers <= samples.
std::vector<uint32_t> shard_indices(size_t samples, int workers, int worker, uint64_t seed);

// Mini-batches from a worker's shard: each pass over the shard (an epoch) visits it in an order
// shuffled from (seed, epoch); a batch that reaches the shard's end wraps into the next epoch.
// The same shard, batch and seed give the same batches. Not thread-safe (one per worker).
class BatchIterator {
 public:
  // `data` must outlive the iterator; `shard` must be non-empty with every index < samples;
  // batch >= 1.
  BatchIterator(const DataSet& data, std::vector<uint32_t> shard, int batch, uint64_t seed);

  // The next batch, copied into the iterator's buffer (valid until the next call).
  BatchView next();
  // Epochs begun so far (1 after the first call).
  uint64_t epoch() const { return epoch_; }

 private:
  void begin_epoch();

  const DataSet* data_;
  std::vector<uint32_t> shard_;
  std::vector<uint32_t> order_;
  int batch_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
  size_t position_ = 0;  // in order_
  std::vector<float> x_;
  std::vector<int32_t> labels_;
};

// A uniform integer in [0, bound) from a 64-bit generator's output stream, by Lemire's
// multiply-and-reject method (Lemire 2019, "Fast random integer generation in an interval", ACM
// TOMACS 29(1)); std::uniform_int_distribution is not the same across standard libraries.
template <class Generator>
uint64_t uniform_below(Generator& generator, uint64_t bound) {
  unsigned __int128 product = (unsigned __int128)generator() * bound;
  uint64_t low = uint64_t(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = (unsigned __int128)generator() * bound;
      low = uint64_t(product);
    }
  }
  return uint64_t(product >> 64);
}

}  // namespace replisim::core
