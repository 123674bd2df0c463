// replisim recommend end to end on a model whose answer follows from arithmetic: a compute-bound
// MLP (a network far faster than its GPUs), so each configuration runs at about its GPU bound and
// the cheapest one meeting a throughput target is the closed form's.
#include <algorithm>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using nlohmann::json;
using test::TempDir;

// Workers w0.. (the catalog sets their GPUs), 1 PS task on the workers' CPUs; an MLP of 2.1 M
// parameters, batch 1,024: 12.9 GFLOP a step, while its 8.4 MB of weights cross a 1 TB/s NIC and
// PCIe link in microseconds.
std::string compute_bound_scenario(const TempDir& dir) {
  const json doc = {{"name", "compute-bound-mlp"},
                    {"cluster",
                     {{"machines",
                       {{{"name", "w"},
                         {"count", 1},
                         {"cpu", {{"speed", "1 TFLOPS"}, {"cores", 8}}},
                         {"gpus", {{"count", 1}, {"speed", "1 TFLOPS"}}},
                         {"nic", {{"bandwidth", "1 TBps"}, {"latency", "1 us"}}},
                         {"pcie", {{"bandwidth", "1 TBps"}, {"latency", "1 us"}}}}}},
                      {"network_model", "ideal"}}},
                    {"model", {{"preset", "mlp"}, {"widths", {1024, 1024, 1024}}}},
                    {"training",
                     {{"batch_per_replica", 1024},
                      {"steps", 12},
                      {"warmup_steps", 3},
                      {"replicas", "w*/gpu*"},
                      {"ps", {{"count", 1}, {"on", "workers"}}},
                      {"costs", "none"}}}};
  return dir.write("mlp.json", doc.dump(1));
}

// GPU "slow" 1 TFLOPS, "fast" 4 TFLOPS on the MLP. A: 1 slow GPU, $1/h; B: 4 slow GPUs, $3.5/h
// (spot $1.2/h, band `band`); C: 1 fast GPU, $5/h.
std::string test_catalog(const TempDir& dir, const std::string& name, const std::string& band) {
  const json speed_slow = {
      {"mlp", {{"speed", "1 TFLOPS"}, {"basis", "benchmark"}, {"source", "t"}}}};
  const json speed_fast = {
      {"mlp", {{"speed", "4 TFLOPS"}, {"basis", "calibrate"}, {"source", "t"}}}};
  auto instance = [](const std::string& n, const std::string& gpu, int gpus, double usd) {
    return json{
        {"name", n},
        {"provider", "t"},
        {"region", "r"},
        {"gpu", gpu},
        {"gpus", gpus},
        {"cpu_cores", 8},
        {"nic", {{"bandwidth", "1 TBps"}}},
        {"hardware_source", "t"},
        {"prices",
         {{{"kind", "on_demand"}, {"usd_per_hour", usd}, {"date", "2026-01"}, {"source", "t"}}}}};
  };
  json b = instance("B", "slow", 4, 3.5);
  b["prices"].push_back({{"kind", "spot"},
                         {"usd_per_hour", 1.2},
                         {"date", "2026-02"},
                         {"source", "t"},
                         {"interruption", band},
                         {"interruption_source", "t"}});
  const json doc = {
      {"format", "replisim-catalog"},
      {"version", 1},
      {"name", "arithmetic"},
      {"gpus",
       {{"slow", {{"memory", "16 GB"}, {"speeds", speed_slow}}},
        {"fast", {{"memory", "16 GB"}, {"speeds", speed_fast}}}}},
      {"instances", {instance("A", "slow", 1, 1.0), b, instance("C", "fast", 1, 5.0)}}};
  return dir.write(name, doc.dump(1));
}

json read_recommend_json(const std::string& path) {
  return json::parse(test::read_file(path));
}

// One slow GPU's rate on the MLP: 1 TFLOPS / (3 x 2 x (1024 x 1024 x 2)) FLOP per sample.
constexpr double kSlowRate = 1e12 / (3.0 * 2 * 1024 * 1024 * 2);

std::vector<std::string> recommend_args(const TempDir& dir, const std::string& scenario,
                                        const std::string& catalog, const std::string& json_out) {
  return {"recommend",       scenario,     "--catalog", catalog,  "--strategy",
          "between_graph",   "--ps",       "1",         "--sync", "async",
          "--max-machines",  "8",          "--jobs",    "2",      "--cache",
          dir.file("cache"), "--progress", "none",      "--json", json_out};
}

// The closed form: configurations meeting 5.5 slow GPUs' rate: A x8 ($8/h), B x2 ($7/h), B x4,
// C x2 ($10/h), C x4, C x8 (B spot is the cheapest per hour: $2.4/h for B x2). On demand the
// cheapest is B x2; with spot, B x2 spot.
TEST(RecommendCli, AComputeBoundModelGetsTheClosedFormsConfiguration) {
  TempDir dir;
  const std::string scenario = compute_bound_scenario(dir);
  const std::string catalog = test_catalog(dir, "c.json", "<5%");
  const std::string target = std::to_string(5.5 * kSlowRate) + " samples/s";
  std::vector<std::string> args = recommend_args(dir, scenario, catalog, dir.file("r.json"));
  args.insert(args.end(), {"--throughput", target, "--no-spot"});
  const test::BinaryResult r = test::run_replisim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json report = read_recommend_json(dir.file("r.json"));
  ASSERT_TRUE(report["cheapest_meeting_target"].is_number()) << r.out;
  const json& best = report["points"][report["cheapest_meeting_target"].get<size_t>()];
  EXPECT_EQ(best["instance"], "B") << r.out;
  EXPECT_EQ(best["machines"], 2) << r.out;
  EXPECT_DOUBLE_EQ(best["usd_per_hour"].get<double>(), 7.0);
  // Every point near its GPU bound (compute-bound), and no front point dominated by any point.
  for (const json& p : report["points"]) {
    EXPECT_GT(p["throughput_samples_per_s"].get<double>(),
              0.9 * p["gpu_bound_samples_per_s"].get<double>())
        << p["label"];
    EXPECT_LE(p["throughput_samples_per_s"].get<double>(),
              p["gpu_bound_samples_per_s"].get<double>() * 1.0001)
        << p["label"];
  }
  for (const json& i : report["front"]) {
    const json& f = report["points"][i.get<size_t>()];
    for (const json& p : report["points"]) {
      const double t = p["job_time_s"], c = p["job_cost_usd"];
      const double ft = f["job_time_s"], fc = f["job_cost_usd"];
      EXPECT_FALSE(t <= ft && c <= fc && (t < ft || c < fc))
          << p["label"] << " dominates " << f["label"];
    }
  }
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos);
  EXPECT_NE(r.out.find("cheapest meeting the target: B x2 between_graph ps=1 async"),
            std::string::npos)
      << r.out;
  // Configurations below the target's GPU bound were pruned (A x1, x2, x4, B x1, C x1): 5 of 12.
  EXPECT_EQ(report["pruned"], 5) << r.out;

  // Without pruning: every configuration simulated (5 more), the same choice.
  std::vector<std::string> all = recommend_args(dir, scenario, catalog, dir.file("all.json"));
  all.insert(all.end(), {"--throughput", target, "--no-spot", "--no-prune"});
  const test::BinaryResult r2 = test::run_replisim(all);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const json report2 = read_recommend_json(dir.file("all.json"));
  EXPECT_EQ(report2["pruned"], 0);
  EXPECT_EQ(report2["points"].size(), 12u);
  const json& best2 = report2["points"][report2["cheapest_meeting_target"].get<size_t>()];
  EXPECT_EQ(best2["label"], best["label"]);
#if REPLISIM_WITH_GUI
  // plot draws the front from recommend's JSON.
  const test::BinaryResult plot = test::run_replisim({"plot", dir.file("r.json")});
  ASSERT_EQ(plot.exit_code, 0) << plot.err;
  EXPECT_NE(plot.out.find("r-front.png"), std::string::npos) << plot.out;
  EXPECT_GT(test::read_file(dir.file("r-front.png")).size(), 10000u);
  EXPECT_NE(test::read_file(dir.file("r-front.svg")).find("Pareto front"), std::string::npos);
#endif
}

// Spot: B x2 on spot at $2.4/h is the cheapest; a higher band stretches its expected time, and the
// report shows the band and the rate beside it.
TEST(RecommendCli, ASpotPointCarriesItsBandAndAHigherBandTakesLonger) {
  TempDir dir;
  const std::string scenario = compute_bound_scenario(dir);
  double time_s[2];
  int k = 0;
  for (const std::string band : {"<5%", ">20%"}) {
    const std::string catalog = test_catalog(dir, "c" + std::to_string(k) + ".json", band);
    const std::string out = dir.file("r" + std::to_string(k) + ".json");
    std::vector<std::string> args = recommend_args(dir, scenario, catalog, out);
    args.insert(args.end(), {"--samples", "1e9", "--deadline", "24 h"});
    const test::BinaryResult r = test::run_replisim(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const json report = read_recommend_json(out);
    const json* spot = nullptr;
    for (const json& p : report["points"]) {
      if (p["instance"] == "B" && p["machines"] == 2 && p["pricing"] == "spot") spot = &p;
    }
    ASSERT_NE(spot, nullptr) << r.out;
    EXPECT_EQ((*spot)["interruption_band"], band);
    EXPECT_GT((*spot)["interruptions_per_hour"].get<double>(), 0);
    time_s[k] = (*spot)["job_time_s"];
    EXPECT_NE(r.out.find("spot (" + band + "/month, "), std::string::npos) << r.out;
    ++k;
  }
  EXPECT_GT(time_s[1], time_s[0]);
}

TEST(RecommendCli, BadFlagsAndCatalogsAreOneLine) {
  TempDir dir;
  const std::string scenario = compute_bound_scenario(dir);
  const std::string catalog = test_catalog(dir, "c.json", "<5%");
  auto one_line = [&](std::vector<std::string> args, const std::string& needle) {
    const test::BinaryResult r = test::run_replisim(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  one_line({"recommend", scenario, "--catalog", catalog}, "needs a target");
  one_line({"recommend", scenario, "--catalog", catalog, "--accuracy", "0.8", "--deadline", "1 h"},
           "--accuracy: an accuracy target is not supported");
  one_line({"recommend", scenario, "--catalog", catalog, "--samples", "1e6", "--deadline", "24"},
           "--deadline: expected a duration");
  json bad = read_recommend_json(catalog);
  bad["instances"][1]["prices"][0].erase("date");
  const std::string bad_file = dir.write("bad.json", bad.dump());
  one_line({"recommend", scenario, "--catalog", bad_file, "--throughput", "10 images/s"},
           bad_file + ": /instances/1/prices/0/date: required field missing");
}

}  // namespace
}  // namespace replisim
