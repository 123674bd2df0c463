// Helpers for tests: scenarios written in code (as JSON, so they go through the real parser)
// and one-call simulations returning metrics.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/metrics.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/trace/trace.h"

namespace replisim::test {

// {"name", "cpu": {"speed"}, "gpus": [{"speed"}...], "nic": {"bandwidth", "latency"}}.
nlohmann::json machine(const std::string& name, const std::string& cpu_speed,
                       const std::vector<std::string>& gpu_speeds, const std::string& nic_bandwidth,
                       const std::string& nic_latency = "10 us");

// A one-layer model: P params, F forward FLOP per sample, activation bytes per sample.
// A training.objective of softmax regression on the synthetic teacher-student set of 2,048
// training and 512 test samples, 16 features, 4 classes (data seed 1): learning rate 0.5, batch
// 16, evaluated every 4 global steps, target test accuracy `target_accuracy`, timing `timing`,
// seed `seed`. Callers add or change keys (schedule, staleness_aware, ...).
nlohmann::json synthetic_objective(double target_accuracy, const std::string& timing,
                                   uint64_t seed);

nlohmann::json one_layer_model(double params, const std::string& forward_flop,
                               const std::string& activation_bytes = "4 kB");

// A scenario document with the given parts; training gets `training` merged over defaults
// ({"batch_per_replica": 32, "steps": 40, "warmup_steps": 5}).
nlohmann::json scenario_json(const std::vector<nlohmann::json>& machines,
                             const nlohmann::json& model, const nlohmann::json& training,
                             const std::string& network_model = "ideal",
                             const std::string& switch_bandwidth = "1 TBps");

// Two workers (w0, w1: a 1 TFLOPS GPU each) and two PS shards (ps/cpu, w0/cpu), the client on ps,
// 4 steps of a one-layer model of 4,000 params; `training` (may be null) merged over that.
nlohmann::json two_ps_scenario(const nlohmann::json& training);

// Two workers, w0 (one 1 TFLOPS GPU) and one of two towers on w1's two GPUs; two PS shards
// (ps/cpu, w0/cpu), the client on ps, 4 steps (1 warm-up), two layers (a: 1,000 params, b: 3,000;
// 2 MFLOP per sample each); `training` (may be null) merged over that.
nlohmann::json two_workers_three_towers(const nlohmann::json& training);

core::Scenario parse(const nlohmann::json& document);
// Expects parsing `document` to fail at JSON path `path` with a message containing `needle` (a
// GoogleTest failure otherwise).
void expect_scenario_error(const nlohmann::json& document, const std::string& path,
                           const std::string& needle);

// The simulator's part of the test support: built with REPLISIM_WITH_SIM only (a test that compares
// with the simulation leaves that comparison out of a build without it).
#if REPLISIM_WITH_SIM
// Runs `plan` on the sim backend (in a child process) and returns its trace.
core::Trace run_plan(const core::Plan& plan);
// With the simulator's settings (sim/sim_settings.h: {"collective_fast_path": false}, ...).
core::Trace run_plan(const core::Plan& plan, const nlohmann::json& settings);

// Compiles with `strategy` and runs the sim backend (in a child process).
core::Trace simulate_trace(const nlohmann::json& document, const std::string& strategy,
                           uint64_t seed = 1);
core::RunMetrics simulate(const nlohmann::json& document, const std::string& strategy,
                          uint64_t seed = 1);
#endif

// The events of `kind` (of `client` only, when given), in the order they start.
std::vector<const core::TraceEvent*> events_of(const core::Trace& trace, core::EventKind kind,
                                               const std::string& client = "");

// The mean step time of client `name` in `metrics` (fails the test when absent).
double client_step_time(const core::RunMetrics& metrics, const std::string& name);

// Path of a file under the source tree's scenarios/ folder.
std::string scenario_path(const std::string& relative);

// The seed's scenario (scenarios/seed/two_machines.json).
inline std::string seed_scenario() {
  return scenario_path("seed/two_machines.json");
}

}  // namespace replisim::test
