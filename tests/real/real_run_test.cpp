// Real runs over loopback (the "real" backend starting `replisim node` processes): the variables
// a run leaves are the ones its trace says it computed, bit for bit, for async and synchronous
// between-graph training and for in-graph towers; and the trace has the simulator's schema.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "core/values/checkpoint.h"
#include "core/values/gradient_fill.h"
#include "core/values/gradient_flow.h"
#include "core/values/parameter_store.h"
#include "real/backend/launcher.h"
#include "real/backend/real_backend.h"
#include "tests/real/real_support.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::real {
namespace {

using core::Checkpoint;
using core::EventKind;
using core::float_count;
using core::OpKind;
using core::read_checkpoint;

using namespace testing;

TEST(RealRun, AsyncWorkersLeaveTheSumOfTheirUpdates) {
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(2, {{"sync", "async"}})), "between_graph", {1});
  const RealRun run = run_real(plan);
  EXPECT_EQ(run.trace.meta.backend, "real");
  EXPECT_EQ(count(run.trace, EventKind::kStep, "worker0"), plan.steps);
  EXPECT_EQ(count(run.trace, EventKind::kStep, "worker1"), plan.steps);
  EXPECT_EQ(count(run.trace, EventKind::kUpdate), 2 * plan.steps);
  EXPECT_EQ(run.final.index.global_step, 2 * plan.steps);
  EXPECT_EQ(run.trace.outcome.clock_offsets.size(), 2u);  // every task but the chief's
  // Every update is exact, so their order does not matter: the sum of all of them.
  Expected expected(plan);
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
  }
  expected.expect_equal(run.final);
  // The report reads the real trace as it reads a simulated one. Async workers do not wait for
  // each other: on a loaded machine one can finish before the other has warmed up, and then the
  // report must say that its window is empty, as it does for such a simulation.
  double last_warm_s = 0, first_done_s = INFINITY;
  for (const std::string client : {"worker0", "worker1"}) {
    std::vector<const core::TraceEvent*> steps =
        test::events_of(run.trace, EventKind::kStep, client);
    ASSERT_EQ(steps.size(), size_t(plan.steps));
    last_warm_s = std::max(last_warm_s, steps[size_t(plan.warmup_steps - 1)]->end_s);
    first_done_s = std::min(first_done_s, steps.back()->end_s);
  }
  if (first_done_s > last_warm_s) {
    const core::RunMetrics m = core::compute_metrics(run.trace);
    EXPECT_GT(m.throughput_samples_per_s, 0);
  } else {
    try {
      core::compute_metrics(run.trace);
      ADD_FAILURE() << "no error for an empty window";
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("the measurement window is empty"), std::string::npos)
          << e.what();
    }
  }
}

TEST(RealRun, InGraphTowersApplyTheirMeanEachStep) {
  nlohmann::json doc = scenario(2, {{"sync", "async"}});
  const core::Plan plan = core::compile_plan(test::parse(doc), "in_graph", {1});
  const RealRun run = run_real(plan);
  EXPECT_EQ(count(run.trace, EventKind::kStep), plan.steps);
  Expected expected(plan);
  for (int s = 0; s < plan.steps; ++s) expected.step(0, s);
  expected.expect_equal(run.final);
}

// SyncReplicasOptimizer: each take averages the fresh gradients of its global step (a worker's
// gradient of local step k counts toward take k unless the trace says it was dropped), applied
// in take order.
TEST(RealRun, SyncReplicasApplyTheMeanOfTheFreshGradients) {
  const nlohmann::json doc = scenario(
      4, {{"sync", {{"replicas_to_aggregate", 2}, {"total_num_replicas", 4}}}, {"steps", 8}});
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const RealRun run = run_real(plan);
  EXPECT_EQ(run.final.index.global_step, plan.steps);
  Expected expected(plan);
  // (client, step) -> its local step; dropped (client, step, op label).
  std::map<int64_t, std::vector<std::pair<int, int64_t>>> by_local_step;
  std::set<std::tuple<std::string, int64_t, std::string>> dropped;
  for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kDropped)) {
    dropped.insert({run.trace.str(e->client), e->step, run.trace.str(e->label)});
  }
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    const std::string name = plan.roles[size_t(plan.clients[c].role)].name;
    for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kStep, name)) {
      by_local_step[e->global_step_read].push_back({int(c), e->step});
    }
  }
  int counted = 0;
  for (int64_t k = 0; k < plan.steps; ++k) {
    for (size_t v = 0; v < plan.variables.size(); ++v) {
      if (!expected.updated(v)) continue;
      const size_t n = float_count(plan.variables[v].bytes);
      std::vector<float> sum(n, 0.0f);
      int fresh = 0;
      for (const auto& [c, s] : by_local_step[k]) {
        const int acc = expected.accumulate_op(c, int(v));
        ASSERT_GE(acc, 0);
        const std::string name = plan.roles[size_t(plan.clients[size_t(c)].role)].name;
        if (dropped.count({name, s, expected.graphs_[size_t(c)]->ops[size_t(acc)].name}) > 0) {
          continue;
        }
        const std::vector<float> g = expected.gradient(c, s, acc, int(v));
        for (size_t i = 0; i < n; ++i) sum[i] += g[i];
        ++fresh;
      }
      ASSERT_GE(fresh, 2) << "take " << k << " of " << plan.variables[v].name;
      for (float& x : sum) x /= float(fresh);
      expected.apply(int(v), sum);
      counted += fresh;
    }
  }
  expected.expect_equal(run.final);
  const int dropped_count = count(run.trace, EventKind::kDropped);
  // Every accumulate ran once: counted or dropped.
  int accumulates = 0;
  size_t slices = 0;
  for (size_t v = 0; v < plan.variables.size(); ++v) slices += expected.updated(v);
  for (const auto& [k, list] : by_local_step) accumulates += int(list.size() * slices);
  EXPECT_EQ(counted + dropped_count, accumulates);
}

// A worker with two towers (it averages them and pushes once) beside a plain one, and variables
// partitioned over two parameter servers: each partition its own tensor, applied on its shard.
TEST(RealRun, AMultiTowerWorkerAndPartitionedVariables) {
  nlohmann::json doc =
      test::scenario_json({test::machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                           test::machine("ps2", "100 GFLOPS", {}, "10 Gbps"),
                           test::machine("w0", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps"),
                           test::machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
                          small_model(),
                          {{"batch_per_replica", 4},
                           {"steps", 5},
                           {"warmup_steps", 1},
                           {"replicas", {{{"towers", "w0/gpu*"}}, "w1/gpu0"}},
                           {"ps", {"ps/cpu", "ps2/cpu"}},
                           {"variable_placement", "partitioned"},
                           {"partition_min_bytes", "4 kB"},
                           {"client", "ps"},
                           {"sync", "async"}},
                          "lv08", "100 Gbps");
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  ASSERT_GT(plan.variables.size(), 3u);  // layer b (12 kB) in two partitions
  const RealRun run = run_real(plan);
  Expected expected(plan);
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
  }
  expected.expect_equal(run.final);
  EXPECT_EQ(run.final.shards.size(), 2u);
}

// Strict synchronous training whose third worker runs out of data: the run ends as a stall, the
// one the simulator reports for the same plan.
TEST(RealRun, SyncTrainingOutOfDataStallsAsTheSimulatorSays) {
  const nlohmann::json doc = scenario(
      3,
      {{"sync", {{"replicas_to_aggregate", 3}, {"total_num_replicas", 3}, {"variant", "strict"}}},
       {"steps", 6},
       {"data_steps_per_worker", {6, 6, 2}}});
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const RealRun run = run_real(plan);
  ASSERT_TRUE(run.trace.outcome.stall.has_value());
  EXPECT_EQ(run.final.index.global_step, run.trace.outcome.stall->global_step);
#if REPLISIM_WITH_SIM
  const core::Trace predicted = test::run_plan(plan);
  ASSERT_TRUE(predicted.outcome.stall.has_value());
  EXPECT_EQ(run.trace.outcome.stall->global_step, predicted.outcome.stall->global_step);
  EXPECT_EQ(run.trace.outcome.stall->live_workers, predicted.outcome.stall->live_workers);
  EXPECT_EQ(run.trace.outcome.stall->cause, predicted.outcome.stall->cause);
#endif
}

// distributed_replicated for real: each worker applies its own gradient, so the variables end as
// the sum of every worker's updates; the barriers keep the workers in step, and a worker out of
// data holds the others at a barrier, as the simulator says.
TEST(RealRun, DistributedReplicatedWorkersMeetAtEachBarrier) {
  const core::Plan plan = core::compile_plan(
      test::parse(scenario(3, {{"sync", "distributed_replicated"}})), "between_graph", {1});
  const RealRun run = run_real(plan);
  for (const std::string client : {"worker0", "worker1", "worker2"}) {
    EXPECT_EQ(count(run.trace, EventKind::kStep, client), plan.steps) << client;
  }
  EXPECT_EQ(run.final.index.global_step, 3 * plan.steps);
  EXPECT_FALSE(run.trace.outcome.stall.has_value());
  Expected expected(plan);
  for (int c = 0; c < 3; ++c) {
    for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
  }
  expected.expect_equal(run.final);
  // No worker ends step k before every worker has reached its barriers in step k.
  std::vector<std::vector<const core::TraceEvent*>> steps;
  for (const std::string client : {"worker0", "worker1", "worker2"}) {
    steps.push_back(test::events_of(run.trace, EventKind::kStep, client));
    ASSERT_EQ(steps.back().size(), size_t(plan.steps));
  }
  for (size_t k = 0; k < size_t(plan.steps); ++k) {
    for (size_t a = 0; a < 3; ++a) {
      for (size_t b = 0; b < 3; ++b) EXPECT_GE(steps[a][k]->end_s, steps[b][k]->start_s) << k;
    }
  }

  // Two PS: the first barrier is on the one without global_step.
  const nlohmann::json doc = scenario(3, {{"sync", "distributed_replicated"},
                                          {"steps", 6},
                                          {"ps", {"ps/cpu", "w1/cpu"}},
                                          {"data_steps_per_worker", {6, 6, 2}}});
  const core::Plan short_plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const RealRun stalled = run_real(short_plan);
  ASSERT_TRUE(stalled.trace.outcome.stall.has_value());
  EXPECT_NE(stalled.trace.outcome.stall->cause.find("wait at barrier"), std::string::npos)
      << stalled.trace.outcome.stall->cause;
#if REPLISIM_WITH_SIM
  const core::Trace predicted = test::run_plan(short_plan);
  ASSERT_TRUE(predicted.outcome.stall.has_value());
  EXPECT_EQ(stalled.trace.outcome.stall->cause, predicted.outcome.stall->cause);
  EXPECT_EQ(stalled.trace.outcome.stall->live_workers, predicted.outcome.stall->live_workers);
  // global_step comes from the task that holds it, not from the barrier's task.
  EXPECT_EQ(stalled.trace.outcome.stall->global_step, predicted.outcome.stall->global_step);
#endif
  EXPECT_EQ(stalled.final.index.global_step, stalled.trace.outcome.stall->global_step);
}

// The chief's hooks for real: a checkpoint when its session starts, after a step once `every`
// passed, and when it ends; summaries every N steps; the last five checkpoints kept, each whole.
TEST(RealRun, TheChiefCheckpointsAndWritesSummaries) {
  const nlohmann::json doc =
      scenario(2, {{"sync", "async"},
                   {"steps", 10},
                   {"checkpoint", {{"every", "1 ms"}, {"disk_bandwidth", "500 MBps"}}},
                   {"summaries", {{"every_steps", 2}, {"bytes", "1 kB"}}}});
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  std::vector<std::string> indexes;
  Checkpoint last;
  size_t summary_bytes = 0;
  const RealRun run = run_real(plan, [&](const std::string& dir) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("model.ckpt-", 0) == 0 && name.size() > 6 &&
          name.compare(name.size() - 6, 6, ".index") == 0) {
        indexes.push_back(name.substr(0, name.size() - 6));
      }
    }
    std::sort(indexes.begin(), indexes.end(), [](const std::string& a, const std::string& b) {
      return std::stoi(a.substr(11)) < std::stoi(b.substr(11));
    });
    for (const std::string& name : indexes) read_checkpoint(dir, name);  // each one whole
    if (!indexes.empty()) last = read_checkpoint(dir, indexes.back());
    summary_bytes = std::filesystem::file_size(dir + "/events.summaries");
  });
  int checkpoints = 0, summaries = 0;
  for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kCheckpoint)) {
    (run.trace.str(e->label) == "summaries" ? summaries : checkpoints) += 1;
  }
  // At the start, after each step but the last (every 1 ms has passed), at the end: as the
  // simulator has it.
  EXPECT_EQ(checkpoints, 1 + plan.steps - 1 + 1);
#if REPLISIM_WITH_SIM
  EXPECT_EQ(count(test::run_plan(plan), EventKind::kCheckpoint), checkpoints + summaries);
#endif
  EXPECT_EQ(summaries, (plan.steps - 1) / 2);
  EXPECT_EQ(summary_bytes, size_t(summaries) * 1000);
  ASSERT_EQ(indexes.size(), 5u);
  EXPECT_EQ(indexes.back(), "model.ckpt-" + std::to_string(checkpoints - 1));
  // The session-end save comes after the chief's last step: the other worker may still be
  // running, so its global_step is at most the final one.
  EXPECT_LE(last.index.global_step, run.final.index.global_step);
  EXPECT_EQ(run.final.index.global_step, 2 * plan.steps);
}

// The real backend's note on how its tasks used the cores: the "cores: " note of the trace.
std::string cores_note(const core::Trace& trace) {
  for (const std::string& note : trace.notes()) {
    if (note.rfind("cores: ", 0) == 0) return note;
  }
  return "";
}

// Tensor memory is reused from step to step, as TensorFlow's allocator keeps it
// (real/node/run_node.cpp keep_tensor_memory): the minor page faults of a real run's tasks do not
// grow with its steps. Two variables: a 4 MB one (glibc's default mapped each tensor of it afresh:
// about 3,100 faults a step, measured, 15 ms per 4 MB on a paravirtualised host) and a 72 MB one,
// above the 64 MiB a thread's own arena can hold (mapped afresh even with M_MMAP_MAX 0 until every
// thread shared the main arena: about 35,000 faults a step).
TEST(RealRun, TensorMemoryIsReusedFromStepToStep) {
#ifdef REPLISIM_SANITIZED
  // AddressSanitizer's allocator replaces glibc's (mallopt does not reach it), and its quarantine
  // gives freed memory back on purpose.
  GTEST_SKIP() << "Release only: under AddressSanitizer the allocator is the sanitizer's";
#endif
  nlohmann::json s = scenario(1, {{"sync", "async"}, {"warmup_steps", 0}});
  s["model"] = {{"layers",
                 {{{"name", "small"},
                   {"params", 1 << 20},
                   {"forward_flops_per_sample", "20 kFLOP"},
                   {"activation_bytes_per_sample", "1 kB"}},
                  {{"name", "large"},
                   {"params", 18 << 20},
                   {"forward_flops_per_sample", "20 kFLOP"},
                   {"activation_bytes_per_sample", "1 kB"}}}}};
  auto faults_of_run = [s](int steps) mutable {
    s["training"]["steps"] = steps;
    const core::Plan plan = core::compile_plan(test::parse(s), "between_graph", {1});
    rusage before{}, after{};
    ::getrusage(RUSAGE_CHILDREN, &before);  // the tasks are the launcher's children, waited for
    run_real(plan);
    ::getrusage(RUSAGE_CHILDREN, &after);
    return double(after.ru_minflt - before.ru_minflt);
  };
  const double short_run = faults_of_run(3), long_run = faults_of_run(9);
  const double per_step = (long_run - short_run) / 6;
  std::cout << "minor page faults: " << short_run << " in 3 steps, " << long_run
            << " in 9: " << per_step << " a step\n";
  EXPECT_LT(per_step, 256) << "tensor memory is faulted in afresh every step";
}

// Where the launcher may use a core per task, each task is pinned to its own (the note names
// them, each a core the launcher may use, no two the same); on fewer cores than computing
// threads none is pinned, and the note says how many shared how many.
TEST(RealRun, EachTaskRunsOnACoreOfItsOwnWhereThereAreEnough) {
  const std::vector<int> allowed = launch::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  // One worker and its PS: two tasks, one computing thread each.
  const core::Plan plan =
      core::compile_plan(test::parse(scenario(1, {{"sync", "async"}})), "between_graph", {1});
  if (allowed.size() >= 2) {
    const std::string note = cores_note(run_real(plan).trace);
    ASSERT_EQ(note.rfind("cores: each task on cores of its own (sched_setaffinity):", 0), 0u)
        << note;
    std::set<int> cores;
    for (size_t at = note.find(" on core "); at != std::string::npos;
         at = note.find(" on core ", at + 1)) {
      const int core = std::atoi(note.c_str() + at + 9);
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), core), allowed.end()) << note;
      cores.insert(core);
    }
    EXPECT_EQ(cores.size(), 2u) << note;
  }
  // The launcher on one core (its children inherit the affinity of the thread that forks them).
  cpu_set_t all, one;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  CPU_SET(allowed.front(), &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  std::string shared;
  try {
    shared = cores_note(run_real(plan).trace);
  } catch (...) {
    ::sched_setaffinity(0, sizeof all, &all);
    throw;
  }
  ::sched_setaffinity(0, sizeof all, &all);
  EXPECT_EQ(shared,
            "cores: 2 tasks with 2 computing threads on 1 core: not pinned, the kernel's "
            "scheduler shared the cores among them");
}

// Several NICs per machine (nic.count) shape nothing on loopback: the run goes as with one, its
// tasks reading the plan's platform of several NIC links, and leaves the same variables. A shaped
// network (--isolate netns) refuses it in one line before it needs root or starts a task.
TEST(RealRun, AMachineOfSeveralNicsRunsOnLoopbackAndIsNotShaped) {
  nlohmann::json doc = scenario(2, {{"sync", "async"}});
  doc["cluster"]["machines"][0]["nic"]["count"] = 2;  // the PS machine
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  ASSERT_EQ(plan.platform.machines[0].nic_links.size(), 2u);
  const RealRun run = run_real(plan);
  EXPECT_EQ(run.trace.meta.platform.machines[0].nic_links, plan.platform.machines[0].nic_links);
  EXPECT_EQ(count(run.trace, EventKind::kUpdate), 2 * plan.steps);
  Expected expected(plan);
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < plan.steps; ++s) expected.step(c, s);
  }
  expected.expect_equal(run.final);
  RealBackend backend;
  core::RunOptions options;
  options.settings = {{"node_binary", REPLISIM_BINARY}, {"isolate", "netns"}};
  try {
    core::run_to_trace(backend, plan, options);
    ADD_FAILURE() << "a machine of two NICs was shaped";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.json_path(), "/platform/machines/0/nic_links");
    EXPECT_NE(e.message().find("--isolate netns: several NICs per machine are not emulated yet "
                               "(machine \"ps\" has 2)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace replisim::real
