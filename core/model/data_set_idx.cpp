// IDX files (LeCun's MNIST format, as Fashion-MNIST ships them) through zlib, and Fashion-MNIST's
// four files (data_set.h).
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/base/error.h"
#include "core/model/data_set.h"

namespace replisim::core {
namespace {

// IDX magic numbers: two zero bytes, the element type (0x08: unsigned byte), the number of
// dimensions (yann.lecun.com/exdb/mnist, "THE IDX FILE FORMAT").
constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;
// Bytes read per gzread call: large enough to be fast, small enough that a header claiming a
// huge count costs nothing before the truncation is found.
constexpr size_t kReadChunkBytes = size_t(1) << 20;

struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

// A gzip (or plain) file read front to back; every failure an InputError naming the file.
class IdxReader {
 public:
  explicit IdxReader(const std::string& file) : file_(file) {
    errno = 0;
    handle_.reset(gzopen(file.c_str(), "rb"));
    if (!handle_) {
      throw InputError(
          file, "",
          std::string("cannot open: ") + (errno != 0 ? std::strerror(errno) : "out of memory"));
    }
  }

  // Up to `size` bytes into `out`; returns how many were read (fewer only at the end).
  size_t read_some(unsigned char* out, size_t size) {
    size_t done = 0;
    while (done < size) {
      const unsigned want = unsigned(std::min(size - done, kReadChunkBytes));
      const int got = gzread(handle_.get(), out + done, want);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(handle_.get(), &code);
        throw InputError(
            file_, "",
            std::string("cannot read: ") + (code == Z_ERRNO ? std::strerror(errno) : message));
      }
      if (got == 0) break;
      done += size_t(got);
    }
    return done;
  }

  // `what` ("the header", "the images") names the part in the truncation error.
  void read_exactly(unsigned char* out, size_t size, const std::string& what) {
    const size_t got = read_some(out, size);
    if (got < size) {
      throw InputError(file_, "",
                       "truncated: " + what + " need " + std::to_string(size) +
                           " bytes, the file has " + std::to_string(got));
    }
  }

  uint32_t read_big_endian_u32(const std::string& what) {
    unsigned char bytes[4];
    read_exactly(bytes, 4, what);
    return uint32_t(bytes[0]) << 24 | uint32_t(bytes[1]) << 16 | uint32_t(bytes[2]) << 8 |
           uint32_t(bytes[3]);
  }

  void expect_magic(uint32_t expected, const char* kind) {
    const uint32_t magic = read_big_endian_u32("the header");
    if (magic != expected) {
      char text[96];
      std::snprintf(text, sizeof text, "not an IDX %s file: magic number 0x%08x, expected 0x%08x",
                    kind, unsigned(magic), unsigned(expected));
      throw InputError(file_, "", text);
    }
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  GzHandle handle_;
};

// `count` x `bytes_each` bytes, read in chunks (a header's claim allocates nothing up front).
std::vector<unsigned char> read_body(IdxReader& reader, size_t count, size_t bytes_each,
                                     const std::string& what) {
  const size_t total = count * bytes_each;
  std::vector<unsigned char> body;
  while (body.size() < total) {
    const size_t want = std::min(total - body.size(), kReadChunkBytes);
    const size_t before = body.size();
    body.resize(before + want);
    const size_t got = reader.read_some(body.data() + before, want);
    if (got < want) {
      throw InputError(reader.file(), "",
                       "truncated: " + what + " need " + std::to_string(total) +
                           " bytes after the header, the file has " + std::to_string(before + got));
    }
  }
  return body;
}

}  // namespace

DataSet read_idx_images_and_labels(const std::string& images_file, const std::string& labels_file,
                                   int classes, size_t max_samples) {
  IdxReader images(images_file);
  images.expect_magic(kIdxImagesMagic, "image (idx3, unsigned byte)");
  const uint32_t image_count = images.read_big_endian_u32("the header");
  const uint32_t image_rows = images.read_big_endian_u32("the header");
  const uint32_t image_columns = images.read_big_endian_u32("the header");
  if (image_rows == 0 || image_columns == 0 || double(image_rows) * image_columns > 1 << 24) {
    throw InputError(images_file, "",
                     "implausible image size " + std::to_string(image_rows) + " x " +
                         std::to_string(image_columns));
  }
  IdxReader labels(labels_file);
  labels.expect_magic(kIdxLabelsMagic, "label (idx1, unsigned byte)");
  const uint32_t label_count = labels.read_big_endian_u32("the header");
  if (label_count != image_count) {
    throw InputError(labels_file, "",
                     "holds " + std::to_string(label_count) + " labels but " + images_file +
                         " holds " + std::to_string(image_count) + " images");
  }
  const size_t features = size_t(image_rows) * image_columns;
  const size_t count = max_samples == 0 ? image_count : std::min<size_t>(max_samples, image_count);
  if (double(count) * double(features) > kMaxDataSetFloats) {
    throw InputError(images_file, "",
                     std::to_string(count) + " images of " + std::to_string(features) +
                         " pixels are more than " + std::to_string(int64_t(kMaxDataSetFloats)) +
                         " floats");
  }
  const std::vector<unsigned char> pixels =
      read_body(images, count, features, std::to_string(count) + " images");
  const std::vector<unsigned char> label_bytes =
      read_body(labels, count, 1, std::to_string(count) + " labels");

  DataSet data;
  data.features = int(features);
  data.classes = classes;
  data.x.resize(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) data.x[i] = float(pixels[i]) / 255.0f;
  data.labels.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (label_bytes[i] >= classes) {
      throw InputError(labels_file, "",
                       "label " + std::to_string(label_bytes[i]) + " of sample " +
                           std::to_string(i) + " is not below " + std::to_string(classes) +
                           " classes");
    }
    data.labels[i] = label_bytes[i];
  }
  return data;
}

std::vector<std::string> fashion_mnist_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const char* prefix : {"train", "t10k"}) {
    files.push_back(dir + "/" + prefix + "-images-idx3-ubyte.gz");
    files.push_back(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  }
  return files;
}

TrainTestSets load_fashion_mnist(const std::string& dir, size_t subset) {
  const std::vector<std::string> files = fashion_mnist_files(dir);
  const auto load = [&](const std::string& prefix, int expected_samples) {
    const size_t at = prefix == "train" ? 0 : 2;
    const std::string& images = files[at];
    DataSet data = read_idx_images_and_labels(images, files[at + 1], kFashionMnistClasses, subset);
    if (data.features != kFashionMnistFeatures) {
      throw InputError(images, "",
                       "images of " + std::to_string(data.features) +
                           " pixels, expected Fashion-MNIST's 28 x 28");
    }
    const size_t expected =
        subset == 0 ? size_t(expected_samples) : std::min(subset, size_t(expected_samples));
    if (data.samples() != expected) {
      throw InputError(images, "",
                       "holds " + std::to_string(data.samples()) + " images, expected " +
                           std::to_string(expected) + " (Fashion-MNIST's " + prefix + " set)");
    }
    return data;
  };
  TrainTestSets sets;
  sets.train = load("train", kFashionMnistTrainSamples);
  sets.test = load("t10k", kFashionMnistTestSamples);
  return sets;
}

}  // namespace replisim::core
