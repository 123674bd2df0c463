// How `replisim plan` grows with the cluster: the published Inception v3 scenario
// (distributed_replicated, 8 GPUs per machine, 6 PS on the workers) at 64 and 256 machines (and
// whatever --machines lists), each compiled with both strategies and its plan hashed and written
// as JSON (what `plan --json` does), timed in one run. Prints each size's seconds and ops, and the
// ratio of the largest to the smallest against the machines' ratio (issue 37's target: 256 over 64
// machines at most 4.5x). Usage: bench_plan [--machines 64,256] [--repeat N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_flags.h"
#include "core/plan/plan.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"

namespace {

using namespace replisim;

std::vector<int> machine_counts(int argc, char** argv) {
  std::vector<int> out;
  std::stringstream list(bench::text_flag(argc, argv, "--machines", "64,256"));
  for (std::string item; std::getline(list, item, ',');) out.push_back(std::stoi(item));
  if (out.empty()) throw std::invalid_argument("--machines lists no count");
  return out;
}

int run(int argc, char** argv) {
  const int repeat = std::max(1, bench::int_flag(argc, argv, "--repeat", 1));
  const std::vector<int> counts = machine_counts(argc, argv);
  core::ScenarioDocument doc = core::load_scenario_document(
      std::string(REPLISIM_SOURCE_DIR) + "/scenarios/published/inception_v3_64gpu.json");
  core::CompileOptions options;
  options.budget.max_ops = 1e9;  // the benchmark measures, whatever the size
  options.budget.max_bytes = 1e15;
  std::vector<double> seconds;
  std::printf("%9s %8s %12s %10s\n", "machines", "GPUs", "ops", "seconds");
  for (int machines : counts) {
    doc.json["cluster"]["machines"][0]["count"] = machines;
    double best = 1e300, ops = 0;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      const core::Scenario scenario = core::parse_scenario(doc.json, "inception_v3");
      ops = 0;
      size_t text = 0;
      for (const std::string& strategy : core::strategy_names()) {
        const core::Plan plan = core::compile_plan(scenario, strategy, options);
        for (const core::ClientGraph& c : plan.clients) ops += double(c.ops.size());
        text += core::plan_hash(plan).size();
        core::write_plan_json(plan, 1, [&text](const std::string& piece) { text += piece.size(); });
      }
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    seconds.push_back(best);
    std::printf("%9d %8d %12.0f %10.2f\n", machines, 8 * machines, ops, best);
    std::fflush(stdout);
  }
  if (counts.size() > 1) {
    std::printf("time(%d) / time(%d) = %.2f for %.1fx the machines\n", counts.back(),
                counts.front(), seconds.back() / seconds.front(),
                double(counts.back()) / counts.front());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return replisim::bench::guarded_main("bench_plan", run, argc, argv);
}
