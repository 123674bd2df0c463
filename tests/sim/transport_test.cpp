// cluster.transport: each knob checked against the closed form of one worker and one PS on
// separate machines (network "ideal", costs "none", jitter 0), one layer of P parameters:
//   step time = 2 (wire(4P) / rate + L + overhead(4P)) + 3 F b / speed
// where rate = min(route bandwidth, flow_rate_limit), wire(x) = x (1 + header_overhead) and
// overhead(x) = per_message_overhead x chunks + 2 x / copy_bandwidth.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

constexpr double kParams = 1e6;                    // 4 MB of fp32
constexpr double kBandwidth = 1.25e9;              // 10 Gbps NICs
constexpr double kComputeS = 3 * 1e9 * 32 / 8e12;  // 1 GFLOP per sample, batch 32, 8 TFLOPS

nlohmann::json doc_with(const nlohmann::json& transport, int layers = 1) {
  nlohmann::json model = {{"layers", nlohmann::json::array()}};
  for (int l = 0; l < layers; ++l) {
    model["layers"].push_back({{"name", "l" + std::to_string(l)},
                               {"params", kParams},
                               {"forward_flops_per_sample", l == 0 ? "1 GFLOP" : "0 FLOP"},
                               {"activation_bytes_per_sample", "0 B"}});
  }
  nlohmann::json doc = test::scenario_json(
      {test::machine("w", "2 TFLOPS", {"8 TFLOPS"}, "10 Gbps", "0 us"),
       test::machine("p", "500 GFLOPS", {}, "10 Gbps", "0 us")},
      model, {{"replicas", {"w/gpu0"}}, {"ps", {"p/cpu"}}, {"costs", "none"}, {"jitter", 0}},
      "ideal", "100 Gbps");
  doc["cluster"]["switch"]["latency"] = "0 us";
  if (!transport.is_null()) doc["cluster"]["transport"] = transport;
  return doc;
}

double step_s(const nlohmann::json& doc) {
  return test::simulate(doc, "between_graph").step_time_s.mean;
}

TEST(Transport, IdealIsTheLinksAlone) {
  const double expected = 2 * 4 * kParams / kBandwidth + kComputeS;
  EXPECT_NEAR(step_s(doc_with(nullptr)), expected, 0.01 * expected);
  EXPECT_NEAR(step_s(doc_with({{"preset", "ideal"}})), expected, 0.01 * expected);
}

TEST(Transport, EachKnobFollowsTheClosedForm) {
  struct Case {
    nlohmann::json transport;
    double transfer_s;  // one tensor of 4P bytes
  };
  const double bytes = 4 * kParams;
  const std::vector<Case> cases = {
      {{{"flow_rate_limit", "100 MBps"}}, bytes / 1e8},
      {{{"header_overhead", 0.5}}, 1.5 * bytes / kBandwidth},
      {{{"copy_bandwidth", "1 GBps"}}, bytes / kBandwidth + 2 * bytes / 1e9},
      {{{"per_message_overhead", "1 ms"}, {"chunk_size", "1 MB"}}, bytes / kBandwidth + 4e-3},
      {{{"per_message_overhead", "1 ms"}}, bytes / kBandwidth + 1e-3},
  };
  for (const Case& c : cases) {
    const double expected = 2 * c.transfer_s + kComputeS;
    EXPECT_NEAR(step_s(doc_with(c.transport)), expected, 0.01 * expected) << c.transport.dump();
  }
}

TEST(Transport, MoreConnectionsPerPeerLiftTheStreamCeiling) {
  // Four layers of 4 MB, streams capped at 100 MB/s: with one connection the four tensors each
  // way go one after the other; with four they go side by side (the 10 Gbps link is no limit).
  const double one = step_s(doc_with({{"flow_rate_limit", "100 MBps"}}, 4));
  const double four =
      step_s(doc_with({{"flow_rate_limit", "100 MBps"}, {"connections_per_peer", 4}}, 4));
  // Serial transfers; the compute of the first layers overlaps the later pulls and pushes.
  const double serial = 2 * 4 * (4 * kParams / 1e8);
  EXPECT_GE(one, serial * (1 - 1e-6));
  EXPECT_LE(one, serial + kComputeS);
  EXPECT_LT(four, 0.4 * one);
}

TEST(Transport, PresetsAndErrors) {
  const core::Scenario tcp = test::parse(doc_with({{"preset", "tcp"}}));
  EXPECT_EQ(tcp.cluster.transport.preset, "tcp");
  EXPECT_NEAR(tcp.cluster.transport.header_overhead_fraction, 90.0 / 1448, 1e-12);
  EXPECT_EQ(tcp.cluster.transport.flow_rate_limit_bytes_per_s, 0);
  const core::Scenario grpc =
      test::parse(doc_with({{"preset", "tf1_grpc"}, {"connections_per_peer", 2}}));
  EXPECT_EQ(grpc.cluster.transport.flow_rate_limit_bytes_per_s, 800e6);
  EXPECT_EQ(grpc.cluster.transport.connections_per_peer, 2);  // an override over the preset
  // The grpc preset is slower than tcp, which is slower than ideal, on the same cluster.
  const double ideal = step_s(doc_with({{"preset", "ideal"}}));
  const double slower = step_s(doc_with({{"preset", "tcp"}}));
  const double slowest = step_s(doc_with({{"preset", "tf1_grpc"}}));
  EXPECT_LT(ideal, slower);
  EXPECT_LT(slower, slowest);
  // The plan carries the transport, and round-trips it.
  const core::Plan plan = core::compile_plan(grpc, "between_graph", {});
  EXPECT_EQ(core::plan_to_json(core::plan_from_json(core::plan_to_json(plan), "p.json")),
            core::plan_to_json(plan));
  for (const auto& [transport, path] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"preset", "rdma"}}, "/cluster/transport/preset"},
           {{{"flow_rate_limit", 100}}, "/cluster/transport/flow_rate_limit"},
           {{{"connections_per_peer", 0}}, "/cluster/transport/connections_per_peer"},
           {{{"connection", 2}}, "/cluster/transport/connection"}}) {
    try {
      test::parse(doc_with(transport));
      ADD_FAILURE() << transport.dump();
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.json_path(), path) << e.what();
    }
  }
}

}  // namespace
}  // namespace replisim
