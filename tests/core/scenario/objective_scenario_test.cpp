// training.objective (core/scenario/scenario_objective.cpp): what it holds, its defaults, and the
// JSON path of each bad value.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

nlohmann::json synthetic_objective() {
  return {{"data",
           {{"set", "synthetic"},
            {"samples", 2000},
            {"test_samples", 500},
            {"features", 20},
            {"classes", 4},
            {"seed", 3}}},
          {"model", "softmax"},
          {"learning_rate", 0.25},
          {"evaluate_every", 10},
          {"target", {{"accuracy", 0.8}}},
          {"timing", "objective"},
          {"seed", 7}};
}

nlohmann::json scenario_with_objective(const nlohmann::json& objective) {
  return test::scenario_json(
      {test::machine("pc1", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps"),
       test::machine("pc2", "400 GFLOPS", {"5 TFLOPS"}, "10 Gbps")},
      {{"preset", "resnet50"}},
      {{"replicas", {"pc1/gpu0", "pc2/gpu0"}}, {"ps", {"pc1/cpu"}}, {"objective", objective}});
}

// Expects the scenario with `objective` to fail at `path` with a message containing `needle`.
void expect_objective_error(const nlohmann::json& objective, const std::string& path,
                            const std::string& needle) {
  try {
    parse_scenario(scenario_with_objective(objective), "s.json");
    ADD_FAILURE() << "expected an error at " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "s.json");
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
  }
}

TEST(ScenarioObjective, AbsentMeansNoObjective) {
  nlohmann::json doc = scenario_with_objective({});
  doc["training"].erase("objective");
  EXPECT_FALSE(parse_scenario(doc, "s.json").training.objective.enabled);
}

// A plan of a scenario with an objective says what its runs do with it (a key that silently
// changed nothing would mislead): a between-graph asynchronous plan's simulation computes it
// (ValueEnginePlan tests the others' "rates only"); without one, no such note.
TEST(ScenarioObjective, APlanSaysWhetherTheObjectiveIsComputed) {
  const auto note_of = [](const nlohmann::json& doc) {
    for (const std::string& n :
         compile_plan(parse_scenario(doc, "s.json"), "between_graph", {}).notes) {
      if (n.find("training.objective") != std::string::npos) return n;
    }
    return std::string();
  };
  EXPECT_NE(note_of(scenario_with_objective(synthetic_objective())).find("a simulation computes"),
            std::string::npos);
  nlohmann::json without = scenario_with_objective({});
  without["training"].erase("objective");
  EXPECT_EQ(note_of(without), "");
}

TEST(ScenarioObjective, ASyntheticSoftmaxObjectiveWithItsDefaults) {
  const Scenario s = parse_scenario(scenario_with_objective(synthetic_objective()), "s.json");
  const ObjectiveSpec& o = s.training.objective;
  ASSERT_TRUE(o.enabled);
  EXPECT_EQ(o.json_path, "/training/objective");
  EXPECT_EQ(o.data.set, ObjectiveDataSpec::Set::kSynthetic);
  EXPECT_EQ(o.data.synthetic.train_samples, 2000);
  EXPECT_EQ(o.data.synthetic.test_samples, 500);
  EXPECT_EQ(o.data.synthetic.seed, 3u);
  EXPECT_TRUE(o.hidden_widths.empty());
  EXPECT_EQ(o.model().name(), "softmax");
  EXPECT_EQ(o.model().parameter_count(), size_t(20 * 4 + 4));
  EXPECT_EQ(o.learning_rate, 0.25);
  EXPECT_EQ(o.schedule.kind, LearningRateSchedule::Kind::kConstant);
  EXPECT_FALSE(o.staleness_aware);
  EXPECT_EQ(o.batch, 32);  // the scenario's batch_per_replica
  EXPECT_EQ(o.evaluate_every_steps, 10);
  EXPECT_EQ(o.target, ObjectiveTarget::kAccuracy);
  EXPECT_EQ(o.target_value, 0.8);
  EXPECT_EQ(o.timing, ObjectiveTiming::kObjective);
  EXPECT_EQ(o.seed, 7u);
}

TEST(ScenarioObjective, FashionMnistWithAnMlpAndEveryOptionalField) {
  nlohmann::json objective = synthetic_objective();
  objective["data"] = {{"set", "fashion_mnist"}, {"dir", "data/fmnist"}, {"subset", 1000}};
  objective["model"] = {{"mlp", {128, 64}}};
  objective["schedule"] = {{"step_decay", {{"decay_steps", 500}, {"decay_rate", 0.5}}}};
  objective["staleness_aware"] = true;
  objective["batch"] = 64;
  objective["target"] = {{"loss", 0.45}};
  objective["timing"] = "scenario";
  const Scenario s = parse_scenario(scenario_with_objective(objective), "scenarios/x/s.json");
  const ObjectiveSpec& o = s.training.objective;
  EXPECT_EQ(o.data.set, ObjectiveDataSpec::Set::kFashionMnist);
  EXPECT_EQ(o.data.dir, "scenarios/x/data/fmnist");  // from the scenario file's folder
  EXPECT_EQ(o.data.subset, 1000);
  EXPECT_EQ(o.data.train_samples(), 1000);
  EXPECT_EQ(o.hidden_widths, (std::vector<int>{128, 64}));
  EXPECT_EQ(o.model().name(), "mlp(128,64)");
  EXPECT_EQ(o.model().features(), 784);
  EXPECT_EQ(o.model().classes(), 10);
  EXPECT_EQ(o.schedule.kind, LearningRateSchedule::Kind::kStepDecay);
  EXPECT_EQ(o.schedule.decay_steps, 500);
  EXPECT_EQ(o.schedule.decay_rate, 0.5);
  EXPECT_TRUE(o.staleness_aware);
  EXPECT_EQ(o.batch, 64);
  EXPECT_EQ(o.target, ObjectiveTarget::kLoss);
  EXPECT_EQ(o.target_value, 0.45);
  EXPECT_EQ(o.timing, ObjectiveTiming::kScenario);

  objective["data"] = {{"set", "fashion_mnist"}};
  const Scenario plain = parse_scenario(scenario_with_objective(objective), "s.json");
  EXPECT_EQ(plain.training.objective.data.dir, kFashionMnistDir);
  EXPECT_EQ(plain.training.objective.data.subset, 0);
  EXPECT_EQ(plain.training.objective.data.train_samples(), 60000);
}

TEST(ScenarioObjective, BadValuesNameTheirJsonPath) {
  const std::string root = "/training/objective";
  expect_objective_error(nlohmann::json::array(), root, "object");
  nlohmann::json o = synthetic_objective();
  o["learning_rat"] = 0.1;
  expect_objective_error(o, root + "/learning_rat", "did you mean \"learning_rate\"");
  o = synthetic_objective();
  o.erase("target");
  expect_objective_error(o, root + "/target", "missing");
  o = synthetic_objective();
  o["model"] = "cnn";
  expect_objective_error(o, root + "/model", "unknown objective model \"cnn\"");
  o["model"] = {{"mlp", nlohmann::json::array()}};
  expect_objective_error(o, root + "/model/mlp", "hidden layer widths");
  o["model"] = {{"mlp", {16, 0}}};
  expect_objective_error(o, root + "/model/mlp/1", "");
  o["model"] = {{"mlp", {65536, 65536, 65536}}};
  expect_objective_error(o, root + "/model", "parameters, more than");
  o = synthetic_objective();
  o["data"]["set"] = "imagenet";
  expect_objective_error(o, root + "/data/set", "valid: synthetic, fashion_mnist");
  o = synthetic_objective();
  o["data"]["classes"] = 1;
  expect_objective_error(o, root + "/data/classes", "");
  o = synthetic_objective();
  o["data"]["samples"] = 1;  // two workers
  expect_objective_error(o, root + "/data/samples", "2 workers");
  o = synthetic_objective();
  o["data"]["features"] = 100000;
  o["data"]["samples"] = 10000;
  expect_objective_error(o, root + "/data", "more than 268435456");
  o = synthetic_objective();
  o["data"] = {{"set", "fashion_mnist"}, {"subset", 70000}};
  expect_objective_error(o, root + "/data/subset", "");
  o["data"] = {{"set", "fashion_mnist"}, {"samples", 10}};
  expect_objective_error(o, root + "/data/samples", "unknown field");
  o = synthetic_objective();
  o["learning_rate"] = 0;
  expect_objective_error(o, root + "/learning_rate", "");
  o = synthetic_objective();
  o["schedule"] = "cosine";
  expect_objective_error(o, root + "/schedule", "unknown schedule");
  o["schedule"] = {{"step_decay", {{"decay_steps", 10}, {"decay_rate", 1.5}}}};
  expect_objective_error(o, root + "/schedule/step_decay/decay_rate", "(0, 1]");
  o = synthetic_objective();
  o["staleness_aware"] = "yes";
  expect_objective_error(o, root + "/staleness_aware", "");
  o = synthetic_objective();
  o["evaluate_every"] = 0;
  expect_objective_error(o, root + "/evaluate_every", "");
  o = synthetic_objective();
  o["target"] = {{"accuracy", 0.8}, {"loss", 0.3}};
  expect_objective_error(o, root + "/target", "one of");
  o["target"] = {{"accuracy", 80}};
  expect_objective_error(o, root + "/target/accuracy", "fraction");
  o = synthetic_objective();
  o["timing"] = "wall";
  expect_objective_error(o, root + "/timing", "unknown timing");
  o = synthetic_objective();
  o["seed"] = -1;
  expect_objective_error(o, root + "/seed", "");
}

}  // namespace
}  // namespace replisim::core
