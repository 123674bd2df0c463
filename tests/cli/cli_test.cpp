// The executable's contract: exit codes (0 success, 2 bad input with one line on stderr naming
// the file and JSON path, 1 internal error), no partial or overwritten output files.
#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::run_replisim;
using test::TempDir;

using test::seed_scenario;

nlohmann::json small_valid() {
  return test::scenario_json(
      {test::machine("pc1", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps"),
       test::machine("pc2", "400 GFLOPS", {"5 TFLOPS"}, "10 Gbps")},
      test::one_layer_model(1e6, "1 GFLOP"),
      {{"replicas", {"pc1/gpu0", "pc2/gpu0"}}, {"steps", 12}, {"warmup_steps", 2}});
}

// Runs `simulate` on `content` and expects exit 2 with one stderr line containing each needle.
void expect_bad_input(const std::string& content, const std::vector<std::string>& needles) {
  TempDir dir;
  const std::string scenario = dir.write("s.json", content);
  const test::BinaryResult r = run_replisim({"simulate", scenario, "--json", dir.file("out.json")});
  EXPECT_EQ(r.exit_code, 2) << content << "\n" << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find(scenario), std::string::npos) << r.err;
  for (const std::string& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "missing '" << needle << "' in " << r.err;
  }
  EXPECT_FALSE(test::file_exists(dir.file("out.json"))) << "partial output left behind";
}

std::string with(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = small_valid();
  edit(doc);
  return doc.dump(2);
}

TEST(Cli, BadScenariosExitTwoWithThePath) {
  expect_bad_input("", {"empty file"});
  expect_bad_input("{\"name\": \"x\",", {"not valid JSON", "line 1"});
  expect_bad_input(with([](nlohmann::json& d) { d.erase("training"); }), {"/training", "required"});
  expect_bad_input(with([](nlohmann::json& d) {
                     d["model"] = {{"preset", "resnet9000"}};
                   }),
                   {"/model/preset", "resnet50"});
  expect_bad_input(
      with([](nlohmann::json& d) { d["cluster"]["machines"][0]["nic"]["bandwidth"] = 10; }),
      {"/cluster/machines/0/nic/bandwidth", "10 Gbps"});
  expect_bad_input(
      with([](nlohmann::json& d) { d["cluster"]["machines"][1]["nic"]["bandwidth"] = "0 Gbps"; }),
      {"/cluster/machines/1/nic/bandwidth", "greater than zero"});
  expect_bad_input(with([](nlohmann::json& d) {
                     d["cluster"]["machines"][0]["gpus"][0]["speed"] = "-1 TFLOPS";
                   }),
                   {"/cluster/machines/0/gpus/0/speed"});
  expect_bad_input(with([](nlohmann::json& d) { d["training"]["replicas"][0] = "pc9/gpu0"; }),
                   {"/training/replicas/0", "pc9"});
  expect_bad_input(with([](nlohmann::json& d) { d["training"]["replicas"][1] = "pc2/gpu3"; }),
                   {"/training/replicas/1", "gpu3"});
  expect_bad_input(with([](nlohmann::json& d) { d["cluster"]["machines"][1]["name"] = "pc1"; }),
                   {"/cluster/machines/1/name", "duplicate"});
  expect_bad_input(
      with([](nlohmann::json& d) { d["training"]["replicas"] = nlohmann::json::array(); }),
      {"/training/replicas"});
  expect_bad_input(with([](nlohmann::json& d) { d["training"]["warmup_steps"] = 12; }),
                   {"/training/steps", "warmup_steps"});
  expect_bad_input(with([](nlohmann::json& d) { d["training"]["bach_per_replica"] = 3; }),
                   {"/training/bach_per_replica", "batch_per_replica"});
}

TEST(Cli, IncludeCyclesAndEmptyPatternsExitTwo) {
  TempDir dir;
  const std::string a = dir.write("a.json", R"({"include": "b.json"})");
  dir.write("b.json", R"({"include": ["a.json"]})");
  test::BinaryResult r = run_replisim({"simulate", a});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("include cycle"), std::string::npos) << r.err;
  expect_bad_input(with([](nlohmann::json& d) { d["training"]["replicas"] = "gpu*/gpu*"; }),
                   {"/training/replicas", "pattern \"gpu*/gpu*\" matched no device"});
}

TEST(Cli, BadFlagsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"simulat", seed_scenario()},
           {"simulate"},
           {"simulate", seed_scenario(), "--strategy", "mirrored"},
           {"simulate", seed_scenario(), "--sed", "3"},
           {"simulate", seed_scenario(), "--seed", "-3"},
           {"simulate", seed_scenario(), "--json"},
           {"simulate", "/nonexistent/s.json"},
           {"plan", seed_scenario(), "--trace", "x.json"},
           {"simulate", seed_scenario(), "--trace-window", "1..2"},
           {"simulate", seed_scenario(), "--trace", "x.json", "--trace-window", "2..1"},
           {"simulate", seed_scenario(), "--trace", "x.json", "--trace-window", "2"},
           {"simulate", seed_scenario(), "--trace", "x.json", "--trace-window", "0...5"},
           {"simulate", seed_scenario(), "--trace", "x.json", "--trace-window", "1..2..3"},
           {"simulate", seed_scenario(), "--trace", "x.json", "--trace-window", "1 h..2 h"},
           {"report", "t.rstrace", "--trace", "x.json", "--trace-window", "-1..2"}}) {
    const test::BinaryResult r = run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"simulate", seed_scenario(), "--seed", "1", "--seed", "2"},
           {"simulate", seed_scenario(), "--json", ""},
           {"simulate", seed_scenario(), "--seed", "18446744073709551616"},
           {"--version", "extra"},
           {"plan", "/"},
           {"plan", "/dev/zero"}}) {
    const test::BinaryResult r = run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(run_replisim({"plan", seed_scenario(), "--seed", "18446744073709551615"}).exit_code, 0);
  const test::BinaryResult typo = run_replisim({"simulate", seed_scenario(), "--forse"});
  EXPECT_NE(typo.err.find("--force"), std::string::npos) << typo.err;
}

TEST(Cli, NeverOverwritesUnasked) {
  TempDir dir;
  const std::string scenario = dir.write("s.json", small_valid().dump());
  const std::string out = dir.write("out.json", "precious");
  test::BinaryResult r = run_replisim({"simulate", scenario, "--json", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(out), "precious");
  // Outputs may not replace the scenario itself, even with --force.
  r = run_replisim({"simulate", scenario, "--json", scenario, "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::read_file(scenario), small_valid().dump());
  // Nor under another spelling of its name.
  const std::string dotted = dir.path() + "/./s.json";
  r = run_replisim({"simulate", scenario, "--json", dotted, "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(test::read_file(scenario), small_valid().dump());
  // Two outputs naming one file are refused before anything is written.
  r = run_replisim(
      {"simulate", scenario, "--json", dir.file("a.json"), "--trace", dir.path() + "/./a.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("a.json")));
  // Special files are never replaced, even with --force.
  r = run_replisim({"simulate", scenario, "--json", "/dev/null", "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  // Nor may an output replace a file the scenario includes.
  const std::string platform = dir.write("platform.json", small_valid().dump());
  const std::string including = dir.write("inc.json", R"({"include": "platform.json"})");
  r = run_replisim({"simulate", including, "--json", platform, "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(test::read_file(platform), small_valid().dump());
  // A missing directory is refused before any simulation, leaving nothing behind.
  r = run_replisim({"simulate", scenario, "--trace", dir.file("no/such/dir/t.json")});
  EXPECT_EQ(r.exit_code, 2);
  r = run_replisim({"simulate", scenario, "--json", out, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(test::read_file(out), "precious");
}

TEST(Cli, StrictFailsWhenAGpuCannotHoldThePlan) {
  TempDir dir;
  nlohmann::json doc = small_valid();
  doc["model"] = {{"preset", "resnet50"}};
  doc["cluster"]["machines"][1]["gpus"][0]["memory"] = "1 GB";  // ResNet-50 x 32 needs ~1.7 GB
  const std::string scenario = dir.write("s.json", doc.dump());
  test::BinaryResult r = run_replisim({"simulate", scenario, "--strict", "--json", dir.file("o")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/cluster/machines/1/gpus/0/memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pc2/gpu0 cannot hold"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("o")));
  // Without --strict the run goes on and the report warns.
  r = run_replisim({"simulate", scenario, "--strategy", "between_graph"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pc2/gpu0 needs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU memory (lower bound), tightest GPU"), std::string::npos) << r.out;
  // The identical-GPUs shorthand: the error names its "memory", not a GPU entry there is none of.
  doc["cluster"]["machines"][1]["gpus"] = {{"count", 2}, {"speed", "5 TFLOPS"}, {"memory", "1 GB"}};
  r = run_replisim(
      {"simulate", dir.write("shorthand.json", doc.dump()), "--strict", "--progress", "none"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/cluster/machines/1/gpus/memory"), std::string::npos) << r.err;
}

TEST(Cli, SimulateWritesTheSummaryJson) {
  TempDir dir;
  const std::string scenario = dir.write("s.json", small_valid().dump());
  const test::BinaryResult r =
      run_replisim({"simulate", scenario, "--json", dir.file("sum.json"), "--seed", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("in_graph"), std::string::npos);
  EXPECT_NE(r.out.find("between_graph"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(test::read_file(dir.file("sum.json")));
  EXPECT_EQ(j["scenario"], "test");
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) {
    for (const char* key :
         {"strategy", "throughput_samples_per_s", "step_time_s", "update_interval_s", "staleness",
          "bottleneck", "bytes_per_ps", "simulated_time_s", "events"}) {
      EXPECT_TRUE(run.contains(key)) << key;
    }
    for (const char* key : {"mean", "p50", "p95"}) EXPECT_TRUE(run["step_time_s"].contains(key));
    EXPECT_TRUE(run["bottleneck"].contains("resource"));
    EXPECT_GT(run["throughput_samples_per_s"].get<double>(), 0);
  }
  EXPECT_EQ(j["provenance"]["seed"], 5);
  EXPECT_EQ(j["provenance"]["plan_hashes"].size(), 2u);
  EXPECT_NE(j["provenance"]["command_line"].get<std::string>().find("--seed 5"), std::string::npos);
}

TEST(Cli, DashSendsOneOutputToStandardOutput) {
  TempDir dir;
  const std::string scenario = dir.write("s.json", small_valid().dump());
  const test::BinaryResult r =
      run_replisim({"simulate", scenario, "--strategy", "between_graph", "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Standard output is the JSON alone; the text report goes to standard error.
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].size(), 1u);
  EXPECT_NE(r.err.find("between_graph"), std::string::npos);
  EXPECT_FALSE(test::file_exists("-"));  // not a file named "-" in the working directory
  const test::BinaryResult two =
      run_replisim({"simulate", scenario, "--json", "-", "--trace", "-"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("only one output can go to standard output"), std::string::npos)
      << two.err;
}

TEST(Cli, PlanPrintsTextAndJson) {
  test::BinaryResult r = run_replisim({"plan", seed_scenario(), "--strategy", "in_graph"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("client graph client"), std::string::npos) << r.out;
  r = run_replisim({"plan", seed_scenario(), "--strategy", "between_graph", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["strategy"], "between_graph");
  EXPECT_EQ(plan["clients"].size(), 2u);
  r = run_replisim({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("SimGrid 3.32"), std::string::npos) << r.out;
  // The transport line names every cost the transport charges, its per-message one included.
  TempDir dir;
  nlohmann::json doc = small_valid();
  doc["cluster"]["transport"] = {
      {"preset", "tcp"}, {"per_message_overhead", "20 us"}, {"chunk_size", "4 MB"}};
  r = run_replisim({"plan", dir.write("t.json", doc.dump()), "--strategy", "between_graph"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("20 us per message (each 4 MB chunk)"), std::string::npos) << r.out;
}

// --strategy takes a comma-separated list in the order given and "all" for every strategy;
// "both" keeps meaning in_graph and between_graph. A sweep's point runs one of them.
TEST(Cli, StrategyListsSelectThePlansInTheirOrder) {
  auto strategies_of = [](const std::string& value) {
    const test::BinaryResult r =
        run_replisim({"plan", seed_scenario(), "--strategy", value, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> names;
    const nlohmann::json plans = nlohmann::json::parse(r.out);
    for (const nlohmann::json& p : plans.is_array() ? plans : nlohmann::json::array({plans})) {
      names.push_back(p["strategy"]);
    }
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(strategies_of("allreduce,in_graph"), (Names{"allreduce", "in_graph"}));
  EXPECT_EQ(strategies_of("both"), (Names{"in_graph", "between_graph"}));
  EXPECT_EQ(strategies_of("all"), (Names{"in_graph", "between_graph", "allreduce"}));
  test::BinaryResult r = run_replisim({"plan", seed_scenario(), "--strategy", "in_graph,mirrored"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--strategy: unknown strategy \"mirrored\""), std::string::npos) << r.err;
  r = run_replisim({"whatif", seed_scenario(), "--strategy", "all"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a point runs one strategy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--vary strategy=in_graph,between_graph,allreduce"), std::string::npos)
      << r.err;
  r = run_replisim({"plan", "--help"});
  EXPECT_NE(r.out.find("a comma-separated list of them"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace replisim

namespace replisim {
namespace {

// --steps and --scale-compute change the plan and nothing else: the same ops, a hundredth of
// their FLOP, the steps given; the plan says so in a note.
TEST(Cli, StepsAndScaleComputeShapeThePlan) {
  const test::BinaryResult base =
      run_replisim({"plan", seed_scenario(), "--strategy", "between_graph", "--json"});
  const test::BinaryResult scaled =
      run_replisim({"plan", seed_scenario(), "--strategy", "between_graph", "--json", "--steps",
                    "25", "--scale-compute", "0.01"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  const nlohmann::json a = nlohmann::json::parse(base.out), b = nlohmann::json::parse(scaled.out);
  EXPECT_EQ(b["steps"], 25);
  const nlohmann::json& ops_a = a["clients"][0]["ops"];
  const nlohmann::json& ops_b = b["clients"][0]["ops"];
  ASSERT_EQ(ops_a.size(), ops_b.size());
  int scaled_ops = 0;
  for (size_t k = 0; k < ops_a.size(); ++k) {
    if (!ops_a[k].contains("compute_flop")) continue;
    EXPECT_DOUBLE_EQ(ops_b[k]["compute_flop"].get<double>(),
                     ops_a[k]["compute_flop"].get<double>() * 0.01);
    ++scaled_ops;
  }
  EXPECT_GT(scaled_ops, 10);
  EXPECT_NE(b["notes"].dump().find("--scale-compute"), std::string::npos);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"plan", seed_scenario(), "--steps", "0"},
           {"plan", seed_scenario(), "--steps", "5"},  // not above the warm-up (10)
           {"plan", seed_scenario(), "--steps", "x"},
           {"simulate", seed_scenario(), "--scale-compute", "-1"},
           {"simulate", seed_scenario(), "--scale-compute", "nan"}}) {
    const test::BinaryResult r = run_replisim(bad);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(Cli, HelpIsGeneratedPerCommand) {
  const test::BinaryResult top = run_replisim({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* command : {"simulate", "plan", "report"}) {
    EXPECT_NE(top.out.find(command), std::string::npos) << top.out;
  }
  const test::BinaryResult simulate = run_replisim({"simulate", "--help"});
  EXPECT_EQ(simulate.exit_code, 0);
  for (const char* flag : {"--steps", "--scale-compute", "--progress", "--trace-window"}) {
    EXPECT_NE(simulate.out.find(flag), std::string::npos) << simulate.out;
  }
}

}  // namespace
}  // namespace replisim
