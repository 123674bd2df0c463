// libFuzzer target: the bytes are the frames a peer sends during the handshake, to a listener
// (first byte even) or to a dialer (odd). Either side ends done or with a HandshakeError or
// FrameError; never a crash. Without the token nothing but a correct proof can finish it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "real/transport/frame.h"
#include "real/transport/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replisim::real;
  if (size == 0) return 0;
  const bool listener_side = data[0] % 2 == 0;
  static const HandshakeConfig config{"fuzz token", "0123456789abcdef", 1};
  static std::set<Nonce> seen;
  if (seen.size() > 100000) seen.clear();
  Nonce fixed{};  // deterministic challenges keep runs reproducible
  HandshakeListener listener(
      config, [](uint32_t task) { return task < 16; }, seen, fixed);
  HandshakeDialer dialer(config, 2, fixed);
  try {
    FrameAssembler assembler([&](const FrameHeader& h, const uint8_t* payload) {
      const std::string body(reinterpret_cast<const char*>(payload), h.length);
      if (listener_side) {
        if (h.type == FrameType::kHello) {
          listener.on_hello(h, body);
        } else {
          listener.on_auth(h, body);
        }
      } else if (h.type == FrameType::kHelloReply) {
        dialer.on_hello_reply(h, body);
      } else {
        dialer.on_auth_ok(h);
      }
    });
    assembler.feed(data + 1, size - 1);
  } catch (const HandshakeError&) {
  } catch (const FrameError&) {
  }
  return 0;
}
