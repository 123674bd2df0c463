// Parsing of "training.objective" (issue 40): the data, the proxy model, SGD's learning rate and
// schedule, the evaluation interval, the target and the timing mode (docs/scenario-format.md).
#include <algorithm>
#include <filesystem>

#include "core/base/error.h"
#include "core/scenario/scenario_parse.h"

namespace replisim::core {

int ObjectiveDataSpec::features() const {
  return set == Set::kSynthetic ? synthetic.features : kFashionMnistFeatures;
}

int ObjectiveDataSpec::classes() const {
  return set == Set::kSynthetic ? synthetic.classes : kFashionMnistClasses;
}

int ObjectiveDataSpec::train_samples() const {
  if (set == Set::kSynthetic) return synthetic.train_samples;
  return subset > 0 ? std::min(subset, kFashionMnistTrainSamples) : kFashionMnistTrainSamples;
}

const char* objective_timing_name(ObjectiveTiming timing) {
  return timing == ObjectiveTiming::kObjective ? "objective" : "scenario";
}

ObjectiveModel ObjectiveSpec::model() const {
  if (hidden_widths.empty()) {
    return ObjectiveModel::softmax_regression(data.features(), data.classes());
  }
  return ObjectiveModel::mlp(data.features(), hidden_widths, data.classes());
}

namespace scenario_detail {
namespace {

// Bounds of the synthetic set and the MLP: far beyond a proxy that converges in seconds, tight
// enough that a scenario cannot ask for more memory than kMaxDataSetFloats.
constexpr int kMaxObjectiveSamples = 10000000;
constexpr int kMaxObjectiveFeatures = 100000;
constexpr int kMaxObjectiveClasses = 10000;
constexpr int kMaxHiddenWidth = 65536;
constexpr size_t kMaxHiddenLayers = 16;
// Seeds are JSON numbers: integers up to 2^53 are exact in every JSON reader.
constexpr int64_t kMaxSeed = int64_t(1) << 53;

ObjectiveDataSpec parse_objective_data(const JsonCursor& c, int workers) {
  c.expect_object();
  const std::string set = c.at("set").as_string();
  ObjectiveDataSpec data;
  if (set == "synthetic") {
    c.check_keys({"set", "samples", "test_samples", "features", "classes", "seed"});
    SyntheticSetSpec& s = data.synthetic;
    s.train_samples = int(c.at("samples").as_int(1, kMaxObjectiveSamples));
    s.test_samples = int(c.at("test_samples").as_int(1, kMaxObjectiveSamples));
    s.features = int(c.at("features").as_int(1, kMaxObjectiveFeatures));
    s.classes = int(c.at("classes").as_int(2, kMaxObjectiveClasses));
    s.seed = uint64_t(c.at("seed").as_int(0, kMaxSeed));
    // The samples and the teacher's weights (features x classes), as make_teacher_student_set.
    const double floats =
        (double(s.train_samples) + s.test_samples) * s.features + double(s.features) * s.classes;
    if (floats > kMaxDataSetFloats) {
      c.fail("(samples + test_samples) x features + the teacher's features x classes is " +
             std::to_string(int64_t(floats)) + " floats, more than " +
             std::to_string(int64_t(kMaxDataSetFloats)) + " (1 GiB)");
    }
  } else if (set == "fashion_mnist") {
    data.set = ObjectiveDataSpec::Set::kFashionMnist;
    c.check_keys({"set", "dir", "subset"});
    if (c.has("dir")) {
      const JsonCursor dir = c.at("dir");
      const std::string text = dir.as_string();
      if (text.empty()) dir.fail("expected a folder, got an empty string");
      if (has_control_character(text)) dir.fail("a folder name with a control character");
      std::filesystem::path path(text);
      if (path.is_relative() && !dir.file().empty()) {
        path = std::filesystem::path(dir.file()).parent_path() / path;
      }
      data.dir = path.string();
    }
    if (c.has("subset")) {
      data.subset = int(c.at("subset").as_int(1, kFashionMnistTrainSamples));
    }
  } else {
    c.at("set").fail("unknown data set \"" + set.substr(0, 100) +
                     "\"; valid: synthetic, fashion_mnist");
  }
  if (data.train_samples() < workers) {
    const char* key = data.set == ObjectiveDataSpec::Set::kSynthetic ? "samples" : "subset";
    c.at(key).fail("each of the " + std::to_string(workers) +
                   " workers needs a shard of at least one sample, but the set holds " +
                   std::to_string(data.train_samples()));
  }
  return data;
}

// "softmax" or {"mlp": [hidden widths]}.
std::vector<int> parse_objective_model(const JsonCursor& c) {
  if (c.value().is_string()) {
    if (c.as_string() != "softmax") {
      c.fail("unknown objective model \"" + c.as_string().substr(0, 100) +
             "\"; expected \"softmax\" or {\"mlp\": [hidden widths]}");
    }
    return {};
  }
  c.expect_object();
  c.check_keys({"mlp"});
  const JsonCursor widths = c.at("mlp");
  widths.expect_array();
  if (widths.size() == 0 || widths.size() > kMaxHiddenLayers) {
    widths.fail("expected 1 to " + std::to_string(kMaxHiddenLayers) +
                " hidden layer widths, such as [128, 64]");
  }
  std::vector<int> hidden;
  for (size_t i = 0; i < widths.size(); ++i) {
    hidden.push_back(int(widths.at(i).as_int(1, kMaxHiddenWidth)));
  }
  return hidden;
}

// "constant" or {"step_decay": {"decay_steps": N, "decay_rate": r}}.
LearningRateSchedule parse_schedule(const JsonCursor& c) {
  LearningRateSchedule schedule;
  if (c.value().is_string()) {
    if (c.as_string() != "constant") {
      c.fail("unknown schedule \"" + c.as_string().substr(0, 100) +
             "\"; expected \"constant\" or {\"step_decay\": {\"decay_steps\": N, "
             "\"decay_rate\": r}}");
    }
    return schedule;
  }
  c.expect_object();
  c.check_keys({"step_decay"});
  const JsonCursor step = c.at("step_decay");
  step.expect_object();
  step.check_keys({"decay_steps", "decay_rate"});
  schedule.kind = LearningRateSchedule::Kind::kStepDecay;
  schedule.decay_steps = step.at("decay_steps").as_int(1, limits::kMaxSteps);
  schedule.decay_rate = step.at("decay_rate").as_number();
  if (!(schedule.decay_rate > 0 && schedule.decay_rate <= 1)) {
    step.at("decay_rate")
        .fail("expected a factor in (0, 1], such as 0.5, got " +
              describe_json(step.at("decay_rate").value()));
  }
  return schedule;
}

// {"accuracy": x} or {"loss": x}.
void parse_target(const JsonCursor& c, ObjectiveSpec& spec) {
  c.expect_object();
  c.check_keys({"accuracy", "loss"});
  if (c.has("accuracy") == c.has("loss")) {
    c.fail("expected one of {\"accuracy\": fraction} or {\"loss\": nats}");
  }
  if (c.has("accuracy")) {
    spec.target = ObjectiveTarget::kAccuracy;
    const JsonCursor accuracy = c.at("accuracy");
    spec.target_value = accuracy.as_number();
    if (!(spec.target_value > 0 && spec.target_value <= 1)) {
      accuracy.fail("expected a fraction in (0, 1], such as 0.8, got " +
                    describe_json(accuracy.value()));
    }
    return;
  }
  spec.target = ObjectiveTarget::kLoss;
  const JsonCursor loss = c.at("loss");
  spec.target_value = loss.as_number();
  if (!(spec.target_value > 0 && spec.target_value <= 1e6)) {
    loss.fail("expected a mean cross-entropy in (0, 1e6] nats, such as 0.5, got " +
              describe_json(loss.value()));
  }
}

}  // namespace

ObjectiveSpec parse_objective(const JsonCursor& c, const TrainingSpec& t) {
  c.expect_object();
  c.check_keys({"data", "model", "learning_rate", "schedule", "staleness_aware", "batch",
                "evaluate_every", "target", "timing", "seed"});
  ObjectiveSpec spec;
  spec.enabled = true;
  spec.json_path = c.path();
  spec.data = parse_objective_data(c.at("data"), int(t.workers.size()));
  spec.hidden_widths = parse_objective_model(c.at("model"));
  try {
    spec.model();  // the parameter count's bound
  } catch (const InputError& error) {
    c.at("model").fail(error.message());
  }
  spec.learning_rate = c.at("learning_rate").as_number_in(1e-12, 1e6);
  if (c.has("schedule")) spec.schedule = parse_schedule(c.at("schedule"));
  if (c.has("staleness_aware")) spec.staleness_aware = c.at("staleness_aware").as_bool();
  spec.batch =
      c.has("batch") ? int(c.at("batch").as_int(1, limits::kMaxBatch)) : t.batch_per_replica;
  spec.evaluate_every_steps = int(c.at("evaluate_every").as_int(1, limits::kMaxSteps));
  parse_target(c.at("target"), spec);
  const JsonCursor timing = c.at("timing");
  const std::string mode = timing.as_string();
  if (mode == "scenario") {
    spec.timing = ObjectiveTiming::kScenario;
  } else if (mode != "objective") {
    timing.fail("unknown timing \"" + mode.substr(0, 100) +
                "\"; expected \"objective\" (the objective model's own costs) or \"scenario\" "
                "(the scenario's model's)");
  }
  spec.seed = uint64_t(c.at("seed").as_int(0, kMaxSeed));
  return spec;
}

}  // namespace scenario_detail
}  // namespace replisim::core
