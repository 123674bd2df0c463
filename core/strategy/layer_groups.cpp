#include "core/strategy/layer_groups.h"

#include "core/base/error.h"

namespace replisim::core {

std::vector<LayerGroup> group_layers(const Model& model, int groups,
                                     const std::vector<int>& layer_device) {
  const size_t n = model.layers.size();
  REPLISIM_ASSERT(layer_device.empty() || layer_device.size() == n, "one device per layer");
  const bool per_layer = groups <= 0 || size_t(groups) >= n;
  const double total = model.forward_flop_per_sample();
  std::vector<LayerGroup> out;
  double running = 0;
  int cut = 1;  // index of the next FLOP threshold (cut * total / groups)
  for (size_t l = 0; l < n; ++l) {
    const Layer& layer = model.layers[l];
    const int device = layer_device.empty() ? -1 : layer_device[l];
    const bool device_changes = !out.empty() && out.back().device != device;
    bool start_new = out.empty() || per_layer || device_changes;
    if (!start_new && total > 0 && running >= cut * total / groups) start_new = true;
    if (start_new) {
      while (total > 0 && !per_layer && running >= cut * total / groups) ++cut;
      out.push_back(LayerGroup{});
      out.back().device = device;
    }
    LayerGroup& g = out.back();
    g.layers.push_back(int(l));
    g.forward_flop_per_sample += layer.forward_flop_per_sample;
    g.activation_bytes_per_sample = layer.activation_bytes_per_sample;
    g.stored_activation_bytes_per_sample += layer.activation_bytes_per_sample;
    g.params += layer.params;
    running += layer.forward_flop_per_sample;
  }
  for (LayerGroup& g : out) {
    bool counted = false;
    double backward = 0;
    for (int l : g.layers) {
      const Layer& layer = model.layers[size_t(l)];
      counted |= layer.backward_flop_per_sample > 0;
      backward += layer.backward_flop_per_sample > 0
                      ? layer.backward_flop_per_sample
                      : kBackwardToForwardFlopRatio * layer.forward_flop_per_sample;
    }
    if (counted) g.backward_flop_per_sample = backward;
    g.name = model.layers[size_t(g.layers.front())].name;
    if (g.layers.size() > 1) g.name += ".." + model.layers[size_t(g.layers.back())].name;
  }
  return out;
}

}  // namespace replisim::core
