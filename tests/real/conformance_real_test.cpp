// One step protocol for both engines, on a real loopback run: the same plan run for real and
// simulated has, for every step both ran of every client, the same ops (compute and transfers,
// not the transport's copies) — timing aside — and the same steps where the plan fixes them;
// where the decisions depend on timing (backups, a death, a restart) each side still keeps the
// plan's step structure and reaches the same end. tests/sim/conformance_test.cpp holds the
// simulator and a scripted host to the same decisions under the same timings.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;

#if REPLISIM_WITH_SIM

// Per client and step that ended (a step event; the chief's sync op has none): the sorted ops
// recorded for it. Input batches past the last step, and copies, are left out.
std::map<std::pair<std::string, int64_t>, std::multiset<std::string>> step_ops(
    const core::Trace& t) {
  std::set<std::pair<std::string, int64_t>> ended;
  for (const core::TraceEvent& e : t.events) {
    if (e.kind == EventKind::kStep) ended.insert({t.str(e.client), e.step});
  }
  std::map<std::pair<std::string, int64_t>, std::multiset<std::string>> out;
  for (const auto& key : ended) out[key];
  for (const core::TraceEvent& e : t.events) {
    const auto key = std::make_pair(t.str(e.client), e.step);
    if (ended.count(key) == 0) continue;
    if (e.kind == EventKind::kCompute && e.op != OpKind::kSend && e.op != OpKind::kRecv) {
      out[key].insert("compute " + std::to_string(e.op_index));
    } else if (e.kind == EventKind::kTransfer) {
      out[key].insert("transfer " + std::to_string(e.op_index));
    }
  }
  return out;
}

// `distinct`: each op once (a step run again after a restart records its ops twice).
std::string text(const std::multiset<std::string>& ops, bool distinct) {
  std::string s;
  const std::string* previous = nullptr;
  for (const std::string& op : ops) {
    if (distinct && previous != nullptr && *previous == op) continue;
    s += op + "; ";
    previous = &op;
  }
  return s;
}

struct Case {
  const char* name;
  const char* strategy;
  int workers;
  nlohmann::json training;
  nlohmann::json faults;
  bool fixed_steps;     // the plan alone fixes which steps each client runs
  size_t restarts = 0;  // job restarts both runs must make
};

class RealConformance : public ::testing::TestWithParam<Case> {};

TEST_P(RealConformance, EachStepRunsThePlansOpsOnBothEngines) {
  const Case& c = GetParam();
  nlohmann::json doc = scenario(c.workers, c.training);
  if (!c.faults.is_null()) {
    // Steps of several milliseconds on both engines (240 MFLOP, a core here; the simulated GPUs
    // at 20 GFLOPS), so that the faults strike mid-run on both.
    doc["model"]["layers"][0]["forward_flops_per_sample"] = "20 MFLOP";
    doc["model"]["layers"][1]["forward_flops_per_sample"] = "20 MFLOP";
    for (nlohmann::json& m : doc["cluster"]["machines"]) {
      for (nlohmann::json& gpu : m["gpus"]) gpu["speed"] = "20 GFLOPS";
    }
    doc["faults"] = c.faults;
  }
  const core::Plan plan = core::compile_plan(test::parse(doc), c.strategy, {1});
  const core::Trace simulated = test::run_plan(plan);
  const RealRun real = run_real(plan);
  const auto want = step_ops(simulated);
  const auto got = step_ops(real.trace);
  ASSERT_FALSE(want.empty());
  ASSERT_FALSE(got.empty());
  // Every client's steps hold the same ops on both sides: a step both ran, op for op; a step
  // only one side ran (timing: a backup's extra steps, a death), as that client's first step;
  // where timing decides, each op once (a restart runs the steps after its checkpoint again).
  std::map<std::string, std::multiset<std::string>> first;
  for (const auto& [key, ops] : want) first.emplace(key.first, ops);
  for (const auto& [key, ops] : got) {
    const auto same = want.find(key);
    const std::multiset<std::string>& expected =
        same != want.end() ? same->second : first[key.first];
    EXPECT_EQ(text(ops, !c.fixed_steps), text(expected, !c.fixed_steps))
        << key.first << " step " << key.second;
  }
  if (c.fixed_steps) {
    std::set<std::pair<std::string, int64_t>> a, b;
    for (const auto& kv : want) a.insert(kv.first);
    for (const auto& kv : got) b.insert(kv.first);
    EXPECT_EQ(a, b) << "the steps each client ran";
  }
  // The same end: no stall on either side, or the same one; as many restarts.
  EXPECT_EQ(real.trace.outcome.stall.has_value(), simulated.outcome.stall.has_value());
  EXPECT_EQ(real.trace.outcome.restarts.size(), c.restarts);
  EXPECT_EQ(simulated.outcome.restarts.size(), c.restarts);
  EXPECT_GT(real.final.index.global_step, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, RealConformance,
    ::testing::Values(
        Case{"in_graph", "in_graph", 2, nlohmann::json::object(), nullptr, true},
        Case{"async", "between_graph", 2, nlohmann::json::object(), nullptr, true},
        Case{"sync_strict",
             "between_graph",
             2,
             {{"sync",
               {{"replicas_to_aggregate", 2}, {"total_num_replicas", 2}, {"variant", "strict"}}}},
             nullptr,
             true},
        Case{"sync_tf_backup",
             "between_graph",
             3,
             {{"sync", {{"replicas_to_aggregate", 2}, {"total_num_replicas", 3}}}},
             nullptr,
             false},
        Case{"distributed_replicated",
             "between_graph",
             2,
             {{"sync", "distributed_replicated"}},
             nullptr,
             true},
        Case{"worker_death",
             "between_graph",
             2,
             {{"steps", 60}},
             {{{"kind", "role"}, {"role", "worker1"}, {"at", "0.15 s"}}},
             false},
        Case{"ps_death_recovery",
             "between_graph",
             2,
             {{"steps", 80},
              {"checkpoint",
               {{"every", "0.1 s"}, {"disk_bandwidth", "500 MBps"}, {"max_to_keep", 0}}},
              {"recovery",
               {{"detect_timeout", "0.2 s"},
                {"restart_delay", "0.1 s"},
                {"recovery_wait", "0.1 s"}}}},
             {{{"kind", "role"}, {"role", "ps0"}, {"at", "0.3 s"}}},
             false,
             1}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

#endif  // REPLISIM_WITH_SIM

}  // namespace
}  // namespace replisim::real
