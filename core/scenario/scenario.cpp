#include "core/scenario/scenario.h"

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/scenario/scenario_model.h"
#include "core/scenario/scenario_parse.h"

namespace replisim::core {
namespace {

std::string file_stem(const std::string& file) {
  std::string base = file.substr(file.find_last_of('/') + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

const char* sync_variant_name(SyncVariant variant) {
  return variant == SyncVariant::kStrict ? "strict" : "tf";
}

const MachineSpec* ClusterSpec::find_machine(const std::string& name) const {
  if (machine_index_.size() == machines.size()) {
    auto found = machine_index_.find(name);
    return found == machine_index_.end() ? nullptr : &machines[found->second];
  }
  for (const MachineSpec& m : machines) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool ClusterSpec::add_machine(MachineSpec machine) {
  if (machine_index_.size() != machines.size()) {
    machine_index_.clear();
    for (size_t i = 0; i < machines.size(); ++i) machine_index_[machines[i].name] = i;
  }
  if (!machine_index_.emplace(machine.name, machines.size()).second) return false;
  machines.push_back(std::move(machine));
  return true;
}

nlohmann::json check_calibration(const JsonCursor& c) {
  c.expect_object();
  if (c.at("format").as_string() != kCalibrationFormat) {
    c.at("format").fail(std::string("not a calibration (replisim calibrate writes \"") +
                        kCalibrationFormat + "\")");
  }
  const int64_t version = c.at("version").as_int(0, 1000000);
  if (version != kCalibrationVersion) {
    c.at("version").fail("a calibration of version " + std::to_string(version) +
                         "; this replisim reads version " + std::to_string(kCalibrationVersion) +
                         ": run replisim calibrate again");
  }
  return c.value();
}

Scenario parse_scenario(const nlohmann::json& document, const std::string& file,
                        const SourceMap* sources) {
  const JsonCursor root = sources ? JsonCursor(document, sources) : JsonCursor(document, file);
  root.expect_object();
  root.check_keys(
      {"name", "description", "include", "calibration", "cluster", "model", "training", "faults"});
  if (root.has("include")) {
    root.at("include").fail("includes are resolved when a scenario is loaded from a file");
  }
  Scenario s;
  s.file = file;
  if (sources != nullptr) s.sources = std::make_shared<const SourceMap>(*sources);
  s.name = root.has("name") ? root.at("name").as_string() : file_stem(file);
  if (s.name.size() > limits::kMaxNameBytes) {
    (root.has("name") ? root.at("name") : root)
        .fail("a scenario name longer than " + std::to_string(limits::kMaxNameBytes) + " bytes");
  }
  if (has_control_character(s.name)) {
    (root.has("name") ? root.at("name") : root)
        .fail("a scenario name must not contain control characters (NUL included)");
  }
  if (root.has("description")) root.at("description").as_string();
  if (root.has("calibration")) s.calibration = check_calibration(root.at("calibration"));
  s.cluster = scenario_detail::parse_cluster(root.at("cluster"));
  s.model = parse_model(root.at("model"));
  s.training = scenario_detail::parse_training(root.at("training"), s.cluster, s.model);
  if (root.has("faults")) {
    s.faults = scenario_detail::parse_faults(root.at("faults"), s.cluster, s.training);
  }
  return s;
}

Scenario load_scenario(const std::string& file) {
  const ScenarioDocument document = load_scenario_document(file);
  return parse_scenario(document.json, file, &document.sources);
}

}  // namespace replisim::core
