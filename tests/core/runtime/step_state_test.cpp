#include "core/runtime/step_state.h"

#include <gtest/gtest.h>

namespace replisim::core {
namespace {

// input -> read; input, read -> forward; forward -> backward; backward, read -> apply.
ClientGraph diamond() {
  ClientGraph g;
  auto op = [&g](const std::string& name, std::vector<int> inputs) {
    Op o;
    o.name = name;
    o.inputs = std::move(inputs);
    g.ops.push_back(o);
  };
  op("input", {});
  op("read", {});
  op("forward", {0, 1});
  op("backward", {2});
  op("apply", {3, 1});
  return g;
}

TEST(StepState, OpsBecomeReadyWhenTheirLastInputCompletes) {
  const ClientGraph g = diamond();
  StepState s(g);
  EXPECT_EQ(s.roots(), std::vector<int>({0, 1}));
  EXPECT_TRUE(s.is_root(1));
  EXPECT_FALSE(s.is_root(2));
  for (int round = 0; round < 2; ++round) {  // each step starts afresh
    s.begin_step();
    std::vector<int> ready;
    auto collect = [&ready](int op) { ready.push_back(op); };
    EXPECT_FALSE(s.complete(1, collect));
    EXPECT_TRUE(ready.empty());  // forward still waits for the input
    EXPECT_FALSE(s.complete(0, collect));
    EXPECT_EQ(ready, std::vector<int>({2}));
    EXPECT_FALSE(s.complete(2, collect));
    EXPECT_FALSE(s.complete(3, collect));
    EXPECT_EQ(ready, std::vector<int>({2, 3, 4}));
    EXPECT_EQ(s.remaining_ops(), 1u);
    EXPECT_TRUE(s.complete(4, collect));  // the step's last op
  }
}

// Two parts of the diamond: {input, forward, backward} here, {read, apply} elsewhere.
TEST(StepState, APartCountsItsOwnOpsAndWaitsForTheOthers) {
  const ClientGraph g = diamond();
  StepState here(g, {true, false, true, true, false});
  EXPECT_EQ(here.roots(), std::vector<int>({0}));
  EXPECT_EQ(here.op_count(), 3u);
  EXPECT_FALSE(here.mine(1));
  here.begin_step();
  std::vector<int> ready;
  auto collect = [&ready](int op) { ready.push_back(op); };
  EXPECT_FALSE(here.complete(0, collect));
  EXPECT_TRUE(ready.empty());               // forward waits for the read, done elsewhere
  EXPECT_FALSE(here.complete(1, collect));  // the read's tensor arrived
  EXPECT_EQ(ready, std::vector<int>({2}));  // apply is not this part's: never ready here
  EXPECT_FALSE(here.complete(2, collect));
  EXPECT_EQ(here.remaining_ops(), 1u);
  EXPECT_TRUE(here.complete(3, collect));  // backward: this part's last op
  EXPECT_EQ(ready, std::vector<int>({2, 3}));

  StepState there(g, {false, true, false, false, true});
  there.begin_step();
  ready.clear();
  EXPECT_EQ(there.roots(), std::vector<int>({1}));
  EXPECT_FALSE(there.complete(1, collect));
  EXPECT_TRUE(ready.empty());  // apply waits for backward too
  EXPECT_FALSE(there.complete(3, collect));
  EXPECT_EQ(ready, std::vector<int>({4}));
  EXPECT_TRUE(there.complete(4, collect));
}

}  // namespace
}  // namespace replisim::core
