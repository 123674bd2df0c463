// A sweep point's training objective: read from the point's summary, written as the CSV's
// time_to_target_s, global_steps_to_target and final_accuracy cells and the JSON row's "objective",
// and --objective-target's value and scenario edit.
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/sweep/sweep_objective.h"
#include "core/sweep/sweep_results.h"

namespace replisim::core {
namespace {

using nlohmann::json;

std::string objective_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// The smallest summary sweep_row_from_summary reads, with `objective` as runs[0].objective
// (null: none).
json objective_summary(const json& objective) {
  json run = {{"throughput_samples_per_s", 100},
              {"step_time_s", {{"mean", 0.2}, {"p50", 0.2}, {"p95", 0.3}}},
              {"bottleneck", {{"resource", "w0/gpu0"}, {"utilization", 0.9}}},
              {"bytes_per_ps", {100}},
              {"waits", json::array()}};
  if (!objective.is_null()) run["objective"] = objective;
  return {{"runs", {run}}};
}

// As core/metrics/report.cpp writes it: -1 for "not reached".
json summary_objective(double time_to_target_s, int64_t global_steps, double accuracy) {
  return {{"target", "accuracy"},
          {"target_value", 0.75},
          {"evaluations", 10},
          {"time_to_target_s", time_to_target_s},
          {"global_steps_to_target", global_steps},
          {"final_accuracy", accuracy},
          {"final_loss", 0.61},
          {"final_s", 3.5},
          {"final_global_step", 40}};
}

SweepResults objective_results() {
  SweepResults r;
  r.scenario_name = "t";
  r.axes = {{"replicas", {"1", "2", "4"}}};
  r.points_total = 3;
  SweepPointFacts facts;
  facts.strategy = "between_graph";
  facts.replica_role_kind = "worker";
  const json objectives[] = {summary_objective(1.73, 36, 0.8125), summary_objective(-1, -1, 0.7),
                             json()};
  for (size_t i = 0; i < 3; ++i) {
    const SweepPoint p{i, {{"replicas", r.axes[0].values[i]}}};
    r.rows.push_back(
        sweep_row_from_summary(p, facts, "k", objective_summary(objectives[i]), "p.json", 1));
  }
  return r;
}

TEST(SweepObjective, RowsCarryTheTimeAndStepsToTargetOrNothing) {
  const SweepResults r = objective_results();
  ASSERT_TRUE(r.rows[0].objective);
  EXPECT_EQ(r.rows[0].objective->target, "accuracy");
  EXPECT_DOUBLE_EQ(*r.rows[0].objective->time_to_target_s, 1.73);
  EXPECT_EQ(*r.rows[0].objective->global_steps_to_target, 36);
  ASSERT_TRUE(r.rows[1].objective);  // evaluated, not reached
  EXPECT_FALSE(r.rows[1].objective->time_to_target_s);
  EXPECT_FALSE(r.rows[1].objective->global_steps_to_target);
  EXPECT_DOUBLE_EQ(r.rows[1].objective->final_accuracy, 0.7);
  EXPECT_FALSE(r.rows[2].objective);  // no objective in the scenario

  std::ostringstream csv;
  write_sweep_csv(r, csv);
  const std::string text = csv.str();
  EXPECT_NE(text.find(",waiting_share,time_to_target_s,global_steps_to_target,final_accuracy,"
                      "wall_s,warnings,error\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(",1.73,36,0.8125,1,,\n"), std::string::npos) << text;
  EXPECT_NE(text.find(",,,0.7,1,,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n2,4,between_graph,0,0,0,100,0.2,0.2,0.3,,,,,w0/gpu0,"), std::string::npos)
      << text;
  EXPECT_NE(text.find(",0,0,0,,,,1,,\n"), std::string::npos) << text;  // row 2: no objective

  const json written = sweep_results_to_json(r);
  EXPECT_EQ(written["rows"][0]["objective"]["global_steps_to_target"], 36);
  EXPECT_TRUE(written["rows"][1]["objective"]["time_to_target_s"].is_null());
  EXPECT_TRUE(written["rows"][2]["objective"].is_null());
  EXPECT_EQ(sweep_results_to_json(sweep_results_from_json(written, "r.json")), written);
  // A row written before the objective's columns reads without one.
  json old = written;
  old["rows"][0].erase("objective");
  EXPECT_FALSE(sweep_results_from_json(old, "old.json").rows[0].objective);
  // A malformed one names its path.
  json bad = written;
  bad["rows"][0]["objective"]["target"] = "speed";
  EXPECT_NE(objective_error_of([&] {
              sweep_results_from_json(bad, "b.json");
            }).find("b.json: /rows/0/objective/target: expected \"accuracy\" or \"loss\""),
            std::string::npos);
}

TEST(SweepObjective, ATargetFlagParsesAndEditsTheScenarioOrNamesItself) {
  EXPECT_EQ(parse_objective_target("accuracy=0.8", "--objective-target"),
            (json{{"accuracy", 0.8}}));
  EXPECT_EQ(parse_objective_target("loss=0.35", "--objective-target"), (json{{"loss", 0.35}}));
  for (const char* bad : {"accuracy", "speed=3", "accuracy=1.5", "accuracy=0", "loss=-1", "loss=x",
                          "accuracy=0.8s", "=0.8"}) {
    EXPECT_EQ(objective_error_of([&] {
                parse_objective_target(bad, "--objective-target");
              }).rfind("--objective-target: expected", 0),
              0u)
        << bad;
  }
  json scenario = {{"training", {{"objective", {{"target", {{"loss", 0.5}}}}}}}};
  set_objective_target(scenario, {{"accuracy", 0.9}}, "s.json", "--objective-target");
  EXPECT_EQ(scenario["training"]["objective"]["target"], (json{{"accuracy", 0.9}}));
  json none = {{"training", {{"steps", 10}}}};
  EXPECT_EQ(objective_error_of([&] {
              set_objective_target(none, {{"accuracy", 0.9}}, "s.json", "--objective-target");
            }),
            "s.json: /training/objective: --objective-target needs a training.objective in the "
            "scenario (it has none)");
}

TEST(SweepObjective, AnOverriddenTargetIsAnotherSweep) {
  SweepResults r = objective_results();
  const std::string own = sweep_id(r);
  r.objective_target = "accuracy=0.8";
  EXPECT_NE(sweep_id(r), own);
  const json written = sweep_results_to_json(r);
  EXPECT_EQ(written["objective_target"], "accuracy=0.8");
  EXPECT_EQ(sweep_results_from_json(written, "r.json").objective_target, "accuracy=0.8");
}

}  // namespace
}  // namespace replisim::core
