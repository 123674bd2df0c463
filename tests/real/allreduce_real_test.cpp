// Real all-reduce runs over loopback (the "allreduce" strategy, real/node/collective_ops.h): every
// rank ends with bitwise the same variables, equal to the sums the test computes in the
// algorithm's chunk order, averaged and applied; a straggler paces every rank; a rank's death
// fails the job, naming it, unless the job is elastic, which goes on with N - 1.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/runtime/collectives.h"
#include "core/strategy/strategy.h"
#include "core/values/checkpoint.h"
#include "core/values/gradient_fill.h"
#include "real/node/collective_ops.h"
#include "real/node/node.h"
#include "tests/real/real_support.h"

namespace replisim::real {
namespace {

using namespace testing;
using core::Checkpoint;
using core::CheckpointShard;
using core::CheckpointTensor;
using core::fill_gradient;
using core::float_count;

// `ranks` workers on one machine each, all-reduce with `algorithm`, each tensor its own
// collective (fusion off: the test knows each buffer's layout).
nlohmann::json allreduce_scenario(int ranks, const std::string& algorithm,
                                  const nlohmann::json& training = {}) {
  nlohmann::json t = {{"allreduce", {{"algorithm", algorithm}, {"fusion_threshold", "0 B"}}}};
  if (!training.is_null()) t.update(training);
  return scenario(ranks, t);
}

core::Plan allreduce_plan(const nlohmann::json& doc) {
  return core::compile_plan(test::parse(doc), "allreduce", {1});
}

// Per element of a buffer of `elements`, the ranks in the order their values are summed: the
// ring's chunk c starts at rank c and adds ranks c + 1, c + 2, ... mod N (each receiver adds its
// own value to the partial sum); the double binary tree's chunk of tree t is summed bottom-up in
// heap order (a node's own value, plus each child's subtree in turn; tree 1 numbers the ranks from
// the other end).
using Order = std::function<float(const std::vector<std::vector<float>>&, size_t)>;

float ring_sum(const std::vector<std::vector<float>>& g, size_t i, int chunks) {
  const int n = int(g.size());
  int chunk = 0;
  while (core::collective_chunk(int64_t(g[0].size()), chunks, chunk).second <= int64_t(i)) ++chunk;
  const int start = chunk % n;
  float sum = g[size_t(start)][i];
  for (int m = 1; m < n; ++m) sum = g[size_t((start + m) % n)][i] + sum;
  return sum;
}

float tree_subtree(const std::vector<std::vector<float>>& g, size_t i, int tree, int q) {
  const int n = int(g.size());
  const int rank = tree == 0 ? q : n - 1 - q;
  float sum = g[size_t(rank)][i];
  for (int child : {2 * q + 1, 2 * q + 2}) {
    if (child < n) sum += tree_subtree(g, i, tree, child);
  }
  return sum;
}

float tree_sum(const std::vector<std::vector<float>>& g, size_t i, int chunks) {
  int chunk = 0;
  while (core::collective_chunk(int64_t(g[0].size()), chunks, chunk).second <= int64_t(i)) ++chunk;
  return tree_subtree(g, i, chunk / (chunks / 2), 0);
}

// In rank order. The gradients are small multiples of 1/64 (gradient_fill.h), so the sum of a
// few is exact in float32 and any order gives its bits: for an algorithm whose order the test
// does not spell out (hierarchical), the ranks must still agree bit for bit with it.
float rank_order_sum(const std::vector<std::vector<float>>& g, size_t i) {
  float sum = 0;
  for (const std::vector<float>& rank : g) sum += rank[i];
  return sum;
}

// What every rank must hold at the end: per step, per apply (one per layer group), the ranks'
// gradients (gradient_fill.h) summed in the algorithm's order, divided by the ranks, applied by
// gradient descent (TF's ApplyGradientDescent: var -= lr * grad).
std::vector<std::vector<float>> expected_variables(const core::Plan& plan,
                                                   const std::string& algorithm) {
  const int n = int(plan.collective.ranks.size());
  const int chunks = core::collective_program(algorithm, std::vector<int>(size_t(n), 0),
                                              plan.collective.streams_per_peer)
                         .chunks;
  std::vector<std::vector<float>> values;
  for (const core::Variable& v : plan.variables) values.emplace_back(float_count(v.bytes), 0.0f);
  const core::ClientGraph& graph = plan.clients[0];
  const float lr = float(plan.optimizer.learning_rate);
  for (int64_t s = 0; s < plan.steps; ++s) {
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      const core::Op& apply = graph.ops[k];
      if (apply.kind != OpKind::kApply) continue;
      const core::Op& reduce = graph.ops[size_t(apply.inputs.at(0))];
      EXPECT_EQ(reduce.kind, OpKind::kAllReduce);
      const int backward = reduce.inputs.at(0);
      const int v = apply.variable;
      const size_t elements = float_count(reduce.bytes);
      std::vector<std::vector<float>> g(size_t(n), std::vector<float>(elements, 0.0f));
      for (int r = 0; r < n; ++r) {
        fill_gradient(g[size_t(r)].data(), float_count(plan.variables[size_t(v)].bytes),
                      plan.collective.ranks[size_t(r)], s, v, backward);
      }
      std::vector<float>& var = values[size_t(v)];
      for (size_t i = 0; i < var.size(); ++i) {
        const float sum = algorithm == "ring"   ? ring_sum(g, i, chunks)
                          : algorithm == "tree" ? tree_sum(g, i, chunks)
                                                : rank_order_sum(g, i);
        var[i] -= lr * (sum / float(n));
      }
    }
  }
  return values;
}

// As expected_variables (ring, gradient descent), where steps from `from_step` on are reduced
// among `survivors` only (rank indices, in ring order): an elastic job's rollback.
std::vector<std::vector<float>> expected_variables_after_death(const core::Plan& plan,
                                                               int64_t from_step,
                                                               const std::vector<int>& survivors) {
  std::vector<std::vector<float>> values;
  for (const core::Variable& v : plan.variables) values.emplace_back(float_count(v.bytes), 0.0f);
  const core::ClientGraph& graph = plan.clients[0];
  const float lr = float(plan.optimizer.learning_rate);
  for (int64_t s = 0; s < plan.steps; ++s) {
    std::vector<int> ranks = survivors;
    if (s < from_step) {
      ranks.clear();
      for (int r = 0; r < int(plan.collective.ranks.size()); ++r) ranks.push_back(r);
    }
    const int n = int(ranks.size());
    const int chunks = core::collective_program("ring", std::vector<int>(size_t(n), 0),
                                                plan.collective.streams_per_peer)
                           .chunks;
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      const core::Op& apply = graph.ops[k];
      if (apply.kind != OpKind::kApply) continue;
      const core::Op& reduce = graph.ops[size_t(apply.inputs.at(0))];
      const int backward = reduce.inputs.at(0);
      const int v = apply.variable;
      const size_t elements = float_count(reduce.bytes);
      std::vector<std::vector<float>> g(size_t(n), std::vector<float>(elements, 0.0f));
      for (int i = 0; i < n; ++i) {
        fill_gradient(g[size_t(i)].data(), float_count(plan.variables[size_t(v)].bytes),
                      plan.collective.ranks[size_t(ranks[size_t(i)])], s, v, backward);
      }
      std::vector<float>& var = values[size_t(v)];
      for (size_t i = 0; i < var.size(); ++i) var[i] -= lr * (ring_sum(g, i, chunks) / float(n));
    }
  }
  return values;
}

// Every rank's copy ("final.rank<r>") equals the expected values, bit for bit.
void expect_every_rank_holds(const core::Plan& plan, const Checkpoint& final,
                             const std::vector<std::vector<float>>& expected) {
  ASSERT_EQ(final.shards.size(), plan.collective.ranks.size());
  for (size_t r = 0; r < final.shards.size(); ++r) {
    EXPECT_EQ(final.index.shards[r], "final.rank" + std::to_string(r));
    const CheckpointShard& shard = final.shards[r];
    EXPECT_EQ(shard.global_step, plan.steps);
    size_t compared = 0;
    for (const CheckpointTensor& t : shard.tensors) {
      if (t.slot != 0 || t.variable <= 0) continue;
      const std::vector<float>& want = expected[size_t(t.variable)];
      ASSERT_EQ(t.values.size(), want.size());
      size_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        differ += std::memcmp(&t.values[i], &want[i], sizeof(float)) != 0;
      }
      EXPECT_EQ(differ, 0u) << "rank " << r << ", " << plan.variables[size_t(t.variable)].name
                            << ": " << t.values[0] << " where " << want[0] << " was due";
      EXPECT_NE(want[0], 0.0f);
      ++compared;
    }
    EXPECT_EQ(compared, plan.variables.size() - 1) << "rank " << r;
  }
}

TEST(AllReduceReal, ThreeRanksOfARingEndWithTheSameAveragedVariables) {
  const core::Plan plan = allreduce_plan(allreduce_scenario(3, "ring"));
  ASSERT_EQ(plan.sync, core::kAllReduceSync);
  const RealRun run = run_real(plan);
  for (const std::string client : {"worker0", "worker1", "worker2"}) {
    EXPECT_EQ(count(run.trace, EventKind::kStep, client), plan.steps) << client;
  }
  EXPECT_FALSE(run.trace.outcome.job_failure.has_value());
  // The chief's increments count the job's global steps (each of every rank's samples), as the
  // simulator records them; the other ranks' copies of global_step are their own.
  EXPECT_EQ(count(run.trace, EventKind::kUpdate), plan.steps);
  EXPECT_EQ(count(run.trace, EventKind::kUpdate, "worker0"), plan.steps);
  expect_every_rank_holds(plan, run.final, expected_variables(plan, "ring"));
}

TEST(AllReduceReal, FourRanksOfADoubleBinaryTreeEndWithTheSameAveragedVariables) {
  const core::Plan plan = allreduce_plan(allreduce_scenario(4, "tree"));
  const RealRun run = run_real(plan);
  EXPECT_EQ(count(run.trace, EventKind::kStep, "worker3"), plan.steps);
  expect_every_rank_holds(plan, run.final, expected_variables(plan, "tree"));
}

// Two NCCL streams per peer (cluster.transport.connections_per_peer): two rings, each over half
// of every buffer (chunk c of 2N: ring c / N, from rank c mod N).
TEST(AllReduceReal, TwoRanksOfTwoRings) {
  nlohmann::json doc = allreduce_scenario(2, "ring");
  doc["cluster"]["transport"]["connections_per_peer"] = 2;
  const core::Plan plan = allreduce_plan(doc);
  ASSERT_EQ(plan.collective.streams_per_peer, 2);
  const RealRun run = run_real(plan);
  expect_every_rank_holds(plan, run.final, expected_variables(plan, "ring"));
}

// Horovod's hierarchical all-reduce over two machines of two GPUs: a ring inside each machine,
// one across them per local rank, then the gather inside each machine.
TEST(AllReduceReal, HierarchicalOverTwoMachinesOfTwoGpus) {
  std::vector<nlohmann::json> machines = {test::machine("ps", "100 GFLOPS", {}, "10 Gbps")};
  nlohmann::json replicas = nlohmann::json::array();
  for (const std::string m : {"m0", "m1"}) {
    machines.push_back(test::machine(m, "100 GFLOPS", {"1 TFLOPS", "1 TFLOPS"}, "10 Gbps"));
    replicas.push_back(m + "/gpu0");
    replicas.push_back(m + "/gpu1");
  }
  const nlohmann::json t = {
      {"batch_per_replica", 4},
      {"steps", 6},
      {"warmup_steps", 1},
      {"replicas", replicas},
      {"ps", {"ps/cpu"}},
      {"client", "ps"},
      {"allreduce", {{"algorithm", "hierarchical"}, {"fusion_threshold", "0 B"}}}};
  const core::Plan plan =
      allreduce_plan(test::scenario_json(machines, small_model(), t, "lv08", "100 Gbps"));
  ASSERT_EQ(plan.collective.ranks.size(), 4u);
  const RealRun run = run_real(plan);
  expect_every_rank_holds(plan, run.final, expected_variables(plan, "hierarchical"));
}

// few_ms_model(): steps of a few milliseconds, a run long enough for its faults' times.
core::Plan timed_allreduce_plan(int ranks, int steps, const nlohmann::json& allreduce,
                                const nlohmann::json& faults) {
  nlohmann::json doc = scenario(ranks, {{"steps", steps}, {"allreduce", allreduce}});
  doc["model"] = few_ms_model();
  doc["faults"] = faults;
  return allreduce_plan(doc);
}

// The mean of a client's step durations.
double mean_step_s(const core::Trace& t, const std::string& client) {
  const std::vector<const core::TraceEvent*> steps = test::events_of(t, EventKind::kStep, client);
  double sum = 0;
  for (const core::TraceEvent* e : steps) sum += e->end_s - e->start_s;
  return steps.empty() ? 0 : sum / double(steps.size());
}

// w1 computes at a quarter of its speed for the whole run: the others cannot end a step before
// its gradients are in, so every rank's steps take about as long as its.
TEST(AllReduceReal, AStragglerPacesEveryRank) {
  const core::Plan plan = timed_allreduce_plan(3, 30, {{"algorithm", "ring"}},
                                               {{{"kind", "slowdown"},
                                                 {"device", "w1/gpu0"},
                                                 {"from", "0 s"},
                                                 {"until", "100 s"},
                                                 {"factor", 0.25}}});
  const RealRun run = run_real(plan);
  const double straggler_s = mean_step_s(run.trace, "worker1");
  // Each step of every rank ends after the straggler's last backward op of that step.
  std::vector<double> backward_end(size_t(plan.steps), 0.0);
  for (const core::TraceEvent& e : run.trace.events) {
    if (e.kind != EventKind::kCompute || e.op != OpKind::kBackward ||
        run.trace.str(e.device) != "w1/gpu0" || e.step < 0 || e.step >= plan.steps) {
      continue;
    }
    backward_end[size_t(e.step)] = std::max(backward_end[size_t(e.step)], e.end_s);
  }
  for (const std::string client : {"worker0", "worker2"}) {
    const std::vector<const core::TraceEvent*> steps =
        test::events_of(run.trace, EventKind::kStep, client);
    ASSERT_EQ(steps.size(), size_t(plan.steps)) << client;
    for (const core::TraceEvent* e : steps) {
      // The trace's clocks agree within the clock estimate's error (microseconds on loopback).
      EXPECT_GE(e->end_s, backward_end[size_t(e->step)] - 1e-3) << client << " step " << e->step;
    }
    const double own_s = mean_step_s(run.trace, client);
    std::printf("straggler w1 at 0.25x: mean step %s %.2f ms, worker1 %.2f ms\n", client.c_str(),
                own_s * 1e3, straggler_s * 1e3);
    EXPECT_GT(own_s, 0.8 * straggler_s) << client;
  }
}

// A rank's death stalls the ring: without elastic the job fails, naming the dead rank.
TEST(AllReduceReal, ADeadRankFailsTheJobNamingIt) {
  const core::Plan plan = timed_allreduce_plan(
      3, 400, {{"algorithm", "ring"}}, {{{"kind", "role"}, {"role", "worker1"}, {"at", "0.4 s"}}});
  // A failed job saves no final variables: the trace only.
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"checkpoint_dir", dir.path()}, {"connect_timeout_s", 20}};
  const core::Trace trace = core::run_to_trace(backend, plan, options);
  ASSERT_TRUE(trace.outcome.job_failure.has_value());
  EXPECT_EQ(trace.outcome.job_failure->cause.find("worker1 dies"), 0u)
      << trace.outcome.job_failure->cause;
  EXPECT_NEAR(trace.outcome.job_failure->time_s, 0.4, 0.1);
  EXPECT_GE(trace.outcome.job_failure->detected_s, trace.outcome.job_failure->time_s);
  for (const std::string client : {"worker0", "worker2"}) {
    EXPECT_GT(count(trace, EventKind::kStep, client), 0) << client;
    EXPECT_LT(count(trace, EventKind::kStep, client), plan.steps) << client;
  }
}

// Horovod Elastic: the survivors' steps in progress fail with the death; after the rendezvous
// rank 0's task sends its last commit and every survivor trains on from it, averaging over two
// ranks from then on, to the last step.
TEST(AllReduceReal, AnElasticJobGoesOnWithTheSurvivors) {
  const double death_s = 0.4, rendezvous_s = 0.3;
  const core::Plan plan = timed_allreduce_plan(
      3, 150, {{"algorithm", "ring"}, {"elastic", true}, {"rendezvous", "0.3 s"}},
      {{{"kind", "role"}, {"role", "worker1"}, {"at", "0.4 s"}}});
  const RealRun run = run_real(plan);
  EXPECT_FALSE(run.trace.outcome.job_failure.has_value());
  EXPECT_LT(count(run.trace, EventKind::kStep, "worker1"), plan.steps);
  // Rank 0 trains its step in progress again: every step once. The other survivor goes to rank
  // 0's step (a step again, or one fewer).
  EXPECT_EQ(count(run.trace, EventKind::kStep, "worker0"), plan.steps);
  EXPECT_NEAR(double(count(run.trace, EventKind::kStep, "worker2")), double(plan.steps), 1.0);
  // No step waits through the rendezvous (one may end just after the death, before the survivors
  // see it: its collectives were done); the first that starts after it does so once the
  // rendezvous is over, at the same step on both survivors, the one rank 0 was in.
  std::vector<int64_t> first_after;
  for (const std::string client : {"worker0", "worker2"}) {
    int64_t first = -1, last = -1;
    for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kStep, client)) {
      EXPECT_FALSE(e->start_s < death_s && e->end_s > death_s + rendezvous_s / 3)
          << client << "'s step " << e->step << " waited through the rendezvous";
      if (e->start_s > death_s && first < 0) {
        first = e->step;
        EXPECT_GE(e->start_s, death_s + rendezvous_s - 0.01) << client;
      }
      last = std::max(last, e->step);
    }
    EXPECT_EQ(last, plan.steps - 1) << client;
    first_after.push_back(first);
  }
  EXPECT_GT(first_after[0], 0);
  EXPECT_EQ(first_after[0], first_after[1]);
  // The survivors' copies stay equal.
  ASSERT_EQ(run.final.shards.size(), 2u);
  const CheckpointShard& a = run.final.shards[0];
  const CheckpointShard& b = run.final.shards[1];
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t t = 0; t < a.tensors.size(); ++t) {
    ASSERT_EQ(a.tensors[t].values.size(), b.tensors[t].values.size());
    EXPECT_EQ(std::memcmp(a.tensors[t].values.data(), b.tensors[t].values.data(),
                          4 * a.tensors[t].values.size()),
              0)
        << "variable " << a.tensors[t].variable;
  }
}

// An elastic run's end: no failure, every survivor trained to its last step, and the survivors'
// final copies (final.rank<r>, the dead write none) hold bitwise the same values (variables and
// optimizer slots) and global_step == steps.
void expect_elastic_survivors_agree(const core::Plan& plan, const RealRun& run,
                                    const std::vector<std::string>& survivors) {
  ASSERT_FALSE(run.trace.outcome.job_failure.has_value()) << run.trace.outcome.job_failure->cause;
  for (const std::string& client : survivors) {
    int64_t last = -1;
    for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kStep, client)) {
      last = std::max(last, e->step);
    }
    EXPECT_EQ(last, plan.steps - 1) << client;
  }
  ASSERT_EQ(run.final.shards.size(), survivors.size());
  const CheckpointShard& a = run.final.shards[0];
  for (size_t r = 0; r < run.final.shards.size(); ++r) {
    const CheckpointShard& b = run.final.shards[r];
    EXPECT_EQ(b.global_step, plan.steps) << run.final.index.shards[r];
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (size_t t = 0; t < a.tensors.size(); ++t) {
      ASSERT_EQ(a.tensors[t].values.size(), b.tensors[t].values.size());
      EXPECT_EQ(std::memcmp(a.tensors[t].values.data(), b.tensors[t].values.data(),
                            4 * a.tensors[t].values.size()),
                0)
          << run.final.index.shards[r] << ", " << a.tensors[t].name;
    }
  }
}

nlohmann::json role_dies(const std::string& role, const std::string& at) {
  return {{"kind", "role"}, {"role", role}, {"at", at}};
}

// Found by a breaker: with no rendezvous time, rank 0's sync came while an apply of the failed
// step was still queued on a survivor's device (behind layer a's long backward), and it landed on
// the restored commit: every survivor ended with layer b a step's update off (equal copies, wrong
// values). Each restore now waits for its task's computes and applies under way. The survivors'
// values are the ring sums of three ranks up to the step the rollback went back to, of two from
// there.
TEST(AllReduceReal, AnElasticRollbackIsNotUndoneByTheFailedStepsQueuedApply) {
  const double death_s = 0.5;
  nlohmann::json doc = scenario(3, {{"steps", 30},
                                    {"allreduce",
                                     {{"algorithm", "ring"},
                                      {"fusion_threshold", "0 B"},
                                      {"elastic", true},
                                      {"rendezvous", "0 s"}}}});
  doc["model"] = {{"layers",
                   {{{"name", "a"},
                     {"params", 1000},
                     {"forward_flops_per_sample", "250 MFLOP"},
                     {"activation_bytes_per_sample", "1 kB"}},
                    {{"name", "b"},
                     {"params", 200000},
                     {"forward_flops_per_sample", "1 MFLOP"},
                     {"activation_bytes_per_sample", "1 kB"}}}}};
  doc["faults"] = nlohmann::json::array({role_dies("worker1", "0.5 s")});
  const core::Plan plan = allreduce_plan(doc);
  const RealRun run = run_real(plan);
  expect_elastic_survivors_agree(plan, run, {"worker0", "worker2"});
  // Rank 0's failed step has no step event: its first after the death is the commit's.
  int64_t from_step = -1;
  for (const core::TraceEvent* e : test::events_of(run.trace, EventKind::kStep, "worker0")) {
    if (e->start_s > death_s) {
      from_step = e->step;
      break;
    }
  }
  ASSERT_GE(from_step, 0);
  const std::vector<std::vector<float>> want =
      expected_variables_after_death(plan, from_step, {0, 2});
  for (size_t r = 0; r < run.final.shards.size(); ++r) {
    for (const CheckpointTensor& t : run.final.shards[r].tensors) {
      if (t.slot != 0 || t.variable <= 0) continue;
      const std::vector<float>& w = want[size_t(t.variable)];
      ASSERT_EQ(t.values.size(), w.size());
      size_t differ = 0;
      for (size_t i = 0; i < w.size(); ++i) differ += std::memcmp(&t.values[i], &w[i], 4) != 0;
      EXPECT_EQ(differ, 0u) << run.final.index.shards[r] << ", " << t.name << ", back to step "
                            << from_step;
    }
  }
}

// Rank 0's task runs the real run's control and the coordinator: an elastic plan whose fault
// kills it is refused before anything starts, naming the fault.
TEST(AllReduceReal, AnElasticPlanThatKillsRankZeroIsRefused) {
  const core::Plan plan = timed_allreduce_plan(
      3, 150, {{"algorithm", "ring"}, {"elastic", true}, {"rendezvous", "0.3 s"}},
      {{{"kind", "role"}, {"role", "worker0"}, {"at", "0.4 s"}}});
  try {
    check_faults(plan, "plan.json");
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("plan.json"), std::string::npos) << what;
    EXPECT_NE(what.find("/faults/0"), std::string::npos) << what;
    EXPECT_NE(what.find("kills rank 0 of an elastic all-reduce job"), std::string::npos) << what;
  }
  // Another rank's death is a real run's to play.
  const core::Plan other = timed_allreduce_plan(
      3, 150, {{"algorithm", "ring"}, {"elastic", true}, {"rendezvous", "0.3 s"}},
      {{{"kind", "role"}, {"role", "worker2"}, {"at", "0.4 s"}}});
  EXPECT_NO_THROW(check_faults(other, "plan.json"));
}

// A chunk frame's tensor field carries the chunk's ranks, channel and both steps, and refuses
// what does not fit rather than wrap.
TEST(AllReduceReal, AChunkTagCarriesItsStepsAndRefusesWhatDoesNotFit) {
  core::CollectiveChunk c;
  c.from = 65535;
  c.to = 1234;
  c.channel = 63;
  c.step = 8191;
  c.recv_step = 17;
  const core::CollectiveChunk back =
      detail::collective_chunk_of_tag(42, detail::collective_chunk_tag(c));
  EXPECT_EQ(back.id, 42);
  EXPECT_EQ(back.from, 65535);
  EXPECT_EQ(back.to, 1234);
  EXPECT_EQ(back.channel, 63);
  EXPECT_EQ(back.step, 8191);
  EXPECT_EQ(back.recv_step, 17);
  core::CollectiveChunk wide = c;
  wide.from = 65536;
  EXPECT_THROW(detail::collective_chunk_tag(wide), std::logic_error);
  wide = c;
  wide.channel = 64;
  EXPECT_THROW(detail::collective_chunk_tag(wide), std::logic_error);
  wide = c;
  wide.recv_step = 8192;
  EXPECT_THROW(detail::collective_chunk_tag(wide), std::logic_error);
}

}  // namespace
}  // namespace replisim::real
