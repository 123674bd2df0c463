// The chief's checkpoints and summaries, job failures (a parameter server, the in-graph client or
// a tower dies) with and without restarts from the last checkpoint.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::recovery_test {
namespace {

using test::events_of;
using test::machine;

constexpr double kBatch = 32;
constexpr double kStepS = 3 * 1e9 * kBatch / 2e12;  // compute of one step at 2 TFLOPS: 48 ms
// 1e6 fp32 parameters (plus global_step) at 40 MB/s: a checkpoint takes 0.1 s to write.
constexpr double kCheckpointS = (4e6 + 8) / 40e6;

// Four compute-bound workers and a PS machine (100 steps, about 5 s), checkpoints every second.
nlohmann::json four_workers(const nlohmann::json& extra_training, const nlohmann::json& faults) {
  std::vector<nlohmann::json> machines = {machine("p", "1 TFLOPS", {}, "100 Gbps")};
  for (int i = 0; i < 4; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps"));
  }
  nlohmann::json training = {{"replicas", "w*/gpu0"},
                             {"ps", {"p/cpu"}},
                             {"steps", 100},
                             {"warmup_steps", 10},
                             {"batch_per_replica", kBatch},
                             {"costs", "none"},
                             {"checkpoint", {{"every", "1 s"}, {"disk_bandwidth", "40 MBps"}}}};
  training.update(extra_training);
  nlohmann::json doc =
      test::scenario_json(machines, test::one_layer_model(1e6, "1 GFLOP"), training);
  doc["faults"] = faults;
  return doc;
}

const nlohmann::json kRecovery = {
    {"recovery",
     {{"detect_timeout", "0.5 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "0.3 s"}}}};

TEST(Checkpoints, TheChiefPausesWhileWriting) {
  const core::Trace trace = test::simulate_trace(
      four_workers(nlohmann::json::object(), nlohmann::json::array()), "between_graph");
  const auto checkpoints = events_of(trace, core::EventKind::kCheckpoint);
  const auto chief_steps = events_of(trace, core::EventKind::kStep, "worker0");
  ASSERT_GE(checkpoints.size(), 5u);
  // One when the session starts, before the first step.
  EXPECT_LE(checkpoints.front()->end_s, chief_steps.front()->start_s + 1e-9);
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const core::TraceEvent& c = *checkpoints[i];
    EXPECT_EQ(trace.str(c.actor), "worker0");
    EXPECT_NEAR(c.end_s - c.start_s, kCheckpointS, 1e-9);
    if (i + 1 == checkpoints.size()) {
      // The session-end save, right after the chief's last step.
      EXPECT_NEAR(c.start_s, chief_steps.back()->end_s, 1e-9);
    } else if (i > 0) {
      // After the first chief step that ends a period or more after the last save.
      const double gap = c.start_s - checkpoints[i - 1]->start_s;
      EXPECT_GE(gap, 1.0 - 1e-9);
      EXPECT_LT(gap, 1.0 + 2 * kStepS + kCheckpointS);
    }
    // The chief's next step waits for the write.
    for (const core::TraceEvent* s : chief_steps) {
      EXPECT_FALSE(s->start_s > c.start_s + 1e-9 && s->start_s < c.end_s - 1e-9)
          << "step " << s->step << " starts during the checkpoint at " << c.start_s;
    }
  }
  const core::RunMetrics m = core::compute_metrics(trace);
  EXPECT_EQ(m.checkpoints_written, int(checkpoints.size()));
  EXPECT_NEAR(m.chief_writing_s, kCheckpointS * double(checkpoints.size()), 1e-6);
  // The chief loses the write time before its last step (its steps end later by about that
  // much), the others nothing.
  const double chief_end = chief_steps.back()->end_s;
  const double other_end = events_of(trace, core::EventKind::kStep, "worker1").back()->end_s;
  EXPECT_NEAR(chief_end - other_end, m.chief_writing_s - kCheckpointS, 3 * kStepS);
}

TEST(Checkpoints, SummariesEveryNChiefSteps) {
  const core::RunMetrics m =
      test::simulate(four_workers({{"summaries", {{"every_steps", 10}, {"bytes", "4 MB"}}}},
                                  nlohmann::json::array()),
                     "between_graph");
  // After chief steps 10, 20, ..., 90 (none after the last step: the run ends there).
  EXPECT_EQ(m.summaries_written, 9);
  EXPECT_NEAR(m.chief_writing_s, 9 * 0.1 + kCheckpointS * m.checkpoints_written, 1e-6);
}

TEST(Recovery, APsDeathFailsEveryWorkerAndTheJobRestartsFromTheCheckpoint) {
  const double death_s = 2.5, detect_s = 0.5, restart_delay_s = 1, wait_s = 0.3;
  const nlohmann::json doc =
      four_workers(kRecovery, {{{"kind", "role"}, {"role", "ps0"}, {"at", "2.5 s"}}});
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.recoveries.size(), 1u);
  const core::RecoveryRecord& k = m.recoveries[0];
  EXPECT_EQ(k.cause, "ps0 dies");
  EXPECT_DOUBLE_EQ(k.fault_s, death_s);
  EXPECT_DOUBLE_EQ(k.detected_s, death_s + detect_s);
  const double restart_s = death_s + detect_s + restart_delay_s;
  EXPECT_NEAR(k.resumed_s, restart_s + kCheckpointS, 1e-9);  // the chief restores
  EXPECT_NEAR(k.recovery_time_s, detect_s + restart_delay_s + kCheckpointS, 1e-9);
  // It restored the last checkpoint on disk before the death.
  const core::TraceEvent* last = nullptr;
  for (const core::TraceEvent* c : events_of(trace, core::EventKind::kCheckpoint)) {
    if (c->end_s <= death_s) last = c;
  }
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(k.checkpoint_global_step, last->global_step_after);
  EXPECT_NEAR(k.lost_work_s, death_s - last->start_s, 1e-9);
  EXPECT_GT(k.lost_global_steps, 4);
  // No worker finishes a step between the death and the restart.
  for (const core::TraceEvent* s : events_of(trace, core::EventKind::kStep)) {
    EXPECT_FALSE(s->end_s > death_s && s->end_s < restart_s) << trace.str(s->client);
  }
  double last_worker_back_s = 0;
  std::vector<double> workers_back_s;
  for (int w = 0; w < 4; ++w) {
    const std::string name = "worker" + std::to_string(w);
    const auto steps = events_of(trace, core::EventKind::kStep, name);
    // Training resumes: the chief after its restore and its session-start save, the others at
    // their first poll for a ready model after the restore; they come up one by one, as at
    // the first start, so their polls are staggered.
    const core::TraceEvent* first_after = nullptr;
    for (const core::TraceEvent* s : steps) {
      if (s->start_s > restart_s && first_after == nullptr) first_after = s;
    }
    ASSERT_NE(first_after, nullptr) << name;
    const double up_s = restart_s + plan.clients[size_t(w)].start_offset_s;
    const double expected =
        w == 0 ? restart_s + 2 * kCheckpointS
               : up_s + wait_s * std::ceil(std::max(0.0, restart_s + kCheckpointS - up_s) / wait_s);
    EXPECT_NEAR(first_after->start_s, expected, 1e-6) << name;
    if (w > 0) {
      last_worker_back_s = std::max(last_worker_back_s, expected);
      workers_back_s.push_back(first_after->start_s);
    }
    // Every worker still completes all its steps.
    EXPECT_EQ(steps.back()->step, 99) << name;
  }
  EXPECT_NEAR(k.workers_resumed_s, last_worker_back_s, 1e-6);
  // Not in lock step: the three non-chief workers come back at different times.
  std::sort(workers_back_s.begin(), workers_back_s.end());
  EXPECT_GT(workers_back_s[1] - workers_back_s[0], 1e-3);
  EXPECT_GT(workers_back_s[2] - workers_back_s[1], 1e-3);
  // Rolled-back updates do not count as throughput.
  int updates = 0, rolled_back = 0;
  for (const core::TraceEvent* u : events_of(trace, core::EventKind::kUpdate)) {
    if (u->end_s <= m.window_start_s || u->end_s > m.window_end_s) continue;
    ++updates;
    rolled_back += u->end_s > last->start_s && u->end_s <= k.detected_s;
  }
  EXPECT_GT(rolled_back, 0);
  EXPECT_EQ(m.updates_in_window, updates - rolled_back);
}

TEST(Recovery, APsWithoutVariablesDiesHarmlessly) {
  // Three PS for two variables (global_step and one layer): ps2 holds nothing, no step touches
  // it, and no RPC to it fails when it dies.
  std::vector<nlohmann::json> machines;
  for (int i = 0; i < 3; ++i)
    machines.push_back(machine("p" + std::to_string(i), "1 TFLOPS", {}, "100 Gbps"));
  for (int i = 0; i < 2; ++i) {
    machines.push_back(machine("w" + std::to_string(i), "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps"));
  }
  nlohmann::json doc = test::scenario_json(
      machines, test::one_layer_model(1e6, "1 GFLOP"),
      {{"replicas", "w*/gpu0"}, {"ps", {"p0/cpu", "p1/cpu", "p2/cpu"}}, {"costs", "none"}});
  doc["faults"] = {{{"kind", "role"}, {"role", "ps2"}, {"at", "1 s"}}};
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  EXPECT_TRUE(plan.faults.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("ps2 dies"), std::string::npos) << plan.notes[0];
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  EXPECT_FALSE(m.job_failed);
  EXPECT_TRUE(m.recoveries.empty());
  // The PS holding the layer does fail the job.
  doc["faults"][0]["role"] = "ps1";
  EXPECT_TRUE(test::simulate(doc, "between_graph").job_failed);
  // A machine with a worker and a PS without variables: the worker dies, the job goes on.
  doc["training"]["ps"] = {"p0/cpu", "p1/cpu", "w1/cpu"};
  doc["faults"] = {{{"kind", "machine"}, {"machine", "w1"}, {"at", "1 s"}}};
  const core::Plan machine_plan = core::compile_plan(test::parse(doc), "between_graph", {1});
  ASSERT_EQ(machine_plan.faults.size(), 1u);
  EXPECT_EQ(machine_plan.faults[0].kind, core::PlanFaultKind::kRole);
  EXPECT_EQ(machine_plan.faults[0].clients.size(), 1u);
  ASSERT_EQ(machine_plan.notes.size(), 1u);
  EXPECT_NE(machine_plan.notes[0].find("ps2 holds no variables"), std::string::npos)
      << machine_plan.notes[0];
  const core::RunMetrics after_machine = test::simulate(doc, "between_graph");
  EXPECT_FALSE(after_machine.job_failed);
  ASSERT_EQ(after_machine.faults.size(), 1u);
}

TEST(Recovery, WithoutRecoveryAPsDeathEndsTheRun) {
  const core::Trace trace =
      test::simulate_trace(four_workers(nlohmann::json::object(),
                                        {{{"kind", "role"}, {"role", "ps0"}, {"at", "2.5 s"}}}),
                           "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  EXPECT_TRUE(m.job_failed);
  EXPECT_DOUBLE_EQ(m.job_failure_s, 2.5);
  EXPECT_NE(m.job_failure_cause.find("ps0 dies"), std::string::npos) << m.job_failure_cause;
  EXPECT_TRUE(m.recoveries.empty());
  EXPECT_LE(m.window_end_s, 2.5);
  for (const core::TraceEvent* s : events_of(trace, core::EventKind::kStep)) {
    EXPECT_LE(s->end_s, 2.5);
  }
}

TEST(Recovery, TheChiefsDeathStopsCheckpointsAsyncGoesOn) {
  const core::Trace trace = test::simulate_trace(
      four_workers(kRecovery, {{{"kind", "role"}, {"role", "worker0"}, {"at", "2.5 s"}}}),
      "between_graph");
  const auto checkpoints = events_of(trace, core::EventKind::kCheckpoint);
  ASSERT_GE(checkpoints.size(), 2u);
  EXPECT_LT(checkpoints.back()->start_s, 2.5);
  for (int w = 1; w < 4; ++w) {
    EXPECT_EQ(events_of(trace, core::EventKind::kStep, "worker" + std::to_string(w)).back()->step,
              99);
  }
  EXPECT_TRUE(core::compute_metrics(trace).recoveries.empty());  // a worker's death: no restart
}

// In-graph: two towers on two machines, the client and the variables on the first.
nlohmann::json in_graph(const nlohmann::json& faults) {
  nlohmann::json training = {{"replicas", {"a/gpu0", "b/gpu0"}},
                             {"steps", 60},
                             {"warmup_steps", 5},
                             {"costs", "none"},
                             {"checkpoint", {{"every", "1 s"}, {"disk_bandwidth", "40 MBps"}}}};
  training.update(kRecovery);
  nlohmann::json doc = test::scenario_json({machine("a", "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps"),
                                            machine("b", "1 TFLOPS", {"2 TFLOPS"}, "100 Gbps")},
                                           test::one_layer_model(1e6, "1 GFLOP"), training);
  doc["faults"] = faults;
  return doc;
}

TEST(Recovery, InGraphATowerOrTheClientDyingRestartsFromTheCheckpoint) {
  for (const std::string role : {"tower1", "client"}) {
    const core::Trace trace = test::simulate_trace(
        in_graph({{{"kind", "role"}, {"role", role}, {"at", "1.5 s"}}}), "in_graph");
    const core::RunMetrics m = core::compute_metrics(trace);
    ASSERT_EQ(m.recoveries.size(), 1u) << role;
    EXPECT_EQ(m.recoveries[0].cause, role + " dies");
    const double restart_s = 1.5 + 0.5 + 1;
    const auto steps = events_of(trace, core::EventKind::kStep, "client");
    const core::TraceEvent* first_after = nullptr;
    for (const core::TraceEvent* s : steps) {
      EXPECT_FALSE(s->end_s > 1.5 && s->end_s < restart_s) << role;
      if (s->start_s > restart_s && first_after == nullptr) first_after = s;
    }
    ASSERT_NE(first_after, nullptr);
    // In-graph, the client's step is the global step: it resumes at the checkpoint's.
    EXPECT_EQ(first_after->step, m.recoveries[0].checkpoint_global_step) << role;
    EXPECT_NEAR(first_after->start_s, restart_s + 2 * kCheckpointS, 1e-6) << role;
    EXPECT_EQ(steps.back()->step, 59) << role;
    EXPECT_GT(m.recoveries[0].lost_global_steps, 0) << role;
  }
}

TEST(LinkFaults, AStepStalledAcrossTheWindowsEdgeIsFlagged) {
  // worker1's NIC is cut from 2 s to 20 s; the others finish by about 5 s and close the window,
  // so worker1's stalled step is not wholly inside it and the step times leave it out.
  const core::RunMetrics m =
      test::simulate(four_workers(nlohmann::json::object(), {{{"kind", "link"},
                                                              {"link", "w1/nic"},
                                                              {"from", "2 s"},
                                                              {"until", "20 s"},
                                                              {"factor", 0}}}),
                     "between_graph");
  bool flagged = false;
  for (const std::string& w : m.warnings) flagged |= w.rfind("worker1 has a step of", 0) == 0;
  EXPECT_TRUE(flagged);
}

TEST(Recovery, ARestoreUsesOnlyCheckpointsThatFinished) {
  // Two workers, checkpoints every 0.5 s (0.1 s each). ps0 dies at 1.1 s while the checkpoint
  // saved after about 1.08 s is being written, and again at 2.75 s while the restarted chief
  // writes its session-start checkpoint: both restarts restore the checkpoint finished before.
  nlohmann::json doc = test::scenario_json(
      {machine("p", "1 TFLOPS", {}, "10 Gbps"), machine("w0", "1 TFLOPS", {"2 TFLOPS"}, "10 Gbps"),
       machine("w1", "1 TFLOPS", {"2 TFLOPS"}, "10 Gbps")},
      test::one_layer_model(1e6, "1 GFLOP"),
      {{"replicas", "w*/gpu0"},
       {"ps", {"p/cpu"}},
       {"costs", "none"},
       {"jitter", 0},
       {"checkpoint", {{"every", "0.5 s"}, {"disk_bandwidth", "40 MBps"}}},
       {"recovery", kRecovery["recovery"]}},
      "lv08");
  doc["faults"] = {{{"kind", "role"}, {"role", "ps0"}, {"at", "1.1 s"}},
                   {{"kind", "role"}, {"role", "ps0"}, {"at", "2.75 s"}}};
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.recoveries.size(), 2u);
  const auto checkpoints = events_of(trace, core::EventKind::kCheckpoint);
  for (const core::RecoveryRecord& k : m.recoveries) {
    const core::TraceEvent* finished = nullptr;
    for (const core::TraceEvent* c : checkpoints) {
      if (c->end_s <= k.fault_s) finished = c;
    }
    ASSERT_NE(finished, nullptr);
    // Not the one cut short: the last written before the death (and, for the second death,
    // the same one again, as the restarted chief had not finished its own).
    EXPECT_LE(k.checkpoint_global_step, k.global_step_at_failure);
    EXPECT_EQ(k.checkpoint_global_step, m.recoveries[0].checkpoint_global_step);
  }
  EXPECT_LT(m.recoveries[1].lost_work_s, 2.75 - m.recoveries[0].resumed_s + 1e-9);
  // worker1's first poll after the first restart (2.6 s + 0.3 s) comes after the second death:
  // that recovery never had every client back, and the report says so.
  EXPECT_DOUBLE_EQ(m.recoveries[0].interrupted_s, 2.75);
  EXPECT_LT(m.recoveries[1].interrupted_s, 0);
  const std::string report = core::job_failures_text(m);
  EXPECT_NE(report.find("(failed again at 2.750 s, before every client was back)"),
            std::string::npos)
      << report;
}

TEST(Recovery, DeathsBeforeTheRestartBringsEveryoneBackAreReportedAsSuch) {
  // ps0 dies at 2.5 s: restart at 4 s, the chief restores until 4.1 s, the others start at
  // their polls after that.
  const double restart_s = 2.5 + 0.5 + 1;
  // worker1 dies at 4.05 s, before its first poll: it lost no work (it ran no step), and the
  // restart names it instead of counting it among the clients that came back.
  core::RunMetrics m = test::simulate(
      four_workers(kRecovery, {{{"kind", "role"}, {"role", "ps0"}, {"at", "2.5 s"}},
                               {{"kind", "role"}, {"role", "worker1"}, {"at", "4.05 s"}}}),
      "between_graph");
  ASSERT_EQ(m.recoveries.size(), 1u);
  EXPECT_EQ(m.recoveries[0].workers_lost, std::vector<std::string>{"worker1"});
  ASSERT_EQ(m.faults.size(), 2u);
  EXPECT_EQ(m.faults[1].target, "worker1");
  EXPECT_LT(m.faults[1].lost_step, 0);
  EXPECT_DOUBLE_EQ(m.faults[1].lost_work_s, 0);
  std::string report = core::job_failures_text(m);
  EXPECT_NE(report.find("every other client back after"), std::string::npos) << report;
  EXPECT_NE(report.find("worker1 died before it was back"), std::string::npos) << report;
  // ps0 dies again at 4.05 s, while the chief restores: no recovery time is claimed.
  m = test::simulate(
      four_workers(kRecovery, {{{"kind", "role"}, {"role", "ps0"}, {"at", "2.5 s"}},
                               {{"kind", "role"}, {"role", "ps0"}, {"at", "4.05 s"}}}),
      "between_graph");
  ASSERT_EQ(m.recoveries.size(), 2u);
  EXPECT_DOUBLE_EQ(m.recoveries[0].interrupted_s, 4.05);
  EXPECT_LT(m.recoveries[0].interrupted_s, m.recoveries[0].resumed_s);
  EXPECT_NEAR(m.recoveries[0].resumed_s, restart_s + kCheckpointS, 1e-9);
  report = core::job_failures_text(m);
  EXPECT_NE(report.find("failed again at 4.050 s while the chief was restoring"), std::string::npos)
      << report;
}

TEST(Recovery, AJobFailureBeforeTheWarmUpEndsIsAnError) {
  try {
    test::simulate(four_workers(nlohmann::json::object(),
                                {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.2 s"}}}),
                   "between_graph");
    ADD_FAILURE() << "no error";
  } catch (const core::MeasurementError& e) {
    EXPECT_EQ(e.scenario_path(), "/faults");  // the simulate command names it with the file
    EXPECT_NE(std::string(e.what()).find("before worker0 finished its warm-up"), std::string::npos)
        << e.what();
  }
}

TEST(Recovery, AFaultAfterTheEndIsNotedNotApplied) {
  const core::RunMetrics m = test::simulate(
      four_workers(kRecovery, {{{"kind", "role"}, {"role", "ps0"}, {"at", "500 s"}}}),
      "between_graph");
  EXPECT_TRUE(m.recoveries.empty());
  bool noted = false;
  for (const std::string& note : m.notes)
    noted |= note.find("after the run's end") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Recovery, BadSettingsAreInputErrors) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"checkpoint", {{"every", "1 s"}}}}, "/training/checkpoint/disk_bandwidth"},
      {{{"checkpoint", {{"every", 0}, {"disk_bandwidth", "1 GBps"}}}},
       "/training/checkpoint/every"},
      {{{"checkpoint", {{"every", "1 s"}, {"disk_bandwidth", "1 GBps"}, {"at", 1}}}},
       "/training/checkpoint/at"},
      {{{"checkpoint", nullptr}, {"summaries", {{"every_steps", 10}, {"bytes", "1 MB"}}}},
       "/training/summaries"},
      {{{"summaries", {{"every_steps", 0}, {"bytes", "1 MB"}}}}, "/training/summaries/every_steps"},
      {{{"recovery", {{"detect_timeout", "1 s"}}}}, "/training/recovery/restart_delay"},
      {{{"recovery",
         {{"detect_timeout", "1 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "0 s"}}}},
       "/training/recovery/recovery_wait"},
      {{{"variables_on", "w0/gpu0"}}, "/training/variables_on"},  // with "ps"
  };
  for (const auto& [training, path] : cases) {
    nlohmann::json doc = four_workers(training, nlohmann::json::array());
    if (training.contains("checkpoint") && training["checkpoint"].is_null()) {
      doc["training"].erase("checkpoint");
    }
    try {
      test::parse(doc);
      ADD_FAILURE() << training.dump();
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.json_path(), path) << e.what();
    }
  }
}

}  // namespace
}  // namespace replisim::recovery_test
