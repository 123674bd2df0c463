// The real node's parts that own their frames (real/node/: SteadyStop, JobControl, Restorer,
// VariableOps, TensorTransfers, StepRunner's RUN and DONE, and CollectiveOps's elastic sync),
// each over a scripted Host, with the step graphs' parts of a real plan (StepRunner over a
// scripted node). A peer's frame that is out of order, from the wrong task, for a graph out of
// range or not what the protocol says is the peer's error, named in one line (FrameError); the
// good paths: the stop limits each sync mode gets, the job's start once every task is ready and
// its end once every client finished, a restore's report heard whole, an elastic sync's rounds.
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/base/temp_dir.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace_sink.h"
#include "real/cluster.h"
#include "real/node/checkpoint_saver.h"
#include "real/node/collective_ops.h"
#include "real/node/job_control.h"
#include "real/node/objective_gather.h"
#include "real/node/objective_values.h"
#include "real/node/payload.h"
#include "real/node/restorer.h"
#include "real/node/steady_stop.h"
#include "real/node/step_runner.h"
#include "real/node/tensor_transfers.h"
#include "real/node/variable_ops.h"
#include "tests/real/real_support.h"

namespace replisim::real::detail {
namespace {

using core::Bytes;
using core::CheckpointIndex;
using core::ParameterStore;
using core::write_checkpoint_index;

// --- the scripted node under every part ------------------------------------------------------

struct NodePartsSent {
  uint32_t peer;
  FrameType type;
  int64_t step;
  uint64_t tensor;
  std::string payload;
  double time_s;
};

// StepRunner's host: records frames; nothing posted runs (an engine's completion stays put).
class NodePartsStepHost : public StepRunner::Host {
 public:
  double now_s() const override { return 1.0; }
  bool stopping() const override { return stops; }
  void post(std::function<void()> work) override {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.push_back(std::move(work));
  }
  void at_run_time(double, bool, std::function<void()>) override {}
  void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                  const std::string& payload) override {
    sent.push_back({peer, type, step, tensor, payload, 0});
  }
  int next_slot(uint32_t) override { return 0; }
  void send_chunk(uint32_t peer, const FrameHeader& h, const uint8_t*, size_t size,
                  std::shared_ptr<const void>, std::function<void()>, int) override {
    sent.push_back({peer, h.type, h.step, h.tensor, std::string(size, '\0'), h.time_s});
  }
  core::TraceRecorder& recorder() override { return *recorder_of; }
  int64_t global_step_seen() const override { return 0; }
  void saw_global_step(int64_t) override {}
  bool values(int, int) override { return false; }
  void sync(int, int) override {}
  void collective(int, int) override {}
  int64_t global_step_here() const override { return -1; }
  // Completions of ops stop at the step runner (no op of a step follows in these tests).
  bool client_dead(int) const override { return true; }
  bool within_stop_limit(int) const override { return true; }
  bool hold_step(int) override { return false; }
  bool session_checkpoint(int, std::function<void(double)>) override { return false; }
  void chief_duties(int, std::function<void()> then) override { then(); }
  void step_counted(int, int, double, double) override {}
  void client_finished(int) override {}

  core::TraceRecorder* recorder_of = nullptr;
  bool stops = false;
  std::vector<NodePartsSent> sent;

 private:
  std::mutex mutex_;
  std::vector<std::function<void()>> posted_;
};

// A plan of `workers` between-graph workers (task 0: the parameter server and coordinator; task
// 1: worker0, the chief; task 2: worker1), with `training` over the small real-run scenario.
core::Plan node_parts_plan(const nlohmann::json& training, int workers = 2,
                           const std::string& strategy = "between_graph") {
  return core::compile_plan(test::parse(real::testing::scenario(workers, training)), strategy, {1});
}

// One task `self` of the plan: the cluster, its roles on tasks, a trace recorder, and the step
// graphs' parts and loops as its StepRunner holds them.
class NodePartsTask {
 public:
  NodePartsTask(core::Plan p, uint32_t self) : plan(std::move(p)), self(self) {
    spec.tasks = tasks_of_plan(plan);
    map = map_roles(plan, spec, "cluster.json");
    builder.begin(core::trace_meta_from_plan(plan));
    recorder.emplace(plan, builder);
    step_host.recorder_of = &*recorder;
    steps.emplace(step_host, StepRunner::Setup{&plan, &map, self, 1});
  }
  std::vector<Part>& parts() { return steps->parts(); }
  core::ClientLoop& loop() { return steps->loop(); }
  // The graph whose loop is `kind` (-1: none).
  int graph_of(core::LoopKind kind) {
    for (size_t g = 0; g < loop().size(); ++g) {
      if (loop().client(int(g)).loop == kind) return int(g);
    }
    return -1;
  }
  const std::vector<core::TraceEvent>& events() { return builder.traces().back().events; }

  core::Plan plan;
  uint32_t self;
  ClusterSpec spec;
  TaskMap map;
  core::TraceBuilder builder;
  std::optional<core::TraceRecorder> recorder;
  NodePartsStepHost step_host;
  std::optional<StepRunner> steps;
};

// Routes one frame from `peer`; a part's refusal goes to the caller. False: no part owns it.
bool node_parts_route(FrameRouter& router, uint32_t peer, FrameType type, int64_t step,
                      uint64_t tensor, const std::string& payload = {}, double time_s = 0,
                      uint32_t chunk = 0, uint32_t chunks = 1) {
  FrameHeader h;
  h.type = type;
  h.step = step;
  h.tensor = tensor;
  h.length = uint32_t(payload.size());
  h.time_s = time_s;
  h.chunk = chunk;
  h.chunks = chunks;
  return router.route(peer, h, reinterpret_cast<const uint8_t*>(payload.data()));
}

// The one line a FrameError says, or "(accepted)" (another exception: said so, with its words;
// the node would report it as its own internal error, not the peer's).
std::string node_parts_refusal(const std::function<void()>& work) {
  try {
    work();
  } catch (const FrameError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a FrameError) ") + e.what();
  }
  return "(accepted)";
}

bool node_parts_starts_with(const std::string& line, const std::string& prefix) {
  return line.rfind(prefix, 0) == 0;
}

// --- SteadyStop ------------------------------------------------------------------------------

class NodePartsStopHost : public SteadyStop::Host {
 public:
  bool stopping() const override { return stops; }
  int64_t global_step_seen() const override { return global_step; }
  bool job_finished() const override { return false; }
  bool client_dead(int g) const override { return g == dead; }
  bool client_finished(int) const override { return false; }
  void send_stop_frame(uint32_t peer, FrameType type, int64_t step, uint64_t graph) override {
    sent.push_back({peer, type, step, graph, {}, 0});
  }
  void end_waiting_step(int g) override { ended_waiting.push_back(g); }
  void stop_limits_set() override { ++limits_set; }

  bool stops = false;
  int64_t global_step = 0;
  int dead = -1;
  std::vector<NodePartsSent> sent;
  std::vector<int> ended_waiting;
  int limits_set = 0;
};

nlohmann::json node_parts_auto_steps(const std::string& sync) {
  return {{"sync", sync},
          {"steps", "auto"},
          {"max_steps", 400},
          {"warmup_steps", 2},
          {"steady_tolerance", 0.25}};
}

SteadyStop::Setup node_parts_stop_setup(const NodePartsTask& task) {
  return {&task.plan, true, task.self, uint32_t(task.map.coordinator_task)};
}

// Feeds the coordinator's rule steady steps (every client 0.1 s a step, an update each) until it
// holds and the question goes out.
void node_parts_make_rule_hold(SteadyStop& stop, NodePartsStopHost& host, const core::Plan& plan) {
  double t = 0;
  int64_t global_step = 0;
  for (int step = 0; step < 300 && host.sent.empty(); ++step) {
    for (int c = 0; c < int(plan.clients.size()) && host.sent.empty(); ++c) {
      ++global_step;
      stop.update(t + 0.1, 4, global_step);
      if (host.sent.empty()) stop.step_ended(c, step, t, t + 0.1, global_step);
      t += 0.05;
    }
  }
  ASSERT_FALSE(host.sent.empty()) << "the rule never held";
}

TEST(SteadyStop, AsynchronousClientsEachGetTheirOwnAnswerAsTheirLimit) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 0);
  ASSERT_EQ(task.map.coordinator_task, 0);
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  node_parts_make_rule_hold(stop, host, task.plan);
  ASSERT_EQ(host.sent.size(), 2u);  // a question to each client's task
  EXPECT_EQ(host.sent[0].type, channel::kStopAsk);
  EXPECT_EQ(host.sent[0].peer, 1u);
  EXPECT_EQ(host.sent[0].tensor, 0u);
  EXPECT_EQ(host.sent[1].peer, 2u);
  EXPECT_EQ(host.sent[1].tensor, 1u);
  host.sent.clear();
  node_parts_route(router, 1, channel::kStopReply, 5, 0);
  EXPECT_TRUE(host.sent.empty());  // worker1 has not answered yet
  EXPECT_EQ(host.limits_set, 0);
  node_parts_route(router, 2, channel::kStopReply, 7, 1);
  ASSERT_EQ(host.sent.size(), 2u);
  EXPECT_EQ(host.sent[0].type, channel::kStopLimit);
  EXPECT_EQ(host.sent[0].peer, 1u);
  EXPECT_EQ(host.sent[0].step, 5);
  EXPECT_EQ(host.sent[1].peer, 2u);
  EXPECT_EQ(host.sent[1].step, 7);
  EXPECT_EQ(host.limits_set, 1);
  ASSERT_TRUE(stop.record(10, false).has_value());
  EXPECT_TRUE(stop.record(10, false)->converged);
}

TEST(SteadyStop, WorkersAtBarriersAllGetTheFurthestAnswer) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("distributed_replicated")), 0);
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  node_parts_make_rule_hold(stop, host, task.plan);
  host.sent.clear();
  node_parts_route(router, 2, channel::kStopReply, 9, 1);
  node_parts_route(router, 1, channel::kStopReply, 4, 0);
  ASSERT_EQ(host.sent.size(), 2u);
  for (const NodePartsSent& s : host.sent) {
    EXPECT_EQ(s.type, channel::kStopLimit);
    EXPECT_EQ(s.step, 9) << "graph " << s.tensor;
  }
}

TEST(SteadyStop, SynchronousGraphsAllStopAtAGlobalStepPastEveryToken) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("sync")), 0);
  const int sync_op = task.graph_of(core::LoopKind::kChiefSyncOp);
  ASSERT_GE(sync_op, 0);
  ASSERT_EQ(task.parts()[size_t(sync_op)].owner_task, 1u);  // with the chief
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  EXPECT_EQ(stop.last_global_step(), task.plan.steps);  // before the rule holds: max_steps
  node_parts_make_rule_hold(stop, host, task.plan);
  ASSERT_EQ(host.sent.size(), 3u);  // both workers and the chief's sync op
  host.sent.clear();
  node_parts_route(router, 1, channel::kStopReply, 5, 0);                  // a token 5 worker
  node_parts_route(router, 2, channel::kStopReply, 7, 1);                  // a token 7 worker
  node_parts_route(router, 1, channel::kStopReply, 6, uint64_t(sync_op));  // 6 updates made
  ASSERT_EQ(host.sent.size(), 3u);
  for (const NodePartsSent& s : host.sent) {
    EXPECT_EQ(s.type, channel::kStopLimit);
    EXPECT_EQ(s.step, 8) << "graph " << s.tensor;  // past token 7: update 8
  }
  EXPECT_EQ(stop.last_global_step(), 8);
}

TEST(SteadyStop, ADeadClientIsNeitherAskedNorWaitedFor) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 0);
  NodePartsStopHost host;
  host.dead = 1;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  stop.client_died(1);
  node_parts_make_rule_hold(stop, host, task.plan);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].peer, 1u);
  host.sent.clear();
  node_parts_route(router, 1, channel::kStopReply, 3, 0);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].step, 3);
  EXPECT_EQ(host.limits_set, 1);
}

TEST(SteadyStop, AReplyNotAskedForIsThePeersError) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 0);
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  // Before the question.
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kStopReply, 5, 0); }),
            "stop reply frame not asked for");
  node_parts_make_rule_hold(stop, host, task.plan);
  // From a task that is not the graph's client; for a graph out of range; before the first step.
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 2, channel::kStopReply, 5, 0); }),
            "stop reply for graph 0 from a task that is not its client");
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kStopReply, 5, 7); }),
            "a frame for graph 7 of 2");
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kStopReply, -2, 0); }),
            "a stop reply before the first step");
  // Answered once; the second answer was not asked for.
  node_parts_route(router, 1, channel::kStopReply, 5, 0);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kStopReply, 6, 0); }),
            "a stop reply for graph 0 not asked for");
  // A task that runs no rule (a worker) is asked nothing.
  NodePartsTask worker(node_parts_plan(node_parts_auto_steps("async")), 1);
  NodePartsStopHost worker_host;
  SteadyStop worker_stop(worker_host, worker.loop(), worker.parts(), node_parts_stop_setup(worker));
  FrameRouter worker_router;
  worker_stop.own_frames(worker_router);
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(worker_router, 2, channel::kStopReply, 5, 1); }),
      "stop reply frame not asked for");
}

TEST(SteadyStop, AClientAnswersOneQuestionFromTheCoordinatorForItsOwnGraph) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 1);  // worker0: graph 0
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  const std::string not_coordinator =
      "stop ask frame not from the coordinator, or for a graph whose client is not here";
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 2, channel::kStopAsk, -1, 0); }),
            not_coordinator);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopAsk, -1, 1); }),
            not_coordinator);  // graph 1's client is worker1
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopAsk, -1, 5); }),
            "a frame for graph 5 of 2");
  EXPECT_TRUE(host.sent.empty());
  // Between steps, before its first: the last step it ends is the one before (-1).
  node_parts_route(router, 0, channel::kStopAsk, -1, 0);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].peer, 0u);
  EXPECT_EQ(host.sent[0].type, channel::kStopReply);
  EXPECT_EQ(host.sent[0].step, -1);
  EXPECT_EQ(host.sent[0].tensor, 0u);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopAsk, -1, 0); }),
            "a second stop question for graph 0");
  // Until its limit comes, a step beyond its answer waits.
  EXPECT_TRUE(stop.hold(0));
}

TEST(SteadyStop, ALimitBelowTheReplyUnaskedOrTwiceIsThePeersError) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 1);
  NodePartsStopHost host;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopLimit, 3, 0); }),
            "a stop limit for graph 0 not asked for");
  task.loop().client(0).step = 4;  // four steps done, none active: it answers 3
  node_parts_route(router, 0, channel::kStopAsk, -1, 0);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].step, 3);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 2, channel::kStopLimit, 3, 0); }),
            "stop limit frame not from the coordinator, or for a graph whose client is not here");
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopLimit, 2, 0); }),
            "a stop limit for graph 0 not asked for");  // below its answer
  EXPECT_TRUE(stop.within_limit(0));                    // no limit yet
  node_parts_route(router, 0, channel::kStopLimit, 3, 0);
  EXPECT_FALSE(stop.within_limit(0));  // step 4 is past the limit
  EXPECT_FALSE(stop.hold(0));          // its limit is here: nothing to wait for
  task.loop().client(0).step = 3;
  EXPECT_TRUE(stop.within_limit(0));  // step 3 is the last
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 0, channel::kStopLimit, 3, 0); }),
            "a stop limit for graph 0 not asked for");
}

TEST(SteadyStop, TheChiefsSyncOpWaitingPastItsLimitEndsItsStep) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("sync")), 1);
  const int sync_op = task.graph_of(core::LoopKind::kChiefSyncOp);
  ASSERT_GE(sync_op, 0);
  ASSERT_TRUE(task.parts()[size_t(sync_op)].owner);
  NodePartsStopHost host;
  host.global_step = 8;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  Part& p = task.parts()[size_t(sync_op)];
  p.active = true;  // its step 8 waits for update 9
  p.step = 8;
  node_parts_route(router, 0, channel::kStopAsk, -1, uint64_t(sync_op));
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].step, 8);  // the updates made
  node_parts_route(router, 0, channel::kStopLimit, 8, uint64_t(sync_op));
  EXPECT_EQ(host.ended_waiting, std::vector<int>{sync_op});
}

TEST(SteadyStop, NothingIsTakenWhileTheNodeStops) {
  NodePartsTask task(node_parts_plan(node_parts_auto_steps("async")), 1);
  NodePartsStopHost host;
  host.stops = true;
  SteadyStop stop(host, task.loop(), task.parts(), node_parts_stop_setup(task));
  FrameRouter router;
  stop.own_frames(router);
  EXPECT_TRUE(node_parts_route(router, 2, channel::kStopAsk, -1, 9));
  EXPECT_TRUE(node_parts_route(router, 2, channel::kStopLimit, -5, 0));
  EXPECT_TRUE(node_parts_route(router, 2, channel::kStopReply, -5, 0));
  EXPECT_TRUE(host.sent.empty());
}

// --- JobControl ------------------------------------------------------------------------------

class NodePartsJobHost : public JobControl::Host {
 public:
  double clock_s() const override { return 100; }
  double now_s() const override { return 2; }
  bool stopping() const override { return stops; }
  void send_control_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                          const std::string& payload, double time_s) override {
    sent.push_back({peer, type, step, tensor, payload, time_s});
  }
  double start_clock(double origin_s) override {
    origins.push_back(origin_s);
    return origin_s;
  }
  int64_t global_step_seen() const override { return global_step; }
  void saw_global_step(int64_t g) override { global_step = std::max(global_step, g); }
  void client_step_ended(int g, int step, double start_s, double end_s) override {
    steps_ended.push_back({double(g), double(step), start_s, end_s});
  }
  int64_t last_global_step() const override { return last; }
  void job_ended(double end_s) override { ends.push_back(end_s); }

  bool stops = false;
  int64_t global_step = 0;
  int64_t last = 6;
  std::vector<NodePartsSent> sent;
  std::vector<double> origins;
  std::vector<std::vector<double>> steps_ended;
  std::vector<double> ends;
};

JobControl::Setup node_parts_job_setup(const NodePartsTask& task) {
  JobControl::Setup s;
  s.plan = &task.plan;
  s.spec = &task.spec;
  s.self = task.self;
  s.coordinator = uint32_t(task.map.coordinator_task);
  return s;
}

std::string node_parts_ready_payload() {
  return pack_f64({0.001, 0.0002});
}

// The coordinator of `task` once every task was ready (the job started).
void node_parts_start(JobControl& job, FrameRouter& router, const NodePartsTask& task) {
  job.coordinator_ready();
  for (uint32_t t = 1; t < task.spec.tasks.size(); ++t) {
    node_parts_route(router, t, channel::kReady, -1, 0, node_parts_ready_payload());
  }
  ASSERT_TRUE(job.started());
}

TEST(JobControl, TheJobStartsOnceEveryTaskIsReadyAndSaysSoToEachOnce) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);
  NodePartsJobHost host;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  job.coordinator_ready();
  node_parts_route(router, 2, channel::kReady, -1, 0, node_parts_ready_payload());
  EXPECT_FALSE(job.started());
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(router, 2, channel::kReady, -1, 0, node_parts_ready_payload());
            }),
            "a second ready");
  node_parts_route(router, 1, channel::kReady, -1, 0, node_parts_ready_payload());
  ASSERT_TRUE(job.started());
  ASSERT_EQ(host.sent.size(), 2u);
  for (const NodePartsSent& s : host.sent) {
    EXPECT_EQ(s.type, channel::kStart);
    EXPECT_DOUBLE_EQ(s.time_s, 100.05);  // a little ahead on the coordinator's clock
    EXPECT_EQ(unpack_i64(reinterpret_cast<const uint8_t*>(s.payload.data()), s.payload.size(), 0),
              0);  // no progress frames: nobody reads progress lines
  }
  EXPECT_EQ(host.origins, std::vector<double>{100.05});
  EXPECT_EQ(job.clock_offsets().size(), 2u);
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(router, 1, channel::kReady, -1, 0, node_parts_ready_payload());
            }),
            "a second ready");
  // A ready whose payload is short.
  NodePartsTask other(node_parts_plan({{"sync", "async"}}), 0);
  JobControl other_job(host, other.parts(), node_parts_job_setup(other));
  FrameRouter other_router;
  other_job.own_frames(other_router);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(other_router, 1, channel::kReady, -1, 0, "short"); }),
            "a payload of 5 bytes where 8 were due");
}

TEST(JobControl, StartTwiceOrNotFromTheCoordinatorIsThePeersError) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 1);
  NodePartsJobHost host;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  const std::string refused = "start frame not from the coordinator, or a second one";
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(router, 2, channel::kStart, -1, 0, pack_i64({1}), 50); }),
            refused);
  EXPECT_FALSE(job.started());
  node_parts_route(router, 0, channel::kStart, -1, 0, pack_i64({1}), 50);
  EXPECT_TRUE(job.started());
  EXPECT_TRUE(job.progress());
  EXPECT_EQ(host.origins, std::vector<double>{50});
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(router, 0, channel::kStart, -1, 0, pack_i64({1}), 60); }),
            refused);
  EXPECT_EQ(host.origins.size(), 1u);  // the clock started once
  // Ready goes to the coordinator only.
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(router, 2, channel::kReady, -1, 0, node_parts_ready_payload());
            }),
            "ready frame sent to a task that is not the coordinator");
}

TEST(JobControl, FinishedTwiceEarlyOrFromATaskNotTheGraphsClientIsThePeersError) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);
  NodePartsJobHost host;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kFinished, -1, 0); }),
            "finished before the start");
  node_parts_start(job, router, task);
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 2, channel::kFinished, -1, 0); }),
            "finished for graph 0 from a task that is not its client");
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kFinished, -1, 9); }),
            "a frame for graph 9 of 2");
  node_parts_route(router, 1, channel::kFinished, -1, 0);
  EXPECT_TRUE(job.finished(0));
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(router, 1, channel::kFinished, -1, 0); }),
            "graph 0 finished twice");
  EXPECT_TRUE(host.ends.empty());
  // To a task that is not the coordinator.
  NodePartsTask worker(node_parts_plan({{"sync", "async"}}), 2);
  JobControl worker_job(host, worker.parts(), node_parts_job_setup(worker));
  FrameRouter worker_router;
  worker_job.own_frames(worker_router);
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(worker_router, 1, channel::kFinished, -1, 0); }),
      "finished frame sent to a task that is not the coordinator");
}

TEST(JobControl, TheJobEndsOnceEveryClientFinished) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);
  NodePartsJobHost host;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  node_parts_start(job, router, task);
  EXPECT_EQ(job.finished_flags(), "00");
  node_parts_route(router, 2, channel::kFinished, -1, 1);
  EXPECT_TRUE(host.ends.empty());
  EXPECT_EQ(job.unfinished_clients(), 1);
  node_parts_route(router, 1, channel::kFinished, -1, 0);
  EXPECT_EQ(host.ends, std::vector<double>{2});
  EXPECT_TRUE(job.job_finished());
  job.maybe_end_job();  // once
  job.end_job();
  EXPECT_EQ(host.ends.size(), 1u);
}

TEST(JobControl, SynchronousTrainingAlsoWaitsForItsGlobalSteps) {
  NodePartsTask task(node_parts_plan({{"sync", "sync"}}), 0);
  NodePartsJobHost host;
  host.last = 6;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  node_parts_start(job, router, task);
  EXPECT_EQ(job.finished_flags().size(), task.parts().size());  // the sync op's graph too
  node_parts_route(router, 1, channel::kFinished, -1, 0);
  node_parts_route(router, 2, channel::kFinished, -1, 1);
  EXPECT_TRUE(host.ends.empty());  // global_step 0 of 6: a stall, for the waves to find
  // Progress says global_step reached 6.
  node_parts_route(router, 1, channel::kProgress, 3, 0, pack_i64({6}) + pack_f64({0.5, 0.7}));
  EXPECT_EQ(host.global_step, 6);
  ASSERT_EQ(host.steps_ended.size(), 1u);
  EXPECT_EQ(host.steps_ended[0], (std::vector<double>{0, 2, 0.5, 0.7}));
  job.maybe_end_job();
  EXPECT_EQ(host.ends.size(), 1u);
}

TEST(JobControl, ProgressToATaskNotTheCoordinatorOrFromTheWrongTaskIsThePeersError) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 1);
  NodePartsJobHost host;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  const std::string progress = pack_i64({1}) + pack_f64({0.1, 0.2});
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 2, channel::kProgress, 1, 1, progress); }),
      "progress frame sent to a task that is not the coordinator");
  NodePartsTask coordinator(node_parts_plan({{"sync", "async"}}), 0);
  JobControl coordinator_job(host, coordinator.parts(), node_parts_job_setup(coordinator));
  FrameRouter coordinator_router;
  coordinator_job.own_frames(coordinator_router);
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(coordinator_router, 2, channel::kProgress, 1, 0, progress);
            }),
            "progress for graph 0 from a task that is not its client");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(coordinator_router, 1, channel::kProgress, 1, 0,
                               pack_i64({1}) + pack_f64({0.1}) + pack_i64({0x7ff0000000000000}));
            }),
            "a time that is not finite");
  EXPECT_TRUE(host.steps_ended.empty());
}

TEST(JobControl, NothingIsTakenWhileTheNodeStops) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);
  NodePartsJobHost host;
  host.stops = true;
  JobControl job(host, task.parts(), node_parts_job_setup(task));
  FrameRouter router;
  job.own_frames(router);
  EXPECT_TRUE(node_parts_route(router, 2, channel::kFinished, -1, 0));
  EXPECT_TRUE(node_parts_route(router, 2, channel::kStart, -1, 0));
  EXPECT_TRUE(node_parts_route(router, 1, channel::kReady, -1, 0, "x"));
  EXPECT_FALSE(job.started());
}

// --- Restorer --------------------------------------------------------------------------------

class NodePartsRestoreHost : public Restorer::Host {
 public:
  explicit NodePartsRestoreHost(core::TraceRecorder& recorder) : recorder_(recorder) {}
  double now_s() const override { return 3; }
  bool stopping() const override { return false; }
  void after(double delay_s, bool, std::function<void()>) override { delays.push_back(delay_s); }
  void background(std::function<void()> work, std::function<void()> done) override {
    work();
    done();
  }
  void send_restore_frame(uint32_t peer, FrameType type, uint64_t tensor,
                          const std::string& payload, double time_s) override {
    sent.push_back({peer, type, -1, tensor, payload, time_s});
  }
  void global_step_restored(int64_t, const std::vector<int64_t>&) override {}
  void saw_global_step(int64_t) override {}
  void note_struck_while_down(const core::PlanFault&) override {}
  core::TraceRecorder& recorder() override { return recorder_; }

  std::vector<NodePartsSent> sent;
  std::vector<double> delays;

 private:
  core::TraceRecorder& recorder_;
};

class NodePartsSaverHost : public CheckpointSaver::Host {
 public:
  double now_s() const override { return 3; }
  bool stopping() const override { return false; }
  void send_frame(uint32_t, FrameType, const std::string&) override {}
  void background(std::function<void()> work, std::function<void()> done) override {
    work();
    done();
  }
  int64_t global_step_seen() const override { return 0; }
  std::vector<int64_t> client_steps() const override { return {}; }
};

// The plan with a job fault (the one a restarted incarnation recovers from).
core::Plan node_parts_restart_plan() {
  core::Plan plan = node_parts_plan({{"sync", "async"}});
  core::PlanFault fault;
  fault.kind = core::PlanFaultKind::kJob;
  fault.at_s = 1;
  fault.description = "machine ps dies";
  plan.faults.push_back(fault);
  return plan;
}

// A restarted task's restore: `chief` and `coordinator` as given (tasks of the plan otherwise).
struct NodePartsRestore {
  // `ps_tasks`: the tasks holding shards. With more than one, a checkpoint complete before the
  // fault waits in `checkpoint_dir` (the chief restores it).
  NodePartsRestore(uint32_t self, uint32_t chief, uint32_t coordinator, bool with_store,
                   std::vector<uint32_t> ps_tasks = {0})
      : task(node_parts_restart_plan(), self), host(*task.recorder) {
    if (ps_tasks.size() > 1) {
      checkpoint_dir = dir.path();
      CheckpointIndex index;
      index.name = "model.ckpt-0";
      index.plan_hash = "hash";
      index.start_s = 0.5;
      index.written_s = 0.75;
      index.client_steps = {1, 1};
      write_checkpoint_index(checkpoint_dir, index);
    }
    if (with_store) store.emplace(task.plan, 0);
    saver.emplace(
        saver_host,
        CheckpointSaver::Setup{&task.plan, "", "hash", nullptr, -1, self, {0}, chief, coordinator});
    Restorer::Setup s;
    s.plan = &task.plan;
    s.resume.incarnation = 1;
    s.resume.fault = 0;
    s.resume.fault_s = 1;
    s.resume.detected_s = 1.5;
    s.resume.restart_s = 2;
    s.plan_hash = "hash";
    s.checkpoint_dir = checkpoint_dir;
    s.store = store ? &*store : nullptr;
    s.ps_shard = with_store ? 0 : -1;
    s.self = self;
    s.chief = chief;
    s.coordinator = coordinator;
    s.ps_tasks = ps_tasks;
    restorer.emplace(host, task.loop(), task.parts(), *saver, s);
    restorer->own_frames(router);
  }
  core::ScopedTempDir dir{"replisim-parts"};
  std::string checkpoint_dir;
  NodePartsTask task;
  NodePartsRestoreHost host;
  NodePartsSaverHost saver_host;
  std::optional<ParameterStore> store;
  std::optional<CheckpointSaver> saver;
  std::optional<Restorer> restorer;
  FrameRouter router;
};

TEST(Restorer, ARestoreReportThatIsNotTheChiefsIsThePeersError) {
  NodePartsRestore r(0, 1, 0, true);  // the coordinator; worker0 (task 1) is the chief
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(r.router, 1, channel::kResumed, -1, 0, "not json", 2.5);
               }),
               "a restore report that is not the chief's: ");
  const std::string no_times = R"({"checkpoint": "", "global_step": 0, "client_steps": []})";
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(r.router, 1, channel::kResumed, -1, 0, no_times, 2.5);
               }),
               "a restore report that is not the chief's: ");
  EXPECT_FALSE(r.restorer->model_ready());
  // A worker back in training for a graph that is no client.
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(r.router, 2, channel::kResumed, -1, 5, "{}", 2.5); }),
            "resumed for a graph that is no client");
  node_parts_route(r.router, 2, channel::kResumed, -1, 1, "{}", 2.5);
  EXPECT_TRUE(r.restorer->resumed(1));
  // The chief's report, whole: the model is ready, the recovery slice ends there.
  const std::string report =
      R"({"checkpoint": "", "start_s": 0, "restore_s": 0.25, "ready_s": 2.75, "global_step": 0,)"
      R"( "client_steps": [], "bytes": 0})";
  node_parts_route(r.router, 1, channel::kResumed, -1, 0, report, 2.75);
  EXPECT_TRUE(r.restorer->model_ready());
  // Resumed to a task that is not the coordinator.
  NodePartsRestore worker(2, 1, 0, false);
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(worker.router, 1, channel::kResumed, -1, 0, report, 2.75);
            }),
            "resumed frame sent to a task that is not the coordinator");
}

TEST(Restorer, TheCoordinatorThatIsTheChiefHearsItsOwnRestoreReportWhole) {
  // Task 0 is both (no checkpoint to restore: a fresh start from global_step 0).
  NodePartsRestore r(0, 0, 0, true);
  r.restorer->begin();
  EXPECT_TRUE(r.restorer->model_ready());
  int recoveries = 0;
  for (const core::TraceEvent& e : r.task.events()) {
    if (e.kind == core::EventKind::kRecovery) {
      ++recoveries;
      EXPECT_EQ(e.end_s, 3);  // when the model was back
    }
  }
  EXPECT_EQ(recoveries, 1);
  const core::RestartRecord k = r.restorer->record(5, std::nullopt, std::nullopt, {false, false});
  EXPECT_EQ(k.resumed_s, 3);
  EXPECT_EQ(k.restore_s, 0);
}

TEST(Restorer, AModelAnswerForAGraphNotThisTasksOrNotFromTheCoordinatorIsThePeersError) {
  NodePartsRestore r(2, 1, 0, false);  // worker1: graph 1
  const std::string ready = R"({"ready": false, "global_step": 0, "client_steps": []})";
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(r.router, 0, channel::kModelReady, -1, 0, ready); }),
            "a model answer for graph 0, not this task's");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(r.router, 0, channel::kModelReady, -1, 1ull << 40, ready);
            }),
            "a model answer for graph 1099511627776, not this task's");
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(r.router, 1, channel::kModelReady, -1, 1, ready); }),
            "model ready frame not from the coordinator");
  // Before its client asked (it asks once the restarted task trains again), no answer is taken.
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(r.router, 0, channel::kModelReady, -1, 1, ready); }),
            "a model answer for graph 1, which asked for none");
  r.restorer->begin();  // graph 1's client polls after its start-up stagger
  ASSERT_EQ(r.host.delays.size(), 1u);
  r.host.delays.clear();
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(r.router, 0, channel::kModelReady, -1, 1, "[1, 2]");
               }),
               "a model answer that is not {ready, global_step, client_steps}: ");
  EXPECT_TRUE(r.host.delays.empty());
  // Not ready yet: it asks again recovery_wait later.
  node_parts_route(r.router, 0, channel::kModelReady, -1, 1, ready);
  EXPECT_EQ(r.host.delays, std::vector<double>{r.task.plan.recovery.recovery_wait_s});
  // A model query goes to the coordinator only; there, it is answered for the graph asked.
  EXPECT_EQ(node_parts_refusal([&] { node_parts_route(r.router, 1, channel::kModelQuery, -1, 0); }),
            "model query frame to a task that is not the coordinator");
  NodePartsRestore coordinator(0, 1, 0, true);
  node_parts_route(coordinator.router, 2, channel::kModelQuery, -1, 1);
  ASSERT_EQ(coordinator.host.sent.size(), 1u);
  EXPECT_EQ(coordinator.host.sent[0].type, channel::kModelReady);
  EXPECT_EQ(coordinator.host.sent[0].peer, 2u);
  EXPECT_EQ(coordinator.host.sent[0].tensor, 1u);
  EXPECT_FALSE(nlohmann::json::parse(coordinator.host.sent[0].payload).at("ready").get<bool>());
}

TEST(Restorer, ARestoreNotFromTheChiefNotJsonOrOutsideTheFolderIsThePeersError) {
  NodePartsRestore r(0, 1, 0, true);  // the parameter server
  const std::string good = R"({"name": "model.ckpt-3", "client_steps": [1, 2]})";
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(r.router, 2, channel::kRestore, -1, 0, good); }),
      "restore frame not from the chief of a restarted run, or to a task without variables");
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(r.router, 1, channel::kRestore, -1, 0, "{\"name\": 3}");
               }),
               "a restore that is not {name, client_steps}: ");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(r.router, 1, channel::kRestore, -1, 0,
                               R"({"name": "../model.ckpt-3", "client_steps": []})");
            }),
            "restore of \"../model.ckpt-3\"");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(r.router, 1, channel::kRestore, -1, 0,
                               R"({"name": "", "client_steps": []})");
            }),
            "restore of \"\"");
  // A task without variables.
  NodePartsRestore worker(2, 1, 0, false);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(worker.router, 1, channel::kRestore, -1, 0, good); }),
            "restore frame not from the chief of a restarted run, or to a task without variables");
  // Restored, to a chief that asked nothing (or to a task that is not the chief).
  NodePartsRestore chief(1, 1, 0, false);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(chief.router, 0, channel::kRestored, -1, 0, "{}"); }),
            "restored frame not expected");
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(r.router, 1, channel::kRestored, -1, 0, "{}"); }),
      "restored frame not expected");
}

TEST(Restorer, StepCountsThatAreNotNumbersInARestoreOrAModelAnswerAreThePeersError) {
  NodePartsRestore ps(0, 1, 0, true);
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(ps.router, 1, channel::kRestore, -1, 0,
                                  R"({"name": "model.ckpt-3", "client_steps": ["x", 2]})");
               }),
               "a restore that is not {name, client_steps}: ");
  NodePartsRestore worker(2, 1, 0, false);
  worker.restorer->begin();
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(worker.router, 0, channel::kModelReady, -1, 1,
                                  R"({"ready": true, "global_step": 4, "client_steps": ["x", 2]})");
               }),
               "a model answer that is not {ready, global_step, client_steps}: ");
  // The chief's own report to the coordinator.
  NodePartsRestore coordinator(0, 1, 0, true);
  EXPECT_PRED2(node_parts_starts_with, node_parts_refusal([&] {
                 node_parts_route(coordinator.router, 1, channel::kResumed, -1, 0,
                                  R"({"checkpoint": "", "start_s": 0, "restore_s": 0.25,)"
                                  R"( "ready_s": 2.75, "global_step": 0, "client_steps": [1.5]})",
                                  2.75);
               }),
               "a restore report that is not the chief's: ");
}

TEST(Restorer, EachShardIsRestoredOnceBeforeTheChiefTrains) {
  // The chief (task 1) restores from a checkpoint held by two PS tasks (0 and 2); a second
  // "restored" from the same one is the peer's error, and the model is back only after both.
  NodePartsRestore chief(1, 1, 0, false, {0, 2});
  chief.restorer->begin();
  ASSERT_EQ(chief.host.sent.size(), 2u);  // a restore to each PS task
  node_parts_route(chief.router, 0, channel::kRestored, -1, 0, "{}");
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(chief.router, 0, channel::kRestored, -1, 0, "{}"); }),
            "restored frame not expected");
  EXPECT_EQ(chief.host.sent.size(), 2u);  // not back yet: nothing to the coordinator
  node_parts_route(chief.router, 2, channel::kRestored, -1, 0, "{}");
  ASSERT_EQ(chief.host.sent.size(), 3u);
  EXPECT_EQ(chief.host.sent[2].type, channel::kResumed);  // the model is back
}

// --- VariableOps -----------------------------------------------------------------------------

class NodePartsValueHost : public VariableOps::Host {
 public:
  explicit NodePartsValueHost(core::TraceRecorder& recorder) : recorder_(recorder) {}
  double now_s() const override { return 4; }
  core::TraceRecorder& recorder() override { return recorder_; }
  DeviceEngine& engine(int) override { throw std::logic_error("no engine in this test"); }
  void run_for_step(DeviceEngine&, int, int64_t, std::function<void()> work,
                    std::function<void()> done) override {
    work();
    done();
  }
  DeviceEngine& copier() override { throw std::logic_error("no copier in this test"); }
  int64_t global_step_seen() const override { return seen; }
  void saw_global_step(int64_t g) override { seen = std::max(seen, g); }
  void update_made(int g, double at_s, int64_t global_step, int) override {
    updates.push_back({double(g), at_s, double(global_step)});
  }
  int update_samples(int g) const override { return recorder_.samples_per_step(g); }
  bool client_dead(int) const override { return false; }
  void evaluation_due(int64_t, double) override {}

  int64_t seen = 0;
  std::vector<std::vector<double>> updates;

 private:
  core::TraceRecorder& recorder_;
};

// Op index of the first op of `kind` in graph g, or -1.
int node_parts_op_of(const Part& p, core::OpKind kind) {
  for (size_t k = 0; k < p.graph->ops.size(); ++k) {
    if (p.graph->ops[k].kind == kind) return int(k);
  }
  return -1;
}

int node_parts_ps_shard(const NodePartsTask& task) {
  return task.plan.ps_roles.empty() ? -1 : (task.self == 0 ? 0 : -1);
}

TEST(VariableOps, AnUpdateOnTheGlobalStepsTaskCountsTheClientsStepAndFeedsTheRule) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);
  NodePartsValueHost host(*task.recorder);
  VariableOps vars(host, task.plan, task.loop(), task.parts(), node_parts_ps_shard(task));
  ASSERT_NE(vars.store(), nullptr);
  ASSERT_TRUE(vars.store()->holds_global_step());
  Part& p = task.parts()[1];
  const int increment = node_parts_op_of(p, core::OpKind::kGlobalStepIncrement);
  ASSERT_GE(increment, 0);
  p.active = true;
  p.step = 0;
  EXPECT_TRUE(vars.values(1, increment));
  EXPECT_EQ(vars.global_step_here(), 1);
  EXPECT_EQ(vars.client_steps(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(host.seen, 1);
  ASSERT_EQ(host.updates.size(), 1u);
  EXPECT_EQ(host.updates[0], (std::vector<double>{1, 4, 1}));
  EXPECT_EQ(vars.global_step_status().at("value"), 1);
  EXPECT_EQ(vars.global_step_status().at("updated_s"), 4.0);
  // A task without global_step: its plan is wrong, not a peer.
  NodePartsTask worker(node_parts_plan({{"sync", "async"}}), 1);
  NodePartsValueHost worker_host(*worker.recorder);
  VariableOps worker_vars(worker_host, worker.plan, worker.loop(), worker.parts(),
                          node_parts_ps_shard(worker));
  EXPECT_EQ(worker_vars.global_step_here(), -1);
  EXPECT_TRUE(worker_vars.global_step_status().is_null());
  EXPECT_THROW(worker_vars.values(1, increment), std::logic_error);
  EXPECT_THROW(worker_vars.sync(1, increment), std::logic_error);  // no sync queues here
}

TEST(VariableOps, ASyncTokenThatDidNotArriveWithItsBytesIsThePeersError) {
  NodePartsTask task(node_parts_plan({{"sync", "sync"}}), 1);
  NodePartsValueHost host(*task.recorder);
  VariableOps vars(host, task.plan, task.loop(), task.parts(), node_parts_ps_shard(task));
  Part& p = task.parts()[0];
  const int local_step = node_parts_op_of(p, core::OpKind::kLocalStep);
  ASSERT_GE(local_step, 0);
  ASSERT_FALSE(p.graph->ops[size_t(local_step)].inputs.empty());
  const int token_op = p.graph->ops[size_t(local_step)].inputs.front();
  p.active = true;
  p.step = 0;
  const std::string line = node_parts_refusal([&] { vars.values(0, local_step); });
  EXPECT_EQ(line, "the sync token for " + p.graph->ops[size_t(local_step)].name +
                      " did not arrive with its 8 bytes");
  p.out[size_t(token_op)] = std::make_shared<Bytes>(4);
  EXPECT_EQ(node_parts_refusal([&] { vars.values(0, local_step); }), line);
  auto token = std::make_shared<Bytes>(8);
  (*token)[0] = 7;
  p.out[size_t(token_op)] = token;
  EXPECT_EQ(node_parts_refusal([&] { vars.values(0, local_step); }), "(accepted)");
  EXPECT_EQ(task.loop().client(0).next_local_step, 7);
}

// --- TensorTransfers and the step protocol's RUN and DONE --------------------------------------

// An op of graph `p` run by task `from` whose tensor or notice task `to` takes (a send whose
// recv runs there, or an op an op there takes directly), or one it does not take (`taken`
// false); -1: none.
int node_parts_notice_op(const Part& p, uint32_t from, uint32_t to, bool taken) {
  for (size_t k = 0; k < p.graph->ops.size(); ++k) {
    if (p.task_of_op[k] != from) continue;
    const core::Op& op = p.graph->ops[k];
    const auto& n = p.notify[k];
    const bool takes = op.kind == core::OpKind::kSend
                           ? p.task_of_op[size_t(op.peer)] == to
                           : std::find(n.begin(), n.end(), to) != n.end();
    if (takes == taken) return int(k);
  }
  return -1;
}

TEST(TensorTransfers, ANoticeOrTensorForAGraphOpOrStepNotHereIsThePeersError) {
  NodePartsTask task(node_parts_plan({{"sync", "async"}}), 0);  // the parameter server
  FrameRouter router;
  task.steps->own_frames(router);
  const Part& p = task.parts()[0];
  const int taken = node_parts_notice_op(p, 1, 0, true);
  const int not_taken = node_parts_notice_op(p, 1, 0, false);
  ASSERT_GE(taken, 0);
  ASSERT_GE(not_taken, 0);
  auto id = [](uint64_t g, int op) { return (g << 32) | uint64_t(op); };
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 1, channel::kControl, 0, id(9, taken)); }),
      "a frame for graph 9 of 2");
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 1, channel::kControl, 0, id(0, 100000)); }),
      "a tensor of op 100000 of " + std::to_string(p.graph->ops.size()));
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(router, 1, channel::kControl, 0, id(0, not_taken)); }),
            "a tensor of op " + p.graph->ops[size_t(not_taken)].name +
                ", which this task does not take from it");
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 2, channel::kControl, 0, id(0, taken)); }),
      "a tensor of op " + p.graph->ops[size_t(taken)].name +
          ", which this task does not take from it");  // worker1 does not run it
  // Before its step began here: kept for steps 0 and 1 (no step yet), refused beyond.
  node_parts_route(router, 1, channel::kControl, 1, id(0, taken));
  ASSERT_EQ(p.early.count(1), 1u);
  EXPECT_EQ(p.early.at(1).size(), 1u);
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 1, channel::kControl, 2, id(0, taken)); }),
      "a notice for step 2 of graph 0, which is not in progress here");
  // A tensor's later chunk without its first.
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(router, 1, FrameType::kTensor, 0, id(0, taken), "abcd", 0, 1, 2);
            }),
            "a tensor chunk without its first");
  // Nothing is taken while the node stops.
  task.step_host.stops = true;
  EXPECT_TRUE(node_parts_route(router, 1, channel::kControl, 0, id(9, taken)));
  EXPECT_TRUE(node_parts_route(router, 2, channel::kRun, 0, 5));
}

TEST(StepRunner, ARunOrDoneThatTheStepDoesNotExpectIsThePeersError) {
  NodePartsTask ps(node_parts_plan({{"sync", "async"}}), 0);
  FrameRouter router;
  ps.steps->own_frames(router);
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 2, channel::kRun, 0, 0, pack_i64({0})); }),
      "run for graph 0 from a task that is not its client");
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 1, channel::kRun, 0, 7, pack_i64({0})); }),
      "a frame for graph 7 of 2");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(router, 1, channel::kDone, 0, 0, pack_i64({-1, -1}));
            }),
            "done for step 0 of graph 0, which is not waiting for it");  // not its client
  ps.parts()[0].step = 4;                                                // step 4 was the last here
  EXPECT_EQ(
      node_parts_refusal([&] { node_parts_route(router, 1, channel::kRun, 3, 0, pack_i64({0})); }),
      "run of step 3 of graph 0 while step 4 was the last");
  // The client's task: a run for its own graph has no ops there to run for another.
  NodePartsTask worker(node_parts_plan({{"sync", "async"}}), 1);
  FrameRouter worker_router;
  worker.steps->own_frames(worker_router);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(worker_router, 1, channel::kRun, 0, 0, pack_i64({0})); }),
            "run for graph 0, which has no ops here");  // its client's own task
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(worker_router, 0, channel::kDone, 0, 0, pack_i64({-1, -1}));
            }),
            "done for step 0 of graph 0, which is not waiting for it");  // no step active
}

// --- CollectiveOps: elastic all-reduce's sync ---------------------------------------------------

// CollectiveOps's host: records frames (a chunk's bytes too), rollbacks and resumptions; timers
// and posted work wait until the test runs them.
class NodePartsCollectiveHost : public CollectiveOps::Host {
 public:
  double now_s() const override { return 1.0; }
  bool stopping() const override { return false; }
  void post(std::function<void()> work) override { posted.push_back(std::move(work)); }
  void at_run_time(double, std::function<void()> work) override {
    timers.push_back(std::move(work));
  }
  void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                  const std::string& payload) override {
    sent.push_back({peer, type, step, tensor, payload, 0});
  }
  int next_slot(uint32_t) override { return 0; }
  void send_chunk(uint32_t peer, const FrameHeader& h, const uint8_t* data, size_t size,
                  std::shared_ptr<const void>, std::function<void()>, int) override {
    sent.push_back({peer, h.type, h.step, h.tensor,
                    std::string(reinterpret_cast<const char*>(data), size), h.time_s});
    chunk_of.push_back({h.chunk, h.chunks});
  }
  void roll_back_client(int g) override { rolled_back.push_back(g); }
  void resume_client(int g, int step, int64_t) override { resumed.emplace_back(g, step); }
  void after_step_work(std::function<void()> then) override { then(); }
  ParameterStore* store() override { return nullptr; }
  const std::string& plan_hash() const override { return hash; }

  // Routes every frame of `type` sent so far to `peer` through `router`, as from `from`; clears
  // what was sent.
  void deliver(FrameRouter& router, uint32_t from, uint32_t peer, FrameType type) {
    const std::vector<NodePartsSent> frames = std::move(sent);
    const std::vector<std::pair<uint32_t, uint32_t>> chunks = std::move(chunk_of);
    sent.clear();
    chunk_of.clear();
    size_t c = 0;
    for (const NodePartsSent& f : frames) {
      const bool chunked = f.type == channel::kElasticSync;
      const auto [chunk, of] = chunked ? chunks[c++] : std::pair<uint32_t, uint32_t>{0, 1};
      if (f.peer != peer || f.type != type) continue;
      node_parts_route(router, from, f.type, f.step, f.tensor, f.payload, 0, chunk, of);
    }
  }
  size_t count(uint32_t peer, FrameType type) const {
    size_t n = 0;
    for (const NodePartsSent& f : sent) n += f.peer == peer && f.type == type;
    return n;
  }

  std::string hash = "plan";
  std::vector<NodePartsSent> sent;
  std::vector<std::pair<uint32_t, uint32_t>> chunk_of;  // per chunk frame sent: chunk, chunks
  std::vector<std::function<void()>> posted, timers;
  std::vector<int> rolled_back;
  std::vector<std::pair<int, int>> resumed;
};

// One task of an elastic all-reduce plan of `ranks` ranks with its CollectiveOps.
struct NodePartsCollectiveTask {
  NodePartsCollectiveTask(const core::Plan& plan, uint32_t self)
      : task(plan, self), ops(host, {&task.plan, &task.map, self}, task.loop(), task.parts()) {
    ops.own_frames(router);
    ops.open(*task.recorder);
  }
  NodePartsTask task;
  NodePartsCollectiveHost host;
  CollectiveOps ops;
  FrameRouter router;
};

core::Plan node_parts_elastic_plan(int ranks) {
  return node_parts_plan(
      {{"allreduce", {{"algorithm", "ring"}, {"elastic", true}, {"rendezvous", "0.3 s"}}}}, ranks,
      "allreduce");
}

// A second death right after rank 0's task sent the first death's sync: a survivor's answer to
// that first sync, arriving after the second death, does not count as its answer to the second
// (it would get no second sync and wait for it for ever).
TEST(ElasticSync, AnAnswerToAnEarlierSyncIsNotTheAnswerToTheLatest) {
  const core::Plan plan = node_parts_elastic_plan(4);
  NodePartsCollectiveTask probe(plan, 0);  // for the tasks of the ranks
  const uint32_t root_task = probe.ops.task_of_rank(0);
  NodePartsCollectiveTask root_here(plan, root_task);
  NodePartsCollectiveTask survivor(plan, probe.ops.task_of_rank(3));
  const uint32_t survivor_task = survivor.task.self;
  root_here.ops.task_died(root_here.ops.task_of_rank(1));
  ASSERT_EQ(root_here.host.timers.size(), 1u);
  root_here.host.timers[0]();  // the rendezvous's end: the first sync goes
  EXPECT_GT(root_here.host.count(survivor_task, channel::kElasticSync), 0u);
  // Rank 2 dies before the survivor's answer comes back.
  root_here.ops.task_died(root_here.ops.task_of_rank(2));
  ASSERT_EQ(root_here.host.timers.size(), 2u);
  root_here.host.deliver(survivor.router, root_task, survivor_task, channel::kElasticSync);
  ASSERT_EQ(survivor.host.resumed.size(), 1u);  // it took the first sync
  survivor.host.deliver(root_here.router, survivor_task, root_task, channel::kElasticSynced);
  root_here.host.timers[1]();  // the second rendezvous's end
  EXPECT_GT(root_here.host.count(survivor_task, channel::kElasticSync), 0u)
      << "the survivor gets no sync after the second death";
}

// A sync that is not rank 0's commit is the peer's error, named in one line.
TEST(ElasticSync, AMalformedSyncIsThePeersError) {
  const core::Plan plan = node_parts_elastic_plan(3);
  NodePartsCollectiveTask probe(plan, 0);
  const uint32_t root_task = probe.ops.task_of_rank(0);
  NodePartsCollectiveTask survivor(plan, probe.ops.task_of_rank(2));
  const uint32_t other_task = probe.ops.task_of_rank(1);
  auto sync = [&](uint32_t from, const std::string& payload, uint32_t chunk = 0,
                  uint32_t chunks = 1) {
    return node_parts_refusal([&] {
      node_parts_route(survivor.router, from, channel::kElasticSync, 1, 0, payload, 0, chunk,
                       chunks);
    });
  };
  auto message = [](const std::string& json, const std::string& values = {}) {
    return pack_i64({int64_t(json.size())}) + json + values;
  };
  EXPECT_EQ(sync(other_task, message("{}")), "elastic sync frame not from rank 0's task");
  EXPECT_EQ(sync(root_task, "abc"),
            "an elastic sync that is not rank 0's commit: shorter than its length");
  EXPECT_EQ(sync(root_task, pack_i64({1000}) + "{}"),
            "an elastic sync that is not rank 0's commit: a JSON length past its end");
  EXPECT_EQ(sync(root_task, message("{\"first_id\":"))
                .find("an elastic sync that is not rank 0's commit: "),
            0u);
  EXPECT_EQ(sync(root_task, message("{}")).find("an elastic sync that is not rank 0's commit: "),
            0u);
  const std::string tensors =
      "\"tensors\":[{\"name\":\"v\",\"variable\":1,\"slot\":0,\"applies\":0,\"floats\":2}]";
  EXPECT_EQ(sync(root_task, message("{\"first_id\":0,\"steps\":0,\"global_step\":0,\"dead\":[1]," +
                                    tensors + "}")),
            "an elastic sync that is not rank 0's commit: values of another size than its "
            "tensors'");
  EXPECT_EQ(sync(root_task, message("{\"first_id\":0,\"steps\":0,\"global_step\":0,\"dead\":[7]," +
                                        tensors + "}",
                                    std::string(8, '\0'))),
            "an elastic sync that is not rank 0's commit: a dead rank unknown");
  EXPECT_EQ(sync(root_task, message("{\"first_id\":0,\"steps\":99999,\"global_step\":0,"
                                    "\"dead\":[1]," +
                                        tensors + "}",
                                    std::string(8, '\0'))),
            "an elastic sync that is not rank 0's commit: a first id or steps out of range");
  EXPECT_EQ(sync(root_task, "xy", 1, 2), "an elastic sync without its first chunk");
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(survivor.router, root_task, channel::kElasticSync, 0, 0,
                               message("{}"));
            }),
            "elastic sync frame of no round");
  EXPECT_TRUE(survivor.host.resumed.empty());
  // The answer goes to rank 0's task only.
  EXPECT_EQ(node_parts_refusal([&] {
              node_parts_route(survivor.router, root_task, channel::kElasticSynced, 1, 0);
            }),
            "elastic synced frame to a task that is not rank 0's");
  // Rank 0's task takes an answer to a round it sent only.
  NodePartsCollectiveTask root(plan, root_task);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(root.router, other_task, channel::kElasticSynced, 1, 0); }),
            "elastic synced frame answering no sync sent");
}

// The objective's evaluations over two parameter servers (objective_gather.h): the task holding
// global_step asks the other for its slices, evaluates once it answered, records the counters at
// the update's instant, and the job's end waits for the answer; a values frame that breaks the
// protocol is one line naming it.
class NodePartsGatherHost final : public ObjectiveGather::Host {
 public:
  explicit NodePartsGatherHost(core::TraceRecorder& recorder) : recorder_(recorder) {}
  core::TraceRecorder& recorder() override { return recorder_; }
  void send_frame(uint32_t peer, FrameType type, int64_t step,
                  const std::string& payload) override {
    sent.push_back({peer, type, step, 0, payload, 0});
  }
  bool live(uint32_t task) const override { return dead.count(task) == 0; }
  bool stopping() const override { return false; }
  void note(const std::string& line) override { notes.push_back(line); }
  std::vector<NodePartsSent> sent;
  std::set<uint32_t> dead;
  std::vector<std::string> notes;

 private:
  core::TraceRecorder& recorder_;
};

TEST(NodeParts, TheEvaluatorGathersTheOtherParameterServersSlices) {
  nlohmann::json objective = {{"data",
                               {{"set", "synthetic"},
                                {"samples", 256},
                                {"test_samples", 64},
                                {"features", 16},
                                {"classes", 4},
                                {"seed", 3}}},
                              {"model", "softmax"},
                              {"learning_rate", 0.5},
                              {"batch", 8},
                              {"evaluate_every", 4},
                              {"target", {{"accuracy", 0.9}}},
                              {"timing", "scenario"},
                              {"seed", 7}};
  NodePartsTask task(
      node_parts_plan({{"sync", "async"}, {"ps", {"ps/cpu", "w1/cpu"}}, {"objective", objective}}),
      0);
  const core::Plan& plan = task.plan;
  ASSERT_EQ(plan.ps_roles.size(), 2u);
  ObjectiveValues values(plan, {});
  ParameterStore ps0(plan, 0), ps1(plan, 1);
  values.initialise(ps0);
  values.initialise(ps1);
  const uint32_t evaluator = uint32_t(task.map.coordinator_task);
  const uint32_t other = uint32_t(task.map.task_of_role[size_t(plan.ps_roles[1])]);
  ASSERT_NE(evaluator, other);
  std::vector<int> holder_of(plan.variables.size(), -1);
  for (size_t v = 1; v < plan.variables.size(); ++v) {
    holder_of[v] = plan.variables[v].ps == 0 ? int(evaluator) : int(other);
  }
  const ParameterStore& own = plan.variables[0].ps == 0 ? ps0 : ps1;
  const ParameterStore& theirs = plan.variables[0].ps == 0 ? ps1 : ps0;
  NodePartsGatherHost eval_host(*task.recorder), other_host(*task.recorder);
  ObjectiveGather gather(eval_host, {&plan, &values, &own, evaluator, evaluator, holder_of});
  ObjectiveGather answer(other_host, {&plan, &values, &theirs, other, evaluator, holder_of});
  FrameRouter eval_router, other_router;
  gather.own_frames(eval_router);
  answer.own_frames(other_router);

  gather.evaluate(4, 0.25);
  ASSERT_EQ(eval_host.sent.size(), 1u);
  EXPECT_EQ(eval_host.sent[0].peer, other);
  EXPECT_EQ(eval_host.sent[0].type, channel::kValuesAsk);
  bool idle = false;
  gather.when_idle([&] { idle = true; });
  EXPECT_FALSE(idle);  // the answer is on its way
  ASSERT_TRUE(node_parts_route(other_router, evaluator, channel::kValuesAsk, 4, 0));
  ASSERT_EQ(other_host.sent.size(), 1u);
  const NodePartsSent& reply = other_host.sent[0];
  EXPECT_EQ(reply.type, channel::kValues);
  // A values frame of another length, for a step nobody asked, or from a task that holds
  // nothing: each one line.
  EXPECT_NE(node_parts_refusal([&] {
              node_parts_route(eval_router, other, channel::kValues, 4, 0, reply.payload + "x");
            }).find("values frame of another length"),
            std::string::npos);
  EXPECT_NE(node_parts_refusal([&] {
              node_parts_route(eval_router, other, channel::kValues, 8, 0, reply.payload);
            }).find("values frame for an evaluation that did not ask it"),
            std::string::npos);
  EXPECT_NE(node_parts_refusal([&] {
              node_parts_route(eval_router, evaluator + other + 1, channel::kValues, 4, 0,
                               reply.payload);
            }).find("values frame not from a parameter server"),
            std::string::npos);
  EXPECT_NE(node_parts_refusal([&] {
              node_parts_route(other_router, other + 7, channel::kValuesAsk, 4, 0);
            }).find("values ask frame not from the task that holds global_step"),
            std::string::npos);
  EXPECT_FALSE(idle);
  ASSERT_TRUE(node_parts_route(eval_router, other, channel::kValues, 4, 0, reply.payload));
  EXPECT_TRUE(idle);
  // The evaluation of the initial values (both stores hold them), at the update's instant.
  const core::ValueEvaluation expected =
      values.setup().evaluate(values.setup().initial_values(), 4);
  const core::Trace& trace = task.builder.traces().back();
  const uint32_t loss_name = trace.find("loss");
  int loss = 0;
  for (const core::CounterSample& c : trace.counters) {
    if (c.name == loss_name) {
      ++loss;
      EXPECT_EQ(c.time_s, 0.25);
      EXPECT_EQ(c.value, expected.result.loss);
    }
  }
  EXPECT_EQ(loss, 1);
  // A holder's death drops what waits for it; later evaluations are not made. Its answer, sent
  // before it died, may still come: nothing waits for it (once).
  const std::string at_4 = reply.payload;  // (`reply` is gone with the next frame sent)
  gather.evaluate(8, 0.5);
  ASSERT_TRUE(node_parts_route(other_router, evaluator, channel::kValuesAsk, 8, 0));
  const std::string late = other_host.sent.back().payload;
  gather.task_died(other);
  eval_host.dead.insert(other);
  bool idle_again = false;
  gather.when_idle([&] { idle_again = true; });
  EXPECT_TRUE(idle_again);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(eval_router, other, channel::kValues, 8, 0, late); }),
            "(accepted)");
  EXPECT_NE(node_parts_refusal([&] {
              node_parts_route(eval_router, other, channel::kValues, 8, 0, late);
            }).find("values frame for an evaluation that did not ask it"),
            std::string::npos);
  const size_t asks = eval_host.sent.size();
  gather.evaluate(12, 0.75);
  EXPECT_EQ(eval_host.sent.size(), asks);

  // Values that diverge end the curve and drop the evaluations waiting after them; their answers,
  // on the way, are ignored.
  NodePartsGatherHost fresh_host(*task.recorder);
  ObjectiveGather fresh(fresh_host, {&plan, &values, &own, evaluator, evaluator, holder_of});
  FrameRouter fresh_router;
  fresh.own_frames(fresh_router);
  fresh.evaluate(16, 1.0);
  fresh.evaluate(20, 1.25);
  ASSERT_EQ(fresh_host.sent.size(), 2u);
  std::string diverged = at_4;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t at = 0; at + 4 <= diverged.size(); at += 4) std::memcpy(&diverged[at], &nan, 4);
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(fresh_router, other, channel::kValues, 16, 0, diverged); }),
            "(accepted)");
  EXPECT_EQ(node_parts_refusal(
                [&] { node_parts_route(fresh_router, other, channel::kValues, 20, 0, at_4); }),
            "(accepted)");
  ASSERT_EQ(fresh_host.notes.size(), 1u);  // the report's note, as the simulation's
  EXPECT_EQ(fresh_host.notes[0], core::diverged_note(16));
  bool fresh_idle = false;
  fresh.when_idle([&] { fresh_idle = true; });
  EXPECT_TRUE(fresh_idle);
  int losses = 0;
  for (const core::CounterSample& c : trace.counters) losses += c.name == loss_name ? 1 : 0;
  EXPECT_EQ(losses, 1);  // neither the diverged evaluation nor the dropped one
}

}  // namespace
}  // namespace replisim::real::detail
