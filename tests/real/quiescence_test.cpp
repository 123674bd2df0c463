// The coordinator's quiescence waves as a part of the node that owns its frames
// (real/node/quiescence.h), over a scripted node of three tasks: a run is quiet only when every
// counted frame between live tasks was received, nobody is busy and two waves in a row saw the
// same counts; then a parameter server's stall ends the run as a stall, else the run deadlocked.
// Not while the job is down; a dead task is not waited for; a bad status is the peer's error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "real/node/quiescence.h"

namespace replisim::real::detail {
namespace {

class ScriptedWaveHost : public Quiescence::Host {
 public:
  bool live(uint32_t task) const override { return task != dead_task; }
  bool stopping() const override { return false; }
  bool job_finished() const override { return false; }
  bool job_down() const override { return down; }
  int64_t work_under_way() const override { return busy; }
  std::string finished_clients() const override { return "01"; }
  std::optional<core::StallRecord> stall_now(const std::string&) const override { return stall; }
  nlohmann::json global_step_status() const override { return nullptr; }
  void send_wave_frame(uint32_t peer, FrameType type, int64_t wave,
                       const std::string& payload) override {
    sent.push_back({peer, type, wave, payload});
  }
  void wave_timer(double, std::function<void()> work) override { timers.push_back(work); }
  void stalled(const core::StallRecord& s) override { verdict = "stall at " + s.cause; }
  void deadlocked() override { verdict = "deadlock"; }

  struct Sent {
    uint32_t peer;
    FrameType type;
    int64_t wave;
    std::string payload;
  };
  std::vector<Sent> sent;
  std::vector<std::function<void()>> timers;
  std::string verdict;
  uint32_t dead_task = 99;
  bool down = false;
  int64_t busy = 0;
  std::optional<core::StallRecord> stall;
};

// A status answer from `peer` to wave `wave`: its counts (three tasks) and work under way.
void wave_answer(FrameRouter& router, uint32_t peer, int64_t wave, std::vector<int64_t> sent,
                 std::vector<int64_t> received, int64_t busy) {
  const std::string text =
      nlohmann::json{{"sent", sent}, {"received", received}, {"busy", busy}}.dump();
  FrameHeader h;
  h.type = channel::kStatus;
  h.step = wave;
  h.length = uint32_t(text.size());
  router.route(peer, h, reinterpret_cast<const uint8_t*>(text.data()));
}

// Fires the one wave timer pending (the next wave's query goes out).
void fire_next_wave(ScriptedWaveHost& host) {
  ASSERT_EQ(host.timers.size(), 1u);
  auto work = host.timers.front();
  host.timers.clear();
  work();
}

TEST(Quiescence, TwoQuietWavesWithTheSameCountsEndTheRunAsADeadlock) {
  ScriptedWaveHost host;
  FrameRouter router;
  Quiescence waves(host, 0, 0, 3, 2);
  waves.own_frames(router);
  // Task 0 (the coordinator) sent one RUN to task 1, which received it.
  waves.sent(1, channel::kRun);
  waves.sent(1, channel::kQuery);  // the waves' own frames do not count
  waves.start();
  fire_next_wave(host);
  ASSERT_EQ(host.sent.size(), 2u);  // a query to tasks 1 and 2, with who finished
  EXPECT_EQ(host.sent[0].type, channel::kQuery);
  EXPECT_EQ(host.sent[0].payload, "01");
  wave_answer(router, 1, 1, {0, 0, 0}, {1, 0, 0}, 0);
  wave_answer(router, 2, 1, {0, 0, 0}, {0, 0, 0}, 0);
  EXPECT_EQ(host.verdict, "");  // the first quiet wave: counts to compare with the next
  fire_next_wave(host);
  wave_answer(router, 2, 2, {0, 0, 0}, {0, 0, 0}, 0);
  wave_answer(router, 1, 2, {0, 0, 0}, {1, 0, 0}, 0);
  EXPECT_EQ(host.verdict, "deadlock");
}

TEST(Quiescence, AFrameInFlightWorkUnderWayOrAJobDownIsNotQuiet) {
  ScriptedWaveHost host;
  FrameRouter router;
  Quiescence waves(host, 0, 0, 3, 2);
  waves.own_frames(router);
  waves.sent(1, FrameType::kTensor);
  waves.start();
  for (int wave = 1; wave <= 3; ++wave) {  // task 1 has not received the tensor
    fire_next_wave(host);
    wave_answer(router, 1, wave, {0, 0, 0}, {0, 0, 0}, 0);
    wave_answer(router, 2, wave, {0, 0, 0}, {0, 0, 0}, 0);
  }
  for (int wave = 4; wave <= 6; ++wave) {  // received, but task 2 is busy
    fire_next_wave(host);
    wave_answer(router, 1, wave, {0, 0, 0}, {1, 0, 0}, 0);
    wave_answer(router, 2, wave, {0, 0, 0}, {0, 0, 0}, 1);
  }
  host.down = true;
  for (int wave = 7; wave <= 9; ++wave) {  // everything balanced, the job down
    fire_next_wave(host);
    wave_answer(router, 1, wave, {0, 0, 0}, {1, 0, 0}, 0);
    wave_answer(router, 2, wave, {0, 0, 0}, {0, 0, 0}, 0);
  }
  EXPECT_EQ(host.verdict, "");
  EXPECT_EQ(host.timers.size(), 1u);  // the waves go on
}

TEST(Quiescence, AStallEndsTheRunAndADeadTaskIsNotWaitedFor) {
  ScriptedWaveHost host;
  host.stall = core::StallRecord{};
  host.stall->cause = "worker1 died";
  FrameRouter router;
  Quiescence waves(host, 0, 0, 3, 2);
  waves.own_frames(router);
  waves.start();
  fire_next_wave(host);
  wave_answer(router, 1, 1, {0, 0, 0}, {0, 0, 0}, 0);
  wave_answer(router, 2, 1, {0, 0, 0}, {0, 0, 0}, 0);
  fire_next_wave(host);
  wave_answer(router, 1, 2, {0, 0, 0}, {0, 0, 0}, 0);
  host.dead_task = 2;  // task 2 died before it answered: a new wave, of the live tasks only
  waves.task_died();
  EXPECT_EQ(host.verdict, "");
  ASSERT_EQ(host.sent.back().peer, 1u);
  EXPECT_EQ(host.sent.back().wave, 3);
  wave_answer(router, 1, 2, {0, 0, 0}, {0, 0, 0}, 0);  // a late answer to the dropped wave
  wave_answer(router, 1, 3, {0, 0, 0}, {0, 0, 0}, 0);
  EXPECT_EQ(host.verdict, "");  // the first quiet wave since the death
  fire_next_wave(host);
  wave_answer(router, 1, 4, {0, 0, 0}, {0, 0, 0}, 0);
  EXPECT_EQ(host.verdict, "stall at worker1 died");
}

// The coordinator answered its own wave idle (waiting for a rank's chunk), then the rank's task
// died and the coordinator set a timer to re-form the ring (busy): the dead task's missing answer
// must not decide the wave on the coordinator's answer from before the death (it did, and an
// elastic all-reduce left with rank 0 alone ended as "deadlocked" in about half its runs).
TEST(Quiescence, ADeathAsksANewWaveOfTheSurvivors) {
  ScriptedWaveHost host;
  FrameRouter router;
  Quiescence waves(host, 0, 0, 2, 1);
  waves.own_frames(router);
  waves.start();
  fire_next_wave(host);
  wave_answer(router, 1, 1, {0, 0}, {0, 0}, 0);
  fire_next_wave(host);  // wave 2: the coordinator idle; task 1 does not answer
  host.dead_task = 1;
  host.busy = 1;  // the coordinator's reaction to the death: a timer under way
  waves.task_died();
  EXPECT_EQ(host.verdict, "");
  host.busy = 0;  // the timer fired, training went on, and now everything is idle again
  fire_next_wave(host);
  EXPECT_EQ(host.verdict, "");  // one quiet wave since the death is not enough
  fire_next_wave(host);
  EXPECT_EQ(host.verdict, "deadlock");
}

TEST(Quiescence, AStatusNotOneCountPerTaskOrToAnotherTaskIsThePeersError) {
  ScriptedWaveHost host;
  FrameRouter router;
  Quiescence waves(host, 0, 0, 3, 2);
  waves.own_frames(router);
  waves.start();
  fire_next_wave(host);
  EXPECT_THROW(wave_answer(router, 1, 1, {0, 0}, {0, 0, 0}, 0), FrameError);
  ScriptedWaveHost other;
  FrameRouter other_router;
  Quiescence not_coordinator(other, 1, 0, 3, 2);
  not_coordinator.own_frames(other_router);
  EXPECT_THROW(wave_answer(other_router, 2, 1, {0, 0, 0}, {0, 0, 0}, 0), FrameError);
  // A query whose payload is not one flag per graph.
  FrameHeader q;
  q.type = channel::kQuery;
  q.step = 1;
  const std::string bad = "012";
  q.length = uint32_t(bad.size());
  EXPECT_THROW(other_router.route(0, q, reinterpret_cast<const uint8_t*>(bad.data())), FrameError);
  const std::string good = "10";
  q.length = uint32_t(good.size());
  other_router.route(0, q, reinterpret_cast<const uint8_t*>(good.data()));
  ASSERT_EQ(other.sent.size(), 1u);
  EXPECT_EQ(other.sent[0].type, channel::kStatus);
  EXPECT_EQ(other.sent[0].wave, 1);
}

}  // namespace
}  // namespace replisim::real::detail
