// The plan's "objective" key (plan_objective.h): written and read field by field.
#include "core/plan/plan_objective.h"

namespace replisim::core {

nlohmann::json plan_objective_to_json(const PlanObjective& o) {
  nlohmann::json data = {{"set", o.set}};
  if (o.set == "synthetic") {
    data["train_samples"] = o.train_samples;
    data["test_samples"] = o.test_samples;
    data["features"] = o.features;
    data["classes"] = o.classes;
    data["seed"] = o.data_seed;
  } else {
    data["dir"] = o.dir;
    data["subset"] = o.subset;
  }
  return {{"data", data},
          {"hidden_widths", o.hidden_widths},
          {"learning_rate", o.learning_rate},
          {"schedule", o.schedule},
          {"decay_steps", o.decay_steps},
          {"decay_rate", o.decay_rate},
          {"staleness_aware", o.staleness_aware},
          {"batch", o.batch},
          {"evaluate_every_steps", o.evaluate_every_steps},
          {"target", o.target},
          {"target_value", o.target_value},
          {"timing", o.timing},
          {"seed", o.seed}};
}

namespace {

std::string one_of(const JsonCursor& c, const std::vector<std::string>& valid) {
  const std::string text = c.as_string();
  std::string names;
  for (const std::string& v : valid) {
    if (text == v) return text;
    names += (names.empty() ? "" : ", ") + v;
  }
  c.fail("unknown value \"" + text.substr(0, 100) + "\"; valid: " + names);
}

}  // namespace

PlanObjective plan_objective_from_json(const JsonCursor& c) {
  c.check_keys({"data", "hidden_widths", "learning_rate", "schedule", "decay_steps", "decay_rate",
                "staleness_aware", "batch", "evaluate_every_steps", "target", "target_value",
                "timing", "seed"});
  constexpr int64_t kMaxCount = int64_t(1) << 30;
  constexpr int64_t kMaxSeed = int64_t(1) << 53;
  PlanObjective o;
  o.enabled = true;
  const JsonCursor data = c.at("data");
  o.set = one_of(data.at("set"), {"synthetic", "fashion_mnist"});
  if (o.set == "synthetic") {
    data.check_keys({"set", "train_samples", "test_samples", "features", "classes", "seed"});
    o.train_samples = int(data.at("train_samples").as_int(1, kMaxCount));
    o.test_samples = int(data.at("test_samples").as_int(1, kMaxCount));
    o.features = int(data.at("features").as_int(1, kMaxCount));
    o.classes = int(data.at("classes").as_int(2, kMaxCount));
    o.data_seed = uint64_t(data.at("seed").as_int(0, kMaxSeed));
  } else {
    data.check_keys({"set", "dir", "subset"});
    o.dir = data.at("dir").as_string();
    o.subset = int(data.at("subset").as_int(0, kMaxCount));
  }
  const JsonCursor hidden = c.at("hidden_widths");
  hidden.expect_array();
  for (size_t i = 0; i < hidden.size(); ++i) {
    o.hidden_widths.push_back(int(hidden.at(i).as_int(1, 65536)));
  }
  o.learning_rate = c.at("learning_rate").as_number_in(1e-12, 1e6);
  o.schedule = one_of(c.at("schedule"), {"constant", "step_decay"});
  o.decay_steps = c.at("decay_steps").as_int(0, kMaxCount);
  o.decay_rate = c.at("decay_rate").as_number_in(0, 1);
  if (o.schedule == "step_decay" && (o.decay_steps < 1 || !(o.decay_rate > 0))) {
    c.at("decay_steps").fail("a step decay needs decay_steps >= 1 and decay_rate in (0, 1]");
  }
  o.staleness_aware = c.at("staleness_aware").as_bool();
  o.batch = int(c.at("batch").as_int(1, kMaxCount));
  o.evaluate_every_steps = int(c.at("evaluate_every_steps").as_int(1, kMaxCount));
  o.target = one_of(c.at("target"), {"accuracy", "loss"});
  o.target_value = c.at("target_value").as_number_in(0, 1e6);
  o.timing = one_of(c.at("timing"), {"objective", "scenario"});
  o.seed = uint64_t(c.at("seed").as_int(0, kMaxSeed));
  return o;
}

}  // namespace replisim::core
