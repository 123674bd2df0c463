// Layer-by-layer builders for model presets: parameters, multiply-adds and activation sizes are
// computed from the architecture (kernel sizes, channels, strides), never typed-in totals.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace replisim::core {

// Accumulates layers of a convolutional network while tracking the activation shape
// (channels x height x width) of fp32 tensors. Each conv layer folds its batch norm
// (2 trainable parameters per output channel: gamma, beta) and ReLU; their element-wise
// cost is left out, as in the usual multiply-add counts.
class CnnBuilder {
 public:
  CnnBuilder(std::string model_name, int channels, int height, int width);

  // A k x k convolution with `out_channels`, `stride` and "same"-style padding
  // (output = ceil(input / stride)). `batch_norm` adds gamma and beta; otherwise a bias.
  // Returns the output shape (channels, height, width) through the builder's state.
  void conv(const std::string& name, int out_channels, int kernel, int stride, bool batch_norm);
  // Same as conv() but reads `in_channels` x `height` x `width` instead of the current shape
  // (for a residual shortcut branch) and leaves the current shape at the branch's output.
  void conv_from(const std::string& name, int in_channels, int height, int width, int out_channels,
                 int kernel, int stride, bool batch_norm);
  // Spatial pooling without parameters (max or average): only the shape changes.
  void pool(int kernel, int stride);
  void global_pool();
  // A dense layer with bias.
  void dense(const std::string& name, int out_features);

  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  Model finish();

 private:
  Model model_;
  int channels_;
  int height_;
  int width_;
};

// ResNet v1.5 (bottleneck blocks, stride on the 3x3 conv as in torchvision): stage depths
// {3,4,6,3} give ResNet-50. Layout: He et al. 2016, "Deep Residual Learning for Image
// Recognition", Table 1; the v1.5 stride placement follows torchvision.models.resnet.
Model build_resnet_v1_5(const std::string& name, const std::vector<int>& blocks_per_stage);

}  // namespace replisim::core
