#include "core/trace/trace.h"

#include <gtest/gtest.h>

namespace replisim::core {
namespace {

TEST(Trace, InternsStrings) {
  Trace t;
  EXPECT_EQ(t.intern("a"), t.intern("a"));
  EXPECT_NE(t.intern("a"), t.intern("b"));
  EXPECT_EQ(t.find("b"), 1u);
  EXPECT_EQ(t.find("zzz"), kNoString);
  EXPECT_EQ(t.str(kNoString), "");
}

}  // namespace
}  // namespace replisim::core
