// Which part of a task handles each application channel (channels.h) and tensor chunks: a part
// registers the channels it owns (its handler checks that the frame makes sense and acts on it);
// the node routes a frame to its part before anything else (internal to real/node/). After
// ps-lite's Van handing each message to the customer of its app (../shared/architecture-next.md
// §6). Only the transport's stop and error frames stay with Node::on_frame.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "real/node/channels.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

class FrameRouter {
 public:
  using Handler = std::function<void(uint32_t peer, const FrameHeader&, const uint8_t* payload)>;
  // Channel `type` goes to `handler` from now on; `chunked`: its frames may come in several
  // chunks (the part reassembles them), else a frame of more than one chunk is refused. Throws
  // std::logic_error for a channel already owned.
  void own(FrameType type, Handler handler, bool chunked = false);
  // Hands the frame to its owner: true when a part owns its type (the handler ran), false
  // otherwise. The handler's FrameError goes to the caller (the peer broke the protocol), as does
  // the router's own for chunks on a channel that takes none.
  bool route(uint32_t peer, const FrameHeader& header, const uint8_t* payload) const;

 private:
  struct Owner {
    Handler handler;
    bool chunked = false;
  };
  std::map<FrameType, Owner> owners_;
};

}  // namespace replisim::real::detail
