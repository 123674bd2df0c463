// The classroom scenario "more workers, faster training?" (scenarios/classroom/more_workers.json;
// issue 40): time to the target accuracy for 1, 2, 4, 8 and 16 asynchronous workers at a fixed
// learning rate, with staleness-aware rates, and synchronous, printed as a table. The figures are
// the run's (not asserted); the test asserts what makes the table meaningful.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "core/base/json_cursor.h"
#include "core/metrics/metrics.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// The scenario with its first `workers` workers; async workers share 1,600 updates (the slowest
// runs need about 400), sync runs 400 global steps.
nlohmann::json with_workers(int workers, const std::string& sync, bool staleness_aware) {
  nlohmann::json doc = read_json_file(test::scenario_path("classroom/more_workers.json"));
  nlohmann::json replicas = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) replicas.push_back("w" + std::to_string(w) + "/gpu0");
  doc["training"]["replicas"] = replicas;
  doc["training"]["sync"] = sync;
  doc["training"]["steps"] = sync == "async" ? (1600 + workers - 1) / workers : 400;
  doc["training"]["objective"]["staleness_aware"] = staleness_aware;
  return doc;
}

struct Row {
  double time_to_target_s = -1;
  int64_t global_steps = -1;
  double final_accuracy = 0;
  double staleness_mean = 0;
};

Row run(int workers, const std::string& sync, bool staleness_aware) {
  const RunMetrics m =
      test::simulate(with_workers(workers, sync, staleness_aware), "between_graph");
  EXPECT_TRUE(m.objective.has_value());
  Row row;
  if (m.objective) {
    EXPECT_GT(m.objective->evaluations, 10);
    row.time_to_target_s = m.objective->reached() ? m.objective->time_to_target_s : -1;
    row.global_steps = m.objective->global_steps_to_target;
    row.final_accuracy = m.objective->final_accuracy;
  }
  row.staleness_mean = m.staleness_mean;
  return row;
}

std::string cell(const Row& r) {
  char text[64];
  if (r.time_to_target_s < 0) {
    std::snprintf(text, sizeof text, "not reached (%.1f%%)", 100 * r.final_accuracy);
  } else {
    std::snprintf(text, sizeof text, "%7.1f ms %5lld steps", 1000 * r.time_to_target_s,
                  (long long)r.global_steps);
  }
  return text;
}

TEST(ObjectiveClassroom, MoreWorkersFasterTraining) {
  std::printf("time to test accuracy 0.6 (lr 1.0, batch 32 per worker)\n");
  std::printf("%7s  %-26s %-26s %-26s %s\n", "workers", "async", "async, lr / staleness", "sync",
              "async staleness");
  Row async_2, async_16;
  for (int workers : {1, 2, 4, 8, 16}) {
    const Row async = run(workers, "async", false);
    const Row aware = run(workers, "async", true);
    const Row sync = run(workers, "sync", false);
    std::printf("%7d  %-26s %-26s %-26s %.2f\n", workers, cell(async).c_str(), cell(aware).c_str(),
                cell(sync).c_str(), async.staleness_mean);
    EXPECT_GT(sync.time_to_target_s, 0) << workers << " sync workers never reached the target";
    EXPECT_EQ(sync.staleness_mean, 0);
    EXPECT_NEAR(async.staleness_mean, workers - 1, 0.5 * workers);  // about N - 1
    if (workers == 2) async_2 = async;
    if (workers == 16) async_16 = async;
  }
  EXPECT_GT(async_16.staleness_mean, 4 * async_2.staleness_mean);
}

}  // namespace
}  // namespace replisim::core
