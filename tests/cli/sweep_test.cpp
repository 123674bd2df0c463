// Capacity planning from the command line: sweep (points, cache, Ctrl-C and resume, shards),
// merge, whatif, plot, and their bad input (exit 2, one line).
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using nlohmann::json;
using test::TempDir;

// A small scenario made of templates: workers w0.. with one GPU, PS on dedicated machines.
std::string small_scenario(const TempDir& dir, int steps = 12) {
  json worker = test::machine("w", "100 GFLOPS", {"2 TFLOPS"}, "1 Gbps");
  worker["count"] = 1;
  const json doc = test::scenario_json({worker}, test::one_layer_model(4e6, "2 GFLOP"),
                                       {{"replicas", "w*/gpu*"},
                                        {"ps", {{"count", 1}, {"on", "dedicated"}}},
                                        {"steps", steps},
                                        {"warmup_steps", 3},
                                        {"batch_per_replica", 16}},
                                       "lv08", "40 Gbps");
  return dir.write("small.json", doc.dump(1));
}

void expect_one_line_error(const test::BinaryResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

json read_json(const std::string& path) {
  return json::parse(test::read_file(path));
}

// Every row without its wall time (a point computed again takes another time).
json rows_but_wall(const json& results) {
  json rows = results["rows"];
  for (json& row : rows) row.erase("wall_s");
  return rows;
}

size_t files_ending(const std::string& dir, const std::string& suffix) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      ++n;
  }
  return n;
}

// The fields of a CSV line (RFC 4180 quoting: commas inside quotes do not separate).
size_t csv_fields(const std::string& line) {
  size_t fields = 1;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) ++fields;
  }
  return fields;
}

// Processes whose command line mentions `text` (children left behind would).
int processes_mentioning(const std::string& text) {
  int n = 0;
  for (const test::ProcessInfo& p : test::list_processes()) {
    n += std::any_of(p.args.begin(), p.args.end(),
                     [&](const std::string& arg) { return arg.find(text) != std::string::npos; });
  }
  return n;
}

TEST(Sweep, BadInputIsOneLine) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  expect_one_line_error(test::run_replisim({"sweep", s, "--vary", "replica=1,2"}),
                        "replisim: error: --vary: unknown key \"replica\"; did you mean replicas?");
  expect_one_line_error(test::run_replisim({"sweep", s, "--vary", "replicas=8..1"}),
                        "--vary replicas: the range \"8..1\" is empty");
  expect_one_line_error(test::run_replisim({"sweep", s, "--vary", "ps=1", "--shard", "3/3"}),
                        "--shard: expected I/N with 0 <= I < N");
  expect_one_line_error(
      test::run_replisim({"sweep", test::seed_scenario(), "--vary", "machines=1,2"}),
      "/training/replicas: point machines=1: machines can be varied only when /training/replicas "
      "is a pattern over a machine template");
  expect_one_line_error(
      test::run_replisim({"sweep", test::scenario_path("planning/resnet50_16gpu_10gbe.json"),
                          "--vary", "replicas=8,10"}),
      "/training/replicas: point replicas=10: replicas=10: each machine of template \"server\" "
      "holds 4 replica(s), so whole machines give 8 or 12");
  expect_one_line_error(test::run_replisim({"sweep", s, "--vary", "ps=1", "--jobs", "0"}),
                        "--jobs: expected an integer from 1 to 256");
  expect_one_line_error(test::run_replisim({"sweep", s, "--strategy", "both"}),
                        "--strategy: a point runs one strategy");
  expect_one_line_error(test::run_replisim({"merge", s}), "not a sweep's results");
  expect_one_line_error(
      test::run_replisim({"sweep", s, "--vary", "replicas=1,x1", "--cache", dir.file("c")}),
      "--vary: points replicas=1 and replicas=x1 are the same configuration");
  expect_one_line_error(test::run_replisim({"plot", dir.file("missing.json")}), "missing.json");
}

// --network-engine reaches each point's simulate (its summary records the engine) and keys the
// cache apart from the default engine's points.
TEST(Sweep, TheNetworkEngineReachesEachPointAndKeysItsCache) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  const std::vector<std::string> sweep = {
      "sweep", s, "--vary", "ps=1", "--cache", dir.file("c"), "--progress", "none"};
  std::vector<std::string> simgrid = sweep;
  simgrid.insert(simgrid.end(), {"--network-engine", "simgrid"});
  const test::BinaryResult a = test::run_replisim(simgrid, 120);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  int summaries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("c"))) {
    const std::string name = e.path().filename().string();
    if (name.size() < 11 || name.substr(name.size() - 11) != ".point.json") continue;
    EXPECT_EQ(read_json(e.path().string())["summary"]["provenance"]["network_engine"], "simgrid")
        << name;
    ++summaries;
  }
  EXPECT_EQ(summaries, 1);
  const test::BinaryResult b = test::run_replisim(sweep, 120);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("1 simulated, 0 from the cache"), std::string::npos) << b.out;
  std::vector<std::string> bad = sweep;
  bad.insert(bad.end(), {"--network-engine", "fast"});
  expect_one_line_error(test::run_replisim(bad), "--network-engine: expected simgrid or auto");
}

// A caveat many points share is one line naming the first few points (each row keeps it in full).
TEST(Sweep, ACaveatManyPointsShareIsOneLine) {
  TempDir dir;
  const test::BinaryResult r =
      // In-graph over three workers' links: no resource, and no one share of the critical path,
      // holds the steps.
      test::run_replisim(
          {"sweep", test::scenario_path("classroom/heterogeneous.json"), "--strategy", "in_graph",
           "--vary", "nic_bandwidth=1Gbps,2Gbps,10Gbps,25Gbps", "--cache", dir.file("c"),
           "--progress", "none", "--json", dir.file("r.json")},
          120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  no resource is saturated over the window: 4 points "
                       "(nic_bandwidth=1Gbps, nic_bandwidth=2Gbps, nic_bandwidth=10Gbps and 1 "
                       "more)\n"),
            std::string::npos)
      << r.out;
  for (const json& row : read_json(dir.file("r.json"))["rows"]) {
    ASSERT_FALSE(row["warnings"].empty()) << row;
    EXPECT_NE(row["warnings"][0].get<std::string>().find("(the busiest, "), std::string::npos);
  }
}

TEST(Sweep, AFailedPointSaysWhyInItsRow) {
  TempDir dir;
  // Twelve steps leave model_parallel's window empty: simulate refuses that run (exit 2).
  const test::BinaryResult r =
      test::run_replisim({"sweep", test::scenario_path("classroom/model_parallel.json"), "--vary",
                          "gpu_speed=x2", "--steps", "12", "--cache", dir.file("c"), "--json",
                          dir.file("r.json"), "--progress", "none"},
                         120);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 point(s) failed"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("failed points:\n  gpu_speed=x2: "), std::string::npos) << r.out;
  const json row = read_json(dir.file("r.json"))["rows"][0];
  EXPECT_NE(row["error"].get<std::string>().find("measurement window is empty"), std::string::npos)
      << row;
}

// A point's error names the user's scenario file, not the copy in the cache its child read.
TEST(Sweep, AFailedPointsErrorNamesTheUsersFile) {
  TempDir dir;
  json doc = core::read_json_file(test::seed_scenario());
  doc["training"]["data_steps_per_worker"] = {5, 100};  // worker0 runs out within its warm-up
  const std::string s = dir.write("short_data.json", doc.dump());
  const test::BinaryResult r =
      test::run_replisim({"sweep", s, "--vary", "batch_per_replica=32", "--cache", dir.file("c"),
                          "--json", dir.file("r.json"), "--progress", "none"},
                         120);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string error = read_json(dir.file("r.json"))["rows"][0]["error"];
  EXPECT_EQ(error.find(s + ": /training/data_steps_per_worker: worker0 ran out of data"), 0u)
      << error;
  EXPECT_EQ(error.find(dir.file("c")), std::string::npos) << error;
}

TEST(Sweep, PointsAreCachedAndARepeatIsInstant) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  const std::vector<std::string> sweep = {
      "sweep",  s,   "--vary",  "replicas=1..4x2", "--vary",     "ps=1,2",
      "--jobs", "2", "--cache", dir.file("cache"), "--progress", "none"};
  std::vector<std::string> first = sweep;
  first.insert(first.end(), {"--csv", dir.file("a.csv"), "--json", dir.file("a.json")});
  const test::BinaryResult a = test::run_replisim(first, 300);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("6 point(s): 6 simulated, 0 from the cache, 0 failed"), std::string::npos)
      << a.out;
  const json results = read_json(dir.file("a.json"));
  ASSERT_EQ(results["rows"].size(), 6u);
  EXPECT_EQ(results["points_total"], 6);
  const std::string csv = test::read_file(dir.file("a.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  for (const json& row : results["rows"]) {
    EXPECT_GT(row["throughput_samples_per_s"].get<double>(), 0) << row;
    EXPECT_GT(row["wall_s"].get<double>(), 0) << row;
  }
  // replicas=1 is each PS count's base: efficiency 1; more workers share one 1 Gbit/s PS NIC.
  EXPECT_DOUBLE_EQ(results["rows"][0]["scaling_efficiency"].get<double>(), 1.0);
  EXPECT_LT(results["rows"][4]["scaling_efficiency"].get<double>(), 0.9);
  EXPECT_EQ(files_ending(dir.file("cache"), ".point.json"), 6u);

  std::vector<std::string> again = sweep;
  again.insert(again.end(), {"--json", dir.file("b.json")});
  const test::BinaryResult b = test::run_replisim(again, 60);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("0 simulated, 6 from the cache"), std::string::npos) << b.out;
  EXPECT_EQ(read_json(dir.file("b.json"))["rows"], results["rows"]);
  // An existing output is never replaced unasked.
  const test::BinaryResult c = test::run_replisim(first, 60);
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("a.csv"), std::string::npos) << c.err;
}

TEST(Sweep, InterruptedThenResumedComputesOnlyTheMissingPoints) {
  TempDir dir;
  const std::string s = small_scenario(dir, 40);
  const std::string cache = dir.file("cache");
  const std::vector<std::string> sweep = {
      "sweep",   s,     "--vary", "replicas=1..8",   "--jobs",     "1",
      "--cache", cache, "--csv",  dir.file("r.csv"), "--progress", "json"};
  test::RunningReplisim run(sweep, 300);
  std::string line;
  int points_done = 0;
  while (points_done < 2 && run.next_error_line(&line)) {
    if (json::parse(line)["event"] == "point") ++points_done;
  }
  ASSERT_EQ(points_done, 2);
  run.send_signal(SIGINT);
  const test::BinaryResult stopped = run.wait();
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("run the same command again to finish"), std::string::npos)
      << stopped.err;
  EXPECT_FALSE(test::file_exists(dir.file("r.csv")));
  EXPECT_EQ(processes_mentioning(cache), 0) << "a point's simulation outlived the sweep";
  const size_t cached = files_ending(cache, ".point.json");
  EXPECT_GE(cached, 2u);
  EXPECT_LT(cached, 8u);
  EXPECT_EQ(files_ending(cache, ".summary.json"), 0u);

  test::RunningReplisim resumed(sweep, 300);
  json start;
  while (resumed.next_error_line(&line)) {
    const json event = json::parse(line);
    if (event["event"] == "start") start = event;
  }
  const test::BinaryResult done = resumed.wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(start["cached"], cached);
  EXPECT_EQ(start["to_compute"], 8 - cached);
  std::istringstream csv(test::read_file(dir.file("r.csv")));
  std::set<std::string> indices;
  std::string row;
  std::getline(csv, row);  // header
  const size_t columns = csv_fields(row);
  int rows = 0;
  while (std::getline(csv, row)) {
    ++rows;
    indices.insert(row.substr(0, row.find(',')));
    EXPECT_EQ(csv_fields(row), columns) << row;
  }
  EXPECT_EQ(rows, 8);
  EXPECT_EQ(indices.size(), 8u);
}

TEST(Sweep, ShardsMergedEqualTheWholeSweep) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  const std::vector<std::string> sweep = {"sweep",  s,        "--vary", "replicas=1,2,3", "--vary",
                                          "ps=1,2", "--jobs", "2",      "--progress",     "none"};
  std::vector<std::string> whole = sweep;
  whole.insert(whole.end(), {"--cache", dir.file("c0"), "--json", dir.file("whole.json")});
  ASSERT_EQ(test::run_replisim(whole, 300).exit_code, 0);
  std::vector<std::string> merge = {"merge"};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> shard = sweep;
    const std::string out = dir.file("shard" + std::to_string(i) + ".json");
    shard.insert(shard.end(), {"--shard", std::to_string(i) + "/3", "--cache",
                               dir.file("c" + std::to_string(i + 1)), "--json", out});
    const test::BinaryResult r = test::run_replisim(shard, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_json(out)["rows"].size(), 2u);
    merge.push_back(out);
  }
  merge.insert(merge.end(), {"--json", dir.file("merged.json"), "--csv", dir.file("merged.csv")});
  const test::BinaryResult m = test::run_replisim(merge);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const json merged = read_json(dir.file("merged.json"));
  EXPECT_EQ(rows_but_wall(merged), rows_but_wall(read_json(dir.file("whole.json"))));
  EXPECT_TRUE(merged["shard"].is_null());
  // A shard given twice, or one missing, is refused.
  expect_one_line_error(test::run_replisim({"merge", merge[1], merge[1], merge[2]}),
                        "shard 0/3 is also in");
  expect_one_line_error(test::run_replisim({"merge", merge[1], merge[2]}), "shard 2/3 is missing");
}

TEST(Whatif, ChangesSortedByGainWithTheNewBottleneck) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  const test::BinaryResult r =
      test::run_replisim({"whatif", s, "--cache", dir.file("cache"), "--jobs", "2", "--progress",
                          "none", "--json", dir.file("w.json")},
                         300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json w = read_json(dir.file("w.json"));
  ASSERT_GE(w["changes"].size(), 6u) << r.out;
  double previous = 1e300;
  std::set<std::string> names;
  for (const json& c : w["changes"]) {
    ASSERT_TRUE(c.contains("gain")) << c;
    EXPECT_LE(c["gain"].get<double>(), previous) << c;
    previous = c["gain"].get<double>();
    names.insert(c["change"].get<std::string>());
    EXPECT_FALSE(c["bottleneck"]["resource"].get<std::string>().empty());
  }
  for (const char* change :
       {"NIC bandwidth x2", "one more PS", "GPU speed x2", "replicas x2", "in_graph strategy"}) {
    EXPECT_EQ(names.count(change), 1u) << change << "\n" << r.out;
  }
  // One worker: no backup worker can be added.
  bool backup_not_applicable = false;
  for (const json& n : w["not_applicable"]) {
    if (n["change"] == "sync with one backup worker") backup_not_applicable = true;
  }
  EXPECT_TRUE(backup_not_applicable) << r.out;
  // The NIC (1 Gbit/s) binds this point: doubling it is a gain.
  for (const json& c : w["changes"]) {
    if (c["change"] == "NIC bandwidth x2") {
      EXPECT_GT(c["gain"].get<double>(), 0.1) << c;
    }
  }
}

// simulate's "bound by (critical path)" row of a one-strategy report ("" when it has none).
std::string bound_by_row(const std::string& report) {
  const std::string label = "bound by (critical path)";
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(label, 0) != 0) continue;
    const size_t start = line.find_first_not_of(' ', label.size());
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// One explanation everywhere: a sweep's binding column, whatif's "bound by" and simulate's row
// come from the same critical-path attribution, on points the network binds and points compute
// binds (8 machines x 4 GPUs, ResNet-50 in one op group, 1 or 4 PS on 10, 25 or 100 GbE, async
// or sync), where the busiest resource may name something else (sync on 100 GbE: the PS network
// holds the path longest while the stragglers' GPUs are the busiest).
TEST(SweepPlanning, TheBindingColumnIsSimulatesBoundByRow) {
  TempDir dir;
  json machine = {{"name", "w"},
                  {"count", 8},
                  {"cpu", {{"speed", "50 GFLOPS"}, {"cores", 8}}},
                  {"gpus", json::array()},
                  {"nic", {{"bandwidth", "25 Gbps"}, {"latency", "25 us"}}}};
  for (int g = 0; g < 4; ++g)
    machine["gpus"].push_back({{"speed", "10 TFLOPS"}, {"memory", "16 GB"}});
  const json doc = {{"name", "eight-by-four"},
                    {"cluster", {{"machines", {machine}}}},
                    {"model", {{"preset", "resnet50"}}},
                    {"training",
                     {{"batch_per_replica", 64},
                      {"steps", 16},
                      {"warmup_steps", 4},
                      {"replicas", "w*/gpu*"},
                      {"ps", {{"count", 1}, {"on", "dedicated"}}},
                      {"variable_placement", "partitioned"},
                      {"granularity", 1}}}};
  const std::string s = dir.write("eight_by_four.json", doc.dump(1));
  const std::string cache = dir.file("cache");
  const test::BinaryResult sweep = test::run_replisim(
      {"sweep", s, "--vary", "ps=1,4", "--vary", "nic_bandwidth=10 Gbps,25 Gbps,100 Gbps", "--vary",
       "sync=async,sync", "--cache", cache, "--jobs", "2", "--progress", "none", "--json",
       dir.file("s.json")},
      600);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const json results = read_json(dir.file("s.json"));
  ASSERT_EQ(results["rows"].size(), 12u);
  std::set<std::string> kinds;
  int differs_from_busiest = 0;
  for (const json& row : results["rows"]) {
    SCOPED_TRACE(row.dump());
    const std::string point = cache + "/" + row["key"].get<std::string>() + ".scenario.json";
    const test::BinaryResult simulate = test::run_replisim(
        {"simulate", point, "--strategy", "between_graph", "--seed", "1", "--progress", "none"},
        300);
    ASSERT_EQ(simulate.exit_code, 0) << simulate.err;
    const std::string expected = bound_by_row(simulate.out);
    ASSERT_FALSE(expected.empty()) << simulate.out;
    EXPECT_EQ(row["bound_by"]["text"].get<std::string>(), expected);
    // The table shows the same words.
    EXPECT_NE(sweep.out.find(expected), std::string::npos) << sweep.out;
    kinds.insert(row["bound_by"]["kind"].get<std::string>());
    const std::string kind = row["bound_by"]["kind"], busiest = row["bottleneck"]["kind"];
    if ((kind == "network") != (busiest.find("nic") != std::string::npos)) ++differs_from_busiest;
    // The 8 x 4-GPU, 1-PS, 25 GbE point: whatif's "as it is" names the same.
    if (row["knobs"]["ps"] == "1" && row["knobs"]["nic_bandwidth"] == "25 Gbps" &&
        row["knobs"]["sync"] == "async") {
      const test::BinaryResult whatif =
          test::run_replisim({"whatif", point, "--cache", cache, "--jobs", "2", "--progress",
                              "none", "--json", dir.file("w.json")},
                             600);
      ASSERT_EQ(whatif.exit_code, 0) << whatif.err;
      EXPECT_NE(whatif.out.find("bound by " + expected + " (busiest: "), std::string::npos)
          << whatif.out;
      EXPECT_EQ(read_json(dir.file("w.json"))["base"]["bound_by"]["text"], expected);
    }
  }
  // Both regimes are in the sweep, and at least one point where the busiest resource would have
  // told another story.
  EXPECT_EQ(kinds.count("network"), 1u);
  EXPECT_EQ(kinds.count("compute"), 1u);
  EXPECT_GE(differs_from_busiest, 1);
}
}  // namespace
}  // namespace replisim

namespace replisim {
namespace {

TEST(Plot, WritesPngAndSvgOrSaysWhyNot) {
  TempDir dir;
  const std::string s = small_scenario(dir);
  ASSERT_EQ(
      test::run_replisim({"sweep", s, "--vary", "replicas=1,2,4", "--vary", "ps=1,2", "--cache",
                          dir.file("cache"), "--progress", "none", "--json", dir.file("r.json")},
                         300)
          .exit_code,
      0);
  const test::BinaryResult r = test::run_replisim({"plot", dir.file("r.json")});
#if REPLISIM_WITH_GUI
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* chart : {"throughput", "efficiency", "breakdown"}) {
    const std::string png = test::read_file(dir.file(std::string("r-") + chart + ".png"));
    ASSERT_GT(png.size(), 10000u) << chart;
    EXPECT_EQ(png.substr(1, 3), "PNG") << chart;
    const std::string svg = test::read_file(dir.file(std::string("r-") + chart + ".svg"));
    EXPECT_NE(svg.find("<svg"), std::string::npos) << chart;
    EXPECT_NE(svg.find("<title>test: "), std::string::npos)
        << chart << ": the title names the scenario";
  }
  expect_one_line_error(test::run_replisim({"plot", dir.file("r.json")}), "r-throughput");
  expect_one_line_error(test::run_replisim({"plot", s}), "not a sweep's results");
#else
  expect_one_line_error(r, "built without Qt 6");
#endif
}

// scenarios/planning/ps_scaling.json: for each PS count, the throughput's knee (the first point
// within 10% of the plateau) lies within one point of the closed form, and there the bottleneck
// has moved from the GPUs to a PS NIC.
TEST(SweepPlanning, PsScalingKneeFollowsTheClosedForm) {
#if REPLISIM_SANITIZED
  GTEST_SKIP() << "28 simulations of up to 64 workers: run in the Release build only";
#endif
  TempDir dir;
  const test::BinaryResult r =
      test::run_replisim({"sweep", test::scenario_path("planning/ps_scaling.json"), "--vary",
                          "replicas=1..64x2", "--vary", "ps=1,2,4,8", "--cache", dir.file("cache"),
                          "--progress", "none", "--json", dir.file("r.json")},
                         1200);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::cout << r.out;
  const json rows = read_json(dir.file("r.json"))["rows"];
  ASSERT_EQ(rows.size(), 28u);
  const std::vector<int> replicas = {1, 2, 4, 8, 16, 32, 64};
  // Closed form (scenario facts): a step computes 3 x 4.09 G multiply-adds x 2 FLOP x 64 samples
  // at 10 TFLOPS, and moves the model's bytes P each way at 0.97 x 25 Gbit/s (LV08); each PS NIC
  // carries its shard (bytes_per_ps max) once per worker step in each direction.
  const double compute_s = 3 * 4.09e9 * 2 * 64 / 10e12;
  const double nic_bytes_per_s = 0.97 * 25e9 / 8;
  std::map<int, double> previous_plateau;
  for (int ps : {1, 2, 4, 8}) {
    std::vector<json> series;
    for (const json& row : rows) {
      if (row["knobs"]["ps"] == std::to_string(ps)) series.push_back(row);
    }
    ASSERT_EQ(series.size(), replicas.size());
    const double model_bytes = series[0]["ps_bytes"]["mean"].get<double>() * ps;
    const double shard_bytes = series[0]["ps_bytes"]["max"].get<double>();
    const double one_worker = 64 / (compute_s + 2 * model_bytes / nic_bytes_per_s);
    const double plateau_closed = 64 * nic_bytes_per_s / shard_bytes;
    size_t knee_closed = replicas.size() - 1;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (std::min(replicas[i] * one_worker, plateau_closed) >= 0.9 * plateau_closed) {
        knee_closed = i;
        break;
      }
    }
    double plateau = 0;
    for (const json& row : series)
      plateau = std::max(plateau, row["throughput_samples_per_s"].get<double>());
    size_t knee = 0;
    while (series[knee]["throughput_samples_per_s"].get<double>() < 0.9 * plateau) ++knee;
    std::cout << "ps=" << ps << ": one worker " << series[0]["throughput_samples_per_s"]
              << " samples/s (closed form " << one_worker << "), plateau " << plateau
              << " (closed form " << plateau_closed << "), knee at " << replicas[knee]
              << " workers (closed form " << replicas[knee_closed] << ")\n";
    EXPECT_LE(std::abs(int(knee) - int(knee_closed)), 1) << "ps=" << ps;
    EXPECT_NEAR(series[0]["throughput_samples_per_s"].get<double>(), one_worker, 0.1 * one_worker);
    EXPECT_EQ(series[0]["bottleneck"]["kind"], "gpu") << series[0];
    EXPECT_EQ(series[knee]["bottleneck"]["kind"], "ps nic") << series[knee];
    EXPECT_EQ(series.back()["bottleneck"]["kind"], "ps nic") << series.back();
    for (const auto& [fewer, p] : previous_plateau) {
      EXPECT_GT(plateau, 1.5 * p) << "the plateau rises with the PS count: " << fewer << " -> "
                                  << ps;
    }
    previous_plateau[ps] = plateau;
  }
}

}  // namespace
}  // namespace replisim

namespace replisim {
namespace {

using nlohmann::json;

// Two workers (w0, w1: one GPU each) and a dedicated PS at 1 Gbit/s.
std::string two_worker_scenario(const TempDir& dir) {
  json worker = test::machine("w", "100 GFLOPS", {"2 TFLOPS"}, "1 Gbps");
  worker["count"] = 2;
  const json doc = test::scenario_json({worker}, test::one_layer_model(4e6, "2 GFLOP"),
                                       {{"replicas", "w*/gpu*"},
                                        {"ps", {{"count", 1}, {"on", "dedicated"}}},
                                        {"steps", 12},
                                        {"warmup_steps", 3},
                                        {"batch_per_replica", 16}},
                                       "lv08", "40 Gbps");
  return dir.write("two.json", doc.dump(1));
}

// A sweep over the three strategies: the all-reduce row counts one worker per replica device and
// no PS task (compile_allreduce starts none), and its algorithm can be varied beside it.
TEST(Sweep, TheStrategyAxisTakesAllReduceAndItsKnobs) {
  TempDir dir;
  const std::string s = two_worker_scenario(dir);
  test::BinaryResult r =
      test::run_replisim({"sweep", s, "--vary", "strategy=between_graph,allreduce", "--cache",
                          dir.file("c"), "--progress", "none", "--json", dir.file("r.json")},
                         300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rows = json::parse(test::read_file(dir.file("r.json")))["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["strategy"], "between_graph");
  EXPECT_EQ(rows[0]["ps_tasks"], 1);
  EXPECT_EQ(rows[1]["strategy"], "allreduce");
  EXPECT_EQ(rows[1]["workers"], 2);
  EXPECT_EQ(rows[1]["ps_tasks"], 0);
  EXPECT_GT(rows[1]["throughput_samples_per_s"].get<double>(), 0);
  r = test::run_replisim(
      {"sweep", s, "--strategy", "allreduce", "--vary", "algorithm=ring,tree", "--cache",
       dir.file("c"), "--progress", "none", "--json", dir.file("a.json")},
      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(test::read_file(dir.file("a.json")))["rows"].size(), 2u);
  expect_one_line_error(test::run_replisim({"sweep", s, "--vary", "algorithm=tree", "--cache",
                                            dir.file("c"), "--progress", "none"}),
                        "applies to the allreduce strategy");
}

// whatif on an all-reduce point tries Horovod's knobs and each other strategy, not the PS's.
TEST(Whatif, AnAllReducePointTriesHorovodsKnobs) {
  TempDir dir;
  const std::string s = two_worker_scenario(dir);
  const test::BinaryResult r =
      test::run_replisim({"whatif", s, "--strategy", "allreduce", "--cache", dir.file("cache"),
                          "--jobs", "2", "--progress", "none", "--json", dir.file("w.json")},
                         300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json w = json::parse(test::read_file(dir.file("w.json")));
  std::set<std::string> tried;
  for (const json& c : w["changes"]) tried.insert(c["change"].get<std::string>());
  for (const json& n : w["not_applicable"]) tried.insert(n["change"].get<std::string>());
  for (const char* change :
       {"tree algorithm", "hierarchical algorithm", "fusion buffer x2", "cycle time x0.2",
        "NCCL streams x4", "in_graph strategy", "between_graph strategy", "NIC bandwidth x2"}) {
    EXPECT_EQ(tried.count(change), 1u) << change << "\n" << r.out;
  }
  for (const char* change : {"one more PS", "ring algorithm", "partitioned placement",
                             "sync with one backup worker", "allreduce strategy"}) {
    EXPECT_EQ(tried.count(change), 0u) << change << "\n" << r.out;
  }
}

}  // namespace
}  // namespace replisim
