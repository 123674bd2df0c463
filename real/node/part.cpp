#include "real/node/part.h"

#include <string>

namespace replisim::real::detail {

const Part& part_of_frame(const std::vector<Part>& parts, uint32_t peer, const FrameHeader& h,
                          bool from_owner) {
  const uint64_t g =
      h.type == FrameType::kTensor || h.type == channel::kControl ? h.tensor >> 32 : h.tensor;
  if (g >= parts.size()) {
    throw FrameError("a frame for graph " + std::to_string(g) + " of " +
                     std::to_string(parts.size()));
  }
  const Part& p = parts[size_t(g)];
  if (from_owner && peer != p.owner_task) {
    throw FrameError(channel::name(h.type) + " for graph " + std::to_string(g) +
                     " from a task that is not its client");
  }
  return p;
}

Part& part_of_frame(std::vector<Part>& parts, uint32_t peer, const FrameHeader& h,
                    bool from_owner) {
  return const_cast<Part&>(
      part_of_frame(static_cast<const std::vector<Part>&>(parts), peer, h, from_owner));
}

}  // namespace replisim::real::detail
