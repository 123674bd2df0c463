// Two Horovod field reports (GitHub issues of horovod/horovod) reproduced with the allreduce
// strategy from scenarios/published/horovod*.json: only the GPU's speed is calibrated, per report
// on its own 1-GPU figure; the network, PCIe, batch, Horovod preset and transport come from the
// reports and documented defaults (docs/validation-published.md, "Horovod field reports").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

struct FieldPoint {
  const char* file;  // scenarios/published/<file>.json
  int gpus;
  double images_per_s;  // reported
  // A documented known miss (docs/validation-published.md says why): the test then requires the
  // miss to stay as documented, so that a change that closes it has to say so here.
  bool known_miss;
};

// Sources: horovod/horovod issue #659 (2018-11-28: 172 images/s on 1 RTX 2080, 291 on 2 machines
// of one each) and issue #416 (2018-08-02: 202.78 images/s on 1 V100, 650.92 on 4, 2379.56 on
// 16). Each report starts with its 1-GPU figure (calibration).
constexpr FieldPoint kFieldReports[] = {
    {"horovod659_resnet101_1gpu", 1, 172, false},
    {"horovod659_resnet101_2gpu", 2, 291, true},
    {"horovod416_resnet101_1gpu", 1, 202.78, false},
    {"horovod416_resnet101_4gpu", 4, 650.92, true},
    {"horovod416_resnet101_16gpu", 16, 2379.56, true},
};

std::string field_scenario_file(const FieldPoint& p) {
  return test::scenario_path("published/" + std::string(p.file) + ".json");
}

// The first machine entry's GPU speed in FLOP/s as the file gives it.
double field_file_gpu_speed(const FieldPoint& p) {
  return core::load_scenario(field_scenario_file(p)).cluster.machines[0].gpus[0].speed_flop_per_s;
}

struct FieldRun {
  double images_per_s = 0;
  double busiest_nic_bits_per_s = 0;  // the busiest NIC direction's mean rate over the window
};

// Simulates a field scenario with `--strategy allreduce`, every GPU at `gpu_flop_per_s` (0 = as
// in the file).
FieldRun simulate_field_point(const FieldPoint& p, double gpu_flop_per_s) {
  const std::string file = field_scenario_file(p);
  core::ScenarioDocument doc = core::load_scenario_document(file);
  if (gpu_flop_per_s > 0) {
    nlohmann::json& gpus = doc.json["cluster"]["machines"][0]["gpus"];
    const std::string speed = std::to_string(gpu_flop_per_s) + " FLOPS";
    if (gpus.is_array()) {
      for (nlohmann::json& gpu : gpus) gpu["speed"] = speed;
    } else {
      gpus["speed"] = speed;  // {"count": N, "speed"}
    }
  }
  const core::Scenario s = core::parse_scenario(doc.json, file);
  const core::RunMetrics m =
      core::compute_metrics(test::run_plan(core::compile_plan(s, "allreduce", {})));
  FieldRun run;
  run.images_per_s = m.throughput_samples_per_s;
  const double nic_bits_per_s = s.cluster.machines[0].nic.bandwidth_bytes_per_s * 8;
  for (const core::ResourceUse& link : m.links) {
    if (link.name.find("/nic/") == std::string::npos) continue;
    run.busiest_nic_bits_per_s =
        std::max(run.busiest_nic_bits_per_s, link.utilization * nic_bits_per_s);
  }
  return run;
}

TEST(PublishedHorovod, FieldReportsWithinTenPercentOrAsDocumented) {
  double speed = 0, one_gpu = 0;
  int points = 0;
  for (const FieldPoint& p : kFieldReports) {
    if (p.gpus == 1) {
      // Calibration: the file's speed scaled so the 1-GPU run gives the reported rate (a 1-GPU
      // step is compute alone, so one correction converges; checked below), and the files carry
      // the result.
      const double file_speed = field_file_gpu_speed(p);
      speed = file_speed * p.images_per_s / simulate_field_point(p, 0).images_per_s;
      one_gpu = p.images_per_s;
      EXPECT_NEAR(simulate_field_point(p, speed).images_per_s, p.images_per_s,
                  0.005 * p.images_per_s);
      EXPECT_NEAR(file_speed, speed, 0.005 * speed) << p.file << " carries another speed";
      std::printf("%-27s calibrated GPU speed %.4f TFLOPS (the scenario file: %.4f)\n", p.file,
                  speed / 1e12, file_speed / 1e12);
      continue;
    }
    const FieldRun run = simulate_field_point(p, speed);
    const double error = (run.images_per_s - p.images_per_s) / p.images_per_s;
    std::printf(
        "%-27s %2d GPUs: simulated %7.1f, reported %7.2f, error %+5.1f%%; efficiency simulated "
        "%.1f%%, reported %.1f%%; busiest NIC direction %.2f Gbit/s%s\n",
        p.file, p.gpus, run.images_per_s, p.images_per_s, 100 * error,
        100 * run.images_per_s / (p.gpus * one_gpu), 100 * p.images_per_s / (p.gpus * one_gpu),
        run.busiest_nic_bits_per_s / 1e9, p.known_miss ? " (documented known miss)" : "");
    if (p.known_miss) {
      // Today's figures: +16.4% (#659, 2 machines), +22.5% (#416, 4 GPUs), +33.0% (#416, 16
      // GPUs, RoCE: no TCP latency factor on its steps), all optimistic. Guarded so that a miss
      // neither grows unnoticed nor closes without the docs and this flag saying why.
      EXPECT_GT(std::fabs(error), 0.10) << p.file << " now within 10%: make it a guarded point";
      EXPECT_LT(std::fabs(error), 0.35) << p.file;
    } else {
      EXPECT_LE(std::fabs(error), 0.10) << p.file;
    }
    ++points;
  }
  EXPECT_EQ(points, 3);
}

// Issue #659 reports the link "at about 3.8 Gbit/s" (rx/tx) during the 2-machine run: the
// simulated mean rate of the busiest NIC direction over the measured window comes within 25% of
// it (the report's figure is a reading of a traffic monitor, not a mean over a window).
TEST(PublishedHorovod, Issue659LinkRateNearTheObservedOne) {
  const FieldPoint& calibration = kFieldReports[0];
  const FieldPoint& two = kFieldReports[1];
  const FieldRun run = simulate_field_point(two, field_file_gpu_speed(calibration));
  std::printf("horovod659 2 machines: busiest NIC direction %.2f Gbit/s (reported about 3.8)\n",
              run.busiest_nic_bits_per_s / 1e9);
  EXPECT_NEAR(run.busiest_nic_bits_per_s, 3.8e9, 0.25 * 3.8e9);
}

}  // namespace
}  // namespace replisim
