// The model preset registry: each preset by name, with its one-line description and the builder
// (model_builders.h) that computes its layers from the architecture.
#include "core/model/model.h"
#include "core/model/model_builders.h"

namespace replisim::core {

// Descriptions give the source of each layout and the counts its builder produces (checked against
// the published figures in tests/core/model/model_test.cpp).
const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> kPresets = {
      {"resnet50",
       "ResNet-50 v1.5, 224x224 (torchvision layout: stride on the 3x3 conv; 25.56 M params, "
       "4.09 G multiply-adds)",
       false,
       [](const PresetOptions& o) {
         return build_resnet_v1_5("resnet50", {3, 4, 6, 3}, o.bytes_per_element);
       }},
      {"resnet101",
       "ResNet-101 v1.5, 224x224 (torchvision layout: stride on the 3x3 conv; 44.55 M params, "
       "7.80 G multiply-adds)",
       false,
       [](const PresetOptions& o) {
         return build_resnet_v1_5("resnet101", {3, 4, 23, 3}, o.bytes_per_element);
       }},
      {"resnet152",
       "ResNet-152 v1.5, 224x224 (torchvision layout: stride on the 3x3 conv; 60.19 M params, "
       "11.5 G multiply-adds)",
       false,
       [](const PresetOptions& o) {
         return build_resnet_v1_5("resnet152", {3, 8, 36, 3}, o.bytes_per_element);
       }},
      {"inception_v3",
       "Inception v3, 299x299, without the auxiliary classifier (torchvision layout, "
       "aux_logits=False; Szegedy et al. 2016; 23.83 M params, 5.71 G multiply-adds)",
       false,
       [](const PresetOptions& o) {
         return build_inception_v3("inception_v3", o.bytes_per_element);
       }},
      {"vgg16",
       "VGG-16 (configuration D, no batch norm), 224x224, 4096-4096-1000 classifier "
       "(Simonyan & Zisserman 2015; torchvision layout; 138.36 M params, 15.47 G multiply-adds)",
       false, [](const PresetOptions& o) { return build_vgg16("vgg16", o.bytes_per_element); }},
      {"alexnet",
       "AlexNet, 224x224 (torchvision single-tower layout, Krizhevsky 2014; 61.10 M params, "
       "0.71 G multiply-adds)",
       false, [](const PresetOptions& o) { return build_alexnet("alexnet", o.bytes_per_element); }},
      {"mlp",
       "Multilayer perceptron of dense layers with bias; \"widths\" gives the input width then "
       "each layer's",
       true,
       [](const PresetOptions& o) { return build_mlp("mlp", o.widths, o.bytes_per_element); }},
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
