// The plan's faults for real, over loopback: a killed async worker leaves the others training
// (the report's fault row as the simulator writes it), a killed parameter server fails every
// client within the detection time (named), and with training.recovery the tasks start again from
// the checkpoint file (values equal), a killed chief stalls synchronous training as the simulator
// says, and a slowdown window slows its device's compute. Correctness and order, not timing: the
// bounds on times are loose.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <time.h>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/metrics/report.h"
#include "real/compute/cpu_engine.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;
using core::Checkpoint;
using core::CheckpointIndex;
using core::read_checkpoint;
using core::read_checkpoint_index;
namespace fs = std::filesystem;

// few_ms_model(): a run of `steps` lasts past the faults' times.
nlohmann::json timed_scenario(int workers, const nlohmann::json& training,
                              const nlohmann::json& faults) {
  nlohmann::json doc = scenario(workers, training);
  doc["model"] = few_ms_model();
  doc["faults"] = faults;
  return doc;
}

core::Plan plan_of(const nlohmann::json& doc, const std::string& strategy = "between_graph") {
  return core::compile_plan(test::parse(doc), strategy, {1});
}

core::Trace run_trace(const core::Plan& plan) {
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"connect_timeout_s", 20}, {"checkpoint_dir", dir.path()}};
  return core::run_to_trace(backend, plan, options);
}

int steps_of(const core::Trace& t, const std::string& client) {
  return count(t, EventKind::kStep, client);
}

TEST(RealFaults, AKilledAsyncWorkerLeavesTheOthersTrainingAndIsReportedAsSimulated) {
  const core::Plan plan = plan_of(timed_scenario(
      3, {{"steps", 150}}, {{{"kind", "role"}, {"role", "worker1"}, {"at", "0.4 s"}}}));
  const core::Trace real = run_trace(plan);
  EXPECT_EQ(steps_of(real, "worker0"), plan.steps);
  EXPECT_EQ(steps_of(real, "worker2"), plan.steps);
  EXPECT_LT(steps_of(real, "worker1"), plan.steps);
  EXPECT_GT(steps_of(real, "worker1"), 0);
  const core::RunMetrics measured = core::compute_metrics(real);
  ASSERT_EQ(measured.faults.size(), 1u);
  std::vector<const core::FaultRecord*> records = {&measured.faults[0]};
#if REPLISIM_WITH_SIM
  const core::RunMetrics predicted = core::compute_metrics(test::run_plan(plan));
  ASSERT_EQ(predicted.faults.size(), 1u);
  records.push_back(&predicted.faults[0]);
#endif
  for (const core::FaultRecord* f : records) {
    EXPECT_EQ(f->target, "worker1");
    EXPECT_EQ(f->description, "worker1 dies");
    EXPECT_NEAR(f->start_s, 0.4, 0.1);
    EXPECT_GE(f->lost_step, 0);
    EXPECT_GE(f->lost_work_s, 0);
  }
  // The report's cell, as the simulator writes it (the table may wrap it over lines).
  const std::string report = core::faults_text(measured);
  EXPECT_NE(report.find("worker1 dies at 0.4"), std::string::npos) << report;
  EXPECT_NE(report.find("(worker1 lost "), std::string::npos) << report;
}

// Hand-started nodes (the ps and two workers): ps0 dies at 0.4 s, and each worker's process
// exits at once (no training.recovery: the loss is the detection), saying which role died. The
// coordinator (ps0's task) died too, so the nodes' parts are merged by hand.
TEST(RealFaults, AKilledParameterServerStopsEveryClientNamingIt) {
  test::TempDir dir;
  const core::Plan plan = plan_of(
      timed_scenario(2, {{"steps", 400}}, {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.4 s"}}}));
  const std::string plan_file =
      dir.write("plan.json", core::dump_json(core::plan_to_json(plan), 1));
  nlohmann::json cluster = {{"cluster", nlohmann::json::object()},
                            {"token", "0123456789abcdef0123456789abcdef"}};
  for (const std::string task : {"ps", "worker", "worker"}) {
    cluster["cluster"][task].push_back("127.0.0.1:" + std::to_string(test::free_port()));
  }
  const std::string cluster_file = dir.write_private("cluster.json", cluster.dump());
  std::vector<std::unique_ptr<test::RunningReplisim>> nodes;
  for (const std::string role : {"ps0", "worker0", "worker1"}) {
    nodes.push_back(std::make_unique<test::RunningReplisim>(
        std::vector<std::string>{"node", "--plan", plan_file, "--role", role, "--cluster",
                                 cluster_file, "--trace-out", dir.file(role + ".trace"),
                                 "--run-trace-out", dir.file("run.trace")},
        60));
  }
  const auto start = std::chrono::steady_clock::now();
  const test::BinaryResult ps = nodes[0]->wait();
  EXPECT_EQ(ps.exit_code, -1) << "killed by its fault: " << ps.err;
  for (size_t w = 1; w < 3; ++w) {
    const test::BinaryResult r = nodes[w]->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("the job failed: ps0 dies (task ps0 died at"), std::string::npos) << r.err;
  }
  // The workers went within seconds of the death (the run had 3 s or more left).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  const test::BinaryResult merged =
      test::run_replisim({"report", "--merge", dir.file("ps0.trace"), dir.file("worker0.trace"),
                          dir.file("worker1.trace")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("job failures"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("not restarted"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("ps0 dies at 0.4"), std::string::npos) << merged.out;
}

// With training.recovery: every task starts again, the chief restores the last checkpoint whose
// index was written before the death, and the run's final variables are that file's values plus
// exactly the updates of the steps after the restart.
TEST(RealFaults, AKilledParameterServerWithRecoveryRestartsFromTheCheckpointFile) {
  const core::Plan plan = plan_of(timed_scenario(
      2,
      {{"steps", 200},
       {"checkpoint", {{"every", "0.2 s"}, {"disk_bandwidth", "500 MBps"}, {"max_to_keep", 0}}},
       {"recovery",
        {{"detect_timeout", "0.3 s"}, {"restart_delay", "0.2 s"}, {"recovery_wait", "0.1 s"}}}},
      {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.7 s"}}}));
  std::vector<CheckpointIndex> indexes;
  Checkpoint restored;
  core::RestartRecord restart;
  const RealRun run = run_real(plan, [&](const std::string& dir) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("model.ckpt-", 0) == 0 && entry.path().extension() == ".index") {
        indexes.push_back(read_checkpoint_index(entry.path().string()));
      }
    }
    const CheckpointIndex* best = nullptr;
    for (const CheckpointIndex& i : indexes) {
      if (i.written_s <= 0.7 && (best == nullptr || i.written_s > best->written_s)) best = &i;
    }
    ASSERT_NE(best, nullptr);
    restored = read_checkpoint(dir, best->name);
  });
  ASSERT_EQ(run.trace.outcome.restarts.size(), 1u);
  restart = run.trace.outcome.restarts.front();
  EXPECT_EQ(restart.cause, "ps0 dies");
  EXPECT_NEAR(restart.fault_s, 0.7, 1e-9);
  EXPECT_NEAR(restart.detected_s, 1.0, 0.3);
  EXPECT_GE(restart.restart_s, restart.detected_s + 0.2 - 1e-6);
  EXPECT_GE(restart.resumed_s, restart.restart_s);
  EXPECT_GE(restart.workers_resumed_s, restart.resumed_s);
  EXPECT_EQ(restart.checkpoint_global_step, restored.index.global_step);
  EXPECT_GT(restart.checkpoint_global_step, 0) << "a checkpoint after the start was restored";
  EXPECT_GE(restart.global_step_at_failure, restart.checkpoint_global_step);
  // Each client resumed at the steps the checkpoint recorded, and ran to the end.
  ASSERT_EQ(restored.index.client_steps.size(), 2u);
  Expected expected(plan);
  expected.start_from(restored);
  for (int c = 0; c < 2; ++c) {
    const std::string name = "worker" + std::to_string(c);
    int64_t first = -1, last = -1;
    for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kStep, name)) {
      if (e->start_s < restart.restart_s) continue;
      if (first < 0) first = e->step;
      last = e->step;
      expected.step(c, e->step);
    }
    EXPECT_GT(restored.index.client_steps[size_t(c)], 0) << name << ": the restore is mid-run";
    EXPECT_EQ(first, restored.index.client_steps[size_t(c)]) << name;
    EXPECT_EQ(last, plan.steps - 1) << name;
  }
  expected.expect_equal(run.final);
  // The report's restart cell, from the merged trace (the table may wrap it over lines).
  const std::string report = core::job_failures_text(core::compute_metrics(run.trace));
  EXPECT_NE(report.find("ps0 dies at 0.7"), std::string::npos) << report;
  EXPECT_NE(
      report.find("restarted from global_step " + std::to_string(restart.checkpoint_global_step)),
      std::string::npos)
      << report;
}

TEST(RealFaults, AKilledChiefStallsSynchronousTrainingAsTheSimulatorSays) {
  const core::Plan plan = plan_of(timed_scenario(
      2, {{"steps", 300}, {"sync", {{"replicas_to_aggregate", 2}, {"total_num_replicas", 2}}}},
      {{{"kind", "role"}, {"role", "worker0"}, {"at", "0.4 s"}}}));
  const core::Trace real = run_trace(plan);
  ASSERT_TRUE(real.outcome.stall.has_value());
  EXPECT_NE(real.outcome.stall->cause.find("the chief (worker0) died"), std::string::npos);
#if REPLISIM_WITH_SIM
  const core::Trace predicted = test::run_plan(plan);
  ASSERT_TRUE(predicted.outcome.stall.has_value());
  EXPECT_EQ(real.outcome.stall->cause, predicted.outcome.stall->cause);
  EXPECT_EQ(real.outcome.stall->live_workers, predicted.outcome.stall->live_workers);
#endif
  EXPECT_LT(real.outcome.stall->global_step, plan.steps);
  // The stall starts at the last global step before the kill at 0.4 s, so not after the kill
  // (plus the launcher's poll). How long before depends on the machine: a sanitizer build under
  // the suite's load had made one global step, at 0.21 s.
  EXPECT_GT(real.outcome.stall->time_s, 0.0);
  EXPECT_LE(real.outcome.stall->time_s, 0.5);
}

// A slowdown to 0.5x: the device's compute takes about twice as long per FLOP inside the window.
TEST(RealFaults, ASlowdownWindowSlowsItsDevicesCompute) {
  const core::Plan plan = plan_of(timed_scenario(2, {{"steps", 150}},
                                                 {{{"kind", "slowdown"},
                                                   {"device", "w0/gpu0"},
                                                   {"from", "0.2 s"},
                                                   {"until", "0.6 s"},
                                                   {"factor", 0.5}}}));
  const core::Trace t = run_trace(plan);
  std::vector<double> in, out;
  for (const core::TraceEvent& e : t.events) {
    if (e.kind != EventKind::kCompute || t.str(e.device) != "w0/gpu0" || e.flop <= 0) continue;
    const bool inside = e.start_s >= 0.2 && e.end_s <= 0.6;
    const bool outside = e.end_s < 0.2 || e.start_s >= 0.6;
    if (inside || outside) (inside ? in : out).push_back((e.end_s - e.start_s) / e.flop);
  }
  // Enough computes for a median: a sanitizer build on a slow host fits 9 in the 0.4 s window.
  ASSERT_GT(in.size(), 5u);
  ASSERT_GT(out.size(), 10u);
  std::sort(in.begin(), in.end());
  std::sort(out.begin(), out.end());
  const double ratio = in[in.size() / 2] / out[out.size() / 2];
  EXPECT_GT(ratio, 1.5);
  // Wall-clock time on a shared host: a neighbour's burst inside the 0.4 s window alone read 4.75
  // in CI and 10.56 here under a load of 8 on 2 cores (2026-12-08), so this bound only catches a
  // runaway (a window that never ends); the factor itself is checked in CPU time below.
  EXPECT_LT(ratio, 30.0);
  std::printf("slowdown 0.5x: compute time per FLOP inside / outside the window = %.2f\n", ratio);
}

// The engine's own share of a slowdown, in this thread's CPU time (which a neighbour's load does
// not stretch as it does wall time): at 0.5x an op does twice the SGEMM work.
TEST(RealFaults, ASlowdownDoublesTheEnginesWorkAtHalfSpeed) {
  const auto cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  };
  configure_blas();
  DeviceEngine plain("w0/cpu", 1), slowed("w0/cpu", 1);
  slowed.set_clock_origin(0);
  slowed.add_slowdown(0, 1e18, 0.5);
  const auto best_of_three = [&](DeviceEngine& engine) {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const double start = cpu_s();
      EXPECT_NEAR(engine.execute(4e8, 1), 4e8, 0.01 * 4e8);  // the op's FLOP, repeats not counted
      best = std::min(best, cpu_s() - start);
    }
    return best;
  };
  const double ratio = best_of_three(slowed) / best_of_three(plain);
  std::printf("slowdown 0.5x: engine CPU time slowed / plain = %.2f\n", ratio);
  EXPECT_GT(ratio, 1.7);
  EXPECT_LT(ratio, 2.4);
}

// A slowdown whose window ends while an op runs: the op goes on at full speed from the window's
// end (a thousandth of the speed for 50 ms must not hold an op for minutes).
TEST(RealFaults, AnOpLeavesASlowdownAtTheWindowsEnd) {
  const core::Plan plan = plan_of(timed_scenario(2, {{"steps", 40}},
                                                 {{{"kind", "slowdown"},
                                                   {"device", "w0/gpu0"},
                                                   {"from", "0 s"},
                                                   {"until", "0.05 s"},
                                                   {"factor", 0.001}}}));
  const core::Trace t = run_trace(plan);
  for (const core::TraceEvent& e : t.events) {
    if (e.kind == EventKind::kCompute && t.str(e.device) == "w0/gpu0" && e.start_s < 0.05) {
      EXPECT_LT(e.end_s, 0.5) << t.str(e.label);
    }
  }
  // The window is in the trace, as the simulator records it.
  const core::RunMetrics m = core::compute_metrics(t);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].description, "w0/gpu0 slowed to 0.001x");
}

// A restarted chief that dies before it restored the model: the run ends (no worker polls for
// ever) and says why; a death while the job is down changes nothing and is noted, as simulated.
TEST(RealFaults, DeathsDuringARestartEndTheRunOrAreNoted) {
  const nlohmann::json recovery = {
      {"detect_timeout", "0.3 s"}, {"restart_delay", "0.2 s"}, {"recovery_wait", "0.1 s"}};
  const core::Plan chief_dies = plan_of(timed_scenario(
      2,
      {{"steps", 400},
       {"recovery", recovery},
       {"checkpoint", {{"every", "0.2 s"}, {"disk_bandwidth", "500 MBps"}}}},
      {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.4 s"}},
       {{"kind", "role"}, {"role", "worker0"}, {"at", "0.9 s"}}}));  // as the tasks start again
  const core::Trace t = run_trace(chief_dies);
  bool said = false;
  for (const std::string& note : t.outcome.notes) {
    said |= note.find("the chief died before it restored the model") != std::string::npos;
  }
  EXPECT_TRUE(said);
  ASSERT_EQ(t.outcome.restarts.size(), 1u);
  const core::Plan struck_while_down =
      plan_of(timed_scenario(2, {{"steps", 200}, {"recovery", recovery}},
                             {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.4 s"}},
                              {{"kind", "role"}, {"role", "worker1"}, {"at", "0.5 s"}}}));
  const core::Trace down = run_trace(struck_while_down);
  EXPECT_EQ(down.outcome.restarts.size(), 1u);
  said = false;
  for (const std::string& note : down.outcome.notes) {
    said |= note ==
            "fault \"worker1 dies\" struck while the job was down (500 ms): the restart "
            "brings every task back";
  }
  EXPECT_TRUE(said);
}

// A machine whose death kills a parameter server and a worker: one fault row naming both.
TEST(RealFaults, AMachineFaultIsOneRow) {
  const core::Plan plan =
      plan_of(timed_scenario(2, {{"steps", 200}, {"ps", {"w1/cpu"}}},
                             {{{"kind", "machine"}, {"machine", "w1"}, {"at", "0.4 s"}}}));
  // The whole run as the window: under load (the sanitizer stage of a clean-clone run) worker1
  // can die before it has warmed up, which leaves compute_metrics no measurement window.
  const core::Trace trace = run_trace(plan);
  const core::RunMetrics m = core::compute_window_metrics(trace, 0, trace.outcome.end_s);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].description, "machine w1 dies");
  EXPECT_TRUE(m.job_failed);
}

}  // namespace
}  // namespace replisim::real
