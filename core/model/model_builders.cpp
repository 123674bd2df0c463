#include "core/model/model_builders.h"

#include <utility>

#include "core/base/error.h"

namespace replisim::core {
namespace {

// Output size along one dimension; see Padding for the formulas.
int out_size(int input, int kernel, int stride, Padding::Kind kind, int pad) {
  REPLISIM_ASSERT(input > 0 && kernel > 0 && stride > 0 && pad >= 0, "bad window");
  if (kind == Padding::Kind::kSame) return (input + stride - 1) / stride;
  const int padded = input + (kind == Padding::Kind::kPixels ? 2 * pad : 0);
  REPLISIM_ASSERT(padded >= kernel, "window larger than its padded input");
  return (padded - kernel) / stride + 1;
}

}  // namespace

CnnBuilder::CnnBuilder(std::string model_name, int channels, int height, int width,
                       double bytes_per_element)
    : bytes_per_element_(bytes_per_element), channels_(channels), height_(height), width_(width) {
  model_.name = std::move(model_name);
  model_.input_bytes_per_sample = double(channels) * height * width * bytes_per_element;
  model_.bytes_per_param = bytes_per_element;
  model_.bytes_per_activation_element = bytes_per_element;
}

void CnnBuilder::conv(const std::string& name, int out_channels, int kernel_h, int kernel_w,
                      int stride, Padding padding, bool batch_norm) {
  const int out_h = out_size(height_, kernel_h, stride, padding.kind, padding.pad_h);
  const int out_w = out_size(width_, kernel_w, stride, padding.kind, padding.pad_w);
  const double weights = double(kernel_h) * kernel_w * channels_ * out_channels;
  const double multiply_adds = weights * out_h * out_w;
  Layer layer;
  layer.name = name;
  layer.params = weights + (batch_norm ? 2.0 * out_channels : double(out_channels));
  layer.forward_flop_per_sample = 2.0 * multiply_adds;
  layer.activation_bytes_per_sample = double(out_channels) * out_h * out_w * bytes_per_element_;
  layer.gemm = {int64_t(out_h) * out_w, out_channels, int64_t(kernel_h) * kernel_w * channels_};
  model_.layers.push_back(layer);
  channels_ = out_channels;
  height_ = out_h;
  width_ = out_w;
}

void CnnBuilder::conv(const std::string& name, int out_channels, int kernel, int stride,
                      bool batch_norm) {
  conv(name, out_channels, kernel, kernel, stride, Padding::same(), batch_norm);
}

void CnnBuilder::conv_from(const std::string& name, int in_channels, int height, int width,
                           int out_channels, int kernel, int stride, bool batch_norm) {
  channels_ = in_channels;
  height_ = height;
  width_ = width;
  conv(name, out_channels, kernel, stride, batch_norm);
}

void CnnBuilder::pool(int kernel, int stride, Padding padding) {
  height_ = out_size(height_, kernel, stride, padding.kind, padding.pad_h);
  width_ = out_size(width_, kernel, stride, padding.kind, padding.pad_w);
}

void CnnBuilder::adaptive_pool(int height, int width) {
  height_ = height;
  width_ = width;
}

void CnnBuilder::dense(const std::string& name, int out_features) {
  const double in_features = double(channels_) * height_ * width_;
  Layer layer;
  layer.name = name;
  layer.params = in_features * out_features + out_features;
  layer.forward_flop_per_sample = 2.0 * in_features * out_features;
  layer.activation_bytes_per_sample = double(out_features) * bytes_per_element_;
  layer.gemm = {1, out_features, int64_t(channels_) * height_ * width_};
  model_.layers.push_back(layer);
  channels_ = out_features;
  height_ = 1;
  width_ = 1;
}

void CnnBuilder::concat(const std::vector<std::function<void()>>& branches) {
  const int in_channels = channels_, in_h = height_, in_w = width_;
  int out_channels = 0, out_h = 0, out_w = 0;
  for (size_t i = 0; i < branches.size(); ++i) {
    channels_ = in_channels;
    height_ = in_h;
    width_ = in_w;
    branches[i]();
    if (i == 0) {
      out_h = height_;
      out_w = width_;
    }
    REPLISIM_ASSERT(height_ == out_h && width_ == out_w,
                    "concatenated branches differ in height or width");
    out_channels += channels_;
  }
  channels_ = out_channels;
  height_ = out_h;
  width_ = out_w;
}

Model CnnBuilder::finish() {
  return model_;
}

Model build_resnet_v1_5(const std::string& name, const std::vector<int>& blocks_per_stage,
                        double bytes_per_element) {
  CnnBuilder b(name, 3, 224, 224, bytes_per_element);
  b.conv("conv1", 64, 7, 2, true);
  b.pool(3, 2);  // 3x3 max pool, stride 2: 112 -> 56
  const int mid_widths[] = {64, 128, 256, 512};
  constexpr int kExpansion = 4;
  for (size_t stage = 0; stage < blocks_per_stage.size() && stage < 4; ++stage) {
    const int mid = mid_widths[stage];
    for (int block = 0; block < blocks_per_stage[stage]; ++block) {
      const std::string prefix =
          "conv" + std::to_string(stage + 2) + "_" + std::to_string(block + 1) + "/";
      const int stride = (block == 0 && stage > 0) ? 2 : 1;
      const int in_channels = b.channels(), in_h = b.height(), in_w = b.width();
      b.conv(prefix + "1x1a", mid, 1, 1, true);
      b.conv(prefix + "3x3", mid, 3, stride, true);
      b.conv(prefix + "1x1b", mid * kExpansion, 1, 1, true);
      if (block == 0) {
        // Projection shortcut: reads the block input, produces the block output shape.
        b.conv_from(prefix + "shortcut", in_channels, in_h, in_w, mid * kExpansion, 1, stride,
                    true);
      }
    }
  }
  b.global_pool();
  b.dense("fc", 1000);
  return b.finish();
}

Model build_vgg16(const std::string& name, double bytes_per_element) {
  CnnBuilder b(name, 3, 224, 224, bytes_per_element);
  // Configuration D: convolutions per block and their widths; each block ends in a 2x2 max pool.
  const int convs_per_block[] = {2, 2, 3, 3, 3};
  const int block_widths[] = {64, 128, 256, 512, 512};
  for (int block = 0; block < 5; ++block) {
    for (int i = 0; i < convs_per_block[block]; ++i) {
      const std::string conv_name =
          "conv" + std::to_string(block + 1) + "_" + std::to_string(i + 1);
      b.conv(conv_name, block_widths[block], 3, 1, false);  // 3x3, padding 1, bias
    }
    b.pool(2, 2, Padding::valid());
  }
  b.adaptive_pool(7, 7);  // torchvision's AdaptiveAvgPool2d((7, 7)): 7x7 already at 224x224
  b.dense("fc6", 4096);
  b.dense("fc7", 4096);
  b.dense("fc8", 1000);
  return b.finish();
}

Model build_alexnet(const std::string& name, double bytes_per_element) {
  CnnBuilder b(name, 3, 224, 224, bytes_per_element);
  b.conv("conv1", 64, 11, 11, 4, Padding::pixels(2, 2), false);  // 224 -> 55
  b.pool(3, 2, Padding::valid());                                // 55 -> 27
  b.conv("conv2", 192, 5, 1, false);
  b.pool(3, 2, Padding::valid());  // 27 -> 13
  b.conv("conv3", 384, 3, 1, false);
  b.conv("conv4", 256, 3, 1, false);
  b.conv("conv5", 256, 3, 1, false);
  b.pool(3, 2, Padding::valid());  // 13 -> 6
  b.adaptive_pool(6, 6);           // torchvision's AdaptiveAvgPool2d((6, 6))
  b.dense("fc6", 4096);
  b.dense("fc7", 4096);
  b.dense("fc8", 1000);
  return b.finish();
}

Model build_mlp(const std::string& name, const std::vector<int>& widths, double bytes_per_element) {
  REPLISIM_ASSERT(widths.size() >= 2, "an MLP needs an input width and at least one layer");
  REPLISIM_ASSERT(widths[0] > 0, "MLP widths must be positive");
  CnnBuilder b(name, widths[0], 1, 1, bytes_per_element);
  for (size_t i = 1; i < widths.size(); ++i) {
    REPLISIM_ASSERT(widths[i] > 0, "MLP widths must be positive");
    b.dense("fc" + std::to_string(i), widths[i]);
  }
  return b.finish();
}

}  // namespace replisim::core
