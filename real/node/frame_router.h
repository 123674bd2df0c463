// Which part of a task handles each application frame: a part registers the frame types it owns
// (its handler checks that the frame makes sense and acts on it); the node routes a frame to its
// part before anything else (internal to real/node/). After ps-lite's Van handing each message to
// the customer of its app (../shared/architecture-next.md §6); the node's other frames still go
// through Node::on_frame's switch until their parts are carved out too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "real/transport/frame.h"

namespace replisim::real::detail {

class FrameRouter {
 public:
  using Handler = std::function<void(uint32_t peer, const FrameHeader&, const uint8_t* payload)>;
  // `type` goes to `handler` from now on. Throws std::logic_error for a type already owned.
  void own(FrameType type, Handler handler);
  // Hands the frame to its owner: true when a part owns its type (the handler ran), false
  // otherwise. The handler's FrameError goes to the caller (the peer broke the protocol).
  bool route(uint32_t peer, const FrameHeader& header, const uint8_t* payload) const;

 private:
  std::map<FrameType, Handler> owners_;
};

}  // namespace replisim::real::detail
