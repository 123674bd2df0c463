#include "real/transport/handshake.h"

#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace replisim::real {
namespace {

constexpr size_t kHashChars = 16;
constexpr size_t kHelloBytes = sizeof(Nonce) + 1;  // the challenge, then 1: frames carry MACs
constexpr size_t kReplyBytes = sizeof(Nonce);
constexpr size_t kProofBytes = kHashChars + sizeof(Proof);  // auth and auth-ok: plan hash, proof

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[size_t(i)] = char(uint8_t(v >> (8 * i)));
  return out;
}
std::string bytes(const Nonce& n) {
  return std::string(reinterpret_cast<const char*>(n.data()), n.size());
}
Nonce nonce_at(const std::string& payload, size_t offset) {
  Nonce n{};
  std::memcpy(n.data(), payload.data() + offset, n.size());
  return n;
}

// What each side signs: who it is, who the other is, its plan, the other's challenge, its own.
Proof proof(const std::string& token, const char* side, uint32_t self, uint32_t other,
            const std::string& plan_hash, const Nonce& theirs, const Nonce& ours) {
  return hmac_sha256(token, std::string(side) + le32(self) + le32(other) + plan_hash +
                                bytes(theirs) + bytes(ours));
}

// The key of frames from `from` to `to` of the connection whose handshake had these challenges.
FrameKey frame_key(const std::string& token, uint32_t from, uint32_t to, const Nonce& dialer,
                   const Nonce& listener) {
  return hmac_sha256(token, std::string("replisim-frames") + le32(from) + le32(to) + bytes(dialer) +
                                bytes(listener));
}

// The plan hash and proof of an auth or auth-ok frame.
std::string plan_of(const std::string& payload) {
  return payload.substr(0, kHashChars);
}
const uint8_t* proof_of(const std::string& payload) {
  return reinterpret_cast<const uint8_t*>(payload.data()) + kHashChars;
}

Frame proving_frame(FrameType type, uint32_t self, uint32_t peer, const std::string& plan_hash,
                    const Proof& mine) {
  Frame f;
  f.header.type = type;
  f.header.source = self;
  f.header.destination = peer;
  f.payload = plan_hash + std::string(reinterpret_cast<const char*>(mine.data()), mine.size());
  f.header.length = uint32_t(f.payload.size());
  return f;
}

bool same(const Proof& a, const uint8_t* b) {
  return CRYPTO_memcmp(a.data(), b, a.size()) == 0;
}

void expect(const FrameHeader& h, FrameType type, size_t size, size_t length) {
  if (h.type != type) {
    throw HandshakeError(std::string("expected frame type \"") + frame_type_name(type) +
                         "\", got " + frame_type_name(h.type));
  }
  if (h.length != length || size != length) {
    throw HandshakeError(std::string(frame_type_name(type)) + " frame of " + std::to_string(size) +
                         " bytes where " + std::to_string(length) + " were due");
  }
}

void check_plan(const HandshakeConfig& config, const std::string& theirs) {
  if (theirs != config.plan_hash) {
    throw HandshakeError("runs another plan (plan hash " + theirs + ", this task's " +
                         config.plan_hash + "): both must run the same plan file");
  }
}

}  // namespace

Nonce random_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), int(n.size())) != 1) {
    throw std::runtime_error("OpenSSL RAND_bytes failed: no random challenge");
  }
  return n;
}

Proof hmac_sha256(const std::string& key, const std::string& data) {
  Proof out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &size);
  return out;
}

HandshakeDialer::HandshakeDialer(const HandshakeConfig& config, uint32_t peer,
                                 const Nonce& challenge)
    : config_(config), peer_(peer), challenge_(challenge) {}

Frame HandshakeDialer::hello() const {
  Frame f;
  f.header.type = FrameType::kHello;
  f.header.source = config_.self;
  f.header.destination = peer_;
  f.payload = bytes(challenge_) + char(config_.frame_macs ? 1 : 0);
  f.header.length = uint32_t(f.payload.size());
  return f;
}

Frame HandshakeDialer::on_hello_reply(const FrameHeader& h, const std::string& payload) {
  if (state_ != State::kSentHello) throw HandshakeError("a second hello reply");
  expect(h, FrameType::kHelloReply, payload.size(), kReplyBytes);
  if (h.source != peer_ || h.destination != config_.self) {
    throw HandshakeError("answers as task " + std::to_string(h.source) + " to task " +
                         std::to_string(h.destination) + " where task " + std::to_string(peer_) +
                         " was dialled by task " + std::to_string(config_.self));
  }
  listener_challenge_ = nonce_at(payload, 0);
  state_ = State::kSentAuth;
  return proving_frame(FrameType::kAuth, config_.self, peer_, config_.plan_hash,
                       proof(config_.token, "replisim-dialer", config_.self, peer_,
                             config_.plan_hash, listener_challenge_, challenge_));
}

void HandshakeDialer::on_auth_ok(const FrameHeader& h, const std::string& payload) {
  if (state_ != State::kSentAuth) throw HandshakeError("accepted before it was asked");
  expect(h, FrameType::kAuthOk, payload.size(), kProofBytes);
  if (h.source != peer_ || h.destination != config_.self) {
    throw HandshakeError("accepts as task " + std::to_string(h.source) + " to task " +
                         std::to_string(h.destination));
  }
  const std::string theirs = plan_of(payload);
  const Proof expected = proof(config_.token, "replisim-listener", peer_, config_.self, theirs,
                               challenge_, listener_challenge_);
  if (!same(expected, proof_of(payload))) {
    throw HandshakeError("its proof does not match: it does not hold this cluster's token");
  }
  check_plan(config_, theirs);
  state_ = State::kDone;
}

FrameKeys HandshakeDialer::frame_keys() const {
  if (state_ != State::kDone) throw HandshakeError("frame keys before the handshake is done");
  return {frame_key(config_.token, config_.self, peer_, challenge_, listener_challenge_),
          frame_key(config_.token, peer_, config_.self, challenge_, listener_challenge_)};
}

HandshakeListener::HandshakeListener(const HandshakeConfig& config,
                                     std::function<bool(uint32_t)> accepts, std::set<Nonce>& seen,
                                     const Nonce& challenge)
    : config_(config), accepts_(std::move(accepts)), seen_(seen), challenge_(challenge) {}

Frame HandshakeListener::on_hello(const FrameHeader& h, const std::string& payload) {
  if (state_ != State::kWaitHello) throw HandshakeError("a second hello");
  expect(h, FrameType::kHello, payload.size(), kHelloBytes);
  if (h.destination != config_.self) {
    throw HandshakeError("addressed to task " + std::to_string(h.destination) + ", this is task " +
                         std::to_string(config_.self));
  }
  if (h.source == config_.self || !accepts_(h.source)) {
    throw HandshakeError("says it is task " + std::to_string(h.source) +
                         ", which does not connect to this task");
  }
  const char macs = payload[sizeof(Nonce)];
  if (macs != 0 && macs != 1) throw HandshakeError("an unknown frame mode in its hello");
  if ((macs == 1) != config_.frame_macs) {
    throw HandshakeError(std::string(macs == 1 ? "sends frames with MACs, this task without them"
                                               : "sends frames without MACs, this task with them") +
                         " (--insecure-frames must be given to every task or none)");
  }
  dialer_challenge_ = nonce_at(payload, 0);
  // Kept only once a proof over it was accepted (on_auth): a stranger's hellos leave nothing
  // behind, however many it sends.
  if (seen_.count(dialer_challenge_) > 0) {
    throw HandshakeError("replays a challenge already used: refused");
  }
  peer_ = h.source;
  Frame f;
  f.header.type = FrameType::kHelloReply;
  f.header.source = config_.self;
  f.header.destination = peer_;
  f.payload = bytes(challenge_);  // no proof before the dialer's
  f.header.length = uint32_t(f.payload.size());
  state_ = State::kWaitAuth;
  return f;
}

Frame HandshakeListener::on_auth(const FrameHeader& h, const std::string& payload) {
  if (state_ != State::kWaitAuth) throw HandshakeError("a proof out of turn");
  expect(h, FrameType::kAuth, payload.size(), kProofBytes);
  if (h.source != peer_ || h.destination != config_.self) {
    throw HandshakeError("the proof comes from another task");
  }
  const std::string theirs = plan_of(payload);
  const Proof expected = proof(config_.token, "replisim-dialer", peer_, config_.self, theirs,
                               challenge_, dialer_challenge_);
  if (!same(expected, proof_of(payload))) {
    throw HandshakeError("its proof does not match: it does not hold this cluster's token");
  }
  check_plan(config_, theirs);  // it holds the token: it may learn this side's plan hash
  if (!seen_.insert(dialer_challenge_).second) {
    throw HandshakeError("replays a challenge already used: refused");
  }
  state_ = State::kDone;
  return proving_frame(FrameType::kAuthOk, config_.self, peer_, config_.plan_hash,
                       proof(config_.token, "replisim-listener", config_.self, peer_,
                             config_.plan_hash, dialer_challenge_, challenge_));
}

FrameKeys HandshakeListener::frame_keys() const {
  if (state_ != State::kDone) throw HandshakeError("frame keys before the handshake is done");
  return {frame_key(config_.token, config_.self, peer_, dialer_challenge_, challenge_),
          frame_key(config_.token, peer_, config_.self, dialer_challenge_, challenge_)};
}

}  // namespace replisim::real
