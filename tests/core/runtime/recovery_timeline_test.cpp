// TF's recovery timing rules, as every backend applies them (core/runtime/recovery_timeline.h).
#include <gtest/gtest.h>

#include "core/runtime/recovery_timeline.h"

namespace replisim::core {
namespace {

RecoveryPolicy policy(bool enabled) {
  RecoveryPolicy p;
  p.enabled = enabled;
  p.detect_timeout_s = 0.3;
  p.restart_delay_s = 0.2;
  p.recovery_wait_s = 30;
  return p;
}

TEST(RecoveryTimeline, DetectionRestartAndTheWorkersPolls) {
  const RecoveryTimeline on(policy(true));
  EXPECT_DOUBLE_EQ(on.detected_s(1.0), 1.3);
  EXPECT_DOUBLE_EQ(on.restart_s(1.3), 1.5);
  // Without training.recovery the clients find out at once, and the run ends there.
  EXPECT_DOUBLE_EQ(RecoveryTimeline(policy(false)).detected_s(1.0), 1.0);
  // A worker up before the chief's model is ready sees it at its next poll (every 30 s, as
  // wait_for_session); one up after it sees it at once.
  EXPECT_DOUBLE_EQ(on.worker_back_s(2.0, 5.0), 32.0);
  EXPECT_DOUBLE_EQ(on.worker_back_s(2.0, 62.0), 62.0);
  EXPECT_DOUBLE_EQ(on.worker_back_s(6.0, 5.0), 6.0);
}

TEST(RecoveryTimeline, WhatARestartResumesFrom) {
  // Only a checkpoint whose index was on disk by the death (none written: -1).
  EXPECT_TRUE(RecoveryTimeline::restorable(0.7, 0.7));
  EXPECT_FALSE(RecoveryTimeline::restorable(0.71, 0.7));
  EXPECT_FALSE(RecoveryTimeline::restorable(-1, 0.7));
  Plan plan;
  plan.sync = "async";
  EXPECT_EQ(RecoveryTimeline::resumed_step(plan, {5, 7}, 1), 7);
  EXPECT_EQ(RecoveryTimeline::resumed_step(plan, {}, 1), 0);
  // Workers meeting at barriers resume together, from the smallest.
  plan.sync = kDistributedReplicated;
  EXPECT_EQ(RecoveryTimeline::resumed_step(plan, {5, 7}, 1), 5);
}

}  // namespace
}  // namespace replisim::core
