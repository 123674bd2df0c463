#include "core/model.h"

#include "core/model_builders.h"

namespace replisim::core {

double Model::total_params() const {
  double total = 0;
  for (const Layer& layer : layers) total += layer.params;
  return total;
}

double Model::forward_flop_per_sample() const {
  double total = 0;
  for (const Layer& layer : layers) total += layer.forward_flop_per_sample;
  return total;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> kPresets = {
      {"resnet50",
       "ResNet-50 v1.5, 224x224 (torchvision layout: stride on the 3x3 conv; 25.56 M params, "
       "4.09 G multiply-adds)",
       [] {
         return build_resnet_v1_5("resnet50", {3, 4, 6, 3});
       }},
  };
  return kPresets;
}

const ModelPreset* find_model_preset(const std::string& name) {
  for (const ModelPreset& preset : model_presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

}  // namespace replisim::core
