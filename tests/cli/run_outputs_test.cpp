// The size estimate that announces a large trace output (cli/run_outputs.h): exact when every
// event fits in its sample, close to the written size when it samples a few hundred of the seed's
// events, and the notice line itself.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/run_outputs.h"
#include "core/pipeline/run_pipeline.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/trace_csv.h"
#include "core/trace/trace_format.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::cli {
namespace {

std::vector<core::Trace> seed_traces(test::TempDir& dir) {
  const std::string path = dir.file("seed.rtrace");
  const test::BinaryResult r = test::run_replisim(
      {"simulate", test::scenario_path("seed/two_machines.json"), "--trace-out", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The seed's traces are a few MB at most: no notice.
  EXPECT_EQ(r.err.find("writing it"), std::string::npos) << r.err;
  return core::read_trace_file(path);
}

double written_bytes(const TraceWriter& write, const std::vector<const core::Trace*>& runs) {
  std::ostringstream out;
  write(out, runs);
  return double(out.str().size());
}

TEST(TraceOutputEstimate, ExactWhenWholeAndCloseWhenSampled) {
  test::TempDir dir;
  const std::vector<core::Trace> traces = seed_traces(dir);
  ASSERT_EQ(traces.size(), 2u);
  std::vector<const core::Trace*> runs;
  size_t events = 0;
  for (const core::Trace& t : traces) {
    runs.push_back(&t);
    events += t.events.size();
  }
  ASSERT_GT(events, 4000u);
  const nlohmann::json provenance = {{"command_line", "test"}};
  const std::vector<std::pair<std::string, TraceWriter>> writers = {
      {"chrome",
       [&](std::ostream& out, const std::vector<const core::Trace*>& t) {
         std::vector<core::ChromeTraceInput> inputs;
         for (const core::Trace* trace : t) inputs.push_back({trace, trace->meta.strategy + " "});
         core::write_chrome_trace(out, inputs, provenance);
       }},
      {"binary",
       [](std::ostream& out, const std::vector<const core::Trace*>& t) {
         core::write_traces_binary(out, t);
       }},
      {"csv", [&](std::ostream& out, const std::vector<const core::Trace*>& t) {
         core::write_events_csv(out, t, provenance);
       }}};
  for (const auto& [name, write] : writers) {
    const double actual = written_bytes(write, runs);
    EXPECT_DOUBLE_EQ(estimated_trace_output_bytes(runs, write, {}, events), actual) << name;
    const double sampled = estimated_trace_output_bytes(runs, write, {}, 1000);
    EXPECT_NEAR(sampled / actual, 1.0, 0.15) << name << ": " << sampled << " for " << actual;
  }
  // A window keeps fewer events: the estimate follows the smaller file.
  const core::TimelineWindow window{0, traces[0].events[traces[0].events.size() / 4].start_s};
  const TraceWriter chrome_window = [&](std::ostream& out,
                                        const std::vector<const core::Trace*>& t) {
    std::vector<core::ChromeTraceInput> inputs;
    for (const core::Trace* trace : t) inputs.push_back({trace, trace->meta.strategy + " "});
    core::write_chrome_trace(out, inputs, provenance, window);
  };
  const double actual = written_bytes(chrome_window, runs);
  EXPECT_LT(actual, 0.6 * written_bytes(writers[0].second, runs));
  EXPECT_NEAR(estimated_trace_output_bytes(runs, chrome_window, window, 500) / actual, 1.0, 0.2);
}

// The report's second line says what ran on what: the plan's steps (--steps, steady state), the
// model's size in readable units, the NICs as a range, racks and a fat tree's levels.
TEST(WorkloadLine, SaysWhatRanOnWhat) {
  nlohmann::json s =
      test::scenario_json({test::machine("a", "100 GFLOPS", {"1 TFLOPS"}, "400 Mbps"),
                           test::machine("b", "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps")},
                          test::one_layer_model(10, "1 kFLOP"),
                          {{"batch_per_replica", 8},
                           {"steps", 20},
                           {"warmup_steps", 2},
                           {"replicas", {"a/gpu0", "b/gpu0"}},
                           {"ps", {"a/cpu"}},
                           {"client", "a"}});
  const auto line = [](const nlohmann::json& document, int steps = 0) {
    const core::LoadedScenario loaded{test::parse(document), "", {}};
    core::PlanRequest request;
    request.strategies = {"between_graph"};
    if (steps > 0) request.steps = steps;
    return workload_line(loaded.scenario, core::prepare_plans(loaded, request).front());
  };
  EXPECT_EQ(line(s),
            "workload: model custom, 10 parameters (40 B); batch 8 per replica, 20 steps (2 "
            "warm-up); cluster: 2 machines, 3 GPUs, NICs 400 Mbps to 10 Gbps, one switch");
  EXPECT_NE(line(s, 12).find(", 12 steps (2 warm-up);"), std::string::npos) << line(s, 12);
  s["model"] = test::one_layer_model(25.56e6, "1 kFLOP");
  s["training"]["steps"] = "auto";
  EXPECT_NE(line(s).find("model custom, 25.56 M parameters (102.2 MB); batch 8 per replica, "
                         "steps until steady (+-1%), at most 1000 steps (2 warm-up);"),
            std::string::npos)
      << line(s);
  s["training"]["steps"] = 20;
  s["training"]["forward_only"] = true;
  EXPECT_NE(line(s).find("batch 8 per replica, forward only, 20 steps"), std::string::npos)
      << line(s);
  s["training"].erase("forward_only");
  s["cluster"]["topology"] = {{"kind", "racks"},
                              {"machines_per_rack", 1},
                              {"uplink", {{"bandwidth", "2 Tbps"}, {"latency", "1 us"}}}};
  EXPECT_NE(line(s).find(", 2 racks of 1 machine, uplinks 2 Tbps"), std::string::npos) << line(s);
  s["cluster"]["topology"] = {
      {"kind", "fat_tree"},
      {"levels", {{{"down", 1}, {"oversubscription", 3}}, {{"down", 2}, {"oversubscription", 4}}}}};
  EXPECT_NE(line(s).find(", 2 racks of 1 machine, uplinks 3:1 oversubscribed; 1 pod of 2 racks, "
                         "uplinks 4:1 oversubscribed"),
            std::string::npos)
      << line(s);
  // Several NICs per machine (nic.count): their number before the bandwidth, or per machine when
  // the machines differ.
  s["cluster"].erase("topology");
  s["cluster"]["machines"][0]["nic"]["bandwidth"] = "10 Gbps";
  s["cluster"]["machines"][0]["nic"]["count"] = 2;
  s["cluster"]["machines"][1]["nic"]["count"] = 2;
  EXPECT_NE(line(s).find("cluster: 2 machines, 3 GPUs, NICs 2 x 10 Gbps, one switch"),
            std::string::npos)
      << line(s);
  s["cluster"]["machines"][1]["nic"]["count"] = 4;
  EXPECT_NE(line(s).find(", NICs 10 Gbps, 2 to 4 per machine, one switch"), std::string::npos)
      << line(s);
  s["cluster"]["machines"][0]["nic"]["bandwidth"] = "25 Gbps";
  s["cluster"]["machines"][1]["nic"]["count"] = 2;
  EXPECT_NE(line(s).find(", NICs 10 Gbps to 25 Gbps, 2 per machine, one switch"), std::string::npos)
      << line(s);
}

}  // namespace
}  // namespace replisim::cli
