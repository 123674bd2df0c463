// Workers launched at different times (training.start_times, field reports F14 and F16): the
// chief's model is ready at its launch, and every other worker polls for it every recovery_wait
// (TF's SessionManager.wait_for_session), so one launched before the chief starts training at its
// first poll after it; all-reduce ranks wait in hvd.init() for the last; what the plan carries and
// what the scenario and the plan refuse.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/plan/plan.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// Three single-GPU workers, one PS; `training` merged over the defaults.
nlohmann::json three_workers(const nlohmann::json& training) {
  nlohmann::json t = {{"replicas", {"w0/gpu0", "w1/gpu0", "w2/gpu0"}},
                      {"ps", {"ps/cpu"}},
                      {"client", "ps"},
                      {"steps", 4},
                      {"warmup_steps", 1}};
  t.update(training);
  return test::scenario_json({test::machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                              test::machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                              test::machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                              test::machine("w2", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
                             test::one_layer_model(1000, "2 MFLOP"), t);
}

const nlohmann::json kLateChief = {{"start_times", {"10 s", "0 s", "25 s"}}};
const nlohmann::json kRecovery = {
    {"recovery", {{"detect_timeout", "1 s"}, {"restart_delay", "1 s"}, {"recovery_wait", "4 s"}}}};

nlohmann::json merged(nlohmann::json a, const nlohmann::json& b) {
  a.update(b);
  return a;
}

TEST(StartTimes, AWorkerLaunchedBeforeTheChiefStartsAtItsFirstPollAfterIt) {
  const Plan plan =
      compile_plan(test::parse(three_workers(merged(kLateChief, kRecovery))), "between_graph", {1});
  ASSERT_EQ(plan.clients.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.clients[0].launch_offset_s, 10);
  EXPECT_DOUBLE_EQ(plan.clients[0].start_offset_s, 10);  // the chief: its model is ready
  EXPECT_DOUBLE_EQ(plan.clients[1].launch_offset_s, 0);
  EXPECT_DOUBLE_EQ(plan.clients[1].start_offset_s, 12);  // polls at 0, 4, 8, 12 s
  EXPECT_DOUBLE_EQ(plan.clients[2].launch_offset_s, 25);
  EXPECT_DOUBLE_EQ(plan.clients[2].start_offset_s, 25);  // the model was ready: no wait
  bool noted = false;
  for (const std::string& note : plan.notes) {
    noted |= note.find("worker1 is launched at 0 s, before the chief's model is ready at 10 s") !=
                 std::string::npos &&
             note.find("starts training at 12 s") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // Without training.recovery, TF's default recovery_wait_secs: 30 s.
  const Plan defaults = compile_plan(test::parse(three_workers(kLateChief)), "between_graph", {1});
  EXPECT_DOUBLE_EQ(defaults.clients[1].start_offset_s, 30);
}

TEST(StartTimes, TheSyncOpStartsWithTheChief) {
  const Plan plan = compile_plan(test::parse(three_workers(merged(kLateChief, {{"sync", "sync"}}))),
                                 "between_graph", {1});
  EXPECT_DOUBLE_EQ(plan.sync_replicas.chief_graph.start_offset_s, 10);
}

TEST(StartTimes, AllReduceRanksWaitForTheLastLaunched) {
  const Plan plan = compile_plan(test::parse(three_workers(kLateChief)), "allreduce", {1});
  for (const ClientGraph& g : plan.clients) EXPECT_DOUBLE_EQ(g.start_offset_s, 25);
  EXPECT_DOUBLE_EQ(plan.clients[1].launch_offset_s, 0);
}

TEST(StartTimes, ThePlanKeepsTheLaunchesAndOlderPlansStayTheSame) {
  const Plan plan =
      compile_plan(test::parse(three_workers(merged(kLateChief, kRecovery))), "between_graph", {1});
  const nlohmann::json j = plan_to_json(plan);
  EXPECT_FALSE(j["clients"][0].contains("launch_offset_s"));  // no wait: the start is the launch
  EXPECT_EQ(j["clients"][1]["launch_offset_s"], 0.0);
  const Plan back = plan_from_json(j, "plan.json");
  EXPECT_DOUBLE_EQ(back.clients[1].launch_offset_s, 0);
  EXPECT_DOUBLE_EQ(back.clients[1].start_offset_s, 12);
  EXPECT_EQ(plan_hash(back), plan_hash(plan));
  // A launch after the start is no plan a backend can run.
  nlohmann::json bad = j;
  bad["clients"][1]["launch_offset_s"] = 13.0;
  try {
    plan_from_json(bad, "plan.json");
    ADD_FAILURE() << "a launch after the start was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/clients/1/launch_offset_s"), std::string::npos)
        << e.what();
  }
  // A plan without start_times carries no launch_offset_s key (its hash did not move).
  const Plan plain =
      compile_plan(test::parse(three_workers(nlohmann::json::object())), "between_graph", {1});
  for (const nlohmann::json& c : plan_to_json(plain)["clients"]) {
    EXPECT_FALSE(c.contains("launch_offset_s"));
  }
}

TEST(StartTimes, TheScenarioRefusesWhatItCannotMean) {
  test::expect_scenario_error(three_workers({{"start_times", {"1 s", "2 s"}}}),
                              "/training/start_times",
                              "expected one start time per worker (3), got 2");
  test::expect_scenario_error(three_workers({{"start_times", {"1 s", "-2 s", "0 s"}}}),
                              "/training/start_times/1", "");
  test::expect_scenario_error(three_workers({{"start_times", {"1 s", "2 s", "0 s"}},
                                             {"jitter", {{"startup_stagger", "1 s"}}}}),
                              "/training/start_times", "not both");
  // Towers make fewer workers than replicas: all-reduce (a rank per replica) cannot place them.
  nlohmann::json towers = three_workers({{"start_times", {"1 s", "2 s"}}});
  towers["training"]["replicas"] = {"w0/gpu0", {{"towers", {"w1/gpu0", "w2/gpu0"}}}};
  const Scenario s = test::parse(towers);
  try {
    compile_plan(s, "allreduce", {1});
    ADD_FAILURE() << "start_times per worker with multi-tower workers were accepted by allreduce";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/training/start_times"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replisim::core
