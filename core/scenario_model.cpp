#include "core/scenario_model.h"

#include <set>

#include "core/error.h"
#include "core/scenario.h"

namespace replisim::core {
namespace {

Layer parse_layer(const JsonCursor& c) {
  c.check_keys({"name", "params", "forward_flops_per_sample", "activation_bytes_per_sample"});
  Layer layer;
  layer.name = c.at("name").as_string();
  if (layer.name.empty()) c.at("name").fail("a layer name must not be empty");
  layer.params = c.at("params").as_number_in(0, limits::kMaxParams);
  layer.forward_flop_per_sample =
      c.at("forward_flops_per_sample")
          .as_quantity_in(Dimension::kFlop, 0, limits::kMaxFlopPerSample);
  layer.activation_bytes_per_sample =
      c.at("activation_bytes_per_sample")
          .as_quantity_in(Dimension::kBytes, 0, limits::kMaxBytesPerSample);
  return layer;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const ModelPreset& p : model_presets()) names.push_back(p.name);
  return names;
}

}  // namespace

Model parse_model(const JsonCursor& c) {
  c.expect_object();
  if (c.has("preset")) {
    c.check_keys({"preset"});
    const std::string name = c.at("preset").as_string();
    const ModelPreset* preset = find_model_preset(name);
    if (preset == nullptr) {
      c.at("preset").fail("unknown preset \"" + name +
                          "\"; valid presets: " + join_names(preset_names()));
    }
    return preset->build();
  }
  c.check_keys({"preset", "layers", "input_bytes_per_sample"});
  Model model;
  model.name = "custom";
  const JsonCursor layers = c.at("layers");
  if (layers.size() == 0) layers.fail("at least one layer is needed");
  std::set<std::string> names;
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer layer = parse_layer(layers.at(i));
    if (!names.insert(layer.name).second) {
      layers.at(i).at("name").fail("duplicate layer name \"" + layer.name + "\"");
    }
    model.layers.push_back(std::move(layer));
  }
  if (c.has("input_bytes_per_sample")) {
    model.input_bytes_per_sample =
        c.at("input_bytes_per_sample")
            .as_quantity_in(Dimension::kBytes, 0, limits::kMaxBytesPerSample);
  }
  return model;
}

}  // namespace replisim::core
