// The all-reduce runtime (core/runtime/collectives.h) over a host of its own: an event queue whose
// transfers each take latency + bytes / bandwidth with nothing shared (what a ring's neighbour
// links give when nothing else crosses them), and values the host reduces as the programs say.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

#include "core/runtime/collectives.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

// `machines` machines of `gpus_per_machine` GPUs each, one rank per GPU, a one-layer model of
// `params` float parameters (one tensor to reduce).
Plan allreduce_plan(int machines, int gpus_per_machine, const std::string& algorithm,
                    double params = 1e6, const nlohmann::json& extra = {}) {
  std::vector<nlohmann::json> docs;
  nlohmann::json replicas = nlohmann::json::array();
  for (int m = 0; m < machines; ++m) {
    const std::string name = "m" + std::to_string(m);
    docs.push_back(test::machine(name, "100 GFLOPS",
                                 std::vector<std::string>(size_t(gpus_per_machine), "1 TFLOPS"),
                                 "10 Gbps"));
    for (int g = 0; g < gpus_per_machine; ++g)
      replicas.push_back(name + "/gpu" + std::to_string(g));
  }
  nlohmann::json allreduce = {{"algorithm", algorithm}, {"cycle_time", "0 s"}};
  if (extra.is_object()) allreduce.update(extra);
  const nlohmann::json doc = test::scenario_json(
      docs, test::one_layer_model(params, "1 MFLOP"),
      {{"replicas", replicas}, {"allreduce", allreduce}, {"steps", 3}, {"warmup_steps", 1}});
  return compile_plan(test::parse(doc), "allreduce", {});
}

// Runs one all-reduce of every rank's tensor 0 to the end; each rank's buffer starts at
// `values(rank, element)`.
class QueueHost : public CollectiveHost {
 public:
  QueueHost(double bandwidth_bytes_per_s, int64_t elements)
      : bandwidth_(bandwidth_bytes_per_s), elements_(elements) {}

  double now_s() const override { return now_; }
  void at(double at_s, std::function<void()> work) override {
    events_.push({at_s, seq_++, std::move(work)});
  }
  void send_chunk(const CollectiveResponse& r, const CollectiveChunk& chunk) override {
    ++transfers;
    // The values leave now (the sender's after its previous step).
    const CollectiveStep& s = step_of(chunk.from, chunk.channel, chunk.step);
    std::vector<double> data;
    const int chunks = collectives->program().chunks;
    for (int i = s.send_first; i < s.send_first + s.chunk_count; ++i) {
      const auto [first, end] = collective_chunk(elements_, chunks, i);
      for (int64_t e = first; e < end; ++e) data.push_back(buffers[size_t(chunk.from)][size_t(e)]);
    }
    in_flight_[{chunk.to, chunk.channel, chunk.recv_step}] = std::move(data);
    (void)r;
    at(now_ + chunk.bytes / bandwidth_, [this, chunk] {
      collectives->sent(chunk);
      collectives->arrived(chunk);
    });
  }
  void apply_chunk(const CollectiveResponse&, int rank, int channel, int step) override {
    const CollectiveStep& s = step_of(rank, channel, step);
    const std::vector<double>& data = in_flight_.at({rank, channel, step});
    size_t k = 0;
    const int chunks = collectives->program().chunks;
    for (int i = s.recv_first; i < s.recv_first + s.chunk_count; ++i) {
      const auto [first, end] = collective_chunk(elements_, chunks, i);
      for (int64_t e = first; e < end; ++e) {
        double& mine = buffers[size_t(rank)][size_t(e)];
        mine = s.reduce ? mine + data[k] : data[k];
        ++k;
      }
    }
  }
  void reduced(int rank, const CollectiveResponse&) override { done_s[rank] = now_; }

  void run() {
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.at_s;
      e.work();
    }
  }

  Collectives* collectives = nullptr;
  std::vector<std::vector<double>> buffers;
  std::map<int, double> done_s;
  int transfers = 0;

 private:
  const CollectiveStep& step_of(int rank, int channel, int step) const {
    return collectives->program().steps[size_t(rank)][size_t(channel)][size_t(step)];
  }
  struct Event {
    double at_s;
    int64_t seq;
    std::function<void()> work;
    bool operator<(const Event& o) const {
      return std::tie(at_s, seq) > std::tie(o.at_s, o.seq);  // earliest first
    }
  };
  double now_ = 0;
  int64_t seq_ = 0;
  double bandwidth_;
  int64_t elements_;
  std::priority_queue<Event> events_;
  std::map<std::tuple<int, int, int>, std::vector<double>> in_flight_;
};

struct Outcome {
  std::vector<std::vector<double>> buffers;
  double start_s = 0;
  double end_s = 0;
  int transfers = 0;
};

// Every rank submits its one tensor at t = 0; returns the buffers and when the last rank is done.
Outcome reduce_once(const Plan& plan, double bandwidth, int64_t elements,
                    const std::function<double(int, int64_t)>& value) {
  QueueHost host(bandwidth, elements);
  const int ranks = int(plan.collective.ranks.size());
  std::vector<int> all(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[size_t(r)] = r;
  Collectives collectives(plan, host, nullptr, all, true);
  host.collectives = &collectives;
  host.buffers.assign(size_t(ranks), std::vector<double>(size_t(elements)));
  for (int r = 0; r < ranks; ++r) {
    for (int64_t e = 0; e < elements; ++e) host.buffers[size_t(r)][size_t(e)] = value(r, e);
  }
  for (int r = 0; r < ranks; ++r) {
    const int c = collectives.client_of_rank(r);
    const std::vector<Op>& ops = plan.clients[size_t(c)].ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kind == OpKind::kAllReduce) collectives.ready(c, int(k), 0);
    }
  }
  host.run();
  Outcome out;
  out.buffers = host.buffers;
  out.start_s = collectives.negotiation_s();
  for (const auto& [rank, t] : host.done_s) out.end_s = std::max(out.end_s, t);
  out.transfers = host.transfers;
  EXPECT_EQ(int(host.done_s.size()), ranks);
  return out;
}

TEST(CollectivePrograms, RingSendsEachChunkTwiceAroundTheRing) {
  for (int n : {2, 3, 5, 8}) {
    const CollectiveProgram p = ring_program(n);
    EXPECT_EQ(p.chunks, n);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(p.steps[size_t(r)][0].size(), size_t(2 * (n - 1))) << n;
      for (const CollectiveStep& s : p.steps[size_t(r)][0]) {
        EXPECT_EQ(s.send_to, (r + 1) % n);
        EXPECT_EQ(s.recv_from, (r + n - 1) % n);
      }
    }
  }
  EXPECT_TRUE(ring_program(1).steps[0][0].empty());
}

TEST(CollectivePrograms, ChunksCoverTheBufferOnce) {
  int64_t covered = 0;
  for (int i = 0; i < 7; ++i) {
    const auto [first, end] = collective_chunk(100, 7, i);
    EXPECT_EQ(first, covered);
    covered = end;
  }
  EXPECT_EQ(covered, 100);
}

TEST(CollectivePrograms, HierarchicalRefusesMachinesOfUnequalRanks) {
  EXPECT_THROW(hierarchical_program({0, 0, 1}), InputError);
}

// Every rank ends with the same values, each the sum of every rank's: bitwise, with values whose
// sum depends on the order, in the ring's order (chunk c accumulated from rank c onwards).
TEST(Collectives, EveryAlgorithmLeavesEveryRankTheSameSums) {
  struct Case {
    int machines, gpus;
    std::string algorithm;
  };
  for (const Case& k :
       {Case{2, 1, "ring"}, Case{5, 1, "ring"}, Case{3, 2, "ring"}, Case{4, 1, "tree"},
        Case{7, 1, "tree"}, Case{3, 2, "tree"}, Case{2, 2, "hierarchical"},
        Case{3, 4, "hierarchical"}, Case{1, 4, "hierarchical"}, Case{4, 1, "hierarchical"}}) {
    const Plan plan = allreduce_plan(k.machines, k.gpus, k.algorithm);
    const int n = k.machines * k.gpus;
    const int64_t elements = 61;
    auto value = [](int r, int64_t e) { return (r % 2 ? 1e16 : 1.0) * (1 + r) + 0.1 * double(e); };
    const Outcome out = reduce_once(plan, 1e9, elements, value);
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(out.buffers[size_t(r)], out.buffers[0]) << k.algorithm << " rank " << r;
    }
    for (int64_t e = 0; e < elements; ++e) {
      double exact = 0;
      for (int r = 0; r < n; ++r) exact += value(r, e);
      EXPECT_NEAR(out.buffers[0][size_t(e)], exact, std::abs(exact) * 1e-12) << k.algorithm;
    }
    if (k.algorithm == "ring") {
      const CollectiveProgram program = ring_program(n);
      for (int64_t e = 0; e < elements; ++e) {
        int c = 0;
        while (collective_chunk(elements, program.chunks, c).second <= e) ++c;
        double sum = value(c, e);
        for (int j = 1; j < n; ++j) sum = sum + value((c + j) % n, e);
        EXPECT_EQ(out.buffers[0][size_t(e)], sum) << "element " << e;
      }
    }
  }
}

// Uncontended, a ring takes 2(N - 1) steps of alpha + S / (N B) after its launch: the closed
// form of nccl-tests' PERFORMANCE.md (bus bandwidth = algorithm bandwidth x 2(N - 1) / N).
TEST(Collectives, RingMatchesItsClosedForm) {
  const double bandwidth = 1.25e9;  // 10 Gbit/s
  for (int n : {2, 3, 4, 8, 16, 33, 64}) {
    const Plan plan = allreduce_plan(n, 1, "ring", 25e6);
    double s = 0;
    for (const Op& op : plan.clients[0].ops) s += op.kind == OpKind::kAllReduce ? op.bytes : 0.0;
    const double alpha = plan.collective.step_latency_s;
    const double expected =
        plan.collective.launch_s + 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * s / bandwidth;
    const Outcome out = reduce_once(plan, bandwidth, 1, [](int, int64_t) { return 1.0; });
    EXPECT_NEAR(out.end_s - out.start_s, expected, expected * 0.01) << n;
    EXPECT_EQ(out.transfers, 2 * n * (n - 1));
  }
}

// Hierarchical over M machines of L ranks: 2(L - 1) steps of S / L inside the machines and
// 2(M - 1) steps of S / (L M) across them (one ring per local rank, here each with a link of
// its own).
TEST(Collectives, HierarchicalMatchesItsTwoLevelForm) {
  const double bandwidth = 1e9;
  for (auto [m, l] : {std::pair{2, 2}, std::pair{4, 2}, std::pair{3, 4}}) {
    const Plan plan = allreduce_plan(m, l, "hierarchical", 8e6);
    double s = 0;
    for (const Op& op : plan.clients[0].ops) s += op.kind == OpKind::kAllReduce ? op.bytes : 0.0;
    const CollectiveSpec& cs = plan.collective;
    const double expected = cs.launch_s +
                            2.0 * (l - 1) * (cs.local_step_latency_s + s / l / bandwidth) +
                            2.0 * (m - 1) * (cs.step_latency_s + s / (l * m) / bandwidth);
    const Outcome out = reduce_once(plan, bandwidth, 1, [](int, int64_t) { return 1.0; });
    EXPECT_NEAR(out.end_s - out.start_s, expected, expected * 0.01) << m << "x" << l;
  }
}

TEST(Collectives, FusionPacksReadyTensorsUpToTheThreshold) {
  // Three layers of 4 MB of gradients each, a 10 MB buffer: two collectives (8 MB, then 4 MB).
  std::vector<nlohmann::json> docs = {test::machine("a", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"),
                                      test::machine("b", "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps")};
  nlohmann::json model = {{"layers", nlohmann::json::array()}, {"input_bytes_per_sample", "1 kB"}};
  for (int i = 0; i < 3; ++i) {
    model["layers"].push_back({{"name", "l" + std::to_string(i)},
                               {"params", 1e6},
                               {"forward_flops_per_sample", "1 MFLOP"},
                               {"activation_bytes_per_sample", "1 kB"}});
  }
  const nlohmann::json doc =
      test::scenario_json(docs, model,
                          {{"replicas", {"a/gpu0", "b/gpu0"}},
                           {"allreduce", {{"fusion_threshold", "10 MB"}, {"cycle_time", "5 ms"}}}});
  const Plan plan = compile_plan(test::parse(doc), "allreduce", {});
  EXPECT_EQ(plan.collective.fusion_threshold_bytes, 10e6);
  EXPECT_EQ(plan.collective.cycle_time_s, 5e-3);
  QueueHost host(1e9, 1);
  Collectives collectives(plan, host, nullptr, {0, 1}, true);
  host.collectives = &collectives;
  host.buffers.assign(2, std::vector<double>(1, 1.0));
  for (int r = 0; r < 2; ++r) {
    const std::vector<Op>& ops = plan.clients[size_t(collectives.client_of_rank(r))].ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kind == OpKind::kAllReduce)
        collectives.ready(collectives.client_of_rank(r), int(k), 0);
    }
  }
  host.run();
  EXPECT_EQ(collectives.formed(), 2);
}

}  // namespace
}  // namespace replisim::core
