#include "core/scenario/scenario_model.h"

#include <set>

#include "core/base/error.h"
#include "core/scenario/scenario.h"

namespace replisim::core {
namespace {

Layer parse_layer(const JsonCursor& c) {
  c.check_keys({"name", "params", "forward_flops_per_sample", "activation_bytes_per_sample"});
  Layer layer;
  layer.name = c.at("name").as_string();
  if (layer.name.empty()) c.at("name").fail("a layer name must not be empty");
  if (has_control_character(layer.name)) {
    c.at("name").fail("a layer name must not contain control characters (NUL included)");
  }
  if (layer.name.size() > limits::kMaxNameBytes) {
    c.at("name").fail("longer than " + std::to_string(limits::kMaxNameBytes) + " bytes");
  }
  layer.params = c.at("params").as_number_in(0, limits::kMaxParams);
  layer.forward_flop_per_sample =
      c.at("forward_flops_per_sample")
          .as_quantity_in(Dimension::kFlop, 0, limits::kMaxFlopPerSample);
  layer.activation_bytes_per_sample =
      c.at("activation_bytes_per_sample")
          .as_quantity_in(Dimension::kBytes, 0, limits::kMaxBytesPerSample);
  return layer;
}

std::vector<std::string> preset_names(bool only_taking_widths) {
  std::vector<std::string> names;
  for (const ModelPreset& p : model_presets()) {
    if (!only_taking_widths || p.takes_widths) names.push_back(p.name);
  }
  return names;
}

// Bytes per value of each element type: weights, gradients and activations.
struct Dtype {
  const char* name;
  double bytes;
};
constexpr Dtype kDtypes[] = {{"fp32", 4}, {"fp16", 2}};

// Bytes per element from the model's optional "dtype" (default fp32).
double parse_dtype_bytes(const JsonCursor& model) {
  if (!model.has("dtype")) return kDtypes[0].bytes;
  const JsonCursor c = model.at("dtype");
  const std::string name = c.as_string();
  std::vector<std::string> valid;
  for (const Dtype& d : kDtypes) {
    if (name == d.name) return d.bytes;
    valid.push_back(d.name);
  }
  c.fail("unknown dtype \"" + name + "\"; valid dtypes: " + join_names(valid));
}

// Widest accepted MLP layer: 1e6 x 1e6 weights stay within limits::kMaxParams.
constexpr int64_t kMaxMlpWidth = 1000000;

std::vector<int> parse_widths(const JsonCursor& c) {
  c.expect_array();
  if (c.size() < 2) c.fail("at least 2 widths are needed: the input width, then one per layer");
  std::vector<int> widths;
  for (size_t i = 0; i < c.size(); ++i) widths.push_back(int(c.at(i).as_int(1, kMaxMlpWidth)));
  return widths;
}

// Rejects "widths" in a model that does not take it.
void reject_widths(const JsonCursor& model) {
  if (!model.has("widths")) return;
  model.at("widths").fail("only these presets take widths: " + join_names(preset_names(true)));
}

Model parse_preset(const JsonCursor& c) {
  if (c.has("layers")) {
    c.at("layers").fail("a model is either a preset or explicit layers, not both");
  }
  c.check_keys({"preset", "dtype", "widths"});
  const std::string name = c.at("preset").as_string();
  const ModelPreset* preset = find_model_preset(name);
  if (preset == nullptr) {
    c.at("preset").fail("unknown preset \"" + name +
                        "\"; valid presets: " + join_names(preset_names(false)));
  }
  PresetOptions options;
  options.bytes_per_element = parse_dtype_bytes(c);
  if (preset->takes_widths) {
    options.widths = parse_widths(c.at("widths"));
  } else {
    reject_widths(c);
  }
  return preset->build(options);
}

}  // namespace

Model parse_model(const JsonCursor& c) {
  c.expect_object();
  if (c.has("preset")) return parse_preset(c);
  c.check_keys({"preset", "layers", "input_bytes_per_sample", "dtype", "widths"});
  reject_widths(c);
  Model model;
  model.name = "custom";
  // Activation and input bytes are given as they are; the element size only sets weight bytes and
  // how many elements the activation bytes hold.
  model.bytes_per_param = parse_dtype_bytes(c);
  model.bytes_per_activation_element = model.bytes_per_param;
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
