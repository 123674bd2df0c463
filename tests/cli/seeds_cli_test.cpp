// simulate --seeds (each seed's figures equal a single run with that seed; the spread's mean and
// range come from them; bad lists are bad input) and training.steps "auto" at the command line
// (the report's interval row; a real run that could restart refuses it without --steps).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using json = nlohmann::json;
using test::run_replisim;
using test::TempDir;

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(Seeds, EachSeedEqualsASingleRunWithThatSeed) {
  TempDir dir;
  const test::BinaryResult spread =
      run_replisim({"simulate", test::seed_scenario(), "--seeds", "2..4", "--jobs", "2",
                    "--strategy", "between_graph", "--json", dir.file("seeds.json")});
  ASSERT_EQ(spread.exit_code, 0) << spread.err;
  // Titled as a single run is (engine, tolerance, network model), then the seeds.
  EXPECT_NE(spread.out.find("sim backend (network engine auto, tolerance 1 ns), lv08 network, 3 "
                            "seeds (2 .. 4)"),
            std::string::npos)
      << spread.out;
  EXPECT_NE(spread.out.find("throughput (samples/s)"), std::string::npos) << spread.out;
  const json seeds = read(dir.file("seeds.json"));
  ASSERT_EQ(seeds["format"], "replisim-seeds");
  ASSERT_EQ(seeds["runs"].size(), 3u);
  double lowest = 1e300, highest = 0, sum = 0;
  for (const json& run : seeds["runs"]) {
    const std::string seed = std::to_string(run["seed"].get<uint64_t>());
    const test::BinaryResult single =
        run_replisim({"simulate", test::seed_scenario(), "--seed", seed, "--strategy",
                      "between_graph", "--progress", "none", "--json", dir.file(seed + ".json")});
    ASSERT_EQ(single.exit_code, 0) << single.err;
    const json alone = read(dir.file(seed + ".json"))["runs"][0];
    const json& in_spread = run["summary"]["runs"][0];
    for (const char* figure :
         {"throughput_samples_per_s", "update_interval_s", "simulated_time_s"}) {
      EXPECT_EQ(in_spread[figure], alone[figure]) << "seed " << seed << ": " << figure;
    }
    EXPECT_EQ(in_spread["step_time_s"], alone["step_time_s"]) << "seed " << seed;
    EXPECT_EQ(in_spread["bottleneck"], alone["bottleneck"]) << "seed " << seed;
    const double t = alone["throughput_samples_per_s"].get<double>();
    lowest = std::min(lowest, t);
    highest = std::max(highest, t);
    sum += t;
  }
  const json& throughput = seeds["spread"]["between_graph"]["throughput_samples_per_s"];
  EXPECT_DOUBLE_EQ(throughput["min"].get<double>(), lowest);
  EXPECT_DOUBLE_EQ(throughput["max"].get<double>(), highest);
  EXPECT_NEAR(throughput["mean"].get<double>(), sum / 3, 1e-9 * sum);
  // The seeds' stagger and jitter draws move the figures: a spread, not three copies.
  EXPECT_LT(lowest, highest);
}

TEST(Seeds, BadListsAndOneRunOutputsAreBadInputNamingTheFlag) {
  TempDir dir;
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--seeds", "5..1"},
           {"--seeds", "1,2,1"},
           {"--seeds", "0"},
           {"--seeds", "a..b"},
           {"--seeds", "3", "--trace", dir.file("t.json")},
           {"--seeds", "3", "--trace-out", dir.file("t.trace")}}) {
    std::vector<std::string> args = {"simulate", test::seed_scenario(), "--json",
                                     dir.file("out.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::BinaryResult r = run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << extra[1] << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(extra.size() > 2 ? extra[2] : "--seeds"), std::string::npos) << r.err;
    EXPECT_FALSE(test::file_exists(dir.file("out.json")));
  }
}

TEST(Seeds, JsonOnStandardOutputAndTheFirstFailingSeed) {
  TempDir dir;
  // --json -: the JSON alone on standard output, the table on standard error.
  const test::BinaryResult piped = run_replisim(
      {"simulate", test::seed_scenario(), "--seeds", "2", "--strategy", "in_graph", "--json", "-"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(json::parse(piped.out)["format"], "replisim-seeds");
  EXPECT_NE(piped.err.find("throughput (samples/s)"), std::string::npos) << piped.err;
  // A seed whose run has no window (bad input in its child) stops the spread: exit 2, one line
  // naming the seed, no output.
  json doc = read(test::seed_scenario());
  doc["training"]["steps"] = 11;
  doc["training"]["warmup_steps"] = 10;
  const std::string path = dir.file("short.json");
  std::ofstream(path) << doc.dump(1);
  const test::BinaryResult failed =
      run_replisim({"simulate", path, "--seeds", "1..40", "--jobs", "1", "--strategy",
                    "between_graph", "--json", dir.file("out.json")});
  EXPECT_EQ(failed.exit_code, 2) << failed.err;
  EXPECT_EQ(failed.err.find('\n'), failed.err.size() - 1) << "not one line: " << failed.err;
  EXPECT_NE(failed.err.find("seed 1: "), std::string::npos) << failed.err;
  EXPECT_EQ(failed.err.find("error: seed 1: error:"), std::string::npos) << failed.err;
  // The child read a snapshot of the scenario; the line names the user's file.
  EXPECT_NE(failed.err.find("seed 1: " + path + ": /training/steps"), std::string::npos)
      << failed.err;
  EXPECT_FALSE(test::file_exists(dir.file("out.json")));
  // --progress json: a line per seed as it ends, then done (the failure counted).
  const test::BinaryResult lines =
      run_replisim({"simulate", path, "--seeds", "1..3", "--jobs", "1", "--strategy",
                    "between_graph", "--progress", "json"});
  EXPECT_EQ(lines.exit_code, 2);
  std::istringstream err(lines.err);
  std::vector<json> events;
  for (std::string line; std::getline(err, line);) {
    if (!line.empty() && line.front() == '{') events.push_back(json::parse(line));
  }
  ASSERT_EQ(events.size(), 3u) << lines.err;
  EXPECT_EQ(events[0]["event"], "start");
  EXPECT_EQ(events[0]["points"], 3);
  EXPECT_EQ(events[1]["event"], "point");
  EXPECT_EQ(events[1]["label"], "seed 1");
  EXPECT_EQ(events[1]["status"], "failed");
  EXPECT_EQ(events[2]["event"], "done");
  EXPECT_EQ(events[2]["failed"], 1);
  // --seed with a range, --jobs without --seeds: refused naming the flag.
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--seeds", "1..3", "--seed", "4"}, {"--jobs", "2"}}) {
    std::vector<std::string> args = {"simulate", test::seed_scenario()};
    args.insert(args.end(), flags.begin(), flags.end());
    const test::BinaryResult r = run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(flags.size() == 4 ? "--seed:" : "--jobs"), std::string::npos) << r.err;
  }
}

// The seed scenario with training.steps "auto" (and `extra` merged into training).
std::string auto_scenario(const TempDir& dir, const json& extra = json::object()) {
  json doc = read(test::seed_scenario());
  doc["training"]["steps"] = "auto";
  doc["training"].update(extra, true);
  const std::string path = dir.file("auto.json");
  std::ofstream(path) << doc.dump(1);
  return path;
}

TEST(SteadyStateCli, ReportShowsTheIntervalAndRestartingRealRunsAskForSteps) {
  TempDir dir;
  const std::string scenario = auto_scenario(dir);
  const test::BinaryResult r = run_replisim(
      {"simulate", scenario, "--progress", "none", "--json", dir.file("auto-summary.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("steady state (95% interval)"), std::string::npos) << r.out;
  const json summary = read(dir.file("auto-summary.json"));
  for (const json& run : summary["runs"]) {
    ASSERT_TRUE(run.contains("steady_state")) << run;
    EXPECT_TRUE(run["steady_state"]["converged"].get<bool>()) << run["steady_state"];
    EXPECT_LE(run["steady_state"]["half_width_fraction"].get<double>(), 0.01);
  }
  // --steps runs a fixed count instead: no interval.
  const test::BinaryResult fixed =
      run_replisim({"simulate", scenario, "--steps", "30", "--progress", "none"});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(fixed.out.find("steady state"), std::string::npos) << fixed.out;

  // A real run applies the rule online (tests/real/steady_state_real_test.cpp), but not across a
  // job restart: its estimate would start again.
  json restarting = read(
      auto_scenario(dir, {{"recovery", {{"detect_timeout", "0.5 s"}, {"restart_delay", "1 s"}}}}));
  restarting["faults"] = {{{"kind", "role"}, {"role", "ps0"}, {"at", "1 s"}}};
  const std::string restarting_path = dir.file("restarting.json");
  std::ofstream(restarting_path) << restarting.dump(1);
  const test::BinaryResult real = run_replisim({"run", restarting_path, "--progress", "none"});
  EXPECT_EQ(real.exit_code, 2) << real.err;
  EXPECT_NE(real.err.find("/training/recovery"), std::string::npos) << real.err;
  EXPECT_NE(real.err.find("--steps"), std::string::npos) << real.err;

  // A tolerance outside (0, 1) names its field.
  const test::BinaryResult bad = run_replisim(
      {"simulate", auto_scenario(dir, {{"steady_tolerance", 1.5}}), "--progress", "none"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("/training/steady_tolerance"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace replisim
