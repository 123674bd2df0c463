#include "gui/scenario_document.h"

#include <QSaveFile>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/sweep/scenario_edit.h"

namespace replisim::gui {

namespace {

using Json = ScenarioDocument::Json;

std::string number_text(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

int count_of(const Json& machine) {
  return machine.contains("count") ? machine["count"].get<int>() : 1;
}

std::string name_of(const Json& machine) {
  return machine.value("name", std::string());
}

int gpu_count_of(const Json& machine) {
  if (!machine.contains("gpus")) return 0;
  const Json& gpus = machine["gpus"];
  if (gpus.is_object()) return gpus.value("count", 0);  // {"count": 8, "speed": ...}
  return gpus.is_array() ? int(gpus.size()) : 0;
}

// GPU `index` of a machine's "gpus" (a list, or the identical GPUs' shorthand object).
const Json& gpu_at(const Json& machine, size_t index) {
  const Json& gpus = machine["gpus"];
  return gpus.is_object() ? gpus : gpus[index];
}

std::string machine_of(const std::string& device) {
  return device.substr(0, device.find('/'));
}

std::string device_part(const std::string& device) {
  const size_t slash = device.find('/');
  return slash == std::string::npos ? "" : device.substr(slash + 1);
}

}  // namespace

ScenarioDocument ScenarioDocument::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the file");
  Json json = Json::parse(in, nullptr, false);
  if (json.is_discarded()) throw std::runtime_error(path + ": not valid JSON");
  if (!json.is_object()) throw std::runtime_error(path + ": a scenario is a JSON object");
  return ScenarioDocument(std::move(json), path);
}

ScenarioDocument::ScenarioDocument(Json json, std::string path)
    : json_(std::move(json)), path_(std::move(path)) {}

std::string ScenarioDocument::name() const {
  return json_.value("name", std::string("scenario"));
}

Json& ScenarioDocument::training() {
  if (!json_.contains("training") || !json_["training"].is_object())
    throw std::invalid_argument("the scenario has no \"training\" object");
  return json_["training"];
}

const Json* ScenarioDocument::training_or_null() const {
  const auto it = json_.find("training");
  return it != json_.end() && it->is_object() ? &*it : nullptr;
}

std::vector<std::string> ScenarioDocument::machine_names() const {
  return core::scenario_machine_names(json_);
}

int ScenarioDocument::machine_entry_of(const std::string& machine) const {
  if (!json_.contains("cluster") || !json_["cluster"].contains("machines")) return -1;
  const Json& machines = json_["cluster"]["machines"];
  for (size_t e = 0; e < machines.size(); ++e) {
    const Json& m = machines[e];
    if (!m.contains("count") && name_of(m) == machine) return int(e);
    if (m.contains("count")) {
      for (int i = 0; i < count_of(m); ++i)
        if (name_of(m) + std::to_string(i) == machine) return int(e);
    }
  }
  return -1;
}

int ScenarioDocument::replica_count() const {
  return core::scenario_replica_count(json_);
}

int ScenarioDocument::replica_step() const {
  return core::scenario_replica_step(json_);
}

std::string ScenarioDocument::replicas_fixed_reason() const {
  const Json* t = training_or_null();
  if (!t || !t->contains("replicas")) return "the scenario has no training.replicas";
  if (replica_count() == 0) {
    return "the replicas' machines are not in this file (an include gives them?): edit the "
           "replicas where the machines are";
  }
  return "";
}

void ScenarioDocument::set_replica_count(int count) {
  try {
    core::set_scenario_replica_count(json_, count, path_);
  } catch (const core::InputError& e) {
    throw std::invalid_argument(e.what());
  }
}

int ScenarioDocument::ps_count() const {
  const Json* t = training_or_null();
  if (!t || !t->contains("ps")) return 1;
  const Json& ps = (*t)["ps"];
  if (ps.is_object()) return ps.value("count", 1);
  return ps.is_array() ? int(ps.size()) : 1;
}

void ScenarioDocument::set_ps_count(int count) {
  if (count < 1) throw std::invalid_argument("parameter servers: at least 1");
  Json& t = training();
  if (t.contains("ps") && t["ps"].is_object()) {
    t["ps"]["count"] = count;
    return;
  }
  const std::vector<std::string> names = machine_names();
  const std::string client = t.value("client", names.empty() ? std::string() : names.front());
  Json list = !t.contains("ps")    ? Json::array({client + "/cpu"})
              : t["ps"].is_array() ? t["ps"]
                                   : Json::array({t["ps"]});
  while (int(list.size()) > count) list.erase(list.size() - 1);
  for (size_t next = 0; int(list.size()) < count; ++next) {
    std::string cpu = names.empty() ? client + "/cpu" : names[next % names.size()] + "/cpu";
    const bool used = std::find(list.begin(), list.end(), Json(cpu)) != list.end();
    if (!used || next >= names.size()) list.push_back(cpu);
  }
  t["ps"] = list;
}

double ScenarioDocument::nic_bandwidth_bytes_per_s() const {
  if (!json_.contains("cluster")) return 0;
  const Json& cluster = json_["cluster"];
  for (const Json& m : cluster.value("machines", Json::array())) {
    if (m.contains("nic") && m["nic"].contains("bandwidth"))
      return core::parse_quantity(m["nic"]["bandwidth"], core::Dimension::kBandwidth);
  }
  const Json defaults = cluster.value("machine_defaults", Json::object());
  if (defaults.contains("nic") && defaults["nic"].contains("bandwidth"))
    return core::parse_quantity(defaults["nic"]["bandwidth"], core::Dimension::kBandwidth);
  return 0;
}

void ScenarioDocument::set_nic_bandwidth_bytes_per_s(double bandwidth_bytes_per_s) {
  if (!(bandwidth_bytes_per_s > 0)) throw std::invalid_argument("NIC bandwidth: above 0");
  if (!json_.contains("cluster") || !json_["cluster"].contains("machines"))
    throw std::invalid_argument("the scenario has no cluster.machines");
  const std::string text = number_text(bandwidth_bytes_per_s * 8 / 1e9) + " Gbps";
  Json& cluster = json_["cluster"];
  const bool defaults =
      cluster.contains("machine_defaults") && cluster["machine_defaults"].contains("nic");
  if (defaults) cluster["machine_defaults"]["nic"]["bandwidth"] = text;
  for (Json& m : cluster["machines"]) {
    if (m.contains("nic"))
      m["nic"]["bandwidth"] = text;
    else if (!defaults)
      m["nic"] = Json{{"bandwidth", text}};
  }
}

SyncKnob ScenarioDocument::sync() const {
  SyncKnob knob;
  const Json* t = training_or_null();
  if (!t || !t->contains("sync")) return knob;
  const Json& sync = (*t)["sync"];
  if (sync.is_string()) {
    knob.synchronous = sync.get<std::string>() == "sync";
    knob.distributed_replicated = sync.get<std::string>() == "distributed_replicated";
    return knob;
  }
  knob.synchronous = true;
  const int total = sync.value("total_num_replicas", replica_count());
  knob.backup_workers = total - sync.value("replicas_to_aggregate", total);
  knob.variant = sync.value("variant", std::string());
  return knob;
}

void ScenarioDocument::set_sync(const SyncKnob& knob) {
  Json& t = training();
  if (knob.distributed_replicated) {
    t["sync"] = "distributed_replicated";
    return;
  }
  if (!knob.synchronous) {
    if (t.contains("sync")) t["sync"] = "async";
    return;
  }
  const int workers = replica_count();
  if (knob.backup_workers < 0 || knob.backup_workers >= workers)
    throw std::invalid_argument("backup workers: from 0 to " + std::to_string(workers - 1) +
                                " (fewer than the " + std::to_string(workers) + " workers)");
  if (!t.contains("sync") || !t["sync"].is_object()) {
    if (knob.backup_workers == 0 && knob.variant.empty()) {
      t["sync"] = "sync";
      return;
    }
    t["sync"] = Json::object();
  }
  Json& sync = t["sync"];
  if (knob.backup_workers > 0 || sync.contains("replicas_to_aggregate")) {
    sync["replicas_to_aggregate"] = workers - knob.backup_workers;
    sync["total_num_replicas"] = workers;
  }
  if (!knob.variant.empty()) sync["variant"] = knob.variant;
  if (knob.variant.empty()) sync.erase("variant");
}

std::vector<std::string> ScenarioDocument::gpu_devices() const {
  std::vector<std::string> out;
  if (!json_.contains("cluster") || !json_["cluster"].contains("machines")) return out;
  for (const Json& m : json_["cluster"]["machines"]) {
    const std::string machine = m.contains("count") ? name_of(m) + "*" : name_of(m);
    for (int g = 0; g < gpu_count_of(m); ++g) out.push_back(machine + "/gpu" + std::to_string(g));
  }
  return out;
}

double ScenarioDocument::device_speed_flop_per_s(const std::string& device) const {
  std::string machine = machine_of(device);
  if (!machine.empty() && machine.back() == '*') machine.pop_back(), machine += "0";
  const int entry = machine_entry_of(machine);
  const std::string gpu = device_part(device);
  if (entry < 0 || gpu.rfind("gpu", 0) != 0) throw std::invalid_argument("no GPU " + device);
  const Json& m = json_["cluster"]["machines"][size_t(entry)];
  const size_t index = std::stoul(gpu.substr(3));
  if (index >= size_t(gpu_count_of(m)) || !gpu_at(m, index).contains("speed"))
    throw std::invalid_argument("no speed for GPU " + device);
  return core::parse_quantity(gpu_at(m, index)["speed"], core::Dimension::kFlopRate);
}

void ScenarioDocument::set_device_speed_flop_per_s(const std::string& device, double speed) {
  if (!(speed > 0)) throw std::invalid_argument("device speed: above 0");
  device_speed_flop_per_s(device);  // throws for an unknown device
  std::string machine = machine_of(device);
  if (machine.back() == '*') machine.pop_back(), machine += "0";
  Json& m = json_["cluster"]["machines"][size_t(machine_entry_of(machine))];
  Json& gpus = m["gpus"];
  // The shorthand's GPUs are identical: a knob on one sets them all.
  Json& gpu = gpus.is_object() ? gpus : gpus[std::stoul(device_part(device).substr(3))];
  gpu["speed"] = number_text(speed / 1e12) + " TFLOPS";
}

FaultKnob ScenarioDocument::fault() const {
  FaultKnob knob;
  if (!json_.contains("faults")) return knob;
  for (const Json& f : json_["faults"]) {
    const std::string kind = f.value("kind", std::string());
    if (kind != "role" && kind != "machine") continue;
    knob.kind = kind;
    knob.target = f.value(kind, std::string());
    knob.at_s = core::parse_quantity(f.value("at", std::string("0 s")), core::Dimension::kTime);
    return knob;
  }
  return knob;
}

void ScenarioDocument::set_fault(const FaultKnob& knob) {
  if (!knob.kind.empty() && knob.kind != "role" && knob.kind != "machine")
    throw std::invalid_argument("fault: kind role or machine");
  if (!knob.kind.empty() && knob.target.empty())
    throw std::invalid_argument("fault: which " + knob.kind + "?");
  if (!knob.kind.empty() && knob.at_s < 0) throw std::invalid_argument("fault: a time ≥ 0 s");
  Json& faults = json_["faults"];
  if (faults.is_null()) faults = Json::array();
  size_t at = faults.size();
  for (size_t i = 0; i < faults.size(); ++i) {
    const std::string kind = faults[i].value("kind", std::string());
    if (kind == "role" || kind == "machine") at = i, i = faults.size();
  }
  if (knob.kind.empty()) {
    if (at < faults.size()) faults.erase(at);
    if (faults.empty()) json_.erase("faults");
    return;
  }
  const Json value = {
      {"kind", knob.kind}, {knob.kind, knob.target}, {"at", number_text(knob.at_s) + " s"}};
  if (at == faults.size()) {
    faults.push_back(value);
  } else if (faults[at]["kind"] == knob.kind) {
    faults[at][knob.kind] = knob.target;
    faults[at]["at"] = value["at"];
  } else {
    faults[at] = value;
  }
}

int ScenarioDocument::steps() const {
  const Json* t = training_or_null();
  return t ? t->value("steps", 100) : 100;
}

int ScenarioDocument::warmup_steps() const {
  const Json* t = training_or_null();
  return t ? t->value("warmup_steps", 10) : 10;
}

void ScenarioDocument::set_steps(int steps) {
  if (steps < 2) throw std::invalid_argument("steps: at least 2");
  const int before = this->steps(), warmup = warmup_steps();
  Json& t = training();
  t["steps"] = steps;
  const int scaled = int(std::lround(double(warmup) * steps / std::max(1, before)));
  t["warmup_steps"] = std::clamp(scaled, 1, steps - 1);
}

std::string ScenarioDocument::granularity() const {
  const Json* t = training_or_null();
  if (!t || !t->contains("granularity")) return "";
  const Json& g = (*t)["granularity"];
  return g.is_string() ? g.get<std::string>() : g.dump();
}

void ScenarioDocument::set_granularity_groups(int groups) {
  if (groups < 1) throw std::invalid_argument("granularity: at least 1 group");
  training()["granularity"] = groups;
}

void ScenarioDocument::write(const std::string& path) const {
  QSaveFile file(QString::fromStdString(path));
  const std::string text = json_.dump(2) + "\n";
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
      !file.commit()) {
    throw std::runtime_error(path + ": cannot write (" + file.errorString().toStdString() + ")");
  }
}

}  // namespace replisim::gui
