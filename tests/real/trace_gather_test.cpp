// The coordinator's side of gathering the run's trace (real/node/trace_gather.h), over a fake
// node: a part's chunks come in order, each with the count its first announced; a part out of
// order or a second part is the peer's error, named.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "real/node/trace_gather.h"

namespace replisim::real::detail {
namespace {

class FakeNode : public TraceGather::Host {
 public:
  void send(uint32_t peer, const FrameHeader& header, const uint8_t*, size_t,
            std::shared_ptr<const void>) override {
    sent.emplace_back(peer, header.type);
  }
  void timer(double, std::function<void()>) override {}
  bool live(uint32_t) const override { return true; }
  void gather_failed(const std::string& why) override { failure = why; }
  std::vector<std::pair<uint32_t, FrameType>> sent;
  std::string failure;
};

ClusterSpec two_tasks() {
  ClusterSpec spec;
  spec.tasks = {{"ps", 0, "127.0.0.1", 1}, {"worker", 0, "127.0.0.1", 2}};
  return spec;
}

FrameHeader chunk(uint32_t index, uint32_t of) {
  FrameHeader h;
  h.type = channel::kTracePart;
  h.chunk = index;
  h.chunks = of;
  h.length = 0;
  return h;
}

std::string error_of(const FrameRouter& router, uint32_t peer, const FrameHeader& h) {
  try {
    router.route(peer, h, nullptr);
  } catch (const FrameError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceGather, APartsChunksComeInOrderOnce) {
  const ClusterSpec spec = two_tasks();
  FakeNode node;
  TraceGather gather(node, spec, /*self=*/0, /*coordinator=*/0, "unused.trace");
  FrameRouter router;
  gather.own_frames(router);
  // In order: kept once whole.
  EXPECT_EQ(error_of(router, 1, chunk(0, 2)), "");
  EXPECT_TRUE(node.sent.empty());
  EXPECT_EQ(error_of(router, 1, chunk(1, 2)), "");
  ASSERT_EQ(node.sent.size(), 1u);
  EXPECT_EQ(node.sent[0], std::make_pair(uint32_t(1), channel::kTracePartKept));
  // A second part from the same task.
  EXPECT_NE(error_of(router, 1, chunk(0, 1)).find("a second trace part"), std::string::npos);
  // Out of order, or with another count than announced.
  FakeNode other;
  TraceGather fresh(other, spec, 0, 0, "unused.trace");
  FrameRouter routes;
  fresh.own_frames(routes);
  EXPECT_NE(error_of(routes, 1, chunk(2, 3)).find("trace part chunk 2 of 3 where chunk 0 was due"),
            std::string::npos);
  EXPECT_EQ(error_of(routes, 1, chunk(0, 3)), "");
  EXPECT_NE(error_of(routes, 1, chunk(1, 5)).find("where chunk 1 of 3 was due"), std::string::npos);
  EXPECT_TRUE(other.sent.empty());
}

TEST(TraceGather, OnlyTheCoordinatorTakesPartsAndOnlyItsReceiptsCount) {
  const ClusterSpec spec = two_tasks();
  FakeNode node;
  TraceGather gather(node, spec, /*self=*/1, /*coordinator=*/0, "unused.trace");
  FrameRouter router;
  gather.own_frames(router);
  EXPECT_NE(error_of(router, 0, chunk(0, 1)).find("not the coordinator"), std::string::npos);
  FrameHeader kept;
  kept.type = channel::kTracePartKept;
  EXPECT_NE(error_of(router, 1, kept).find("not from the coordinator"), std::string::npos);
  EXPECT_EQ(error_of(router, 0, kept), "");
}

}  // namespace
}  // namespace replisim::real::detail
