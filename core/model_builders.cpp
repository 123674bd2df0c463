#include "core/model_builders.h"

namespace replisim::core {
namespace {

constexpr double kFp32Bytes = 4;

int out_size(int input, int stride) {
  return (input + stride - 1) / stride;
}

}  // namespace

CnnBuilder::CnnBuilder(std::string model_name, int channels, int height, int width)
    : channels_(channels), height_(height), width_(width) {
  model_.name = std::move(model_name);
  model_.input_bytes_per_sample = double(channels) * height * width * kFp32Bytes;
}

void CnnBuilder::conv(const std::string& name, int out_channels, int kernel, int stride,
                      bool batch_norm) {
  conv_from(name, channels_, height_, width_, out_channels, kernel, stride, batch_norm);
}

void CnnBuilder::conv_from(const std::string& name, int in_channels, int height, int width,
                           int out_channels, int kernel, int stride, bool batch_norm) {
  const int out_h = out_size(height, stride);
  const int out_w = out_size(width, stride);
  const double weights = double(kernel) * kernel * in_channels * out_channels;
  const double multiply_adds = weights * out_h * out_w;
  Layer layer;
  layer.name = name;
  layer.params = weights + (batch_norm ? 2.0 * out_channels : double(out_channels));
  layer.forward_flop_per_sample = 2.0 * multiply_adds;
  layer.activation_bytes_per_sample = double(out_channels) * out_h * out_w * kFp32Bytes;
  model_.layers.push_back(layer);
  channels_ = out_channels;
  height_ = out_h;
  width_ = out_w;
}

void CnnBuilder::pool(int /*kernel*/, int stride) {
  height_ = out_size(height_, stride);
  width_ = out_size(width_, stride);
}

void CnnBuilder::global_pool() {
  height_ = 1;
  width_ = 1;
}

void CnnBuilder::dense(const std::string& name, int out_features) {
  const double in_features = double(channels_) * height_ * width_;
  Layer layer;
  layer.name = name;
  layer.params = in_features * out_features + out_features;
  layer.forward_flop_per_sample = 2.0 * in_features * out_features;
  layer.activation_bytes_per_sample = double(out_features) * kFp32Bytes;
  model_.layers.push_back(layer);
  channels_ = out_features;
  height_ = 1;
  width_ = 1;
}

Model CnnBuilder::finish() {
  return model_;
}

Model build_resnet_v1_5(const std::string& name, const std::vector<int>& blocks_per_stage) {
  CnnBuilder b(name, 3, 224, 224);
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

}  // namespace replisim::core
