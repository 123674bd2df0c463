// Nodes started as a cluster's launcher starts them (srun, mpirun, ssh with a cluster spec), run
// here as local processes: the role from the launcher's rank, the cluster from a spec naming
// other loopback addresses or from Slurm's node list, and the coordinator gathering every node's
// part into the run's trace and report — the same report rows as `replisim run`. Then the same
// under the launchers themselves: a single-node Slurm of the test's own (tests/real/local_slurm.h)
// runs a sharded sweep as an array job and a real run as an srun step and under mpirun in an
// allocation, and Open MPI's mpirun runs the real run alone; each result equals the local one's.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "core/trace/trace_format.h"
#include "real/cluster.h"
#include "tests/real/local_slurm.h"
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

// mpirun in a Slurm allocation of several nodes: the ranks' numbers are Open MPI's, and the step
// variables a rank inherits are those of the step that started Open MPI's daemons (one task per
// node), so the cluster comes from the allocation's nodes and tasks per node.
TEST(ClusterLaunch, MpiRanksInASlurmAllocationTakeTheAllocationsNodes) {
  TempDir dir;
  const std::string plan = write_plan(dir);
  const std::string base = std::to_string(test::free_port());
  std::vector<std::vector<std::string>> args, environments;
  for (int r = 0; r < 3; ++r) {
    args.push_back({"node", "--plan", plan, "--base-port", base, "--trace-out",
                    dir.file("part" + std::to_string(r) + ".trace"), "--run-trace-out",
                    dir.file("run.trace")});
    environments.push_back(
        {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "SLURM_PROCID=" + std::to_string(r % 2),
         "SLURM_STEP_NODELIST=127.0.0.2", "SLURM_STEP_TASKS_PER_NODE=1",
         "SLURM_JOB_NODELIST=127.0.0.[1-2]", "SLURM_TASKS_PER_NODE=2,1",
         std::string(kClusterTokenVariable) + "=" + "0123456789abcdef0123456789abcdef"});
  }
  const std::string report = run_nodes(args, environments);
  EXPECT_NE(report.find("throughput (samples/s)"), std::string::npos) << report;
  EXPECT_TRUE(test::file_exists(dir.file("run.trace")));
}

// --- Under a real Slurm and a real mpirun (Debian 12: slurm-wlm 22.05, Open MPI 4.1) ----------

constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What every real run of one plan has, whatever its timings: per event kind, role and op label
// the number of events, and per client its steps. Checkpoints and summaries are left out (the
// chief writes them by the clock).
std::map<std::string, int64_t> deterministic_counts(const core::Trace& trace) {
  const auto name = [&](uint32_t index) {
    return index == core::kNoString ? std::string("-") : trace.str(index);
  };
  std::map<std::string, int64_t> counts;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind == core::EventKind::kCheckpoint) continue;
    ++counts[std::string(core::event_kind_name(e.kind)) + " " + name(e.actor) + " " +
             name(e.label)];
    if (e.kind == core::EventKind::kStep) {
      int64_t& last = counts["last step of " + name(e.actor)];
      last = std::max(last, e.step);
    }
    if (e.kind == core::EventKind::kUpdate) {
      int64_t& last = counts["last global_step"];
      last = std::max(last, e.global_step_after);
    }
  }
  return counts;
}

core::Trace one_run(const std::string& path) {
  std::vector<core::Trace> runs = core::read_trace_file(path);
  EXPECT_EQ(runs.size(), 1u) << path;
  return runs.empty() ? core::Trace() : std::move(runs[0]);
}

// small_doc over 100 steps: on a loaded host the launchers' processes may start or be scheduled
// far apart, and an asynchronous worker that runs 30 steps of a few milliseconds before the other
// has warmed up leaves the run's measurement window empty (seen once under mpirun with a load of
// 8 on 2 cores).
nlohmann::json launcher_doc() {
  nlohmann::json doc = small_doc();
  doc["training"]["steps"] = 100;
  return doc;
}

std::string write_launcher_plan(const TempDir& dir) {
  const core::Plan plan = core::compile_plan(test::parse(launcher_doc()), "between_graph", {1});
  return dir.write("plan.json", core::dump_json(core::plan_to_json(plan), 1));
}

// `replisim run` of launcher_doc, its report and trace: what the launchers' runs must equal.
struct LocalRun {
  std::string report;
  std::map<std::string, int64_t> counts;
};

LocalRun local_run(const TempDir& dir) {
  const std::string scenario = dir.write("s.json", launcher_doc().dump());
  const BinaryResult run = test::run_replisim(
      {"run", scenario, "--progress", "none", "--trace-out", dir.file("local.trace")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return {run.out, deterministic_counts(one_run(dir.file("local.trace")))};
}

// A launcher's run against the local one: every rank wrote its own part (one per task, named by
// its role), the coordinator gathered them and printed the report, and the trace counts as the
// local run's.
void expect_run_as_local(const TempDir& dir, const BinaryResult& launched, const LocalRun& local) {
  ASSERT_EQ(launched.exit_code, 0) << launched.out << launched.err;
  for (const char* task : {"ps0", "worker0", "worker1"}) {
    EXPECT_TRUE(test::file_exists(dir.file(std::string("replisim-") + task + ".trace"))) << task;
  }
  EXPECT_NE(launched.out.find("gathered into " + dir.file("run.trace")), std::string::npos)
      << launched.out;
  EXPECT_EQ(row_names(launched.out), row_names(local.report)) << launched.out << local.report;
  const std::map<std::string, int64_t> counts =
      deterministic_counts(one_run(dir.file("run.trace")));
  EXPECT_EQ(counts, local.counts);
  EXPECT_EQ(counts.at("last step of worker0"), 99);
  EXPECT_EQ(counts.at("last step of worker1"), 99);
}

#define START_SLURM(slurm)                                                     \
  test::LocalSlurm slurm;                                                      \
  if (!slurm.why_not().empty()) {                                              \
    GTEST_SKIP() << "Slurm cannot start on this machine: " << slurm.why_not(); \
  }                                                                            \
  std::cout << slurm.version() << "\n"

#if REPLISIM_WITH_SIM
// A sweep as an array job of shards: task i of `sbatch --array=0-2` runs `sweep --shard i/3`;
// `merge` of the three equals the sweep run here in one piece.
TEST(RealSlurm, AShardedSweepAsAnArrayJobMergesToTheLocalSweep) {
  const auto start = std::chrono::steady_clock::now();
  START_SLURM(slurm);
  std::cout << "Slurm up in " << seconds_since(start) << " s\n";
  TempDir dir;
  const std::string scenario = dir.write("s.json", small_doc().dump());
  const std::vector<std::string> sweep = {"sweep",      scenario,
                                          "--vary",     "replicas=1,2",
                                          "--vary",     "nic_bandwidth=1 Gbps,10 Gbps,40 Gbps",
                                          "--progress", "none",
                                          "--jobs",     "1"};
  std::vector<std::string> whole = sweep;
  whole.insert(whole.end(), {"--cache", dir.file("c"), "--json", dir.file("whole.json")});
  const BinaryResult local = test::run_replisim(whole, 120);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  // The batch script: each array task its shard, its own cache and results file.
  std::string script = "#!/bin/sh\nexec '" + std::string(REPLISIM_BINARY) + "'";
  for (const std::string& a : sweep) script += " '" + a + "'";
  script += " --shard \"$SLURM_ARRAY_TASK_ID/3\" --cache '" + dir.file("c") +
            "'\"$SLURM_ARRAY_TASK_ID\" --json '" + dir.file("shard") +
            "'\"$SLURM_ARRAY_TASK_ID\".json\n";
  const std::string batch = dir.write("sweep.sh", script);
  const BinaryResult submitted =
      slurm.command({"sbatch", "--parsable", "--array=0-2", "--ntasks=1", "--chdir=" + dir.path(),
                     "--output=" + dir.file("shard-%a.out"), batch});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  const std::vector<std::string> states = slurm.wait_for_job(job, 120);
  std::string outputs;
  for (int i = 0; i < 3; ++i) {
    const std::string out = dir.file("shard-" + std::to_string(i) + ".out");
    if (test::file_exists(out)) outputs += test::read_file(out);
  }
  EXPECT_EQ(states, std::vector<std::string>(3, "COMPLETED")) << outputs;
  std::vector<std::string> merge = {"merge"};
  for (int i = 0; i < 3; ++i) {
    const std::string shard = dir.file("shard" + std::to_string(i) + ".json");
    ASSERT_TRUE(test::file_exists(shard)) << outputs;
    EXPECT_EQ(nlohmann::json::parse(test::read_file(shard))["rows"].size(), 2u);
    merge.push_back(shard);
  }
  merge.insert(merge.end(), {"--json", dir.file("merged.json")});
  const BinaryResult merged = test::run_replisim(merge);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  // Every row as the local sweep's, but for its wall time.
  const auto rows = [](const std::string& path) {
    nlohmann::json rows = nlohmann::json::parse(test::read_file(path))["rows"];
    for (nlohmann::json& row : rows) row.erase("wall_s");
    return rows;
  };
  EXPECT_EQ(rows(dir.file("merged.json")), rows(dir.file("whole.json")));
  EXPECT_EQ(rows(dir.file("whole.json")).size(), 6u);
  std::cout << "test took " << seconds_since(start) << " s\n";
}
#endif  // REPLISIM_WITH_SIM

// A real run as one srun step with a task per role: the roles from SLURM_PROCID, the cluster
// from the step's node list and tasks per node, the token through srun's environment.
TEST(RealSlurm, AnSrunStepWithATaskPerRoleRunsAsRunDoes) {
  const auto start = std::chrono::steady_clock::now();
  START_SLURM(slurm);
  TempDir dir;
  const LocalRun local = local_run(dir);
  const std::string plan = write_launcher_plan(dir);
  // Two cores, three tasks: --overcommit lets a step have more tasks than the node's CPUs.
  const BinaryResult launched = slurm.command(
      {"srun", "--overcommit", "--ntasks=3", "--distribution=block", "--kill-on-bad-exit=1",
       "--chdir=" + dir.path(), REPLISIM_BINARY, "node", "--plan", plan, "--base-port",
       std::to_string(test::free_port()), "--run-trace-out", dir.file("run.trace")},
      120, {std::string(kClusterTokenVariable) + "=" + kToken});
  expect_run_as_local(dir, launched, local);
  std::cout << "test took " << seconds_since(start) << " s\n";
}

// mpirun inside a Slurm allocation, without a cluster spec: the roles from OMPI_COMM_WORLD_RANK,
// the cluster from the allocation's nodes and tasks per node (Open MPI's own Slurm support
// starts the ranks; on one node without daemons of its own).
TEST(RealSlurm, MpirunInAnAllocationTakesTheAllocationsNodes) {
  const auto start = std::chrono::steady_clock::now();
  START_SLURM(slurm);
  if (test::run_program({"mpirun", "--version"}, 30).exit_code != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/setup installs Debian's openmpi-bin)";
  }
  TempDir dir;
  const LocalRun local = local_run(dir);
  const std::string plan = write_launcher_plan(dir);
  const BinaryResult launched =
      slurm.command({"salloc",
                     "--overcommit",
                     "--ntasks=3",
                     "mpirun",
                     "--allow-run-as-root",
                     "--bind-to",
                     "none",
                     "-np",
                     "3",
                     "-wdir",
                     dir.path(),
                     "-x",
                     kClusterTokenVariable,
                     REPLISIM_BINARY,
                     "node",
                     "--plan",
                     plan,
                     "--base-port",
                     std::to_string(test::free_port()),
                     "--run-trace-out",
                     dir.file("run.trace")},
                    120, {std::string(kClusterTokenVariable) + "=" + kToken});
  expect_run_as_local(dir, launched, local);
  std::cout << "test took " << seconds_since(start) << " s\n";
}

// The same under Open MPI's mpirun: the roles from OMPI_COMM_WORLD_RANK, the cluster from a
// spec without its token (the token through mpirun -x).
TEST(RealMpirun, ARunOfARankPerRoleRunsAsRunDoes) {
  const auto start = std::chrono::steady_clock::now();
  const BinaryResult version = test::run_program({"mpirun", "--version"}, 30);
  if (version.exit_code != 0) {
    GTEST_SKIP() << "mpirun cannot start here (scripts/setup installs Debian's openmpi-bin): "
                 << version.err.substr(0, 300);
  }
  std::cout << version.out.substr(0, version.out.find('\n')) << "\n";
  TempDir dir;
  const LocalRun local = local_run(dir);
  const std::string plan = write_launcher_plan(dir);
  const auto address = [] { return "127.0.0.1:" + std::to_string(test::free_port()); };
  const nlohmann::json cluster = {
      {"cluster", {{"ps", {address()}}, {"worker", {address(), address()}}}}};
  const std::string spec = dir.write_private("cluster.json", cluster.dump());
  // --mca plm isolated: every rank on this machine (Open MPI 4.1 otherwise wants ssh or rsh even
  // for local ranks); --allow-run-as-root: CI's container runs the suite as root; --bind-to none:
  // the ranks float over the cores as run's processes do (Open MPI binds each to a core or socket).
  const BinaryResult launched =
      test::run_program({"mpirun",
                         "--allow-run-as-root",
                         "--oversubscribe",
                         "--bind-to",
                         "none",
                         "--mca",
                         "plm",
                         "isolated",
                         "-np",
                         "3",
                         "-wdir",
                         dir.path(),
                         "-x",
                         kClusterTokenVariable,
                         REPLISIM_BINARY,
                         "node",
                         "--plan",
                         plan,
                         "--cluster",
                         spec,
                         "--run-trace-out",
                         dir.file("run.trace")},
                        120, {std::string(kClusterTokenVariable) + "=" + kToken});
  expect_run_as_local(dir, launched, local);
  std::cout << "test took " << seconds_since(start) << " s\n";
}

}  // namespace
}  // namespace replisim::real
