// The model being trained: an ordered list of layers with parameter counts, forward cost and
// activation sizes, built from a preset or given layer by layer in the scenario.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace replisim::core {

// The matrix product a layer's forward pass is, for one sample: C[m x n] = A[m x k] B[k x n] with
// m = rows_per_sample x the batch. A dense layer: 1 row, n its outputs, k its inputs. A
// convolution as its im2col GEMM (the unrolled convolution of Chellapilla, Puri and Simard 2006,
// "High Performance Convolutional Neural Networks for Document Processing"; cuDNN's implicit GEMM
// computes the same product): a row per output position (out_h x out_w), n the output channels,
// k = kernel_h x kernel_w x input channels. 2 rows_per_sample n k = forward_flop_per_sample for
// the presets (the objective's layers also count their bias and activation FLOP: a real run's
// engine stretches the GEMMs to an op's FLOP, real/compute/gemm_shapes.h). All 0: not known (a
// layer given by its totals).
struct LayerGemm {
  int64_t rows_per_sample = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool known() const { return rows_per_sample > 0 && n > 0 && k > 0; }
};

// One layer (or a fused group such as conv + batch norm + ReLU). Creation order matters: it is
// the order variables are created in, which drives round_robin placement (TF
// replica_device_setter).
struct Layer {
  std::string name;
  double params = 0;                       // trainable parameters (a count)
  double forward_flop_per_sample = 0;      // FLOP; one multiply-add counts as 2 FLOP
  double activation_bytes_per_sample = 0;  // bytes of this layer's output for one sample
  // FLOP of its backward pass; 0: kBackwardToForwardFlopRatio x forward (every preset). Set by a
  // model whose backward is counted exactly (the objective's, ObjectiveModel::cost_model).
  double backward_flop_per_sample = 0;
  LayerGemm gemm;  // set by the presets' builders (model_builders.h)
};

struct Model {
  std::string name;  // preset name, or "custom" for an explicit layer list
  std::vector<Layer> layers;
  double input_bytes_per_sample = 0;  // bytes of one input sample fed to the first layer
  // Bytes per weight / gradient value and per activation value: 4 for fp32 (the default), 2 for
  // fp16 (scenario "dtype"). Activation element counts are activation bytes / this.
  double bytes_per_param = 4;
  double bytes_per_activation_element = 4;

  double total_params() const;
  double parameter_bytes() const { return total_params() * bytes_per_param; }
  double forward_flop_per_sample() const;
};

// Backward pass cost relative to the forward pass: gradients with respect to the activations and
// to the weights each cost about one forward pass (the usual 2x rule; e.g. Kaplan et al. 2020,
// "Scaling Laws for Neural Language Models", section 2.1: backward ~ 2 x forward).
inline constexpr double kBackwardToForwardFlopRatio = 2.0;

// What a preset is built with besides its architecture.
struct PresetOptions {
  double bytes_per_element = 4;  // weights, gradients and activations (4: fp32, 2: fp16)
  std::vector<int> widths;       // layer widths, only for presets that take them (mlp)
};

// A named model preset (a registry entry): builds the layer list from the architecture.
struct ModelPreset {
  std::string name;
  std::string description;    // one line, with the source of the layout
  bool takes_widths = false;  // needs PresetOptions::widths (>= 2 entries, all > 0)
  std::function<Model(const PresetOptions&)> build;
};

// All registered presets, in a stable order.
const std::vector<ModelPreset>& model_presets();

// The preset called `name`, or nullptr when there is none.
const ModelPreset* find_model_preset(const std::string& name);

}  // namespace replisim::core
