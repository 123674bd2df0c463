// Sweeps: values and ranges, the knobs (each writes its fields and nothing else), points and
// shards, rows, scaling efficiency, CSV and JSON, and merging shards.
#include <functional>

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/sweep/sweep_knobs.h"
#include "core/sweep/sweep_points.h"
#include "core/sweep/sweep_results.h"
#include "core/sweep/sweep_values.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

using nlohmann::json;

// Workers from a template (w0..w3, one GPU each), PS from a template on dedicated machines.
json templated_scenario() {
  json worker = test::machine("w", "1 TFLOPS", {"10 TFLOPS"}, "10 Gbps");
  worker["count"] = 4;
  return test::scenario_json(
      {worker}, test::one_layer_model(1e6, "1 GFLOP"),
      {{"replicas", "w*/gpu*"}, {"ps", {{"count", 2}, {"on", "dedicated"}}}});
}

// The JSON Patch (RFC 6902) paths that turn `before` into `after`.
std::set<std::string> changed_paths(const json& before, const json& after) {
  std::set<std::string> paths;
  for (const json& op : json::diff(before, after)) paths.insert(op["path"].get<std::string>());
  return paths;
}

json point_document(const json& base,
                    const std::vector<std::pair<std::string, std::string>>& knobs) {
  return resolve_sweep_point(base, "s.json", SweepPoint{0, knobs}, "between_graph").document;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SweepValues, ListsRangesAndDoubling) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_sweep_values("--vary ps", "1,2,4"), (V{"1", "2", "4"}));
  EXPECT_EQ(expand_sweep_values("--vary ps", "1..4"), (V{"1", "2", "3", "4"}));
  EXPECT_EQ(expand_sweep_values("--vary replicas", "1..64x2"),
            (V{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(expand_sweep_values("--vary replicas", "1..10x3"), (V{"1", "3", "9"}));
  EXPECT_EQ(expand_sweep_values("--vary nic_bandwidth", "10 Gbps, 25 Gbps"),
            (V{"10 Gbps", "25 Gbps"}));
  EXPECT_EQ(expand_sweep_values("--vary replicas", "1,8..9"), (V{"1", "8", "9"}));
}

TEST(SweepValues, BadValuesNameTheFlag) {
  EXPECT_NE(error_of([] {
              expand_sweep_values("--vary ps", "8..1");
            }).find("--vary ps: the range \"8..1\" is empty"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_sweep_values("--vary ps", ""); }).find("no values"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_sweep_values("--vary ps", "1,,2"); }).find("an empty value"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_sweep_values("--vary ps", "1,1"); }).find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_sweep_values("--vary ps", "1..8x1"); }).find("at least 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_sweep_values("--vary ps", "1..100000"); }).find("more than"),
            std::string::npos);
}

TEST(SweepAxis, UnknownKeyListsTheValidOnes) {
  const std::string e = error_of([] { parse_sweep_axis("replica=1,2"); });
  EXPECT_NE(e.find("--vary: unknown key \"replica\"; did you mean replicas?"), std::string::npos)
      << e;
  for (const char* key :
       {"replicas", "ps", "nic_bandwidth", "nics_per_machine", "switch_bandwidth", "gpu_speed",
        "batch_per_replica", "strategy", "sync", "backups", "variable_placement", "transport"}) {
    EXPECT_NE(e.find(key), std::string::npos) << key;
  }
  EXPECT_NE(error_of([] { parse_sweep_axis("replicas"); }).find("expected KEY=VALUES"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_axis("strategy=both"); }).find("unknown strategy"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              check_sweep_axes({{"ps", {"1"}}, {"ps", {"2"}}});
            }).find("varied twice"),
            std::string::npos);
}

TEST(SweepPoints, CartesianProductFirstAxisOutermost) {
  const std::vector<SweepPoint> points =
      sweep_points({parse_sweep_axis("replicas=1..64x2"), parse_sweep_axis("ps=1,2,4,8")});
  ASSERT_EQ(points.size(), 28u);
  EXPECT_EQ(points[0].label(), "replicas=1 ps=1");
  EXPECT_EQ(points[1].label(), "replicas=1 ps=2");
  EXPECT_EQ(points[4].label(), "replicas=2 ps=1");
  EXPECT_EQ(points[27].label(), "replicas=64 ps=8");
  EXPECT_EQ(sweep_points({}).size(), 1u);
  EXPECT_EQ(sweep_points({}).front().label(), "base");
}

TEST(SweepPoints, ShardsPartitionThePoints) {
  const std::vector<SweepPoint> points = sweep_points({parse_sweep_axis("replicas=1..10")});
  std::multiset<size_t> seen;
  for (int i = 0; i < 3; ++i) {
    for (const SweepPoint& p : shard_points(points, i, 3)) {
      EXPECT_EQ(int(p.index % 3), i);
      seen.insert(p.index);
    }
  }
  EXPECT_EQ(seen.size(), points.size());
  EXPECT_EQ(std::set<size_t>(seen.begin(), seen.end()).size(), points.size());
  EXPECT_EQ(parse_shard("2/3"), std::make_pair(2, 3));
  for (const char* bad : {"3/3", "1", "a/3", "-1/3", "1/0", "1/3/4", ""}) {
    EXPECT_NE(error_of([&] { parse_shard(bad); }).find("--shard: expected I/N"), std::string::npos)
        << bad;
  }
}

TEST(SweepKnobs, EachWritesItsFieldAndNothingElse) {
  const json base = templated_scenario();
  EXPECT_EQ(changed_paths(base, point_document(base, {{"replicas", "16"}})),
            (std::set<std::string>{"/cluster/machines/0/count"}));
  EXPECT_EQ(point_document(base, {{"replicas", "16"}})["cluster"]["machines"][0]["count"], 16);
  EXPECT_EQ(point_document(base, {{"replicas", "x2"}})["cluster"]["machines"][0]["count"], 8);
  EXPECT_EQ(changed_paths(base, point_document(base, {{"ps", "+1"}})),
            (std::set<std::string>{"/training/ps/count"}));
  EXPECT_EQ(point_document(base, {{"ps", "+1"}})["training"]["ps"]["count"], 3);
  EXPECT_EQ(changed_paths(base, point_document(base, {{"nic_bandwidth", "25 Gbps"}})),
            (std::set<std::string>{"/cluster/machines/0/nic/bandwidth"}));
  EXPECT_EQ(
      point_document(base, {{"gpu_speed", "x2"}})["cluster"]["machines"][0]["gpus"][0]["speed"],
      "20000000000000 FLOPS");
  EXPECT_EQ(changed_paths(base, point_document(base, {{"batch_per_replica", "64"}})),
            (std::set<std::string>{"/training/batch_per_replica"}));
  EXPECT_EQ(changed_paths(base, point_document(base, {{"variable_placement", "partitioned"}})),
            (std::set<std::string>{"/training/variable_placement"}));
  EXPECT_EQ(changed_paths(base, point_document(base, {{"strategy", "in_graph"}})),
            std::set<std::string>{});
  EXPECT_EQ(resolve_sweep_point(base, "s.json", SweepPoint{0, {{"strategy", "in_graph"}}},
                                "between_graph")
                .strategy,
            "in_graph");
  // backups counts the point's workers, whatever order the knobs come in.
  const json sync = point_document(base, {{"backups", "1"}, {"replicas", "8"}});
  EXPECT_EQ(sync["training"]["sync"],
            (json{{"replicas_to_aggregate", 7}, {"total_num_replicas", 8}}));
  EXPECT_EQ(point_document(base, {{"sync", "sync"}})["training"]["sync"], "sync");
}

// Per-replica batches name each replica: the replicas knob keeps their count or says why not, at
// the list's path (whatif's "replicas x2" row prints it).
TEST(SweepKnobs, ReplicasRefuseANewCountBesidePerReplicaBatches) {
  json base = templated_scenario();
  base["training"]["batch_per_replica"] = {16, 32, 32, 64};
  EXPECT_EQ(point_document(base, {{"replicas", "4"}})["training"]["batch_per_replica"],
            base["training"]["batch_per_replica"]);
  EXPECT_EQ(
      error_of([&] {
        point_document(base, {{"replicas", "x2"}});
      }),
      "s.json: /training/batch_per_replica: point replicas=x2: lists a batch for each of the 4 "
      "replicas, so their count cannot become 8 (give one batch for every replica, or list 8)");
}

// nics_per_machine sets nic.count wherever a NIC is given (the worker template, machine_defaults,
// a dedicated PS's machine): a count, or a factor or increment of each one's own.
TEST(SweepKnobs, NicsPerMachineSetsEveryNicCount) {
  json base = templated_scenario();
  EXPECT_EQ(changed_paths(base, point_document(base, {{"nics_per_machine", "2"}})),
            (std::set<std::string>{"/cluster/machines/0/nic/count"}));
  const json two = point_document(base, {{"nics_per_machine", "2"}});
  EXPECT_EQ(two["cluster"]["machines"][0]["nic"]["count"], 2);
  // The point parses: the workers have two NICs, and so has the dedicated PS that copies them.
  const Scenario parsed = parse_scenario(two, "s.json");
  EXPECT_EQ(parsed.cluster.find_machine("w3")->nic_count, 2);
  EXPECT_EQ(parsed.cluster.find_machine("ps0")->nic_count, 2);
  base["training"]["ps"]["machine"] = {
      {"cpu", {{"speed", "1 TFLOPS"}}},
      {"nic", {{"bandwidth", "25 Gbps"}, {"latency", "10 us"}, {"count", 3}}}};
  base["cluster"]["machine_defaults"] = {{"nic", {{"latency", "5 us"}}}};
  const json scaled = point_document(base, {{"nics_per_machine", "x2"}});
  EXPECT_EQ(scaled["cluster"]["machines"][0]["nic"]["count"], 2);
  EXPECT_EQ(scaled["training"]["ps"]["machine"]["nic"]["count"], 6);
  EXPECT_EQ(scaled["cluster"]["machine_defaults"]["nic"]["count"], 2);
  EXPECT_EQ(point_document(
                base, {{"nics_per_machine", "+1"}})["training"]["ps"]["machine"]["nic"]["count"],
            4);
  for (const char* bad : {"0", "17", "two", "1.5"}) {
    const std::string e = error_of([&] { point_document(base, {{"nics_per_machine", bad}}); });
    EXPECT_EQ(e.rfind("--vary nics_per_machine: point nics_per_machine=", 0), 0u) << e;
    EXPECT_NE(e.find(": expected a count from 1 to 16, got \"" + std::string(bad) + "\""),
              std::string::npos)
        << e;
  }
  EXPECT_NE(error_of([&] {
              point_document(base, {{"nics_per_machine", "x8"}});
            }).find("x8 of 3 is outside 1..16"),
            std::string::npos);
  json no_nic = base;
  no_nic["cluster"]["machines"][0].erase("nic");
  no_nic["cluster"].erase("machine_defaults");
  no_nic["training"]["ps"].erase("machine");
  EXPECT_NE(error_of([&] {
              point_document(no_nic, {{"nics_per_machine", "2"}});
            }).find("needs a machine with a \"nic\""),
            std::string::npos);
}

TEST(SweepKnobs, ScenariosThatCannotVaryAKeySayWhatTheyNeed) {
  json listed = templated_scenario();
  listed["training"]["replicas"] = json::array({"w0/gpu0", "w1/gpu0"});
  const std::string machines = error_of([&] { point_document(listed, {{"machines", "8"}}); });
  EXPECT_NE(machines.find("s.json: /training/replicas: point machines=8: machines can be varied "
                          "only when /training/replicas is a pattern over a machine template"),
            std::string::npos)
      << machines;
  // replicas= counts replicas: a list grows by copies of its fastest machine.
  const json grown = point_document(listed, {{"replicas", "8"}});
  EXPECT_EQ(grown["training"]["replicas"].size(), 8u);
  json fixed_ps = templated_scenario();
  fixed_ps["training"]["ps"] = json::array({"w0/cpu"});
  const std::string ps = error_of([&] { point_document(fixed_ps, {{"ps", "2"}}); });
  EXPECT_NE(ps.find("/training/ps: point ps=2: ps can be varied only when /training/ps is a "
                    "template"),
            std::string::npos)
      << ps;
  const json base = templated_scenario();
  json non_blocking = base;
  non_blocking["cluster"].erase("switch");
  EXPECT_NE(error_of([&] {
              point_document(non_blocking, {{"switch_bandwidth", "x2"}});
            }).find("non-blocking"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"backups", "4"}});
            }).find("leaves no replica"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"sync", "async"}, {"backups", "1"}});
            }).find("needs synchronous training"),
            std::string::npos);
  // distributed_replicated has no backup workers: backups must not switch it to
  // SyncReplicasOptimizer behind the user's back.
  json replicated = base;
  replicated["training"]["sync"] = "distributed_replicated";
  EXPECT_NE(error_of([&] {
              point_document(replicated, {{"backups", "1"}});
            }).find("has sync \"distributed_replicated\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"sync", "distributed_replicated"}, {"backups", "1"}});
            }).find("sync=distributed_replicated"),
            std::string::npos);
  EXPECT_EQ(point_document(base, {{"sync", "distributed_replicated"}})["training"]["sync"],
            "distributed_replicated");
  EXPECT_NE(error_of([&] {
              point_document(base, {{"strategy", "in_graph"}, {"backups", "1"}});
            }).find("applies to between-graph training"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"gpu_speed", "x1e400"}});
            }).find("at most 1000000"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"nic_bandwidth", "10"}});
            }).find("--vary nic_bandwidth"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              point_document(base, {{"replicas", "0"}});
            }).find("--vary replicas"),
            std::string::npos);
  // A value the scenario rejects names the point and the field.
  const std::string placement = error_of([&] {
    point_document(base, {{"transport", "carrier_pigeon"}});
  });
  EXPECT_NE(placement.find("/cluster/transport/preset: point transport=carrier_pigeon"),
            std::string::npos)
      << placement;
}

json allreduce_point(const json& base,
                     const std::vector<std::pair<std::string, std::string>>& knobs) {
  return resolve_sweep_point(base, "s.json", SweepPoint{0, knobs}, "allreduce").document;
}

// Racks: a factor of the uplinks divides the scenario's oversubscription ratio, and a ratio out of
// range names the ratio the point would make from the value typed (not an inverse factor).
TEST(SweepKnobs, RackKnobsNameTheRatioAPointWouldMake) {
  json racks = templated_scenario();
  racks["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 2}, {"oversubscription", 0.02}};
  const auto ratio = [&](const std::string& key, const std::string& value) {
    return point_document(racks, {{key, value}})["cluster"]["topology"]["oversubscription"]
        .get<double>();
  };
  EXPECT_DOUBLE_EQ(ratio("uplink_bandwidth", "x2"), 0.01);
  EXPECT_DOUBLE_EQ(ratio("oversubscription", "x3"), 0.06);
  const std::string faster = error_of([&] { ratio("uplink_bandwidth", "x4"); });
  EXPECT_NE(faster.find("uplink_bandwidth=x4: x4 (uplinks x4 as fast: the scenario's ratio 0.02 / "
                        "4.0) makes an oversubscription of 0.005, outside 0.01..1000.0"),
            std::string::npos)
      << faster;
  const std::string nan = error_of([&] { ratio("oversubscription", "nan"); });
  EXPECT_NE(nan.find("expected a ratio such as 3 or a factor x2, got \"nan\""), std::string::npos)
      << nan;
}

// The racks' knobs write cluster.topology and training.ps.spread: a ratio replaces a given
// uplink and a bandwidth a ratio; a one-switch scenario is refused at /cluster/topology.
TEST(SweepKnobs, RackKnobsWriteTheTopology) {
  json racks = templated_scenario();
  racks["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 2}, {"uplink", {{"bandwidth", "5 Gbps"}}}};
  const auto topology = [&](const std::string& key, const std::string& value) {
    return point_document(racks, {{key, value}})["cluster"]["topology"];
  };
  EXPECT_EQ(topology("oversubscription", "3"),
            (json{{"kind", "racks"}, {"machines_per_rack", 2}, {"oversubscription", 3.0}}));
  EXPECT_EQ(topology("uplink_bandwidth", "x2")["uplink"]["bandwidth"], "1250000000 Bps");
  EXPECT_EQ(topology("machines_per_rack", "+1")["machines_per_rack"], 3);
  EXPECT_EQ(topology("machines_per_rack", "x2")["machines_per_rack"], 4);
  racks["cluster"]["topology"] = {
      {"kind", "racks"}, {"machines_per_rack", 2}, {"oversubscription", 3}};
  EXPECT_EQ(
      topology("uplink_bandwidth", "40 Gbps"),
      (json{{"kind", "racks"}, {"machines_per_rack", 2}, {"uplink", {{"bandwidth", "40 Gbps"}}}}));
  EXPECT_EQ(point_document(racks, {{"ps_spread", "racks"}})["training"]["ps"]["spread"], "racks");
  const std::string star = error_of([&] {
    point_document(templated_scenario(), {{"ps_spread", "racks"}});
  });
  EXPECT_NE(star.find("/cluster/topology"), std::string::npos) << star;
  EXPECT_NE(star.find("one switch"), std::string::npos) << star;
}

// A fat tree's racks are its level 0: ps_spread spreads over them; the racks' ratio, uplink and
// size knobs are refused naming the levels (a fat tree gives them per level).
TEST(SweepKnobs, AFatTreeTakesThePsSpreadAndRefusesTheRacksKeys) {
  json tree = templated_scenario();
  tree["cluster"]["topology"] = {
      {"kind", "fat_tree"},
      {"levels", json::array({json{{"down", 2}, {"oversubscription", 1}},
                              json{{"down", 2}, {"oversubscription", 4}}})}};
  EXPECT_EQ(point_document(tree, {{"ps_spread", "racks"}})["training"]["ps"]["spread"], "racks");
  for (const char* knob : {"oversubscription", "uplink_bandwidth", "machines_per_rack"}) {
    const std::string error = error_of([&] { point_document(tree, {{knob, "x2"}}); });
    EXPECT_NE(error.find("/cluster/topology"), std::string::npos) << error;
    EXPECT_NE(error.find("is a fat tree"), std::string::npos) << error;
  }
}

// The all-reduce knobs write training.allreduce (units as scenarios write them; a factor scales
// the preset's value when the scenario gives none) and cluster.transport.connections_per_peer.
TEST(SweepKnobs, AllReduceKnobsWriteTheirFields) {
  json base = templated_scenario();
  EXPECT_EQ(changed_paths(base, allreduce_point(base, {{"algorithm", "tree"}})),
            (std::set<std::string>{"/training/allreduce"}));
  EXPECT_EQ(allreduce_point(base, {{"algorithm", "hierarchical"}})["training"]["allreduce"],
            (json{{"algorithm", "hierarchical"}}));
  EXPECT_EQ(allreduce_point(
                base, {{"fusion_threshold", "64 MB"}})["training"]["allreduce"]["fusion_threshold"],
            "64000000 B");
  EXPECT_EQ(allreduce_point(
                base, {{"fusion_threshold", "0 B"}})["training"]["allreduce"]["fusion_threshold"],
            "0 B");
  // horovod's 128 MiB, halved; horovod_0.x's 5 ms, doubled.
  EXPECT_EQ(allreduce_point(
                base, {{"fusion_threshold", "x0.5"}})["training"]["allreduce"]["fusion_threshold"],
            "67108864 B");
  json old = base;
  old["training"]["allreduce"] = {{"preset", "horovod_0.x"}};
  EXPECT_EQ(allreduce_point(old, {{"cycle_time", "x2"}})["training"]["allreduce"],
            (json{{"preset", "horovod_0.x"}, {"cycle_time", "0.01 s"}}));
  old["training"]["allreduce"]["cycle_time"] = "3 ms";
  EXPECT_EQ(allreduce_point(old, {{"cycle_time", "x2"}})["training"]["allreduce"]["cycle_time"],
            "0.0060000000000000001 s");
  EXPECT_EQ(allreduce_point(base, {{"cycle_time", "2 ms"}})["training"]["allreduce"]["cycle_time"],
            "0.002 s");
  EXPECT_EQ(changed_paths(base, allreduce_point(base, {{"nccl_streams", "16"}})),
            (std::set<std::string>{"/cluster/transport"}));
  EXPECT_EQ(allreduce_point(base, {{"nccl_streams", "16"}})["cluster"]["transport"],
            (json{{"connections_per_peer", 16}}));
  base["cluster"]["transport"] = {{"preset", "tcp"}, {"connections_per_peer", 4}};
  EXPECT_EQ(allreduce_point(base, {{"nccl_streams", "x2"}})["cluster"]["transport"],
            (json{{"preset", "tcp"}, {"connections_per_peer", 8}}));
  // Each point is a scenario the parser takes, with the values the knobs wrote.
  const ResolvedPoint p = resolve_sweep_point(
      base, "s.json",
      SweepPoint{0, {{"algorithm", "tree"}, {"fusion_threshold", "1 MB"}, {"cycle_time", "0 s"}}},
      "allreduce");
  EXPECT_EQ(p.scenario.training.allreduce.algorithm, "tree");
  EXPECT_DOUBLE_EQ(p.scenario.training.allreduce.fusion_threshold_bytes, 1e6);
  EXPECT_DOUBLE_EQ(p.scenario.training.allreduce.cycle_time_s, 0);
}

TEST(SweepKnobs, AllReduceKnobsRefuseOtherStrategiesAndBadValues) {
  const json base = templated_scenario();
  const std::string other = error_of([&] { point_document(base, {{"algorithm", "tree"}}); });
  EXPECT_EQ(other.rfind("--vary algorithm: ", 0), 0u) << other;
  EXPECT_NE(other.find("algorithm=tree applies to the allreduce strategy"), std::string::npos)
      << other;
  EXPECT_NE(other.find("this point is between_graph"), std::string::npos) << other;
  EXPECT_NE(error_of([&] {
              point_document(base, {{"strategy", "in_graph"}, {"cycle_time", "1 ms"}});
            }).find("this point is in_graph"),
            std::string::npos);
  // Varied with strategy=allreduce, the knob applies.
  EXPECT_EQ(point_document(base, {{"strategy", "allreduce"},
                                  {"algorithm", "tree"}})["training"]["allreduce"]["algorithm"],
            "tree");
  EXPECT_NE(error_of([&] {
              allreduce_point(base, {{"algorithm", "butterfly"}});
            }).find("unknown value \"butterfly\"; valid: ring, tree, hierarchical"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              allreduce_point(base, {{"fusion_threshold", "64"}});
            }).find("\"64\": "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              allreduce_point(base, {{"cycle_time", "-1 ms"}});
            }).find("must be 0 or more"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              allreduce_point(base, {{"nccl_streams", "65"}});
            }).find("expected a count from 1 to 64 or a factor x2, got \"65\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              allreduce_point(base, {{"nccl_streams", "x128"}});
            }).find("x128 of 1 is outside 1..64"),
            std::string::npos);
  // nccl_streams is the transport's, so it applies to every strategy's transfers.
  EXPECT_EQ(
      point_document(base, {{"nccl_streams", "2"}})["cluster"]["transport"]["connections_per_peer"],
      2);
}

json summary(double throughput, const std::string& bottleneck, double headroom) {
  json run = {{"throughput_samples_per_s", throughput},
              {"step_time_s", {{"mean", 0.2}, {"p50", 0.19}, {"p95", 0.3}}},
              {"bottleneck", {{"resource", bottleneck}, {"utilization", 0.9}}},
              {"bytes_per_ps", {100, 300}},
              {"memory",
               {{{"device", "w0/gpu0"},
                 {"needed_bytes", 1},
                 {"capacity_bytes", 2},
                 {"headroom_bytes", headroom}},
                {{"device", "ps0/cpu"},
                 {"needed_bytes", 1},
                 {"capacity_bytes", 2},
                 {"headroom_bytes", -5}}}},
              // The critical path as simulate --json writes it (core::critical_path_json).
              {"bound_by",
               {{"steps", 10},
                {"seconds", 2.0},
                {"shares",
                 {{{"name", "ps1 network"},
                   {"seconds", 1.5},
                   {"fraction", 0.75},
                   {"directions", {{"pull", 0.5}, {"push", 1.0}}},
                   {"bounds", {{"ps1/nic/up", 1.5}}}},
                  {{"name", "compute"}, {"seconds", 0.5}, {"fraction", 0.25}}}}}},
              {"waits",
               {{{"role", "worker0"},
                 {"role_kind", "worker"},
                 {"compute", 0.6},
                 {"network", 0.3},
                 {"peers", 0},
                 {"client", 0},
                 {"ps", 0.05},
                 {"token", 0},
                 {"other", 0.05}},
                {{"role", "ps0"},
                 {"role_kind", "ps"},
                 {"compute", 1},
                 {"network", 0},
                 {"peers", 0},
                 {"client", 0},
                 {"ps", 0},
                 {"token", 0},
                 {"other", 0}}}}};
  return {{"runs", {run}}};
}

SweepResults results_of(const std::vector<std::pair<std::string, double>>& replicas_throughput) {
  const json base = templated_scenario();
  SweepResults r;
  r.scenario_name = "t";
  r.scenario_file = "s.json";
  r.scenario_hash = "h";
  r.axes = {parse_sweep_axis("replicas=1,2,4")};
  r.points_total = replicas_throughput.size();
  size_t i = 0;
  for (const auto& [replicas, throughput] : replicas_throughput) {
    const SweepPoint p{i++, {{"replicas", replicas}}};
    const ResolvedPoint resolved = resolve_sweep_point(base, "s.json", p, "between_graph");
    r.rows.push_back(sweep_row_from_summary(p, sweep_point_facts(resolved), "k" + replicas,
                                            summary(throughput, "ps1/nic/up", 1e9), "p.json", 1.5));
  }
  r.sweep_id = sweep_id(r);
  return r;
}

TEST(SweepResults, RowsFromSummaries) {
  const SweepResults r = results_of({{"1", 100}});
  const SweepRow& row = r.rows.front();
  EXPECT_EQ(row.replica_devices, 1);
  EXPECT_EQ(row.workers, 1);
  EXPECT_EQ(row.ps_tasks, 2);
  EXPECT_EQ(row.bottleneck_kind, "ps nic");
  // What bound it: simulate's "bound by (critical path)" words, from the summary's path.
  EXPECT_EQ(row.bound_by, "ps1 network 75%, compute 25%");
  EXPECT_EQ(row.bound_by_share, "ps1 network");
  EXPECT_EQ(row.bound_by_kind, "network");
  EXPECT_DOUBLE_EQ(row.bound_by_fraction, 0.75);
  EXPECT_DOUBLE_EQ(row.ps_bytes_max, 300);
  EXPECT_DOUBLE_EQ(row.ps_bytes_mean, 200);
  ASSERT_TRUE(row.gpu_memory_headroom_bytes.has_value());
  EXPECT_DOUBLE_EQ(*row.gpu_memory_headroom_bytes, 1e9);  // GPUs only: the PS CPU is left out
  EXPECT_DOUBLE_EQ(row.compute_share, 0.6);
  EXPECT_DOUBLE_EQ(row.network_share, 0.3);
  EXPECT_NEAR(row.waiting_share, 0.1, 1e-12);
  EXPECT_NE(error_of([&] {
              const json base = templated_scenario();
              const SweepPoint p{0, {}};
              sweep_row_from_summary(
                  p, sweep_point_facts(resolve_sweep_point(base, "s.json", p, "between_graph")),
                  "k", json{{"runs", json::array()}}, "p.json", 0);
            }).find("p.json: /runs"),
            std::string::npos);
}

// A summary's critical path that cannot be one (a damaged cache entry): refused, so that the
// sweep computes the point again; one whose share is the whole path up to a rounding error: a
// fraction of 1, which the results file reads back.
TEST(SweepResults, ABoundByThatCannotBeAPathIsRefused) {
  const json base = templated_scenario();
  const SweepPoint p{0, {{"replicas", "1"}}};
  const SweepPointFacts facts =
      sweep_point_facts(resolve_sweep_point(base, "s.json", p, "between_graph"));
  auto row_of = [&](const std::function<void(json&)>& damage) {
    json s = summary(100, "ps1/nic/up", 1e9);
    damage(s["runs"][0]["bound_by"]);
    return sweep_row_from_summary(p, facts, "k", s, "p.json", 1);
  };
  const std::vector<std::pair<std::string, std::function<void(json&)>>> damages = {
      {"a share longer than the path", [](json& b) { b["shares"][1]["seconds"] = 100.0; }},
      {"no time", [](json& b) { b["seconds"] = 0.0; }},
      {"no step", [](json& b) { b["steps"] = 0; }},
      {"a name with a newline", [](json& b) { b["shares"][1]["name"] = "a\nb"; }},
      {"a name of 1000 characters",
       [](json& b) { b["shares"][1]["name"] = std::string(1000, 'a'); }},
      {"shares adding up to more", [](json& b) { b["shares"][1]["seconds"] = 1.0; }},
  };
  for (const auto& [what, damage] : damages) {
    EXPECT_NE(error_of([&] { row_of(damage); }).find("p.json: /runs/0/bound_by"), std::string::npos)
        << what;
  }
  SweepResults r = results_of({{"1", 100}});
  SweepRow whole = row_of([](json& b) {
    b["shares"] = {{{"name", "compute"}, {"seconds", 2.0 * (1 + 1e-15)}, {"fraction", 1.0}}};
  });
  EXPECT_DOUBLE_EQ(whole.bound_by_fraction, 1.0);
  r.rows = {whole};
  EXPECT_EQ(sweep_results_from_json(sweep_results_to_json(r), "r.json").rows[0].bound_by_fraction,
            1.0);
}

TEST(SweepResults, ScalingEfficiencyAgainstTheSmallestPoint) {
  SweepResults r = results_of({{"1", 100}, {"2", 180}, {"4", 200}});
  compute_scaling_efficiency(r.rows);
  EXPECT_DOUBLE_EQ(*r.rows[0].scaling_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(*r.rows[1].scaling_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(*r.rows[2].scaling_efficiency, 0.5);
}

// A sweep that does not vary `replicas` (here `ps` alone) has nothing to scale against: every
// row's efficiency is unset (was 100% on every row), and a group of one device count beside a
// varied one stays unset too.
TEST(SweepResults, NoScalingEfficiencyWhereReplicasIsNotVaried) {
  SweepResults r = results_of({{"1", 100}, {"1", 90}, {"2", 180}});
  r.rows[0].knobs = {{"ps", "1"}};
  r.rows[1].knobs = {{"ps", "2"}};
  r.rows[2].knobs = {{"ps", "2"}};
  r.rows[2].replica_devices = r.rows[1].replica_devices;
  compute_scaling_efficiency(r.rows);
  for (const SweepRow& row : r.rows) EXPECT_FALSE(row.scaling_efficiency.has_value());
  // ps=2 varied in devices (2 against 1): that group has efficiencies, ps=1 alone has none.
  r.rows[2].replica_devices = 2 * r.rows[1].replica_devices;
  compute_scaling_efficiency(r.rows);
  EXPECT_FALSE(r.rows[0].scaling_efficiency.has_value());
  ASSERT_TRUE(r.rows[1].scaling_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*r.rows[1].scaling_efficiency, 1.0);
  ASSERT_TRUE(r.rows[2].scaling_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*r.rows[2].scaling_efficiency, 1.0);  // 180 / 2 against 90 / 1
}

TEST(SweepResults, CsvAndJsonRoundTrip) {
  SweepResults r = results_of({{"1", 100}, {"2", 180}, {"4", 200}});
  compute_scaling_efficiency(r.rows);
  // A point with no step inside the window: no step time, and its warning in both files.
  r.rows[2].step_time_mean_s = r.rows[2].step_time_p50_s = r.rows[2].step_time_p95_s = 0;
  r.rows[2].warnings = {"worker3 has 0 step(s) wholly inside the measured window"};
  r.rows[1].error = "a \"quoted\", failure";
  std::ostringstream csv;
  write_sweep_csv(r, csv);
  const std::string text = csv.str();
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "index,replicas,strategy,replica_devices,workers,ps_tasks,throughput_samples_per_s,"
            "step_time_mean_s,step_time_p50_s,step_time_p95_s,scaling_efficiency,bound_by,"
            "bound_by_kind,bound_by_fraction,bottleneck,bottleneck_kind,bottleneck_utilization,"
            "ps_bytes_max,ps_bytes_mean,"
            "gpu_memory_headroom_bytes,compute_share,network_share,waiting_share,"
            "time_to_target_s,global_steps_to_target,final_accuracy,wall_s,warnings,error");
  EXPECT_NE(text.find("\n0,1,between_graph,1,1,2,100,0.2,0.19,0.3,1,\"ps1 network 75%, compute "
                      "25%\",network,0.75,ps1/nic/up,ps nic,0.9,300,200,1000000000,0.6,0.3,0.1,"
                      ",,,1.5,,\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(",\"a \"\"quoted\"\", failure\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n2,4,between_graph,4,4,2,200,,,,0.5,"), std::string::npos) << text;
  EXPECT_NE(text.find(",1.5,worker3 has 0 step(s) wholly inside the measured window,\n"),
            std::string::npos)
      << text;
  EXPECT_TRUE(sweep_results_to_json(r)["rows"][2]["step_time_s"]["p50"].is_null());
  const json written = sweep_results_to_json(r);
  EXPECT_EQ(sweep_results_to_json(sweep_results_from_json(written, "r.json")), written);
  // A version-1 file (before bound_by) still reads, without it.
  json old = written;
  old["version"] = 1;
  for (json& row : old["rows"]) row.erase("bound_by");
  const SweepResults read_old = sweep_results_from_json(old, "old.json");
  EXPECT_EQ(read_old.rows[0].bound_by, "");
  EXPECT_EQ(read_old.rows[0].bottleneck, "ps1/nic/up");
  json future = written;
  future["version"] = 3;
  EXPECT_NE(error_of([&] {
              sweep_results_from_json(future, "f.json");
            }).find("f.json: /version: a sweep of another version"),
            std::string::npos);
  const std::string other = error_of([] {
    sweep_results_from_json(json{{"format", "other"}}, "r.json");
  });
  EXPECT_NE(other.find("r.json: /: not a sweep's results"), std::string::npos) << other;
}

TEST(SweepResults, MergeJoinsEveryShardOnce) {
  SweepResults whole = results_of({{"1", 100}, {"2", 180}, {"4", 200}});
  compute_scaling_efficiency(whole.rows);
  std::vector<SweepResults> shards;
  for (int i = 0; i < 2; ++i) {
    SweepResults s = whole;
    s.shard_index = i;
    s.shard_count = 2;
    s.rows.clear();
    for (const SweepRow& row : whole.rows) {
      if (int(row.index % 2) == i) s.rows.push_back(row);
    }
    for (SweepRow& row : s.rows) row.scaling_efficiency.reset();
    shards.push_back(s);
  }
  const SweepResults merged = merge_sweep_shards({shards[1], shards[0]}, {"b.json", "a.json"});
  EXPECT_EQ(sweep_results_to_json(merged)["rows"], sweep_results_to_json(whole)["rows"]);
  EXPECT_NE(error_of([&] {
              merge_sweep_shards({shards[0], shards[0]}, {"a.json", "c.json"});
            }).find("c.json: /shard: shard 0/2 is also in a.json"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { merge_sweep_shards({shards[0]}, {"a.json"}); }).find("shard 1/2 is missing"),
      std::string::npos);
  SweepResults stray = shards[1];
  stray.rows.front().index = 999;
  EXPECT_NE(error_of([&] {
              merge_sweep_shards({shards[0], stray}, {"a.json", "s.json"});
            }).find("s.json: /rows/0/index: point 999 is not one of shard 1/2's points"),
            std::string::npos);
  SweepResults doubled = shards[1];
  doubled.rows.push_back(doubled.rows.front());
  EXPECT_NE(error_of([&] {
              merge_sweep_shards({shards[0], doubled}, {"a.json", "d.json"});
            }).find("the shards repeat point 1"),
            std::string::npos);
  SweepResults other = shards[1];
  other.sweep_id = "x";
  EXPECT_NE(error_of([&] {
              merge_sweep_shards({shards[0], other}, {"a.json", "o.json"});
            }).find("o.json: /sweep_id: a shard of another sweep"),
            std::string::npos);
}

}  // namespace
}  // namespace replisim::core
