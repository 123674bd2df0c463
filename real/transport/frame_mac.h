// The MAC every frame carries once its connection's handshake is done (protocol version 4): an
// HMAC-SHA256 (OpenSSL's EVP_MAC) under the direction's key from the handshake (FrameKeys), over
// the frame's sequence number on that direction (from 0), its 52 header bytes and its payload. It
// travels as the 32 bytes after the payload (not counted in the header's length). An altered,
// injected, dropped, reordered or replayed frame fails the check: the sequence number is implicit,
// so a frame out of its place is checked against another number.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "real/transport/frame.h"
#include "real/transport/handshake.h"

// OpenSSL's MAC context (openssl/types.h).
struct evp_mac_ctx_st;

namespace replisim::real {

inline constexpr size_t kFrameMacBytes = 32;
using FrameMacBytes = std::array<uint8_t, kFrameMacBytes>;

// One direction of a connection: the MAC of each frame in turn. Not thread-safe.
class FrameMac {
 public:
  // Throws std::runtime_error when OpenSSL cannot make an HMAC-SHA256 context.
  explicit FrameMac(const FrameKey& key);
  ~FrameMac();
  FrameMac(const FrameMac&) = delete;
  FrameMac& operator=(const FrameMac&) = delete;

  // The MAC of the next frame in sequence (the sequence number then advances).
  FrameMacBytes next(const uint8_t* header, const uint8_t* payload, size_t size);
  uint64_t frames() const { return sequence_; }

 private:
  evp_mac_ctx_st* context_ = nullptr;
  uint64_t sequence_ = 0;
};

// Whether two MACs are equal, in constant time.
bool same_mac(const FrameMacBytes& a, const uint8_t* b);

}  // namespace replisim::real
