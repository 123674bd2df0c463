#include "tests/support/test_support.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#if REPLISIM_WITH_SIM
#include "sim/sim_backend.h"
#endif

namespace replisim::test {

nlohmann::json machine(const std::string& name, const std::string& cpu_speed,
                       const std::vector<std::string>& gpu_speeds, const std::string& nic_bandwidth,
                       const std::string& nic_latency) {
  nlohmann::json m = {{"name", name},
                      {"cpu", {{"speed", cpu_speed}}},
                      {"gpus", nlohmann::json::array()},
                      {"nic", {{"bandwidth", nic_bandwidth}, {"latency", nic_latency}}}};
  for (const std::string& speed : gpu_speeds) m["gpus"].push_back({{"speed", speed}});
  return m;
}

nlohmann::json synthetic_objective(double target_accuracy, const std::string& timing,
                                   uint64_t seed) {
  return {{"data",
           {{"set", "synthetic"},
            {"samples", 2048},
            {"test_samples", 512},
            {"features", 16},
            {"classes", 4},
            {"seed", 1}}},
          {"model", "softmax"},
          {"learning_rate", 0.5},
          {"batch", 16},
          {"evaluate_every", 4},
          {"target", {{"accuracy", target_accuracy}}},
          {"timing", timing},
          {"seed", seed}};
}

nlohmann::json one_layer_model(double params, const std::string& forward_flop,
                               const std::string& activation_bytes) {
  return {{"layers",
           {{{"name", "dense"},
             {"params", params},
             {"forward_flops_per_sample", forward_flop},
             {"activation_bytes_per_sample", activation_bytes}}}}};
}

nlohmann::json scenario_json(const std::vector<nlohmann::json>& machines,
                             const nlohmann::json& model, const nlohmann::json& training,
                             const std::string& network_model,
                             const std::string& switch_bandwidth) {
  nlohmann::json t = {{"batch_per_replica", 32}, {"steps", 40}, {"warmup_steps", 5}};
  t.update(training);
  return {{"name", "test"},
          {"cluster",
           {{"machines", machines},
            {"switch", {{"bandwidth", switch_bandwidth}, {"latency", "1 us"}}},
            {"network_model", network_model}}},
          {"model", model},
          {"training", t}};
}

nlohmann::json two_ps_scenario(const nlohmann::json& training) {
  nlohmann::json t = {{"replicas", {"w0/gpu0", "w1/gpu0"}},
                      {"ps", {"ps/cpu", "w0/cpu"}},
                      {"client", "ps"},
                      {"steps", 4},
                      {"warmup_steps", 1}};
  if (!training.is_null()) t.update(training);
  return scenario_json({machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                        machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                        machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
                       one_layer_model(4000, "1 MFLOP"), t);
}

nlohmann::json two_workers_three_towers(const nlohmann::json& training) {
  nlohmann::json t = {{"replicas", {"w0/gpu0", {{"towers", {"w1/gpu0", "w1/gpu1"}}}}},
                      {"ps", {"ps/cpu", "w0/cpu"}},
                      {"client", "ps"},
                      {"steps", 4},
                      {"warmup_steps", 1}};
  if (!training.is_null()) t.update(training);
  const nlohmann::json model = {{"layers",
                                 {{{"name", "a"},
                                   {"params", 1000},
                                   {"forward_flops_per_sample", "2 MFLOP"},
                                   {"activation_bytes_per_sample", "4 kB"}},
                                  {{"name", "b"},
                                   {"params", 3000},
                                   {"forward_flops_per_sample", "2 MFLOP"},
                                   {"activation_bytes_per_sample", "1 kB"}}}}};
  return scenario_json({machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                        machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                        machine("w1", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps")},
                       model, t);
}

core::Scenario parse(const nlohmann::json& document) {
  return core::parse_scenario(document, "test.json");
}

void expect_scenario_error(const nlohmann::json& document, const std::string& path,
                           const std::string& needle) {
  try {
    core::parse_scenario(document, "test.json");
    ADD_FAILURE() << "expected an error at " << path;
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
  }
}

#if REPLISIM_WITH_SIM
core::Trace run_plan(const core::Plan& plan) {
  sim::SimBackend backend;
  return core::run_to_trace(backend, plan);
}

core::Trace run_plan(const core::Plan& plan, const nlohmann::json& settings) {
  sim::SimBackend backend;
  core::RunOptions options;
  options.settings = settings;
  return core::run_to_trace(backend, plan, options);
}

core::Trace simulate_trace(const nlohmann::json& document, const std::string& strategy,
                           uint64_t seed) {
  const core::Plan plan = core::compile_plan(parse(document), strategy, {seed});
  return run_plan(plan);
}

core::RunMetrics simulate(const nlohmann::json& document, const std::string& strategy,
                          uint64_t seed) {
  return core::compute_metrics(simulate_trace(document, strategy, seed));
}
#endif

std::vector<const core::TraceEvent*> events_of(const core::Trace& trace, core::EventKind kind,
                                               const std::string& client) {
  std::vector<const core::TraceEvent*> out;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == kind && (client.empty() || trace.str(e.client) == client)) out.push_back(&e);
  }
  std::sort(out.begin(), out.end(), [](const core::TraceEvent* a, const core::TraceEvent* b) {
    return a->start_s < b->start_s;
  });
  return out;
}

double client_step_time(const core::RunMetrics& metrics, const std::string& name) {
  for (const core::ClientMetrics& c : metrics.clients) {
    if (c.name == name) return c.mean_step_time_s;
  }
  ADD_FAILURE() << "no client " << name;
  return 0;
}

std::string scenario_path(const std::string& relative) {
  return std::string(REPLISIM_SOURCE_DIR) + "/scenarios/" + relative;
}

}  // namespace replisim::test
