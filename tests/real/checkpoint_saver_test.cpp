// The chief's checkpoints as a part of the node that owns its frames
// (real/node/checkpoint_saver.h), over a fake node: a save waits for every parameter server's
// shard, then writes the index naming them; only the chief or the coordinator may ask a task for
// its shard, and an answer nobody waits for is the peer's error, named; nothing is taken while the
// node stops.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/json_cursor.h"
#include "core/base/temp_dir.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "real/node/checkpoint_saver.h"
#include "tests/support/test_support.h"

namespace replisim::real::detail {
namespace {

using core::CheckpointIndex;
using core::ParameterStore;
using core::read_checkpoint_index;

class FakeSaverHost : public CheckpointSaver::Host {
 public:
  double now_s() const override { return now; }
  bool stopping() const override { return stops; }
  void send_frame(uint32_t peer, FrameType type, const std::string& payload) override {
    sent.push_back({peer, type, payload});
  }
  void background(std::function<void()> work, std::function<void()> done) override {
    work();
    if (!stops) done();
  }
  int64_t global_step_seen() const override { return 7; }
  std::vector<int64_t> client_steps() const override { return {3, 4}; }
  struct Sent {
    uint32_t peer;
    FrameType type;
    std::string payload;
  };
  std::vector<Sent> sent;
  double now = 1.5;
  bool stops = false;
};

FrameHeader saved_frame(const std::string& payload) {
  FrameHeader h;
  h.type = channel::kSaved;
  h.length = uint32_t(payload.size());
  return h;
}

const uint8_t* payload_of(const std::string& s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

// The saver of task `self` holding shard `shard`, the shards on tasks 0 and 3, task 1 the chief
// and task 0 the coordinator.
// The seed's plan with its variables on two parameter servers (pc1, pc2).
core::Plan two_ps_plan() {
  nlohmann::json doc = core::read_json_file(test::seed_scenario());
  doc["training"]["ps"] = {"pc1/cpu", "pc2/cpu"};
  return core::compile_plan(test::parse(doc), "between_graph", {});
}

CheckpointSaver::Setup setup_of(const core::Plan& plan, const std::string& dir,
                                ParameterStore* store, int shard, uint32_t self) {
  CheckpointSaver::Setup s;
  s.plan = &plan;
  s.dir = dir;
  s.plan_hash = "hash";
  s.store = store;
  s.ps_shard = shard;
  s.self = self;
  s.ps_tasks = {0, 3};
  s.chief = 1;
  s.coordinator = 0;
  return s;
}

TEST(CheckpointSaver, ASaveWaitsForEveryShardThenWritesTheIndexNamingThem) {
  const core::Plan plan = two_ps_plan();
  ASSERT_EQ(plan.ps_roles.size(), 2u);
  const core::ScopedTempDir dir("replisim-saver");
  ParameterStore store(plan, 0);
  FakeSaverHost node;
  // This task (0) holds shard 0; task 3 holds shard 1; task 1 is the chief, task 0 the
  // coordinator.
  CheckpointSaver saver(node, setup_of(plan, dir.path(), &store, 0, 0));
  FrameRouter router;
  saver.own_frames(router);
  std::vector<double> done;
  saver.save(saver.next_name(), [&](double start_s, double bytes_saved, int64_t global_step) {
    done = {start_s, bytes_saved, double(global_step)};
  });
  // Its own shard is written; task 3 is asked for the other.
  ASSERT_EQ(node.sent.size(), 1u);
  EXPECT_EQ(node.sent[0].peer, 3u);
  EXPECT_EQ(node.sent[0].type, channel::kSave);
  EXPECT_EQ(node.sent[0].payload, "model.ckpt-0");
  EXPECT_TRUE(done.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/model.ckpt-0.index"));
  // While the node stops, an answer is not taken.
  const std::string answer =
      R"({"file": "model.ckpt-0.ps1", "bytes": 10, "global_step": -1, "client_steps": []})";
  node.stops = true;
  EXPECT_TRUE(router.route(3, saved_frame(answer), payload_of(answer)));
  EXPECT_TRUE(done.empty());
  node.stops = false;
  node.now = 2.5;
  router.route(3, saved_frame(answer), payload_of(answer));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0], 1.5);
  const CheckpointIndex index = read_checkpoint_index(dir.path() + "/model.ckpt-0.index");
  EXPECT_EQ(index.shards, (std::vector<std::string>{"model.ckpt-0.ps0", "model.ckpt-0.ps1"}));
  // Shard 0 holds global_step: its value (0, not the 7 this task had seen), read with the steps
  // that reached it.
  EXPECT_EQ(index.global_step, 0);
  EXPECT_EQ(index.client_steps, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(index.written_s, 2.5);
  // A second answer: nobody waits for it.
  EXPECT_THROW(router.route(3, saved_frame(answer), payload_of(answer)), FrameError);
  EXPECT_EQ(saver.next_name(), "model.ckpt-1");
}

// Found by a breaker: an elastic all-reduce rank killed during the final save left the save
// waiting for its shard for ever (the run hung). A task's death ends the wait for its shard: the
// index names the shards written.
TEST(CheckpointSaver, ASaveNoLongerWaitsForTheShardOfATaskThatDied) {
  const core::Plan plan = two_ps_plan();
  const core::ScopedTempDir dir("replisim-saver");
  ParameterStore store(plan, 0);
  FakeSaverHost node;
  CheckpointSaver saver(node, setup_of(plan, dir.path(), &store, 0, 0));
  FrameRouter router;
  saver.own_frames(router);
  int done = 0;
  saver.save("final", [&](double, double, int64_t) { ++done; });
  ASSERT_EQ(node.sent.size(), 1u);  // task 3 asked
  saver.task_died(2);               // not asked: still waiting
  EXPECT_EQ(done, 0);
  saver.task_died(3);
  EXPECT_EQ(done, 1);
  const CheckpointIndex index = read_checkpoint_index(dir.path() + "/final.index");
  EXPECT_EQ(index.shards, (std::vector<std::string>{"final.ps0"}));
  // Its answer, had it sent one before it died, is nobody's to take now; a later death neither.
  const std::string answer =
      R"({"file": "final.ps1", "bytes": 10, "global_step": -1, "client_steps": []})";
  EXPECT_THROW(router.route(3, saved_frame(answer), payload_of(answer)), FrameError);
  saver.task_died(3);
  EXPECT_EQ(done, 1);
}

TEST(CheckpointSaver, OnlyTheChiefOrTheCoordinatorAsksForAShard) {
  const core::Plan plan = two_ps_plan();
  const core::ScopedTempDir dir("replisim-saver");
  ParameterStore store(plan, 1);
  FakeSaverHost node;
  CheckpointSaver saver(node, setup_of(plan, dir.path(), &store, 1, 3));
  FrameRouter router;
  saver.own_frames(router);
  FrameHeader h;
  h.type = channel::kSave;
  const std::string name = "model.ckpt-4";
  h.length = uint32_t(name.size());
  try {
    router.route(2, h, payload_of(name));  // a worker that is not the chief
    FAIL() << "accepted";
  } catch (const FrameError& e) {
    EXPECT_NE(std::string(e.what()).find("not from the chief or the coordinator"),
              std::string::npos);
  }
  router.route(1, h, payload_of(name));  // the chief
  ASSERT_EQ(node.sent.size(), 1u);
  EXPECT_EQ(node.sent[0].peer, 1u);
  EXPECT_EQ(node.sent[0].type, channel::kSaved);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/model.ckpt-4.ps1"));
  const std::string bad = "../x";
  h.length = uint32_t(bad.size());
  EXPECT_THROW(router.route(0, h, payload_of(bad)), FrameError);
}

}  // namespace
}  // namespace replisim::real::detail
