// recommend's arithmetic: configurations, closed-form pruning, job cost and time with spot
// preemptions, the Pareto front and the choices.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/hardware/catalog.h"
#include "core/model/model.h"
#include "core/sweep/recommend.h"

namespace replisim {
namespace {

core::RecommendPoint cost_time_point(double time_s, double cost, bool meets = true,
                                     bool budget = true) {
  core::RecommendPoint p;
  p.job_time_s = time_s;
  p.job_cost_usd = cost;
  p.meets_target = meets;
  p.within_budget = budget;
  return p;
}

TEST(Recommend, TheFrontHoldsOnlyNonDominatedPointsFastestFirst) {
  const std::vector<core::RecommendPoint> points = {
      cost_time_point(10, 100), cost_time_point(20, 50),
      cost_time_point(15, 120),  // dominated by (10, 100)
      cost_time_point(30, 50),   // dominated by (20, 50): as cheap, slower
      cost_time_point(40, 20),  cost_time_point(5, 400),
      cost_time_point(10, 100)};  // a tie: the first one stays
  const std::vector<size_t> front = core::pareto_front(points);
  EXPECT_EQ(front, (std::vector<size_t>{5, 0, 1, 4}));
  for (size_t i : front) {
    for (size_t j = 0; j < points.size(); ++j) {
      const bool dominates = points[j].job_time_s <= points[i].job_time_s &&
                             points[j].job_cost_usd <= points[i].job_cost_usd &&
                             (points[j].job_time_s < points[i].job_time_s ||
                              points[j].job_cost_usd < points[i].job_cost_usd);
      EXPECT_FALSE(dominates) << j << " dominates " << i;
    }
  }
}

TEST(Recommend, TheChoicesRespectTheTargetAndTheBudget) {
  const std::vector<core::RecommendPoint> points = {
      cost_time_point(10, 100, true, true), cost_time_point(20, 50, true, true),
      cost_time_point(40, 20, false, true), cost_time_point(5, 400, true, false)};
  EXPECT_EQ(core::cheapest_meeting_target(points), size_t(1));
  EXPECT_EQ(core::fastest_within_budget(points), size_t(0));
}

TEST(Recommend, UnitsOfTheTargetFlags) {
  EXPECT_DOUBLE_EQ(core::parse_throughput_text("2000 images/s", "--throughput"), 2000);
  EXPECT_DOUBLE_EQ(core::parse_duration_text("72 h", "--deadline"), 72 * 3600);
  EXPECT_DOUBLE_EQ(core::parse_duration_text("90 min", "--deadline"), 5400);
  EXPECT_DOUBLE_EQ(core::parse_usd_text("$3000", "--budget"), 3000);
  EXPECT_THROW(core::parse_duration_text("72", "--deadline"), core::InputError);
  EXPECT_THROW(core::parse_throughput_text("-1 images/s", "--throughput"), core::InputError);
  EXPECT_THROW(core::parse_usd_text("3000 EUR", "--budget"), core::InputError);
}

// A spot configuration's expected time carries its preemptions: a higher band, a longer time
// (and a higher cost at the same price), each by the first-order expectation.
TEST(Recommend, AHigherSpotBandMakesTheExpectedTimeLonger) {
  core::SpotRecovery recovery = core::default_spot_recovery();
  EXPECT_DOUBLE_EQ(recovery.lost_per_interruption_s(), 60 + 300 + 0 + 30 + 1800);
  core::Catalog catalog;
  catalog.gpus.push_back({"G", 16e9, {{"resnet50", 1e13, core::SpeedBasis::kBenchmark, "t", ""}}});
  for (core::InterruptionBand band :
       {core::InterruptionBand::kUnder5, core::InterruptionBand::kOver20}) {
    core::CatalogInstance t;
    t.name = std::string("i") + core::interruption_band_name(band);
    t.gpu = "G";
    t.gpu_count = 1;
    t.nic_bandwidth_bytes_per_s = 1e9;
    t.prices.push_back({core::PriceKind::kOnDemand, 2, "2026-01", "t", std::nullopt, ""});
    t.prices.push_back({core::PriceKind::kSpot, 1, "2026-01", "t", band, "t"});
    catalog.instances.push_back(t);
  }
  core::RecommendSpace space;
  space.max_machines = 4;
  space.strategies = {"allreduce"};
  std::vector<core::SkippedInstance> skipped;
  core::BoundInputs in;
  in.preset = "resnet50";
  in.flop_per_sample = 1e9;
  const auto configurations = core::recommend_configurations(catalog, in, space, &skipped);
  ASSERT_EQ(configurations.size(), 6u);  // 2 types x 1, 2, 4 machines
  const auto options = core::priced_options(catalog, configurations, space, recovery);
  ASSERT_EQ(options.size(), 12u);
  core::RecommendTarget target;
  target.kind = core::RecommendTarget::Kind::kSamples;
  target.samples = 1e9;
  target.deadline_s = 1e9;
  // Four machines of each type, spot: the same throughput.
  const core::PricedOption& low = options[5];
  const core::PricedOption& high = options[11];
  ASSERT_EQ(low.kind, core::PriceKind::kSpot);
  ASSERT_EQ(high.kind, core::PriceKind::kSpot);
  EXPECT_NEAR(low.interruptions_per_hour, 4 * -std::log(0.95) / 720, 1e-12);
  EXPECT_NEAR(high.interruptions_per_hour, 4 * -std::log(0.75) / 720, 1e-12);
  const core::RecommendPoint a = core::price_point(5, low, 1000, target, 0);
  const core::RecommendPoint b = core::price_point(11, high, 1000, target, 0);
  const double plain_s = 1e9 / 1000;
  EXPECT_NEAR(a.job_time_s, plain_s * (1 + low.interruptions_per_hour / 3600 * 2190), 1e-6);
  EXPECT_GT(b.job_time_s, a.job_time_s);
  EXPECT_GT(b.job_cost_usd, a.job_cost_usd);
  // On demand: no preemption.
  EXPECT_DOUBLE_EQ(core::price_point(4, options[4], 1000, target, 0).job_time_s, plain_s);
}

// The walk-through's space (docs/capacity-planning.md#what-to-buy: ResNet-50, 90 epochs of
// ImageNet in 72 hours for at most $1,000, the shipped catalog): the bounds prune at least half of
// the priced points, and never the winner: with any simulated throughput at or below the GPU bound
// (here 90% of it, or a share falling with the machines) the cheapest point meeting the target
// and the fastest within budget are the same over the survivors as over every point.
TEST(Recommend, PruningOnTheWalkThroughsSpaceKeepsTheChoice) {
  const core::Catalog catalog =
      core::load_catalog(std::string(REPLISIM_SOURCE_DIR) + "/scenarios/catalog/aws-gcp-gpu.json");
  const core::Model model = core::find_model_preset("resnet50")->build({});
  core::RecommendSpace space;  // the defaults: what the walk-through searches
  std::vector<core::SkippedInstance> skipped;
  core::BoundInputs in;  // scenarios/planning/ps_scaling.json's
  in.preset = "resnet50";
  in.flop_per_sample = core::training_flop_per_sample(model);
  in.parameter_bytes = model.parameter_bytes();
  in.batch_per_replica = 64;
  in.dedicated_ps = true;
  const auto configurations = core::recommend_configurations(catalog, in, space, &skipped);
  const auto options =
      core::priced_options(catalog, configurations, space, core::default_spot_recovery());
  core::RecommendTarget target;
  target.kind = core::RecommendTarget::Kind::kSamples;
  target.samples = 1281167.0 * 90;
  target.deadline_s = 72 * 3600;
  const double budget = 1000;
  for (int model_of_throughput = 0; model_of_throughput < 2; ++model_of_throughput) {
    std::vector<core::RecommendPoint> all, kept;
    size_t pruned = 0;
    for (size_t i = 0; i < options.size(); ++i) {
      const core::Configuration& c = configurations[options[i].configuration];
      const double share = model_of_throughput == 0 ? 0.9 : 1.0 / (1 + 0.1 * c.machines);
      const core::RecommendPoint p =
          core::price_point(i, options[i], share * c.bound_samples_per_s, target, budget);
      all.push_back(p);
      if (core::prune_reason(c, options[i], target, budget).empty()) {
        kept.push_back(p);
      } else {
        ++pruned;
        EXPECT_FALSE(p.meets_target && p.within_budget) << c.label(catalog);
      }
    }
    EXPECT_GE(2 * pruned, options.size()) << pruned << " of " << options.size();
    const auto best_all = core::cheapest_meeting_target(all);
    const auto best_kept = core::cheapest_meeting_target(kept);
    ASSERT_TRUE(best_all && best_kept);
    EXPECT_EQ(all[*best_all].option, kept[*best_kept].option);
  }
}

}  // namespace
}  // namespace replisim
