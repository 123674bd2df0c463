#include "real/node/frame_router.h"

#include <stdexcept>
#include <string>

namespace replisim::real::detail {

void FrameRouter::own(FrameType type, Handler handler) {
  if (!owners_.emplace(type, std::move(handler)).second) {
    throw std::logic_error(std::string("two parts own ") + frame_type_name(type) + " frames");
  }
}

bool FrameRouter::route(uint32_t peer, const FrameHeader& header, const uint8_t* payload) const {
  const auto owner = owners_.find(header.type);
  if (owner == owners_.end()) return false;
  owner->second(peer, header, payload);
  return true;
}

}  // namespace replisim::real::detail
