// All-reduce in the simulator (sim/sim_collectives.h): the ring against its closed form on an
// ideal network and under LV08's factors, the fast ring against chunk-by-chunk transfers, a
// straggler pacing every rank, and deaths (the job fails; elastic goes on with N - 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/metrics/metrics.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using core::EventKind;

// `machines` machines with one GPU each (`nic` each, the first `slow_nic` when given), a
// one-layer model of `params` parameters and negligible compute, one all-reduce per step.
nlohmann::json ring_doc(int machines, double params, const std::string& network_model,
                        const nlohmann::json& allreduce = nlohmann::json::object(),
                        const std::string& slow_nic = "", int gpus = 1) {
  std::vector<nlohmann::json> docs;
  nlohmann::json replicas = nlohmann::json::array();
  for (int m = 0; m < machines; ++m) {
    const std::string name = "m" + std::to_string(m);
    docs.push_back(test::machine(name, "1 TFLOPS",
                                 std::vector<std::string>(size_t(gpus), "100 TFLOPS"),
                                 m == 0 && !slow_nic.empty() ? slow_nic : "10 Gbps", "20 us"));
    for (int g = 0; g < gpus; ++g) replicas.push_back(name + "/gpu" + std::to_string(g));
  }
  nlohmann::json a = {{"cycle_time", "0 s"}};
  if (allreduce.is_object()) a.update(allreduce);
  return test::scenario_json(docs, test::one_layer_model(params, "1 MFLOP"),
                             {{"replicas", replicas},
                              {"allreduce", a},
                              {"costs", "none"},
                              {"jitter", 0},
                              {"steps", 6},
                              {"warmup_steps", 1}},
                             network_model, "1 TBps");
}

// Per collective, the shortest NCCL_ALLREDUCE span over the ranks: the last rank to begin it
// waits for nobody, so its span is the ring's own time.
std::map<int64_t, double> ring_times(const core::Trace& trace) {
  std::map<int64_t, double> out;
  for (const core::TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kCollective || trace.str(e.label) != "NCCL_ALLREDUCE") continue;
    auto [it, added] = out.emplace(e.message_id, e.end_s - e.start_s);
    if (!added) it->second = std::min(it->second, e.end_s - e.start_s);
  }
  return out;
}

double median_ring_time(const core::Trace& trace) {
  std::vector<double> t;
  for (const auto& [id, s] : ring_times(trace)) t.push_back(s);
  EXPECT_FALSE(t.empty());
  if (t.empty()) return 0;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double tensor_bytes(const core::Plan& plan) {
  double s = 0;
  for (const core::Op& op : plan.clients[0].ops)
    s += op.kind == core::OpKind::kAllReduce ? op.bytes : 0;
  return s;
}

const nlohmann::json kChunkByChunk = {{"collective_fast_path", false}};

// 2(N - 1) steps of alpha + L + S / (N B): the closed form (nccl-tests' PERFORMANCE.md: bus
// bandwidth = algorithm bandwidth x 2(N - 1) / N), the route's latency L per step, NCCL's base
// latency once. Both ways of carrying the ring.
TEST(AllReduceRing, MatchesItsClosedFormOnAnIdealNetwork) {
  for (int n : {2, 3, 4, 8, 16, 32, 64}) {
    const core::Plan plan =
        core::compile_plan(test::parse(ring_doc(n, 2e6, "ideal")), "allreduce", {});
    const core::Platform& p = plan.platform;
    const int a = p.find_device("m0/gpu0"), b = p.find_device("m1/gpu0");
    const double bandwidth = p.route_bandwidth_bytes_per_s(a, b);
    const double latency = p.route_latency_s(a, b);
    const double s = tensor_bytes(plan);
    const core::CollectiveSpec& cs = plan.collective;
    const double expected = cs.launch_s + 2.0 * (n - 1) * (cs.step_latency_s + latency) +
                            2.0 * (n - 1) / n * s / bandwidth;
    const double whole = median_ring_time(test::run_plan(plan));
    EXPECT_NEAR(whole, expected, 0.01 * expected) << n << " ranks, ring carried whole";
    if (n <= 16) {
      const double chunks = median_ring_time(test::run_plan(plan, kChunkByChunk));
      EXPECT_NEAR(chunks, expected, 0.01 * expected) << n << " ranks, chunk by chunk";
    }
  }
}

// LV08 (SimGrid's TCP model): each route's latency x 13.01, bandwidth x 0.97, and 5% of every
// flow on its reverse route (network/crosstraffic), which a ring's flows meet on every NIC: each
// NIC direction carries one ring flow and 5% of its neighbour's.
TEST(AllReduceRing, MatchesItsClosedFormUnderLv08) {
  for (int n : {2, 4, 8, 16, 32, 64}) {
    const core::Plan plan =
        core::compile_plan(test::parse(ring_doc(n, 2e6, "lv08")), "allreduce", {});
    const core::Platform& p = plan.platform;
    const int a = p.find_device("m0/gpu0"), b = p.find_device("m1/gpu0");
    const double bandwidth = p.route_bandwidth_bytes_per_s(a, b) * 0.97 / 1.05;
    const double latency = p.route_latency_s(a, b) * 13.01;
    const double s = tensor_bytes(plan);
    const core::CollectiveSpec& cs = plan.collective;
    const double expected = cs.launch_s + 2.0 * (n - 1) * (cs.step_latency_s + latency) +
                            2.0 * (n - 1) / n * s / bandwidth;
    EXPECT_NEAR(median_ring_time(test::run_plan(plan)), expected, 0.02 * expected) << n;
  }
}

// The fast ring (neighbour flows of 2(N - 1)/N S) against chunk by chunk, where both apply:
// homogeneous, one slow NIC (the ring's pace), two streams per peer, two GPUs per machine (PCIe
// and NIC hops in one ring), several fused buffers per step. The last has traffic of the ring's
// own on its links when a buffer starts (a rank begins the next while its neighbour still
// receives the last chunk of the previous): the fast ring waits for the links to be free.
TEST(AllReduceRing, FastRingMatchesChunkByChunk) {
  struct Case {
    std::string name;
    nlohmann::json doc;
  };
  nlohmann::json layered = ring_doc(6, 1e6, "lv08", {{"fusion_threshold", "3 MB"}});
  layered["model"] = {{"preset", "resnet50"}};
  layered["training"]["granularity"] = 8;
  nlohmann::json streams = ring_doc(6, 4e6, "lv08");
  streams["cluster"]["transport"] = {{"preset", "tcp"}, {"connections_per_peer", 2}};
  for (const Case& c :
       {Case{"homogeneous", ring_doc(8, 4e6, "lv08")},
        Case{"one slow NIC", ring_doc(8, 4e6, "lv08", {}, "1 Gbps")}, Case{"two streams", streams},
        Case{"two GPUs per machine", ring_doc(4, 4e6, "lv08", {}, "", 2)},
        Case{"several buffers per step", layered}}) {
    const core::Plan plan = core::compile_plan(test::parse(c.doc), "allreduce", {});
    const core::Trace fast_trace = test::run_plan(plan);
    const core::Trace chunks_trace = test::run_plan(plan, kChunkByChunk);
    const core::RunMetrics fast = core::compute_metrics(fast_trace);
    const core::RunMetrics chunks = core::compute_metrics(chunks_trace);
    const size_t fast_transfers = test::events_of(fast_trace, EventKind::kTransfer).size();
    const size_t chunk_transfers = test::events_of(chunks_trace, EventKind::kTransfer).size();
    std::printf("%-26s fast %.6f s (%zu transfers), chunk by chunk %.6f s (%zu) per step\n",
                c.name.c_str(), fast.step_time_s.mean, fast_transfers, chunks.step_time_s.mean,
                chunk_transfers);
    EXPECT_LT(fast_transfers, chunk_transfers) << c.name;
    for (const std::string& note : fast_trace.outcome.notes) {
      if (note.rfind("all-reduce:", 0) == 0) std::printf("  %s\n", note.c_str());
    }
    EXPECT_NEAR(fast.step_time_s.mean, chunks.step_time_s.mean, 0.01 * chunks.step_time_s.mean)
        << c.name;
    // The runs' ends, not their throughputs: a short run's measurement window ends with the first
    // client's last step, and chunk by chunk the ranks end a ring up to one step apart (the
    // fast ring ends every rank together), which moves a 6-step window's edge by a tenth.
    EXPECT_NEAR(fast_trace.outcome.end_s, chunks_trace.outcome.end_s,
                0.01 * chunks_trace.outcome.end_s)
        << c.name;
  }
}

// Other traffic on the ring's links: rank 0's step also sends 400 MB from its GPU to m1's GPU
// once its first gradient is out (a plan edited so), over m0's NIC and m1's, which the ring
// m0 -> m1 crosses, while the step's buffers are reduced. The fast ring then finds its links busy
// and goes chunk by chunk: the two runs agree, and some collectives were not carried whole.
TEST(AllReduceRing, OtherTrafficOnTheRingsLinksGoesChunkByChunk) {
  nlohmann::json doc = ring_doc(4, 1e6, "lv08", {{"fusion_threshold", "2 MB"}});
  doc["model"] = {{"preset", "resnet50"}};
  doc["training"]["granularity"] = 8;
  core::Plan plan = core::compile_plan(test::parse(doc), "allreduce", {});
  core::ClientGraph& rank0 = plan.clients[0];
  int first_gradient = -1;
  for (size_t k = 0; k < rank0.ops.size() && first_gradient < 0; ++k) {
    if (rank0.ops[k].kind == core::OpKind::kBackward) first_gradient = int(k);
  }
  ASSERT_GE(first_gradient, 0);
  const int send = int(rank0.ops.size()), recv = send + 1;
  core::Op out;
  out.name = "send/extra";
  out.kind = core::OpKind::kSend;
  out.device = plan.platform.find_device("m0/gpu0");
  out.role = rank0.role;
  out.bytes = 400e6;  // 0.33 s at 10 Gbit/s
  out.peer = recv;
  out.inputs = {first_gradient};
  core::Op in = out;
  in.name = "recv/extra";
  in.kind = core::OpKind::kRecv;
  in.device = plan.platform.find_device("m1/gpu0");
  in.peer = send;
  in.inputs = {send};
  rank0.ops.push_back(out);
  rank0.ops.push_back(in);
  core::validate_plan(plan, "edited plan");
  const core::Trace fast = test::run_plan(plan);
  const core::Trace chunks = test::run_plan(plan, kChunkByChunk);
  std::string note;
  for (const std::string& n : fast.outcome.notes) {
    if (n.rfind("all-reduce:", 0) == 0) note = n;
  }
  std::printf("%s\n", note.c_str());
  const core::RunMetrics a = core::compute_metrics(fast), b = core::compute_metrics(chunks);
  std::printf("step %.6f s fast, %.6f s chunk by chunk\n", a.step_time_s.mean, b.step_time_s.mean);
  EXPECT_NEAR(a.step_time_s.mean, b.step_time_s.mean, 0.01 * b.step_time_s.mean);
  EXPECT_NEAR(fast.outcome.end_s, chunks.outcome.end_s, 0.01 * chunks.outcome.end_s);
  // Fewer carried whole than formed: the note reads "F collective(s), W of them ...".
  ASSERT_FALSE(note.empty());
  const int64_t formed = std::stoll(note.substr(note.find(':') + 2));
  const int64_t whole = std::stoll(note.substr(note.find(", ") + 2));
  EXPECT_GT(formed, whole);
  EXPECT_GT(whole, 0);
}

// Synchronous by nature: one slow GPU paces every rank's steps.
TEST(AllReduce, AStragglerPacesEveryRank) {
  auto doc = [](bool slow) {
    std::vector<nlohmann::json> docs;
    for (int m = 0; m < 4; ++m) {
      docs.push_back(test::machine("m" + std::to_string(m), "1 TFLOPS",
                                   {slow && m == 2 ? "2 TFLOPS" : "8 TFLOPS"}, "10 Gbps"));
    }
    return test::scenario_json(
        docs, test::one_layer_model(1e6, "20 GFLOP"),
        {{"replicas", {"m0/gpu0", "m1/gpu0", "m2/gpu0", "m3/gpu0"}}, {"jitter", 0}, {"steps", 8}});
  };
  const core::RunMetrics even = test::simulate(doc(false), "allreduce");
  const core::RunMetrics slow = test::simulate(doc(true), "allreduce");
  const double paced = test::client_step_time(slow, "worker2");
  EXPECT_GT(paced, 2.5 * test::client_step_time(even, "worker2"));
  for (const char* w : {"worker0", "worker1", "worker3"}) {
    EXPECT_NEAR(test::client_step_time(slow, w), paced, 0.02 * paced) << w;
  }
}

nlohmann::json four_ranks(const nlohmann::json& allreduce, const nlohmann::json& extra = {}) {
  nlohmann::json doc = ring_doc(4, 1e6, "ideal", allreduce);
  doc["model"] = test::one_layer_model(1e6, "2 GFLOP");
  doc["training"]["steps"] = 40;
  doc["faults"] = {{{"kind", "role"}, {"role", "worker3"}, {"at", "30 ms"}}};
  if (extra.is_object()) doc["training"].update(extra);
  return doc;
}

int64_t last_update_step(const core::Trace& trace) {
  int64_t last = 0;
  for (const core::TraceEvent* e : test::events_of(trace, EventKind::kUpdate)) {
    last = std::max(last, e->global_step_after);
  }
  return last;
}

// Before Horovod Elastic: a dead rank stalls the ring and the job fails.
TEST(AllReduce, ADeadRankFailsTheJob) {
  const core::Trace trace = test::simulate_trace(four_ranks({}), "allreduce");
  ASSERT_TRUE(trace.outcome.job_failure.has_value());
  EXPECT_LT(last_update_step(trace), 40);
}

// Horovod Elastic: the others wait out the rendezvous, then go on with N - 1 and finish.
TEST(AllReduce, ElasticGoesOnWithTheOthersAfterTheRendezvous) {
  const core::Trace trace =
      test::simulate_trace(four_ranks({{"elastic", true}, {"rendezvous", "2 s"}}), "allreduce");
  EXPECT_FALSE(trace.outcome.job_failure.has_value());
  EXPECT_EQ(last_update_step(trace), 40);
  // Nothing updated during the rendezvous; collectives after it among three ranks.
  double gap = 0, previous = 0;
  for (const core::TraceEvent* e : test::events_of(trace, EventKind::kUpdate)) {
    gap = std::max(gap, e->end_s - previous);
    previous = e->end_s;
  }
  EXPECT_GE(gap, 2.0);
  std::map<int64_t, std::set<uint32_t>> ranks_of;
  for (const core::TraceEvent* e : test::events_of(trace, EventKind::kCollective)) {
    ranks_of[e->message_id].insert(e->actor);
  }
  ASSERT_FALSE(ranks_of.empty());
  EXPECT_EQ(ranks_of.begin()->second.size(), 4u);
  EXPECT_EQ(ranks_of.rbegin()->second.size(), 3u);
}

// Horovod Elastic's rollback: every survivor's step in progress at the death fails (no step
// event spans the death), and at the rendezvous's end every survivor trains again from the same
// step, the root's (worker0's) steps done: its last commit, which state.sync() gives them all.
TEST(AllReduce, ElasticSurvivorsGoBackToTheRootsLastCommit) {
  const double death_s = 0.03, rendezvous_s = 2;
  const core::Trace trace =
      test::simulate_trace(four_ranks({{"elastic", true}, {"rendezvous", "2 s"}}), "allreduce");
  int64_t root_steps = 0;
  for (const core::TraceEvent* e : test::events_of(trace, EventKind::kStep, "worker0")) {
    if (e->end_s <= death_s) ++root_steps;
  }
  ASSERT_GT(root_steps, 0);
  for (const std::string client : {"worker0", "worker1", "worker2"}) {
    int64_t first_after = -1;
    for (const core::TraceEvent* e : test::events_of(trace, EventKind::kStep, client)) {
      EXPECT_FALSE(e->start_s < death_s && e->end_s > death_s)
          << client << "'s step " << e->step << " spans the death";
      if (e->start_s > death_s && first_after < 0) {
        first_after = e->step;
        EXPECT_GE(e->start_s, death_s + rendezvous_s - 1e-9) << client;
      }
    }
    EXPECT_EQ(first_after, root_steps) << client;
  }
}

// Found by a breaker: the cases below stalled or miscounted before.
TEST(AllReduce, ARestartFromACheckpointTrainsOnToTheEnd) {
  nlohmann::json doc = four_ranks({});
  doc["training"]["recovery"] = {
      {"detect_timeout", "10 ms"}, {"restart_delay", "20 ms"}, {"recovery_wait", "10 ms"}};
  doc["training"]["checkpoint"] = {{"every", "10 ms"}, {"disk_bandwidth", "10 GBps"}};
  const core::Trace trace = test::simulate_trace(doc, "allreduce");
  ASSERT_FALSE(trace.outcome.restarts.empty());
  EXPECT_GT(trace.outcome.restarts.front().checkpoint_global_step, 0);
  EXPECT_FALSE(trace.outcome.stall.has_value());
  EXPECT_EQ(last_update_step(trace), 40);
}

TEST(AllReduce, ElasticSurvivesTwoDeathsAtOnceAndCountsTheSurvivorsBatches) {
  nlohmann::json doc = four_ranks({{"elastic", true}, {"rendezvous", "50 ms"}});
  doc["faults"] = {{{"kind", "role"}, {"role", "worker1"}, {"at", "30 ms"}},
                   {{"kind", "role"}, {"role", "worker2"}, {"at", "30 ms"}},
                   {{"kind", "role"}, {"role", "worker0"}, {"at", "60 ms"}}};
  const core::Trace trace = test::simulate_trace(doc, "allreduce");
  EXPECT_FALSE(trace.outcome.stall.has_value());
  EXPECT_EQ(last_update_step(trace), 40);
  // After the last death worker3 alone trains, its own batch per update; before, all four's.
  const std::vector<const core::TraceEvent*> updates = test::events_of(trace, EventKind::kUpdate);
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates.front()->samples, 4 * 32);
  EXPECT_EQ(updates.back()->samples, 32);
  EXPECT_EQ(trace.str(updates.back()->actor), "worker3");
}

// Hierarchical ranks end a ring a chunk apart: the window still holds every update.
TEST(AllReduce, HierarchicalThroughputIsTheRanksBatchesPerStep) {
  const core::RunMetrics m = test::simulate(
      ring_doc(4, 2e6, "ideal", {{"algorithm", "hierarchical"}}, "", 2), "allreduce");
  EXPECT_NEAR(m.throughput_samples_per_s, 8 * 32 / m.step_time_s.mean,
              0.005 * 8 * 32 / m.step_time_s.mean);
}

TEST(AllReduce, ElasticNeedsARendezvousTime) {
  EXPECT_THROW(test::parse(four_ranks({{"elastic", true}})), core::InputError);
}

}  // namespace
}  // namespace replisim
