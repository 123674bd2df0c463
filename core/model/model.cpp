#include "core/model/model.h"

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

}  // namespace replisim::core
