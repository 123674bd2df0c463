// The run pipeline every running command shares (core/pipeline/run_pipeline.h): each check
// names the file and JSON path, or the flag, that the user must change, whichever command asks.
#include <fstream>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/temp_dir.h"
#include "core/pipeline/run_pipeline.h"
#include "sim/sim_backend.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

core::PlanRequest request(const std::string& strategy) {
  core::PlanRequest r;
  r.strategies = {strategy};
  return r;
}

// `doc` written as `name` in `dir` and loaded as the commands load a scenario.
core::LoadedScenario load_written(const core::ScopedTempDir& dir, const std::string& name,
                                  const nlohmann::json& doc) {
  const std::string file = dir.path() + "/" + name;
  std::ofstream(file) << doc.dump(1);
  return core::load_run_scenario(file);
}

// The error measuring a simulated between-graph run of `doc` gives ("(no error)" when none).
std::string measurement_error_of(const std::string& name, const nlohmann::json& doc) {
  const core::ScopedTempDir dir("replisim-pipeline");
  const core::LoadedScenario loaded = load_written(dir, name, doc);
  const core::PlanRequest r = request("between_graph");
  sim::SimBackend backend;
  const core::Trace trace =
      core::run_prepared(backend, core::prepare_plans(loaded, r).front(), {}, loaded);
  return error_of([&] { core::measure_run(trace, loaded, r, "t"); });
}

TEST(RunPipeline, StepsThatLeaveNoMeasurementNameTheFlagThatGaveThem) {
  const core::LoadedScenario loaded = core::load_run_scenario(test::seed_scenario());
  core::PlanRequest r = request("between_graph");
  r.steps = loaded.scenario.training.warmup_steps;
  EXPECT_NE(error_of([&] {
              core::prepare_plans(loaded, r);
            }).find("--steps: must be greater than the scenario's warmup_steps"),
            std::string::npos);
  r.steps_flag = "--probe-steps";
  EXPECT_NE(error_of([&] { core::prepare_plans(loaded, r); }).find("--probe-steps: must be"),
            std::string::npos);
  // One step past the warm-up: the workers' windows do not meet (the seed's second worker warms
  // up later), and the error says which flag to raise.
  r.steps_flag = "--steps";
  r.steps = loaded.scenario.training.warmup_steps + 1;
  const std::vector<core::Plan> plans = core::prepare_plans(loaded, r);
  sim::SimBackend backend;
  const core::Trace trace = core::run_prepared(backend, plans.front(), {}, loaded);
  const std::string why = error_of([&] { core::measure_run(trace, loaded, r, "t"); });
  EXPECT_NE(why.find("--steps: "), std::string::npos) << why;
  EXPECT_NE(why.find("raise --steps (" + std::to_string(r.steps) + " now)"), std::string::npos)
      << why;
  // The scenario's own steps measure.
  const core::PlanRequest own = request("between_graph");
  const core::Trace full =
      core::run_prepared(backend, core::prepare_plans(loaded, own).front(), {}, loaded);
  EXPECT_GT(core::measure_run(full, loaded, own, "t").throughput_samples_per_s, 0);
}

TEST(RunPipeline, AGpuTooSmallForItsShareIsRefusedAtItsMemoryFieldUnderStrict) {
  nlohmann::json doc = core::read_json_file(test::seed_scenario());
  for (auto& m : doc["cluster"]["machines"]) {
    for (auto& g : m["gpus"]) g["memory"] = "1 MB";
  }
  const core::ScopedTempDir dir("replisim-pipeline");
  const core::LoadedScenario loaded = load_written(dir, "small.json", doc);
  core::PlanRequest r = request("between_graph");
  EXPECT_NO_THROW(core::prepare_plans(loaded, r));
  r.require_memory = true;
  const std::string why = error_of([&] { core::prepare_plans(loaded, r); });
  EXPECT_NE(why.find("small.json: /cluster/machines/0/gpus/0/memory: pc1/gpu0 cannot hold the "
                     "between_graph plan"),
            std::string::npos)
      << why;
}

// With the steps from the flag, the warnings name the flag too.
TEST(RunPipeline, WarningsNameTheFlagTheStepsCameFrom) {
  const core::LoadedScenario loaded = core::load_run_scenario(test::seed_scenario());
  core::PlanRequest r = request("in_graph");
  r.steps = loaded.scenario.training.warmup_steps + 2;
  sim::SimBackend backend;
  const core::Trace trace =
      core::run_prepared(backend, core::prepare_plans(loaded, r).front(), {}, loaded);
  const core::RunMetrics metrics = core::measure_run(trace, loaded, r, "t");
  bool named = false;
  for (const std::string& w : metrics.warnings) {
    EXPECT_EQ(w.find("raise training.steps"), std::string::npos) << w;
    named |= w.find("raise --steps (" + std::to_string(r.steps) + " now)") != std::string::npos;
  }
  EXPECT_TRUE(named) << "no warning about too few measured steps";
}

// A worker out of data within its warm-up measures nothing: named at its field, not as a trace
// without complete steps.
TEST(RunPipeline, AWorkerOutOfDataWithinItsWarmUpNamesItsDataSteps) {
  nlohmann::json doc = core::read_json_file(test::seed_scenario());
  doc["training"]["data_steps_per_worker"] = {5, 100};
  const std::string why = measurement_error_of("data.json", doc);
  EXPECT_NE(why.find("data.json: /training/data_steps_per_worker: worker0 ran out of data after 5 "
                     "step(s), within its 10 warm-up steps"),
            std::string::npos)
      << why;
}

// Synchronous workers out of data before the warm-up's end stall training: named at their data,
// not at the warm-up.
TEST(RunPipeline, ASyncStallForLackOfDataNamesTheDataSteps) {
  nlohmann::json doc = core::read_json_file(test::scenario_path("classroom/sync_straggler.json"));
  doc["training"]["data_steps_per_worker"] = 4;  // every worker: 4 steps, warm-up 10
  const std::string why = measurement_error_of("stall.json", doc);
  EXPECT_NE(why.find("stall.json: /training/data_steps_per_worker: the measurement window is "
                     "empty"),
            std::string::npos)
      << why;
}

TEST(RunPipeline, ALinkFaultIsRefusedForARealRunOnLoopbackOnly) {
  const std::string file = test::scenario_path("validation/degraded_link.json");
  const core::LoadedScenario loaded = core::load_run_scenario(file);
  core::PlanRequest r = request("between_graph");
  EXPECT_NO_THROW(core::prepare_plans(loaded, r));  // simulated
  r.real = true;
  const std::string why = error_of([&] { core::prepare_plans(loaded, r); });
  EXPECT_NE(why.find("degraded_link.json: /faults/"), std::string::npos) << why;
  EXPECT_NE(why.find("a real run on loopback cannot degrade or cut a link"), std::string::npos)
      << why;
  r.shaped_links = true;
  EXPECT_NO_THROW(core::prepare_plans(loaded, r));
}

}  // namespace
}  // namespace replisim
