// Capacity planning with a training objective (issue 40): sweep's time-to-target columns,
// --objective-target, and whatif's change in time and global steps to the target.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using nlohmann::json;
using test::TempDir;

// Two async workers w0, w1 (one GPU each) and a dedicated PS; softmax regression on a small
// synthetic set, evaluated every 4 global steps, target test accuracy 0.7 (or none).
std::string objective_scenario(const TempDir& dir, bool with_objective = true) {
  json worker = test::machine("w", "100 GFLOPS", {"2 TFLOPS"}, "1 Gbps");
  worker["count"] = 2;
  json training = {{"replicas", "w*/gpu*"},
                   {"ps", {{"count", 1}, {"on", "dedicated"}}},
                   {"steps", 40},
                   {"warmup_steps", 3},
                   {"batch_per_replica", 16}};
  if (with_objective) {
    training["objective"] = test::synthetic_objective(0.7, "scenario", 4);
  }
  const json doc = test::scenario_json({worker}, test::one_layer_model(4e6, "2 GFLOP"), training,
                                       "lv08", "40 Gbps");
  return dir.write(with_objective ? "objective.json" : "plain.json", doc.dump(1));
}

json read_objective_json(const std::string& path) {
  return json::parse(test::read_file(path));
}

TEST(SweepObjective, RowsHoldTheTimeToTargetAndTheFlagOverridesTheTarget) {
  TempDir dir;
  const std::string s = objective_scenario(dir);
  const std::vector<std::string> common = {
      "sweep", s, "--vary", "replicas=1,2", "--cache", dir.file("cache"), "--progress", "none"};
  std::vector<std::string> own = common;
  own.insert(own.end(), {"--json", dir.file("own.json"), "--csv", dir.file("own.csv")});
  const test::BinaryResult r = test::run_replisim(own, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("objective: test accuracy >= 0.7 (the scenario's target)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("to target (s)"), std::string::npos) << r.out;
  const json results = read_objective_json(dir.file("own.json"));
  ASSERT_EQ(results["rows"].size(), 2u);
  for (const json& row : results["rows"]) {
    ASSERT_TRUE(row["objective"].is_object()) << row;
    EXPECT_EQ(row["objective"]["target_value"], 0.7);
    EXPECT_GT(row["objective"]["evaluations"].get<int>(), 1) << row;
    ASSERT_FALSE(row["objective"]["time_to_target_s"].is_null()) << row << r.out;
    EXPECT_GT(row["objective"]["time_to_target_s"].get<double>(), 0);
    EXPECT_EQ(row["objective"]["global_steps_to_target"].get<int>() % 4, 0);  // an evaluation's
  }
  // The CSV's columns, in the header and each row (a row as wide as the header).
  std::istringstream csv(test::read_file(dir.file("own.csv")));
  std::string header, line;
  std::getline(csv, header);
  const auto columns = [](const std::string& l) {  // commas outside quotes (RFC 4180)
    size_t n = 0;
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  EXPECT_NE(header.find(",time_to_target_s,global_steps_to_target,final_accuracy,"),
            std::string::npos);
  while (std::getline(csv, line)) EXPECT_EQ(columns(line), columns(header)) << line;

  // Another target: other points (cache keys), the new target in every row.
  std::vector<std::string> other = common;
  other.insert(other.end(), {"--objective-target", "accuracy=0.999", "--json", dir.file("o.json")});
  const test::BinaryResult o = test::run_replisim(other, 300);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("2 simulated, 0 from the cache"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("not reached"), std::string::npos) << o.out;
  const json overridden = read_objective_json(dir.file("o.json"));
  EXPECT_EQ(overridden["objective_target"], "accuracy=0.999");
  EXPECT_NE(overridden["sweep_id"], results["sweep_id"]);
  for (const json& row : overridden["rows"]) {
    EXPECT_EQ(row["objective"]["target_value"], 0.999);
    EXPECT_TRUE(row["objective"]["time_to_target_s"].is_null()) << row;
  }
}

TEST(SweepObjective, TheFlagsBadInputIsOneLine) {
  TempDir dir;
  const std::string plain = objective_scenario(dir, false);
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"sweep", plain, "--vary", "ps=1", "--objective-target", "accuracy=0.8"},
            "plain.json: /training/objective: --objective-target needs a training.objective"},
           {{"whatif", plain, "--objective-target", "accuracy=0.8"},
            "/training/objective: --objective-target needs a training.objective"},
           {{"sweep", plain, "--vary", "ps=1", "--objective-target", "accuracy=2"},
            "--objective-target: expected a fraction in (0, 1]"},
           {{"sweep", plain, "--vary", "ps=1", "--objective-target", "speed=2"},
            "--objective-target: expected accuracy=FRACTION or loss=NATS"},
           {{"sweep", plain, "--vary", "ps=1", "--objective-target", ""},
            "--objective-target: needs a value, got an empty one"}}) {
    const test::BinaryResult r = test::run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

// Fashion-MNIST where it is not: simulate, run and validate refuse the scenario before any run, in
// one line naming the scenario file, the JSON path and the data file; `plan` reads no data.
TEST(RunObjective, AMissingDataSetIsTheScenariosOneLine) {
  TempDir dir;
  json doc = json::parse(test::read_file(objective_scenario(dir)));
  doc["training"]["objective"]["data"] = {
      {"set", "fashion_mnist"}, {"dir", dir.file("no-data")}, {"subset", 100}};
  const std::string scenario = dir.write("fashion.json", doc.dump(1));
  for (const char* command : {"simulate", "run", "validate"}) {
    const test::BinaryResult r = test::run_replisim({command, scenario, "--progress", "none"});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find(scenario + ": /training/objective/data: " + dir.file("no-data") +
                         "/train-images-idx3-ubyte.gz: cannot open"),
              std::string::npos)
        << command << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << ": " << r.err;
  }
  EXPECT_EQ(test::run_replisim({"plan", scenario}).exit_code, 0);
}

TEST(WhatifObjective, EachChangeSaysHowTheTimeAndStepsToTargetMove) {
  TempDir dir;
  const std::string s = objective_scenario(dir);
  const test::BinaryResult r =
      test::run_replisim({"whatif", s, "--cache", dir.file("cache"), "--jobs", "2", "--progress",
                          "none", "--json", dir.file("w.json")},
                         300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("objective: test accuracy >= 0.7 reached at "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("to target (s)"), std::string::npos) << r.out;
  const json w = read_objective_json(dir.file("w.json"));
  const json& base = w["base"]["objective"];
  ASSERT_FALSE(base["time_to_target_s"].is_null()) << w["base"];
  const double base_s = base["time_to_target_s"].get<double>();
  const int base_steps = base["global_steps_to_target"].get<int>();
  int compared = 0;
  for (const json& c : w["changes"]) {
    if (c.contains("error")) continue;
    ASSERT_TRUE(c.contains("time_to_target_change")) << c;
    ASSERT_TRUE(c.contains("global_steps_to_target_change")) << c;
    const json& o = c["objective"];
    if (c["time_to_target_change"].is_null()) {
      // Not reached, or not computed (a strategy the simulator does not value yet).
      EXPECT_TRUE(o.is_null() || o["time_to_target_s"].is_null()) << c;
      continue;
    }
    ++compared;
    EXPECT_NEAR(c["time_to_target_change"].get<double>(),
                o["time_to_target_s"].get<double>() / base_s - 1, 1e-12)
        << c;
    EXPECT_EQ(c["global_steps_to_target_change"].get<int>(),
              o["global_steps_to_target"].get<int>() - base_steps)
        << c;
    // The 1 Gbit/s NIC binds: twice its bandwidth reaches the target sooner.
    if (c["change"] == "NIC bandwidth x2") {
      EXPECT_LT(c["time_to_target_change"].get<double>(), -0.05) << c;
    }
  }
  EXPECT_GE(compared, 3) << r.out;
}

}  // namespace
}  // namespace replisim
