// The objective's data: the synthetic teacher-student set, shards, mini-batches and the IDX reader
// (core/model/data_set.h).
#include "core/model/data_set.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/temp_dir.h"

namespace replisim::core {
namespace {

SyntheticSetSpec small_teacher_student_spec(uint64_t seed) {
  return SyntheticSetSpec{500, 100, 12, 4, seed};
}

bool bitwise_equal(const DataSet& a, const DataSet& b) {
  return a.features == b.features && a.classes == b.classes && a.x.size() == b.x.size() &&
         std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(float)) == 0 &&
         a.labels == b.labels;
}

TEST(DataSetSynthetic, TheSameSeedGivesBitwiseTheSameSetAndAnotherSeedAnother) {
  const TrainTestSets a = make_teacher_student_set(small_teacher_student_spec(7));
  const TrainTestSets b = make_teacher_student_set(small_teacher_student_spec(7));
  const TrainTestSets c = make_teacher_student_set(small_teacher_student_spec(8));
  ASSERT_EQ(a.train.samples(), 500u);
  ASSERT_EQ(a.test.samples(), 100u);
  ASSERT_EQ(a.train.x.size(), 500u * 12u);
  EXPECT_TRUE(bitwise_equal(a.train, b.train));
  EXPECT_TRUE(bitwise_equal(a.test, b.test));
  EXPECT_FALSE(bitwise_equal(a.train, c.train));
  EXPECT_NE(a.train.labels, c.train.labels);
  // The inputs are standard normal: their mean near 0 and variance near 1 over 6,000 draws.
  double sum = 0;
  double squares = 0;
  for (float v : a.train.x) {
    sum += v;
    squares += double(v) * v;
  }
  const double n = double(a.train.x.size());
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(squares / n, 1.0, 0.06);
  // Every class occurs, and no label lies outside [0, classes).
  std::set<int32_t> seen(a.train.labels.begin(), a.train.labels.end());
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(DataSetSynthetic, ASetBeyondTheBoundsIsAnInputError) {
  EXPECT_THROW(make_teacher_student_set({10, 10, 5, 1, 1}), InputError);
  EXPECT_THROW(make_teacher_student_set({0, 10, 5, 3, 1}), InputError);
  EXPECT_THROW(make_teacher_student_set({1 << 20, 1 << 20, 1 << 10, 3, 1}), InputError);
}

TEST(DataSetShards, ShardsPartitionTheSamplesAndRepeatWithTheSeed) {
  const size_t samples = 1001;
  const int workers = 4;
  std::vector<uint32_t> all;
  for (int w = 0; w < workers; ++w) {
    const std::vector<uint32_t> shard = shard_indices(samples, workers, w, 11);
    EXPECT_GE(shard.size(), samples / workers);
    EXPECT_LE(shard.size(), samples / workers + 1);
    EXPECT_EQ(shard, shard_indices(samples, workers, w, 11));
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), samples);
  for (size_t i = 0; i < samples; ++i) ASSERT_EQ(all[i], i);
  // Another seed, another split; the permutation is not the identity.
  EXPECT_NE(shard_indices(samples, workers, 0, 11), shard_indices(samples, workers, 0, 12));
  const std::vector<uint32_t> first = shard_indices(samples, workers, 0, 11);
  EXPECT_FALSE(std::is_sorted(first.begin(), first.end()));
}

TEST(DataSetBatches, EachEpochVisitsTheShardOnceAndBatchesRepeatWithTheSeed) {
  const TrainTestSets sets = make_teacher_student_set(small_teacher_student_spec(3));
  const std::vector<uint32_t> shard = shard_indices(sets.train.samples(), 5, 2, 3);  // 100
  BatchIterator a(sets.train, shard, 25, 9);
  BatchIterator b(sets.train, shard, 25, 9);
  BatchIterator other(sets.train, shard, 25, 10);
  std::multiset<std::vector<float>> epoch_rows;
  std::multiset<std::vector<float>> shard_rows;
  for (uint32_t index : shard) {
    shard_rows.insert(std::vector<float>(sets.train.row(index), sets.train.row(index) + 12));
  }
  bool differs_from_other_seed = false;
  for (int k = 0; k < 4; ++k) {
    const BatchView va = a.next();
    const BatchView vb = b.next();
    const BatchView vo = other.next();
    ASSERT_EQ(va.samples, 25u);
    EXPECT_EQ(std::memcmp(va.x, vb.x, 25 * 12 * sizeof(float)), 0);
    EXPECT_TRUE(std::equal(va.labels, va.labels + 25, vb.labels));
    differs_from_other_seed |= std::memcmp(va.x, vo.x, 25 * 12 * sizeof(float)) != 0;
    for (size_t i = 0; i < 25; ++i) {
      epoch_rows.insert(std::vector<float>(va.x + i * 12, va.x + (i + 1) * 12));
    }
  }
  EXPECT_EQ(a.epoch(), 1u);
  EXPECT_EQ(epoch_rows, shard_rows);
  EXPECT_TRUE(differs_from_other_seed);
  // A batch that reaches the end wraps into the next epoch, in a new order.
  BatchIterator wrapping(sets.train, shard, 30, 9);
  for (int k = 0; k < 4; ++k) wrapping.next();  // 120 samples: 1.2 epochs
  EXPECT_EQ(wrapping.epoch(), 2u);
}

// A gzip file at `path` holding `bytes`.
void write_gzip_file_for_idx_test(const std::string& path,
                                  const std::vector<unsigned char>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

void append_u32_for_idx_test(std::vector<unsigned char>& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((unsigned char)(value >> shift));
}

// An IDX image file of `count` 2 x 3 images whose pixel k of image i is 10 i + k, and its labels
// i mod 3.
struct IdxFilesForTest {
  std::vector<unsigned char> images;
  std::vector<unsigned char> labels;
};
IdxFilesForTest small_idx_files(uint32_t count, uint32_t label_count) {
  IdxFilesForTest files;
  append_u32_for_idx_test(files.images, 0x803);
  append_u32_for_idx_test(files.images, count);
  append_u32_for_idx_test(files.images, 2);
  append_u32_for_idx_test(files.images, 3);
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t k = 0; k < 6; ++k) files.images.push_back((unsigned char)(10 * i + k));
  }
  append_u32_for_idx_test(files.labels, 0x801);
  append_u32_for_idx_test(files.labels, label_count);
  for (uint32_t i = 0; i < label_count; ++i) files.labels.push_back((unsigned char)(i % 3));
  return files;
}

// The InputError `read` throws; fails the test when it throws none.
InputError idx_error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << "no InputError";
  return InputError("", "", "");
}

TEST(IdxReader, ReadsImagesAndLabelsScaledToUnitRange) {
  ScopedTempDir dir("replisim-idx-test");
  const IdxFilesForTest files = small_idx_files(5, 5);
  write_gzip_file_for_idx_test(dir.path() + "/images.gz", files.images);
  write_gzip_file_for_idx_test(dir.path() + "/labels.gz", files.labels);
  const DataSet data =
      read_idx_images_and_labels(dir.path() + "/images.gz", dir.path() + "/labels.gz", 3);
  ASSERT_EQ(data.samples(), 5u);
  EXPECT_EQ(data.features, 6);
  EXPECT_EQ(data.x[4 * 6 + 5], float(45) / 255.0f);
  EXPECT_EQ(data.labels, (std::vector<int32_t>{0, 1, 2, 0, 1}));
  const DataSet first_two =
      read_idx_images_and_labels(dir.path() + "/images.gz", dir.path() + "/labels.gz", 3, 2);
  EXPECT_EQ(first_two.samples(), 2u);
}

TEST(IdxReader, BadFilesAreInputErrorsNamingTheFile) {
  ScopedTempDir dir("replisim-idx-test");
  const std::string images = dir.path() + "/images.gz";
  const std::string labels = dir.path() + "/labels.gz";
  const auto read = [&] { read_idx_images_and_labels(images, labels, 3); };
  IdxFilesForTest files = small_idx_files(5, 5);
  write_gzip_file_for_idx_test(labels, files.labels);

  // Truncated: the last image is cut short.
  std::vector<unsigned char> truncated(files.images.begin(), files.images.end() - 4);
  write_gzip_file_for_idx_test(images, truncated);
  InputError error = idx_error_of(read);
  EXPECT_EQ(error.file(), images);
  EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();

  // A wrong magic number (a label file given as the images).
  write_gzip_file_for_idx_test(images, files.labels);
  error = idx_error_of(read);
  EXPECT_EQ(error.file(), images);
  EXPECT_NE(std::string(error.what()).find("magic number 0x00000801"), std::string::npos)
      << error.what();

  // Counts that disagree.
  write_gzip_file_for_idx_test(images, files.images);
  write_gzip_file_for_idx_test(labels, small_idx_files(5, 4).labels);
  error = idx_error_of(read);
  EXPECT_EQ(error.file(), labels);
  EXPECT_NE(std::string(error.what()).find("4 labels but"), std::string::npos) << error.what();

  // A label out of range, a missing file, a header cut short.
  write_gzip_file_for_idx_test(labels, files.labels);
  EXPECT_NE(std::string(idx_error_of([&] { read_idx_images_and_labels(images, labels, 2); }).what())
                .find("is not below 2 classes"),
            std::string::npos);
  error = idx_error_of([&] { read_idx_images_and_labels(dir.path() + "/none.gz", labels, 3); });
  EXPECT_EQ(error.file(), dir.path() + "/none.gz");
  EXPECT_NE(std::string(error.what()).find("cannot open"), std::string::npos) << error.what();
  write_gzip_file_for_idx_test(images, {0, 0, 8});
  error = idx_error_of(read);
  EXPECT_EQ(error.file(), images);
  EXPECT_NE(std::string(error.what()).find("truncated: the header"), std::string::npos)
      << error.what();
}

TEST(IdxReader, AFolderWithoutFashionMnistNamesTheMissingFile) {
  ScopedTempDir dir("replisim-idx-test");
  const InputError error = idx_error_of([&] { load_fashion_mnist(dir.path()); });
  EXPECT_EQ(error.file(), dir.path() + "/train-images-idx3-ubyte.gz");
}

}  // namespace
}  // namespace replisim::core
