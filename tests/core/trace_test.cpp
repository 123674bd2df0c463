#include "core/trace.h"

#include <sstream>

#include <gtest/gtest.h>

#include "core/error.h"

namespace replisim::core {
namespace {

Trace sample_trace() {
  Trace t;
  t.meta = {{"strategy", "between_graph"}, {"x", 1}};
  TraceEvent e;
  e.kind = EventKind::kTransfer;
  e.actor = t.intern("worker0");
  e.device = t.intern("pc1/gpu0");
  e.peer_actor = t.intern("ps0");
  e.peer = t.intern("pc2/cpu");
  e.label = t.intern("send/grad");
  e.client = e.actor;
  e.step = 3;
  e.start_s = 1.5;
  e.end_s = 2.25;
  e.bytes = 4e6;
  e.message_id = 42;
  t.events.push_back(e);
  t.counters.push_back({t.intern("global_step"), 2.25, 7});
  return t;
}

TEST(Trace, InternsStrings) {
  Trace t;
  EXPECT_EQ(t.intern("a"), t.intern("a"));
  EXPECT_NE(t.intern("a"), t.intern("b"));
  EXPECT_EQ(t.find("b"), 1u);
  EXPECT_EQ(t.find("zzz"), kNoString);
  EXPECT_EQ(t.str(kNoString), "");
}

TEST(Trace, BinaryRoundTrip) {
  const Trace t = sample_trace();
  std::stringstream buffer;
  write_trace_binary(buffer, t);
  const Trace back = read_trace_binary(buffer, "mem");
  EXPECT_EQ(back.meta, t.meta);
  EXPECT_EQ(back.strings(), t.strings());
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].kind, EventKind::kTransfer);
  EXPECT_EQ(back.str(back.events[0].peer), "pc2/cpu");
  EXPECT_EQ(back.events[0].message_id, 42);
  EXPECT_DOUBLE_EQ(back.events[0].end_s, 2.25);
  ASSERT_EQ(back.counters.size(), 1u);
  EXPECT_DOUBLE_EQ(back.counters[0].value, 7);
}

TEST(Trace, TruncatedOrForeignStreamsAreInputErrors) {
  std::stringstream buffer;
  write_trace_binary(buffer, sample_trace());
  const std::string bytes = buffer.str();
  for (size_t cut : {size_t(0), size_t(5), size_t(12), bytes.size() / 2, bytes.size() - 1}) {
    std::istringstream in(bytes.substr(0, cut));
    EXPECT_THROW(read_trace_binary(in, "cut"), InputError) << cut;
  }
  std::istringstream foreign("{\"traceEvents\": []}");
  EXPECT_THROW(read_trace_binary(foreign, "x"), InputError);
}

}  // namespace
}  // namespace replisim::core
