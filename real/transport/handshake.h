// Who is on the other end of a connection: the handshake every connection starts with (protocol
// version 4). The dialer says which task it is, whether its frames carry MACs, and sends a random
// challenge; the listener answers
// with its own challenge only; the dialer proves first: its plan hash and an HMAC-SHA256, keyed by
// the cluster token, over both tasks, that plan hash and both challenges; the listener checks it
// and only then proves itself the other way round, with its plan hash, and accepts. So each side
// proves it holds the token without sending it; a peer without the token obtains no proof (the
// listener answers a challenge only for a dialer that proved itself) and no plan hash; a recorded
// proof cannot be replayed (the other side's challenge is new each time); a listener refuses a
// challenge it has accepted before. Comparisons are in constant time (CRYPTO_memcmp).
// Both sides then derive a key per direction from the token and both challenges (frame_keys()):
// every frame after the handshake carries an HMAC-SHA256 under it, over a sequence number
// (frame_mac.h). Pure state machines: the connection layer moves their frames.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>

#include "real/transport/frame.h"

namespace replisim::real {

using Nonce = std::array<uint8_t, 32>;
using Proof = std::array<uint8_t, 32>;
using FrameKey = std::array<uint8_t, 32>;

// The keys of a connection's frames once its handshake is done, one per direction.
struct FrameKeys {
  FrameKey send{};
  FrameKey receive{};
};

// 32 bytes from OpenSSL's RAND_bytes. Throws std::runtime_error when it fails.
Nonce random_nonce();
// HMAC-SHA256 of `data` keyed by `key` (OpenSSL libcrypto).
Proof hmac_sha256(const std::string& key, const std::string& data);

// The handshake failed: why, in one line (the caller names the peer).
class HandshakeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An outgoing frame.
struct Frame {
  FrameHeader header;
  std::string payload;
};

struct HandshakeConfig {
  std::string token;      // the cluster token (the HMAC key); never sent
  std::string plan_hash;  // 16 hex digits (core::plan_hash)
  uint32_t self = 0;      // this task's index
  // Whether this task's frames after the handshake carry MACs (off: --insecure-frames). The
  // dialer says it in its hello; a listener of the other mode refuses it, naming the flag.
  bool frame_macs = true;
};

// The side that connects.
class HandshakeDialer {
 public:
  HandshakeDialer(const HandshakeConfig& config, uint32_t peer, const Nonce& challenge);
  Frame hello() const;
  // The listener's challenge: returns the dialer's plan hash and proof. Throws HandshakeError.
  Frame on_hello_reply(const FrameHeader& header, const std::string& payload);
  // The listener accepted, proving itself: checks its proof and plan. Throws HandshakeError for a
  // wrong proof or plan, any other frame, or out of turn.
  void on_auth_ok(const FrameHeader& header, const std::string& payload);
  bool done() const { return state_ == State::kDone; }
  // Once done: this side's keys (send: dialer to listener).
  FrameKeys frame_keys() const;

 private:
  enum class State { kSentHello, kSentAuth, kDone };
  const HandshakeConfig& config_;
  uint32_t peer_;
  Nonce challenge_;
  Nonce listener_challenge_{};
  State state_ = State::kSentHello;
};

// The side that accepts. `accepts` says whether a task may connect to this one; `seen` keeps the
// challenges of the dialers this process accepted (shared by its listeners) so that none is
// accepted twice; a challenge enters it only with an accepted proof, so that unauthenticated
// hellos cannot grow it.
class HandshakeListener {
 public:
  HandshakeListener(const HandshakeConfig& config, std::function<bool(uint32_t)> accepts,
                    std::set<Nonce>& seen, const Nonce& challenge);
  // The dialer's hello: returns this side's challenge (no proof yet). Throws HandshakeError.
  Frame on_hello(const FrameHeader& header, const std::string& payload);
  // The dialer's plan hash and proof: checks the proof, then the plan (a dialer that proved it
  // holds the token is told this side's plan hash when they differ), and returns the acceptance
  // with this side's proof. Throws HandshakeError.
  Frame on_auth(const FrameHeader& header, const std::string& payload);
  bool done() const { return state_ == State::kDone; }
  // Once done: this side's keys (send: listener to dialer).
  FrameKeys frame_keys() const;
  // Its hello was accepted (peer() names it).
  bool heard_hello() const { return state_ != State::kWaitHello; }
  // The dialer's task (once its hello is read).
  uint32_t peer() const { return peer_; }

 private:
  enum class State { kWaitHello, kWaitAuth, kDone };
  const HandshakeConfig& config_;
  std::function<bool(uint32_t)> accepts_;
  std::set<Nonce>& seen_;
  Nonce challenge_;
  Nonce dialer_challenge_{};
  uint32_t peer_ = 0;
  State state_ = State::kWaitHello;
};

}  // namespace replisim::real
