// Layer groups: the unit of ops in a step graph. By default one group per layer; the
// `training.granularity` knob cuts the model into fewer groups of about equal FLOP so that large
// simulations stay cheap, and model-parallel placement never lets a group span two devices.
#pragma once

#include <string>
#include <vector>

#include "core/model/model.h"

namespace replisim::core {

struct LayerGroup {
  std::string name;         // the layer's name, or "first..last" for several layers
  std::vector<int> layers;  // contiguous indices into Model::layers
  double forward_flop_per_sample = 0;
  // Its layers' backward FLOP when one of them counts it (Layer::backward_flop_per_sample; the
  // others kBackwardToForwardFlopRatio x forward); 0: the ratio x forward_flop_per_sample.
  double backward_flop_per_sample = 0;
  double activation_bytes_per_sample = 0;         // output of the group's last layer
  double stored_activation_bytes_per_sample = 0;  // outputs of all its layers (kept for backward)
  double params = 0;
  int device = -1;  // model-parallel device (platform index); -1 = the replica's own device
};

// Cuts `model` into groups. `groups` == 0, or at least the number of layers: one group per
// layer. Otherwise at most `groups` contiguous groups, cut where the running forward FLOP passes
// each multiple of total / groups. `layer_device` (empty, or one entry per layer) forces a cut
// wherever the device changes and sets each group's device.
std::vector<LayerGroup> group_layers(const Model& model, int groups,
                                     const std::vector<int>& layer_device = {});

}  // namespace replisim::core
