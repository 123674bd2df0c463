// libFuzzer target: any bytes fed to the frame decoder (in pieces of every size) are frames or a
// FrameError, never a crash, a hang or an allocation beyond one frame.
#include <cstddef>
#include <cstdint>

#include "real/transport/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replisim::real;
  // The first byte picks the piece size, so that partial headers and payloads are exercised.
  const size_t piece = size > 0 ? 1 + data[0] % 97 : 1;
  size_t frames = 0;
  FrameAssembler assembler([&frames](const FrameHeader& h, const uint8_t* payload) {
    volatile uint8_t touch = h.length > 0 ? payload[h.length - 1] : 0;
    (void)touch;
    ++frames;
  });
  try {
    for (size_t at = size > 0 ? 1 : 0; at < size; at += piece) {
      assembler.feed(data + at, piece < size - at ? piece : size - at);
    }
  } catch (const FrameError&) {
  }
  return 0;
}
