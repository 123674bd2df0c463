// Nodes started as a cluster's launcher starts them (srun, mpirun, ssh with a cluster spec), run
// here as local processes: the role from the launcher's rank, the cluster from a spec naming
// other loopback addresses or from Slurm's node list, and the coordinator gathering every node's
// part into the run's trace and report — the same report rows as `replisim run`.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "real/cluster.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::real {
namespace {

using test::BinaryResult;
using test::RunningReplisim;
using test::TempDir;

TEST(SlurmHosts, ANodeListExpandsAsSlurmWritesIt) {
  EXPECT_EQ(expand_host_list("node[01-03,07],gpu1"),
            (std::vector<std::string>{"node01", "node02", "node03", "node07", "gpu1"}));
  EXPECT_EQ(expand_host_list("r[1-2]n[8-9]"),
            (std::vector<std::string>{"r1n8", "r1n9", "r2n8", "r2n9"}));
  EXPECT_EQ(expand_host_list("127.0.0.[1-3]"),
            (std::vector<std::string>{"127.0.0.1", "127.0.0.2", "127.0.0.3"}));
  EXPECT_EQ(expand_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  for (const std::string bad : {"", "n[1-", "n[3-1]", "n[a]", "n[1-2]]", "a,,b", "n[1-3],"}) {
    try {
      expand_host_list(bad);
      ADD_FAILURE() << bad;
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_STEP_NODELIST"), std::string::npos) << e.what();
    }
  }
  for (const std::string bad : {"", "2(x", "x", "2(x3", "3(x0)", "2,"}) {
    EXPECT_THROW(expand_tasks_per_node(bad), core::InputError) << bad;
  }
}

// Two workers and a parameter server, 30 steps of little compute.
nlohmann::json small_doc() {
  return test::scenario_json({test::machine("ps", "100 GFLOPS", {}, "10 Gbps"),
                              test::machine("w0", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                              test::machine("w1", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")},
                             test::one_layer_model(20000, "2 MFLOP"),
                             {{"replicas", {"w0/gpu0", "w1/gpu0"}},
                              {"ps", {"ps/cpu"}},
                              {"client", "ps"},
                              {"steps", 30},
                              {"warmup_steps", 3},
                              {"batch_per_replica", 4}},
                             "lv08", "100 Gbps");
}

core::Plan small_plan() {
  return core::compile_plan(test::parse(small_doc()), "between_graph", {1});
}

// Ranks go to a step's nodes in order (block distribution), each node's ports from the base.
TEST(SlurmHosts, AStepsNodesGiveTheClusterSpec) {
  ::setenv(kClusterTokenVariable, "0123456789abcdef0123456789abcdef", 1);
  const core::Plan plan = small_plan();  // ranks: ps0, worker0, worker1
  const ClusterSpec spec = slurm_cluster_spec(
      plan, {"h[1-2]", "SLURM_STEP_NODELIST", "2,1", "SLURM_STEP_TASKS_PER_NODE"}, 5000);
  ASSERT_EQ(spec.tasks.size(), 3u);
  EXPECT_EQ(spec.tasks[size_t(spec.find("ps", 0))].address(), "h1:5000");
  EXPECT_EQ(spec.tasks[size_t(spec.find("worker", 0))].address(), "h1:5001");
  EXPECT_EQ(spec.tasks[size_t(spec.find("worker", 1))].address(), "h2:5000");
  try {
    slurm_cluster_spec(plan, {"h[1-2]", "SLURM_STEP_NODELIST", "1,1", "SLURM_STEP_TASKS_PER_NODE"},
                       5000);
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the plan needs 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      slurm_cluster_spec(plan, {"h[1-2]", "SLURM_JOB_NODELIST", "3", "SLURM_TASKS_PER_NODE"}, 5000),
      core::InputError);
  ::unsetenv(kClusterTokenVariable);
}

TEST(LauncherRank, TheFirstRankVariableSetGivesIt) {
  for (const char* v : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) ::unsetenv(v);
  EXPECT_FALSE(rank_from_environment().has_value());
  ::setenv("SLURM_PROCID", "2", 1);
  EXPECT_EQ(rank_from_environment()->rank, 2);
  // mpirun in a Slurm allocation: every rank inherits the allocation's SLURM_PROCID.
  ::setenv("PMI_RANK", "1", 1);
  EXPECT_EQ(rank_from_environment()->variable, "PMI_RANK");
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  EXPECT_EQ(rank_from_environment()->variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(rank_from_environment()->rank, 0);
  ::setenv("OMPI_COMM_WORLD_RANK", "x1", 1);
  EXPECT_THROW(rank_from_environment(), core::InputError);
  for (const char* v : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) ::unsetenv(v);
}

// The report's row names (its first column), in order.
std::vector<std::string> row_names(const std::string& report) {
  std::vector<std::string> rows;
  std::istringstream in(report);
  std::string line;
  std::getline(in, line);  // title
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("note", 0) == 0 || line.rfind("warning", 0) == 0) continue;
    const size_t gap = line.find("  ");
    if (gap == 0 || gap == std::string::npos) continue;  // the header of strategies
    rows.push_back(line.substr(0, gap));
  }
  return rows;
}

std::string write_plan(const TempDir& dir) {
  return dir.write("plan.json", core::dump_json(core::plan_to_json(small_plan()), 1));
}

// Each node waits for the others and exits 0; the coordinator's output is the report.
std::string run_nodes(const std::vector<std::vector<std::string>>& args,
                      const std::vector<std::vector<std::string>>& environments) {
  std::vector<std::unique_ptr<RunningReplisim>> nodes;
  for (size_t i = 0; i < args.size(); ++i) {
    nodes.push_back(std::make_unique<RunningReplisim>(args[i], 60, environments[i]));
  }
  std::string report;
  for (auto& n : nodes) {
    const BinaryResult r = n->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (!r.out.empty()) report = r.out;
  }
  return report;
}

TEST(ClusterLaunch, RankVariablesAndASpecOfOtherLoopbackAddressesRunAsRunDoes) {
  TempDir dir;
  const std::string plan = write_plan(dir);
  const int port = test::free_port();
  const nlohmann::json cluster = {
      {"cluster",
       {{"ps", {"127.0.0.2:" + std::to_string(port)}},
        {"worker", {"127.0.0.3:" + std::to_string(port), "127.0.0.1:" + std::to_string(port)}}}},
      {"token", "0123456789abcdef0123456789abcdef"}};
  const std::string spec = dir.write_private("cluster.json", cluster.dump());
  std::vector<std::vector<std::string>> args, environments;
  const std::vector<std::string> rank_variables = {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                                   "PMI_RANK"};
  for (int r = 0; r < 3; ++r) {
    args.push_back({"node", "--plan", plan, "--cluster", spec, "--trace-out",
                    dir.file("part" + std::to_string(r) + ".trace"), "--run-trace-out",
                    dir.file("run.trace")});
    environments.push_back({rank_variables[size_t(r)] + "=" + std::to_string(r)});
  }
  const std::string report = run_nodes(args, environments);
  EXPECT_NE(report.find("real backend, loopback network"), std::string::npos) << report;
  EXPECT_NE(report.find("gathered into " + dir.file("run.trace")), std::string::npos) << report;
  // The gathered trace reports as the coordinator printed it.
  const BinaryResult again = test::run_replisim({"report", dir.file("run.trace")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(row_names(again.out), row_names(report));
  // The same plan from `replisim run`: the same rows.
  const std::string scenario = dir.write("s.json", small_doc().dump());
  const BinaryResult run = test::run_replisim({"run", scenario, "--progress", "none"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(row_names(run.out), row_names(report)) << run.out << "\n" << report;
  // A rank past the plan's tasks, and no role at all, are one line each (exit 2).
  RunningReplisim past({"node", "--plan", plan, "--cluster", spec}, 30, {"PMI_RANK=7"});
  const BinaryResult r = past.wait();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("PMI_RANK: rank 7, but"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has 3 tasks"), std::string::npos) << r.err;
  const BinaryResult none = test::run_replisim({"node", "--plan", plan, "--cluster", spec});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("--role"), std::string::npos) << none.err;
}

// Under srun without a spec: the step's node list and tasks per node give every node's address.
TEST(ClusterLaunch, ASlurmStepsNodeListGivesTheCluster) {
  TempDir dir;
  const std::string plan = write_plan(dir);
  const std::string base = std::to_string(test::free_port());
  std::vector<std::vector<std::string>> args, environments;
  for (int r = 0; r < 3; ++r) {
    args.push_back({"node", "--plan", plan, "--base-port", base, "--trace-out",
                    dir.file("part" + std::to_string(r) + ".trace"), "--run-trace-out",
                    dir.file("run.trace")});
    // Two ranks on 127.0.0.1 (ports base and base + 1), one on 127.0.0.2.
    environments.push_back(
        {"SLURM_PROCID=" + std::to_string(r), "SLURM_JOB_NODELIST=127.0.0.[1-2]",
         "SLURM_TASKS_PER_NODE=2,1",
         std::string(kClusterTokenVariable) + "=0123456789abcdef0123456789abcdef"});
  }
  const std::string report = run_nodes(args, environments);
  EXPECT_NE(report.find("throughput (samples/s)"), std::string::npos) << report;
  EXPECT_TRUE(test::file_exists(dir.file("run.trace")));
}

}  // namespace
}  // namespace replisim::real
