// Layer-by-layer builders for model presets: parameters, multiply-adds and activation sizes are
// computed from the architecture (kernel sizes, channels, strides), never typed-in totals.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace replisim::core {

// Padding of a convolution or pooling window, per spatial dimension (input n, kernel k, stride s):
//   same:   output = ceil(n / s)                     (TF "SAME"; PyTorch padding = k/2 for odd k)
//   valid:  output = floor((n - k) / s) + 1          (TF "VALID"; PyTorch padding = 0)
//   pixels: output = floor((n + 2 p - k) / s) + 1    (PyTorch padding = p on each side)
struct Padding {
  enum class Kind { kSame, kValid, kPixels };
  Kind kind = Kind::kSame;
  int pad_h = 0;
  int pad_w = 0;

  static Padding same() { return {Kind::kSame, 0, 0}; }
  static Padding valid() { return {Kind::kValid, 0, 0}; }
  static Padding pixels(int pad_h, int pad_w) { return {Kind::kPixels, pad_h, pad_w}; }
};

// Accumulates layers of a convolutional network (kept in creation order) while tracking the
// activation shape (channels x height x width). Each conv layer with batch norm folds it in
// (2 trainable parameters per output channel: gamma, beta; no conv bias) with its ReLU; their
// element-wise cost is left out, as in the usual multiply-add counts. Pooling and concatenation
// change the shape but add no layer. Tensors have `bytes_per_element` bytes per value.
class CnnBuilder {
 public:
  CnnBuilder(std::string model_name, int channels, int height, int width, double bytes_per_element);

  // A kernel_h x kernel_w convolution to `out_channels` reading the current shape.
  // `batch_norm` adds gamma and beta; otherwise a bias per output channel.
  void conv(const std::string& name, int out_channels, int kernel_h, int kernel_w, int stride,
            Padding padding, bool batch_norm);
  // A square k x k convolution with "same" padding.
  void conv(const std::string& name, int out_channels, int kernel, int stride, bool batch_norm);
  // Same as the square conv() but reads `in_channels` x `height` x `width` instead of the current
  // shape (for a residual shortcut branch) and leaves the current shape at the branch's output.
  void conv_from(const std::string& name, int in_channels, int height, int width, int out_channels,
                 int kernel, int stride, bool batch_norm);
  // Spatial pooling without parameters (max or average): only the shape changes.
  void pool(int kernel, int stride, Padding padding = Padding::same());
  // Adaptive pooling to a fixed height x width (PyTorch AdaptiveAvgPool2d); global pooling is
  // 1 x 1.
  void adaptive_pool(int height, int width);
  void global_pool() { adaptive_pool(1, 1); }
  // A dense layer with bias, reading the current shape flattened.
  void dense(const std::string& name, int out_features);

  // Branches that each start from the current shape (Inception modules): each function adds its
  // branch's layers; their outputs are concatenated along channels, so they must agree in height
  // and width (asserted). Branch layers are added in the order the functions are given.
  void concat(const std::vector<std::function<void()>>& branches);

  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  Model finish();

 private:
  Model model_;
  double bytes_per_element_;
  int channels_;
  int height_;
  int width_;
};

// ResNet v1.5 (bottleneck blocks, stride on the 3x3 conv as in torchvision): stage depths
// {3,4,6,3} give ResNet-50, {3,4,23,3} ResNet-101, {3,8,36,3} ResNet-152. Layout: He et al. 2016,
// "Deep Residual Learning for Image Recognition", Table 1; the v1.5 stride placement follows
// torchvision.models.resnet. 224x224x3 input.
Model build_resnet_v1_5(const std::string& name, const std::vector<int>& blocks_per_stage,
                        double bytes_per_element);

// Inception v3 at 299x299x3 without the auxiliary classifier (torchvision
// models.inception_v3(aux_logits=False) layout; Szegedy et al. 2016, "Rethinking the Inception
// Architecture for Computer Vision", Table 1 and Figures 5-7).
Model build_inception_v3(const std::string& name, double bytes_per_element);

// VGG-16 (configuration D, no batch norm, 4096-4096-1000 classifier) at 224x224x3: Simonyan and
// Zisserman 2015, "Very Deep Convolutional Networks for Large-Scale Image Recognition", Table 1;
// torchvision.models.vgg16 layout.
Model build_vgg16(const std::string& name, double bytes_per_element);

// AlexNet, torchvision single-tower layout (64-192-384-256-256 convolutions; Krizhevsky 2014,
// "One weird trick for parallelizing convolutional neural networks") at 224x224x3.
Model build_alexnet(const std::string& name, double bytes_per_element);

// A multilayer perceptron: dense layers with bias, widths[0] inputs, then one layer per further
// width (widths.size() >= 2, all > 0; asserted). Layers are named fc1, fc2, ...
Model build_mlp(const std::string& name, const std::vector<int>& widths, double bytes_per_element);

}  // namespace replisim::core
