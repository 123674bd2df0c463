#include "real/node/frame_router.h"

#include <stdexcept>
#include <string>

namespace replisim::real::detail {

void FrameRouter::own(FrameType type, Handler handler, bool chunked) {
  if (!owners_.emplace(type, Owner{std::move(handler), chunked}).second) {
    throw std::logic_error(std::string("two parts own ") + channel::name(type) + " frames");
  }
}

bool FrameRouter::route(uint32_t peer, const FrameHeader& header, const uint8_t* payload) const {
  const auto owner = owners_.find(header.type);
  if (owner == owners_.end()) return false;
  if (!owner->second.chunked && header.chunks != 1) {
    throw FrameError("chunks in a non-tensor frame");
  }
  owner->second.handler(peer, header, payload);
  return true;
}

}  // namespace replisim::real::detail
