// libFuzzer target: the bytes are the frames a peer sends during the handshake, to a listener
// (first byte even) or to a dialer (odd). Either side ends done or with a HandshakeError or
// FrameError; never a crash. And the handshake's property is checked: a side is done only after
// the proof that only a holder of the token can compute (the fuzzer is not given the token's
// proofs; it would have to find an HMAC-SHA256).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "real/transport/frame.h"
#include "real/transport/handshake.h"

namespace {

using namespace replisim::real;

// The proof a correct peer of `config` sends: the handshake's own formula, written out again.
Proof expected_proof(const HandshakeConfig& config, const char* side, uint32_t self, uint32_t other,
                     const Nonce& theirs, const Nonce& ours) {
  std::string data(side);
  for (uint32_t v : {self, other}) {
    for (int i = 0; i < 4; ++i) data += char(uint8_t(v >> (8 * i)));
  }
  data += config.plan_hash;
  data.append(reinterpret_cast<const char*>(theirs.data()), theirs.size());
  data.append(reinterpret_cast<const char*>(ours.data()), ours.size());
  return hmac_sha256(config.token, data);
}

bool carries(const std::string& payload, const Proof& proof) {
  return payload.size() == 16 + proof.size() &&
         std::memcmp(payload.data() + 16, proof.data(), proof.size()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool listener_side = data[0] % 2 == 0;
  static const HandshakeConfig config{"fuzz token", "0123456789abcdef", 1};
  // One listener's challenges seen: per input (as a new process), so that an input is judged
  // alone and a replayed challenge is one inside it.
  std::set<Nonce> seen;
  Nonce fixed{};  // deterministic challenges keep runs reproducible
  HandshakeListener listener(
      config, [](uint32_t task) { return task < 16; }, seen, fixed);
  HandshakeDialer dialer(config, 2, fixed);
  std::string last_proof;  // the payload of the last auth or auth-ok frame handed over
  Nonce peer_challenge{};  // the challenge the fuzzer's side sent in its hello or hello reply
  try {
    FrameAssembler assembler([&](const FrameHeader& h, const uint8_t* payload) {
      const std::string body(reinterpret_cast<const char*>(payload), h.length);
      // What the fuzzer's side said is noted only once the handshake took it (a frame it refused,
      // such as a hello after the end, changes nothing on its side and so nothing here).
      if (listener_side) {
        if (h.type == FrameType::kHello) {
          listener.on_hello(h, body);
          if (body.size() >= peer_challenge.size())
            std::memcpy(peer_challenge.data(), body.data(), peer_challenge.size());
        } else {
          listener.on_auth(h, body);
          last_proof = body;
        }
      } else if (h.type == FrameType::kHelloReply) {
        dialer.on_hello_reply(h, body);
        if (body.size() == peer_challenge.size())
          std::memcpy(peer_challenge.data(), body.data(), body.size());
      } else {
        dialer.on_auth_ok(h, body);
        last_proof = body;
      }
    });
    assembler.feed(data + 1, size - 1);
  } catch (const HandshakeError&) {
  } catch (const FrameError&) {
  }
  // Done only with the correct proof: over this side's (fixed) challenge and the fuzzer's.
  if (listener.done() &&
      !carries(last_proof, expected_proof(config, "replisim-dialer", listener.peer(), 1, fixed,
                                          peer_challenge))) {
    std::abort();
  }
  if (dialer.done() && !carries(last_proof, expected_proof(config, "replisim-listener", 2, 1, fixed,
                                                           peer_challenge))) {
    std::abort();
  }
  return 0;
}
