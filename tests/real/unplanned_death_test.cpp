// Deaths no fault of the plan caused (a task killed from outside with SIGKILL while the job
// trains), with TF's semantics: an async worker's death leaves the others training and is
// reported as an observed fault (time, step, lost work) from what the dead task had written of its
// part; a parameter server's death fails the job, and the run still reports what it measured up
// to there (`run` then exits 1). The tests kill only the node processes their own runs started.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "core/metrics/metrics.h"
#include "core/metrics/report.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;
using core::Checkpoint;
using core::read_checkpoint;
namespace fs = std::filesystem;

// The process among `parent`'s children whose command line runs `role` ("--role worker1"), or -1.
pid_t child_running_role(pid_t parent, const std::string& role) {
  for (const test::ProcessInfo& p : test::child_processes(parent)) {
    if (test::has_argument(p, "--role", role)) return pid_t(p.pid);
  }
  return -1;
}

// few_ms_model(): a run of a few hundred steps lasts well past the kill.
core::Plan long_plan(int workers, int steps, const nlohmann::json& training = {}) {
  nlohmann::json t = {{"steps", steps}};
  if (!training.is_null()) t.update(training);
  nlohmann::json doc = scenario(workers, t);
  doc["model"] = few_ms_model();
  return core::compile_plan(test::parse(doc), "between_graph", {1});
}

// Two workers, 300 steps, a checkpoint every 0.2 s and training.recovery: the job restarts.
core::Plan recovering_plan() {
  return long_plan(
      2, 300,
      {{"checkpoint", {{"every", "0.2 s"}, {"disk_bandwidth", "500 MBps"}, {"max_to_keep", 0}}},
       {"recovery",
        {{"detect_timeout", "0.3 s"}, {"restart_delay", "0.2 s"}, {"recovery_wait", "0.1 s"}}}});
}

// The run of `plan` through the real backend in this process; once every client has finished
// `after_steps` steps, and at least 0.6 s after every client had finished one, `role`'s node
// process is killed with SIGKILL (once). The wait spans two of a launched node's trace flushes
// (every 0.25 s, real/node/node_setup.cpp), so the victim's part holds steps: steps of a few ms
// (since tasks keep their tensor memory) finished `after_steps` before the first flush.
core::Trace run_and_kill(const core::Plan& plan, const std::string& role, int after_steps) {
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"connect_timeout_s", 20}, {"checkpoint_dir", dir.path()}};
  bool killed = false;
  std::optional<std::chrono::steady_clock::time_point> first_step;
  options.progress = [&](const core::RunProgress& p) {
    if (killed || p.steps_done.empty()) return;
    const int least = *std::min_element(p.steps_done.begin(), p.steps_done.end());
    const auto now = std::chrono::steady_clock::now();
    if (least >= 1 && !first_step) first_step = now;
    if (least < after_steps || !first_step || now - *first_step < std::chrono::milliseconds(600)) {
      return;
    }
    const pid_t victim = child_running_role(::getpid(), role);
    if (victim > 0 && ::kill(victim, SIGKILL) == 0) killed = true;
  };
  core::Trace trace = core::run_to_trace(backend, plan, options);
  EXPECT_TRUE(killed) << "the run ended before " << role << " could be killed";
  return trace;
}

// The run's notes, a line each, for a failure's message.
std::string notes_of(const core::Trace& t) {
  std::string all;
  for (const std::string& note : t.outcome.notes) all += note + "\n";
  return all;
}

int steps_of(const core::Trace& t, const std::string& client) {
  return count(t, EventKind::kStep, client);
}

TEST(UnplannedDeath, AKilledAsyncWorkerLeavesTheOthersTrainingAndIsAnObservedFault) {
  const core::Plan plan = long_plan(3, 300);
  const core::Trace real = run_and_kill(plan, "worker1", 5);
  EXPECT_EQ(steps_of(real, "worker0"), plan.steps);
  EXPECT_EQ(steps_of(real, "worker2"), plan.steps);
  // What worker1 had flushed of its part before it died: some steps, not all.
  EXPECT_GE(steps_of(real, "worker1"), 1);
  EXPECT_LT(steps_of(real, "worker1"), plan.steps);
  EXPECT_FALSE(real.outcome.job_failure.has_value());
  const core::RunMetrics m = core::compute_window_metrics(real, 0, real.outcome.end_s);
  ASSERT_EQ(m.faults.size(), 1u);
  const core::FaultRecord& f = m.faults.front();
  EXPECT_TRUE(f.unplanned);
  EXPECT_EQ(f.target, "worker1");
  EXPECT_EQ(f.description, "worker1 (task worker1 on 127.0.0.1) died, no fault of the plan");
  EXPECT_GE(f.lost_step, 5);
  EXPECT_GE(f.lost_work_s, 0);
  EXPECT_LT(f.start_s, real.outcome.end_s);
  const std::string cell = core::faults_text(m);
  EXPECT_NE(cell.find("worker1 (task worker1 on 127.0.0.1) died, no fault of the plan at "),
            std::string::npos)
      << cell;
  EXPECT_NE(cell.find(" of step " + std::to_string(f.lost_step)), std::string::npos) << cell;
  bool noted = false;
  for (const std::string& note : real.outcome.notes) {
    noted |= note.find("worker1 (task worker1 on 127.0.0.1) was killed by signal 9") == 0;
  }
  EXPECT_TRUE(noted);
}

TEST(UnplannedDeath, AKilledParameterServerFailsTheJobAndKeepsItsMeasurement) {
  const core::Plan plan = long_plan(2, 400);
  const core::Trace real = run_and_kill(plan, "ps0", 5);
  ASSERT_TRUE(real.outcome.job_failure.has_value());
  EXPECT_TRUE(real.outcome.job_failure->unplanned);
  EXPECT_NE(real.outcome.job_failure->cause.find(
                "ps0 (task ps0 on 127.0.0.1) died, no fault of the plan"),
            std::string::npos)
      << real.outcome.job_failure->cause;
  for (const std::string client : {"worker0", "worker1"}) {
    EXPECT_GE(steps_of(real, client), 5) << client << "; the run's notes:\n" << notes_of(real);
    EXPECT_LT(steps_of(real, client), plan.steps) << client;
  }
  const core::RunMetrics m = core::compute_window_metrics(real, 0, real.outcome.end_s);
  EXPECT_TRUE(m.job_failed);
  EXPECT_TRUE(m.job_failure_unplanned);
  EXPECT_GT(m.throughput_samples_per_s, 0);
  const std::string cell = core::job_failures_text(m);
  EXPECT_EQ(cell.find("ps0 (task ps0 on 127.0.0.1) died, no fault of the plan: failed at "), 0u)
      << cell;
}

// An all-reduce rank killed mid-ring: the ring stalls, and the others fail the job naming the dead
// rank's role and task (Horovod before Elastic).
TEST(UnplannedDeath, AKilledAllReduceRankFailsTheJobNamingIt) {
  nlohmann::json doc = scenario(3, {{"steps", 400}, {"allreduce", {{"algorithm", "ring"}}}});
  doc["model"] = few_ms_model();
  const core::Plan plan = core::compile_plan(test::parse(doc), "allreduce", {1});
  const core::Trace real = run_and_kill(plan, "worker1", 5);
  ASSERT_TRUE(real.outcome.job_failure.has_value());
  EXPECT_TRUE(real.outcome.job_failure->unplanned);
  EXPECT_NE(real.outcome.job_failure->cause.find(
                "worker1 (task worker1 on 127.0.0.1) died, no fault of the plan"),
            std::string::npos)
      << real.outcome.job_failure->cause;
  EXPECT_GE(real.outcome.job_failure->global_step, 5);
  for (const std::string client : {"worker0", "worker2"}) {
    EXPECT_GE(steps_of(real, client), 5) << client << "; the run's notes:\n" << notes_of(real);
    EXPECT_LT(steps_of(real, client), plan.steps) << client;
  }
}

// Elastic, but rank 0 killed: its task runs the job's control and the all-reduce coordinator, so
// the job fails, saying why.
TEST(UnplannedDeath, AKilledRankZeroFailsEvenAnElasticAllReduceJob) {
  nlohmann::json doc = scenario(
      3, {{"steps", 400},
          {"allreduce", {{"algorithm", "ring"}, {"elastic", true}, {"rendezvous", "0.1 s"}}}});
  doc["model"] = few_ms_model();
  const core::Plan plan = core::compile_plan(test::parse(doc), "allreduce", {1});
  const core::Trace real = run_and_kill(plan, "worker0", 5);
  ASSERT_TRUE(real.outcome.job_failure.has_value());
  EXPECT_NE(real.outcome.job_failure->cause.find(
                "worker0 (task worker0 on 127.0.0.1) died, no fault of the plan (rank 0: the "
                "job's control and the all-reduce coordinator)"),
            std::string::npos)
      << real.outcome.job_failure->cause;
}

// With training.recovery, run's launcher starts every task again after a death from outside that
// failed the job, as after the plan's own: the restart record names the death, training resumes
// from the last checkpoint and every client reaches its steps.
TEST(UnplannedDeath, AKilledParameterServerWithRecoveryRestartsTheJob) {
  const core::Plan plan = recovering_plan();
  const core::Trace real = run_and_kill(plan, "ps0", 30);
  EXPECT_FALSE(real.outcome.job_failure.has_value());
  ASSERT_EQ(real.outcome.restarts.size(), 1u);
  const core::RestartRecord& k = real.outcome.restarts.front();
  EXPECT_EQ(k.cause, "ps0 (task ps0 on 127.0.0.1) died, no fault of the plan");
  // Seen at once (the connections reset), restarted restart_delay later.
  EXPECT_NEAR(k.detected_s, k.fault_s, 1e-9);
  EXPECT_GE(k.restart_s, k.detected_s + 0.2 - 1e-6);
  EXPECT_GE(k.resumed_s, k.restart_s);
  EXPECT_GE(k.global_step_at_failure, k.checkpoint_global_step);
  for (const std::string client : {"worker0", "worker1"}) {
    int64_t last = -1;
    for (const core::TraceEvent* e : test::events_of(real, EventKind::kStep, client)) {
      last = std::max(last, e->step);
    }
    EXPECT_EQ(last, plan.steps - 1) << client << " trained to its last step after the restart";
  }
  const std::string cell =
      core::job_failures_text(core::compute_window_metrics(real, 0, real.outcome.end_s));
  EXPECT_NE(cell.find("ps0 (task ps0 on 127.0.0.1) died, no fault of the plan at "),
            std::string::npos)
      << cell;
}

// An all-reduce rank killed with training.recovery (Horovod before Elastic: the job restarts from
// the last checkpoint): every rank restores rank 0's copy (Horovod's broadcast from rank 0),
// every client trains to its last step, and the ranks end with bitwise the same variables and
// global_step.
TEST(UnplannedDeath, AKilledAllReduceRankWithRecoveryRestartsFromEveryRanksCopy) {
  nlohmann::json doc = scenario(
      3, {{"steps", 150},
          {"allreduce", {{"algorithm", "ring"}}},
          {"checkpoint", {{"every", "0.2 s"}, {"disk_bandwidth", "500 MBps"}, {"max_to_keep", 0}}},
          {"recovery",
           {{"detect_timeout", "0.3 s"}, {"restart_delay", "0.2 s"}, {"recovery_wait", "0.1 s"}}}});
  doc["model"] = few_ms_model();
  const core::Plan plan = core::compile_plan(test::parse(doc), "allreduce", {1});
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"connect_timeout_s", 20}, {"checkpoint_dir", dir.path()}};
  bool killed = false;
  options.progress = [&](const core::RunProgress& p) {
    if (killed || p.steps_done.empty()) return;
    if (*std::min_element(p.steps_done.begin(), p.steps_done.end()) < 40) return;
    const pid_t victim = child_running_role(::getpid(), "worker1");
    if (victim > 0 && ::kill(victim, SIGKILL) == 0) killed = true;
  };
  const core::Trace real = core::run_to_trace(backend, plan, options);
  ASSERT_TRUE(killed);
  EXPECT_FALSE(real.outcome.job_failure.has_value());
  ASSERT_EQ(real.outcome.restarts.size(), 1u);
  const core::RestartRecord& k = real.outcome.restarts.front();
  EXPECT_EQ(k.cause, "worker1 (task worker1 on 127.0.0.1) died, no fault of the plan");
  EXPECT_GE(k.global_step_at_failure, k.checkpoint_global_step);
  EXPECT_GT(k.checkpoint_global_step, 0);
  for (const std::string client : {"worker0", "worker1", "worker2"}) {
    int64_t last = -1;
    for (const core::TraceEvent* e : test::events_of(real, EventKind::kStep, client)) {
      last = std::max(last, e->step);
    }
    EXPECT_EQ(last, plan.steps - 1) << client << " trained to its last step after the restart";
  }
  const Checkpoint final = read_checkpoint(dir.path(), "final");
  ASSERT_EQ(final.shards.size(), 3u);
  for (size_t r = 1; r < final.shards.size(); ++r) {
    EXPECT_EQ(final.shards[r].global_step, plan.steps);
    ASSERT_EQ(final.shards[r].tensors.size(), final.shards[0].tensors.size());
    for (size_t t = 0; t < final.shards[0].tensors.size(); ++t) {
      const std::vector<float>& a = final.shards[0].tensors[t].values;
      const std::vector<float>& b = final.shards[r].tensors[t].values;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), 4 * a.size()), 0)
          << "rank " << r << ", variable " << final.shards[0].tensors[t].variable;
    }
  }
}

// ps0 killed twice, the second time in the restarted start: each restart is in the report, the
// first one's record rebuilt by the launcher (its coordinator died before writing it).
TEST(UnplannedDeath, TwoDeathsOfTheCoordinatorUnderRecoveryAreTwoRestarts) {
  const core::Plan plan = recovering_plan();
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"connect_timeout_s", 20}, {"checkpoint_dir", dir.path()}};
  int kills = 0;
  int64_t first_kill_global_step = 0;
  options.progress = [&](const core::RunProgress& p) {
    if (kills >= 2 || p.steps_done.empty()) return;
    const int64_t least = *std::min_element(p.steps_done.begin(), p.steps_done.end());
    // Once at 30 steps; again once the restarted job trained 30 global steps past the first kill.
    if (kills == 0 ? least < 30 : p.global_step < first_kill_global_step + 30) return;
    const pid_t victim = child_running_role(::getpid(), "ps0");
    if (victim > 0 && ::kill(victim, SIGKILL) == 0) {
      if (kills == 0) first_kill_global_step = p.global_step;
      ++kills;
    }
  };
  const core::Trace real = core::run_to_trace(backend, plan, options);
  ASSERT_EQ(kills, 2);
  ASSERT_EQ(real.outcome.restarts.size(), 2u);
  for (const core::RestartRecord& k : real.outcome.restarts) {
    EXPECT_EQ(k.cause, "ps0 (task ps0 on 127.0.0.1) died, no fault of the plan");
    EXPECT_GE(k.resumed_s, k.restart_s);
    EXPECT_GE(k.global_step_at_failure, k.checkpoint_global_step);
  }
  EXPECT_LT(real.outcome.restarts[0].fault_s, real.outcome.restarts[1].fault_s);
  EXPECT_FALSE(real.outcome.job_failure.has_value());
  const std::string cell =
      core::job_failures_text(core::compute_window_metrics(real, 0, real.outcome.end_s));
  const std::string row = "ps0 (task ps0 on 127.0.0.1) died, no fault of the plan at ";
  const size_t first = cell.find(row);
  ASSERT_NE(first, std::string::npos) << cell;
  EXPECT_NE(cell.find(row, first + 1), std::string::npos) << "two restarts: " << cell;
}

// A restart that cannot start (a restarted task killed while the tasks connect again): the run
// ends with what its first start measured, as a job failure from outside, naming both.
TEST(UnplannedDeath, ARestartKilledWhileConnectingEndsTheRunWithItsMeasurement) {
  const core::Plan plan = recovering_plan();
  // The restarted worker1 (its command line has --resume) dies as soon as it appears.
  std::atomic<bool> done{false};
  std::atomic<bool> killed_restart{false};
  std::thread killer([&] {
    for (int i = 0; i < 6000 && !done && !killed_restart; ++i) {
      for (const test::ProcessInfo& p : test::child_processes(::getpid())) {
        if (!test::has_argument(p, "--role", "worker1") ||
            std::find(p.args.begin(), p.args.end(), "--resume") == p.args.end()) {
          continue;
        }
        if (::kill(p.pid, SIGKILL) == 0) killed_restart = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const core::Trace real = run_and_kill(plan, "ps0", 30);
  done = true;
  killer.join();
  ASSERT_TRUE(killed_restart) << "the restart's worker1 was never seen";
  ASSERT_TRUE(real.outcome.job_failure.has_value());
  EXPECT_TRUE(real.outcome.job_failure->unplanned);
  const std::string& cause = real.outcome.job_failure->cause;
  EXPECT_EQ(cause.find("ps0 (task ps0 on 127.0.0.1) died, no fault of the plan; the restart "
                       "failed: worker1 (task worker1 on 127.0.0.1) was killed by signal 9"),
            0u)
      << cause;
  // The first start's measurement is there: both clients' steps up to ps0's death.
  for (const std::string client : {"worker0", "worker1"}) {
    EXPECT_GE(steps_of(real, client), 30) << client;
  }
}

// `run` itself: the PS killed from outside, the report and the trace are still written, and the
// command fails (exit 1) naming the death.
TEST(UnplannedDeath, RunReportsAJobKilledFromOutsideAndExitsOne) {
  test::TempDir dir;
  nlohmann::json doc = scenario(2, {{"steps", 400}});
  doc["model"]["layers"][0]["forward_flops_per_sample"] = "20 MFLOP";
  doc["model"]["layers"][0]["params"] = 100000;
  const std::string file = dir.write("job.json", doc.dump());
  test::RunningReplisim run({"run", file, "--strategy", "between_graph", "--progress", "json",
                             "--trace-out", dir.file("run.trace"), "--json", dir.file("run.json")},
                            120);
  std::string line;
  bool killed = false;
  while (!killed && run.next_error_line(&line)) {
    // A progress line with every client past its third step.
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("steps_done")) continue;
    bool ready = true;
    for (const nlohmann::json& s : j["steps_done"]) ready &= s.get<int64_t>() >= 3;
    if (!ready) continue;
    const pid_t victim = child_running_role(run.pid(), "ps0");
    killed = victim > 0 && ::kill(victim, SIGKILL) == 0;
  }
  ASSERT_TRUE(killed) << "no progress line before the run ended";
  const test::BinaryResult r = run.wait();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("replisim: error: between_graph: the job failed at t = "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("ps0 (task ps0 on 127.0.0.1) died, no fault of the plan"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("job failures"), std::string::npos) << r.out;
  // The failed run's directory is kept and named (each task's log).
  const size_t logs = r.err.find("; logs: ");
  ASSERT_NE(logs, std::string::npos) << r.err;
  const std::string kept = r.err.substr(logs + 8, r.err.find(')', logs) - logs - 8);
  EXPECT_TRUE(fs::exists(fs::path(kept) / "ps0.log")) << kept;
  fs::remove_all(kept);
  EXPECT_TRUE(fs::exists(dir.file("run.trace")));
  std::ifstream json(dir.file("run.json"));
  const nlohmann::json report = nlohmann::json::parse(json);
  EXPECT_TRUE(report.dump().find("no fault of the plan") != std::string::npos);
}

// Every worker killed from outside: run measures the whole run (no window ends), and report reads
// its trace back the same way rather than refusing it for want of a window.
TEST(UnplannedDeath, ATraceEveryWorkerOfWasKilledReportsAsRunDid) {
  test::TempDir dir;
  nlohmann::json doc = scenario(1, {{"steps", 400}});
  doc["model"]["layers"][0]["forward_flops_per_sample"] = "20 MFLOP";
  const std::string file = dir.write("job.json", doc.dump());
  test::RunningReplisim run({"run", file, "--strategy", "between_graph", "--progress", "json",
                             "--trace-out", dir.file("run.trace")},
                            120);
  std::string line;
  bool killed = false;
  while (!killed && run.next_error_line(&line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("steps_done") || j["steps_done"].empty()) continue;
    if (j["steps_done"][0].get<int64_t>() < 3) continue;
    const pid_t victim = child_running_role(run.pid(), "worker0");
    killed = victim > 0 && ::kill(victim, SIGKILL) == 0;
  }
  ASSERT_TRUE(killed) << "no progress line before the run ended";
  const test::BinaryResult r = run.wait();
  const size_t logs = r.err.find("; logs: ");
  if (logs != std::string::npos) {
    fs::remove_all(r.err.substr(logs + 8, r.err.find(')', logs) - logs - 8));
  }
  EXPECT_NE(r.out.find("no fault of the plan"), std::string::npos) << r.out << r.err;
  const test::BinaryResult again = test::run_replisim({"report", dir.file("run.trace")});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("these figures are of the whole run"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace replisim::real
