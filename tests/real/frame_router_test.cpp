// The node's frame router: each application frame goes to the one part that owns its type.
#include <stdexcept>

#include <gtest/gtest.h>

#include "real/node/frame_router.h"

namespace replisim::real::detail {
namespace {

TEST(FrameRouter, AFrameGoesToTheOnePartThatOwnsItsType) {
  FrameRouter router;
  int parts = 0, kept = 0;
  uint32_t from = 0;
  router.own(channel::kTracePart, [&](uint32_t peer, const FrameHeader&, const uint8_t*) {
    ++parts;
    from = peer;
  });
  router.own(channel::kTracePartKept,
             [&](uint32_t, const FrameHeader&, const uint8_t*) { ++kept; });
  FrameHeader h;
  h.type = channel::kTracePart;
  EXPECT_TRUE(router.route(7, h, nullptr));
  EXPECT_EQ(parts, 1);
  EXPECT_EQ(from, 7u);
  EXPECT_EQ(kept, 0);
  // A type no part owns stays with the node.
  h.type = channel::kRun;
  EXPECT_FALSE(router.route(7, h, nullptr));
  // Chunks only on a channel whose owner takes them.
  h.type = channel::kTracePartKept;
  h.chunks = 2;
  EXPECT_THROW(router.route(7, h, nullptr), FrameError);
  EXPECT_EQ(kept, 0);
  h.type = channel::kTracePart;
  router.own(
      channel::kStopAsk, [&](uint32_t, const FrameHeader&, const uint8_t*) { ++kept; },
      /*chunked=*/true);
  h.type = channel::kStopAsk;
  EXPECT_TRUE(router.route(7, h, nullptr));
  EXPECT_EQ(kept, 1);
  // Names: a channel's, a transport frame's, a number no part owns.
  EXPECT_EQ(channel::name(channel::kStopReply), "stop reply");
  EXPECT_EQ(channel::name(FrameType::kTensor), "tensor");
  EXPECT_EQ(channel::name(FrameType(40)), "channel 40");
  // Two owners of one type are a bug of the node's set-up, named.
  try {
    router.own(channel::kTracePart, [](uint32_t, const FrameHeader&, const uint8_t*) {});
    FAIL() << "a second owner was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("two parts own trace part frames"), std::string::npos);
  }
}

}  // namespace
}  // namespace replisim::real::detail
