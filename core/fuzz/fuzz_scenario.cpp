// libFuzzer target: the bytes are a scenario file ("scenario.json") that may include the files of
// a fixed in-memory set (a cluster, a model, training settings, and one that includes another).
// Loading, parsing, validating and compiling it with both strategies ends in a plan or an
// InputError (one line naming the file and JSON path), never a crash, a hang or another
// exception. Plans are kept small (CompileOptions' budget) so that a run stays fast.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"

namespace {

using namespace replisim::core;

const ScenarioFilesInMemory& include_set() {
  static const ScenarioFilesInMemory files(std::map<std::string, std::string>{
      {"cluster.json", R"({"cluster": {"machines": [
          {"name": "pc1", "cpu": {"speed": "400 GFLOPS"}, "gpus": [{"speed": "10 TFLOPS"}],
           "nic": {"bandwidth": "10 Gbps", "latency": "25 us"}},
          {"name": "w", "count": 2, "cpu": {"speed": "400 GFLOPS"},
           "gpus": {"count": 2, "speed": "5 TFLOPS"},
           "nic": {"bandwidth": "25 Gbps", "latency": "10 us"}}],
          "switch": {"bandwidth": "100 Gbps", "latency": "1 us"}, "network_model": "lv08"}})"},
      {"model.json", R"({"model": {"layers": [
          {"name": "a", "params": 1000, "forward_flops_per_sample": "1 MFLOP",
           "activation_bytes_per_sample": "4 KiB"},
          {"name": "b", "params": 5000, "forward_flops_per_sample": "2 MFLOP",
           "activation_bytes_per_sample": "1 KiB"}]}})"},
      {"training.json", R"({"training": {"batch_per_replica": 8, "steps": 4, "warmup_steps": 1,
          "replicas": ["pc1/gpu0", "w0/gpu0", "w1/gpu1"], "client": "pc1", "ps": ["pc1/cpu"]}})"},
      {"both.json", R"({"include": ["cluster.json", "model.json"]})"},
      {"dir/nested.json", R"({"include": "../training.json", "name": "nested"})"},
  });
  return files;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> files = {
      {"scenario.json", std::string(reinterpret_cast<const char*>(data), size)}};
  // The fixed set, and the input as "scenario.json" beside it.
  class WithInput : public ScenarioFiles {
   public:
    explicit WithInput(std::map<std::string, std::string> top) : top_(std::move(top)) {}
    Kind kind(const std::string& path) const override {
      return top_.kind(path) == Kind::kFile ? Kind::kFile : include_set().kind(path);
    }
    std::string canonical(const std::string& path) const override {
      return include_set().canonical(path);
    }
    nlohmann::json read(const std::string& path, size_t max_values) const override {
      return top_.kind(path) == Kind::kFile ? top_.read(path, max_values)
                                            : include_set().read(path, max_values);
    }

   private:
    ScenarioFilesInMemory top_;
  } set(std::move(files));
  try {
    const ScenarioDocument doc = load_scenario_document("scenario.json", set);
    const Scenario scenario = parse_scenario(doc.json, "scenario.json", &doc.sources);
    CompileOptions options;
    options.budget.max_ops = 200000;
    options.budget.max_bytes = 64e6;
    for (const std::string& strategy : strategy_names()) {
      try {
        compile_plan(scenario, strategy, options);
      } catch (const InputError&) {  // the scenario suits the other strategy only
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
