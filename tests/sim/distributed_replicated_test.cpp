// Between-graph "distributed_replicated" (tf_cnn_benchmarks' variable_update with
// cross_replica_sync, tensorflow/benchmarks 9165a70): the plan follows the benchmark's step, the
// barriers hold every worker to the slowest one's pace, and a worker that never comes holds the
// others at a barrier, which the run names.
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace_format.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

core::Scenario published_16gpu() {
  core::Scenario s = core::load_scenario(test::scenario_path("published/resnet50_bs32_16gpu.json"));
  s.training.sync = {};
  s.training.sync.distributed_replicated = true;
  return s;
}

int ps_index(const core::Plan& plan, int role) {
  for (size_t p = 0; p < plan.ps_roles.size(); ++p) {
    if (plan.ps_roles[p] == role) return int(p);
  }
  return -1;
}

TEST(DistributedReplicated, ThePlanFollowsTheBenchmarksStep) {
  const core::Plan plan = core::compile_plan(published_16gpu(), "between_graph", {});
  EXPECT_EQ(plan.sync, "distributed_replicated");
  ASSERT_EQ(plan.clients.size(), 2u);
  EXPECT_EQ(core::step_graphs(plan).size(), 2u);  // no chief sync op
  const int ps = int(plan.ps_roles.size());
  ASSERT_EQ(ps, 2);
  for (const core::ClientGraph& graph : plan.clients) {
    std::vector<int> towers;  // the worker's GPUs, in tower order
    int last_forward = -1, last_backward = -1, first_read = -1, increment = -1;
    std::vector<const core::Op*> barriers, applies, aggregates;
    std::map<std::string, int> assigns;  // per slice
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      const core::Op& op = graph.ops[k];
      if (op.kind == core::OpKind::kLoss) towers.push_back(op.device);
      if (op.kind == core::OpKind::kForward) last_forward = int(k);
      if (op.kind == core::OpKind::kBackward) last_backward = int(k);
      if (op.kind == core::OpKind::kReadVariable && first_read < 0) first_read = int(k);
      if (op.kind == core::OpKind::kBarrier) barriers.push_back(&op);
      if (op.kind == core::OpKind::kApply) applies.push_back(&op);
      if (op.kind == core::OpKind::kAggregate) aggregates.push_back(&op);
      if (op.kind == core::OpKind::kGlobalStepIncrement) increment = int(k);
      if (op.name.rfind("assign/", 0) == 0) ++assigns[op.name.substr(7, op.name.rfind('/') - 7)];
    }
    ASSERT_EQ(towers.size(), 8u);
    // The towers compute on their own copies: nothing is read before the step's compute.
    EXPECT_GT(first_read, last_forward);
    EXPECT_GT(first_read, last_backward);
    // Per slice: an apply, a barrier, a read to the CPU and an assign to each tower.
    const size_t slices = applies.size();
    ASSERT_GT(slices, 8u);
    ASSERT_EQ(barriers.size(), slices + 1);
    EXPECT_EQ(assigns.size(), slices);
    for (const auto& [slice, n] : assigns) EXPECT_EQ(n, 8) << slice;
    // Slice i's barrier on PS task (i + 1) mod P, the step-end barrier last.
    for (size_t i = 0; i < slices; ++i) {
      EXPECT_EQ(ps_index(plan, barriers[i]->role), int((i + 1) % size_t(ps))) << barriers[i]->name;
      EXPECT_EQ(barriers[i]->name, "barrier/" + applies[i]->name.substr(6));
    }
    EXPECT_EQ(barriers.back()->name, "barrier/step_end");
    EXPECT_EQ(ps_index(plan, barriers.back()->role), int((slices + 1) % size_t(ps)));
    // Slice i's tower gradients are summed on GPU i mod 8.
    ASSERT_EQ(aggregates.size(), slices);
    for (size_t i = 0; i < slices; ++i) EXPECT_EQ(aggregates[i]->device, towers[i % 8]);
    EXPECT_EQ(graph.global_step_op, increment);
  }
}

TEST(DistributedReplicated, PlansRoundTripAndBadBarriersAreRefused) {
  const core::Plan plan = core::compile_plan(published_16gpu(), "between_graph", {});
  const nlohmann::json j = core::plan_to_json(plan);
  const core::Plan back = core::plan_from_json(j, "p.json");
  EXPECT_NO_THROW(core::validate_plan(back, "p.json"));
  EXPECT_EQ(core::plan_to_json(back), j);
  // A barrier in an async plan.
  core::Plan async = back;
  async.sync = "async";
  try {
    core::validate_plan(async, "p.json");
    FAIL() << "accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a barrier outside a distributed_replicated plan"),
              std::string::npos)
        << e.what();
  }
  // A barrier of one worker on another task than worker 0's: the two never meet.
  core::Plan moved = back;
  for (core::Op& op : moved.clients[1].ops) {
    if (op.name == "barrier/step_end")
      op.role = moved.ps_roles[0] == op.role ? moved.ps_roles[1] : moved.ps_roles[0];
  }
  EXPECT_THROW(core::validate_plan(moved, "p.json"), core::InputError);
  // Workers that pass different barriers would hold each other forever.
  core::Plan renamed = back;
  for (core::Op& op : renamed.clients[1].ops) {
    if (op.name == "barrier/step_end") op.name = "barrier/other";
  }
  try {
    core::validate_plan(renamed, "p.json");
    FAIL() << "accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/clients/1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the same ones"), std::string::npos) << e.what();
  }
}

// classroom/sync_straggler (four workers, one at half speed) as distributed_replicated.
nlohmann::json straggler(int steps) {
  nlohmann::json doc = core::read_json_file(test::scenario_path("classroom/sync_straggler.json"));
  doc["training"]["sync"] = "distributed_replicated";
  doc["training"]["steps"] = steps;
  doc["training"]["warmup_steps"] = 5;
  return doc;
}

TEST(DistributedReplicated, TheBarriersHoldEveryWorkerToTheStragglersPace) {
  const core::Trace trace = test::simulate_trace(straggler(20), "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  const double slow_s = test::client_step_time(m, "worker3");
  std::printf("step times: %.4f %.4f %.4f %.4f s; bound by %s\n",
              test::client_step_time(m, "worker0"), test::client_step_time(m, "worker1"),
              test::client_step_time(m, "worker2"), slow_s,
              core::describe_path(m.bound_by, 4, true).c_str());
  for (const char* w : {"worker0", "worker1", "worker2"}) {
    EXPECT_NEAR(test::client_step_time(m, w), slow_s, 0.01 * slow_s) << w;
  }
  EXPECT_FALSE(m.stalled) << m.stall_cause;
  // Every worker's path is mostly the straggler's GPU, followed through the barriers.
  ASSERT_EQ(m.paths.size(), 4u);
  for (const core::CriticalPath& path : m.paths) {
    std::printf("  %s: %s\n", path.client.c_str(), core::describe_path(path, 4, true).c_str());
    ASSERT_FALSE(path.shares.empty());
    EXPECT_EQ(path.shares.front().name, "slow/gpu0") << path.client;
    EXPECT_GE(path.shares.front().seconds / path.seconds, 0.6) << path.client;
  }
  // The same from the saved trace.
  std::stringstream bytes;
  core::write_trace_binary(bytes, trace);
  const core::RunMetrics saved = core::compute_metrics(core::read_trace_binary(bytes, "saved"));
  EXPECT_EQ(core::describe_path(saved.bound_by, 8, true), core::describe_path(m.bound_by, 8, true));
}

TEST(DistributedReplicated, ADeadWorkerHoldsTheOthersAtABarrier) {
  nlohmann::json doc = straggler(40);
  doc["faults"] = {{{"kind", "role"}, {"role", "worker3"}, {"at", "8 s"}}};
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_TRUE(m.stalled);
  EXPECT_NE(m.stall_cause.find("3 of 3 live workers wait at barrier \"barrier/"), std::string::npos)
      << m.stall_cause;
  EXPECT_NE(m.stall_cause.find("1 dead worker(s)"), std::string::npos) << m.stall_cause;
  EXPECT_LT(m.stall_start_s, 9.0);
}

TEST(DistributedReplicated, StepsAutoStopsEveryWorkerAtTheSameStep) {
  // The rule holds after some worker's step; the others may be a step ahead or behind, and a
  // worker left alone in a step would wait at its first barrier forever.
  nlohmann::json doc = straggler(20);
  doc["training"]["steps"] = "auto";
  doc["training"]["max_steps"] = 400;
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  EXPECT_FALSE(trace.outcome.stall.has_value()) << trace.outcome.stall->cause;
  const size_t steps = test::events_of(trace, core::EventKind::kStep, "worker0").size();
  EXPECT_GT(steps, 5u);
  EXPECT_LT(steps, 400u);
  for (const char* w : {"worker1", "worker2", "worker3"}) {
    EXPECT_EQ(test::events_of(trace, core::EventKind::kStep, w).size(), steps) << w;
  }
  const core::RunMetrics m = core::compute_metrics(trace);
  EXPECT_FALSE(m.stalled);
}

// A small model on CPU workers: cheap enough for many workers and steps.
nlohmann::json cpu_workers(int workers, int ps, int steps) {
  return {{"name", "dr-cpu"},
          {"cluster",
           {{"machines",
             {{{"name", "w"},
               {"count", workers},
               {"cpu", {{"speed", "10 GFLOPS"}}},
               {"nic", {{"bandwidth", "1 Gbps"}, {"latency", "10 us"}}}}}}}},
          {"model", {{"preset", "mlp"}, {"widths", {64, 128, 64, 10}}}},
          {"training",
           {{"batch_per_replica", 16},
            {"steps", steps},
            {"warmup_steps", 2},
            {"replicas", "w*/cpu"},
            {"ps", {{"count", ps}, {"on", "dedicated"}}},
            {"sync", "distributed_replicated"}}}};
}

TEST(DistributedReplicated, TheCriticalPathOfManyWorkersAndStepsStaysInItsCache) {
  // 40 workers x 60 steps: each barrier wait looks at every worker's step, more step tables
  // than the walk's cache once held (a breaker's use-after-free; ASan checks it here).
  const core::Trace trace = test::simulate_trace(cpu_workers(40, 2, 60), "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  std::printf("bound by %s\n", core::describe_path(m.bound_by, 4, true).c_str());
  ASSERT_EQ(m.paths.size(), 40u);
  for (const core::CriticalPath& path : m.paths) {
    for (const core::PathShare& share : path.shares) {
      if (share.name == "other") {
        EXPECT_LT(share.seconds / path.seconds, 0.05) << path.client;
      }
    }
  }
}

TEST(DistributedReplicated, APsThatRunsOnlyABarrierIsUsed) {
  // Five dedicated PS for four variables: one PS holds no variable, but runs barriers. Its death
  // fails the job, as any PS the steps use.
  const core::Scenario s = test::parse(cpu_workers(2, 5, 30));
  const core::Plan plan = core::compile_plan(s, "between_graph", {});
  std::string idle;
  for (int role : plan.ps_roles) {
    bool holds = false, runs = false;
    for (const core::Variable& v : plan.variables) holds |= plan.ps_roles[size_t(v.ps)] == role;
    for (const core::Op& op : plan.clients[0].ops) runs |= op.role == role;
    if (!holds && runs) idle = plan.roles[size_t(role)].name;
  }
  ASSERT_FALSE(idle.empty()) << "no PS without variables runs a barrier in this layout";
  nlohmann::json doc = cpu_workers(2, 5, 30);
  doc["faults"] = {{{"kind", "role"}, {"role", idle}, {"at", "20 ms"}}};
  const core::Plan faulty = core::compile_plan(test::parse(doc), "between_graph", {});
  ASSERT_EQ(faulty.faults.size(), 1u) << idle;
  EXPECT_EQ(faulty.faults[0].kind, core::PlanFaultKind::kJob) << idle;
}

TEST(DistributedReplicated, ARestartResumesEveryWorkerAtTheSameStep) {
  // A checkpoint can catch some workers just past a step's end and others not: after the
  // restart they must still meet at every barrier and finish (no stall).
  for (const char* every : {"1.3 s", "1.1 s", "0.9 s"}) {
    nlohmann::json doc = straggler(60);
    doc["training"]["checkpoint"] = {{"every", every}, {"disk_bandwidth", "500 MBps"}};
    doc["training"]["recovery"] = {
        {"detect_timeout", "1 s"}, {"restart_delay", "2 s"}, {"recovery_wait", "1 s"}};
    doc["faults"] = {{{"kind", "role"}, {"role", "ps0"}, {"at", "4.1 s"}}};
    const core::Trace trace = test::simulate_trace(doc, "between_graph");
    EXPECT_FALSE(trace.outcome.stall.has_value()) << every << ": " << trace.outcome.stall->cause;
    for (const char* w : {"worker0", "worker1", "worker2", "worker3"}) {
      const auto steps = test::events_of(trace, core::EventKind::kStep, w);
      ASSERT_FALSE(steps.empty()) << w;
      EXPECT_EQ(steps.back()->step, 59) << every << " " << w;
    }
  }
}

TEST(DistributedReplicated, AStallBeforeTheWarmUpEndsSaysSo) {
  nlohmann::json doc = straggler(20);
  doc["training"]["data_steps_per_worker"] = {20, 20, 20, 1};
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  ASSERT_TRUE(trace.outcome.stall.has_value());
  try {
    core::compute_metrics(trace);
    FAIL() << "a window from a stalled warm-up";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training stalled (3 of 3 live workers wait at barrier"),
              std::string::npos)
        << e.what();
  }
}

TEST(DistributedReplicated, TheScenarioSaysSo) {
  nlohmann::json doc = straggler(20);
  const core::Scenario s = test::parse(doc);
  EXPECT_TRUE(s.training.sync.distributed_replicated);
  EXPECT_FALSE(s.training.sync.synchronous);
  doc["training"]["sync"] = "distributed";
  try {
    test::parse(doc);
    FAIL() << "accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/training/sync"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("distributed_replicated"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replisim
