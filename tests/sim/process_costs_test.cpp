// TF-1 process costs (cluster.transport.between_processes, loopback_*, process_rpc_ceiling,
// copy_bandwidth as CPU work), each against its closed form: network "ideal", costs "none",
// jitter 0, one layer of P parameters (4P bytes each way per step).
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

constexpr double kPcieBytesPerS = 16e9;

// One machine "h" with `gpus` GPUs of 8 TFLOPS (PCIe 16 GB/s, no latency) and a 500 GFLOPS CPU
// holding the PS; one worker per GPU.
nlohmann::json one_host(int gpus, double params, const nlohmann::json& transport,
                        const std::string& sync) {
  nlohmann::json host = test::machine("h", "500 GFLOPS", {}, "10 Gbps", "0 us");
  host["gpus"] = {{"count", gpus}, {"speed", "8 TFLOPS"}};
  host["pcie"] = {{"bandwidth", "16 GBps"}, {"latency", "0 us"}};
  nlohmann::json doc = test::scenario_json({host}, test::one_layer_model(params, "1 GFLOP"),
                                           {{"replicas", {"h/gpu*"}},
                                            {"ps", {"h/cpu"}},
                                            {"costs", "none"},
                                            {"jitter", 0},
                                            {"sync", sync},
                                            {"steps", 30}},
                                           "ideal", "100 Gbps");
  if (!transport.is_null()) doc["cluster"]["transport"] = transport;
  return doc;
}

TEST(ProcessCosts, OnlyATransportBetweenProcessesChargesTheLoopback) {
  // One worker on h/gpu0, its PS on h/cpu: two processes of one machine.
  constexpr double kParams = 1e6;
  const double bytes = 4 * kParams;
  const double compute_s = 3 * 1e9 * 32 / 8e12;
  auto step_s = [&](const nlohmann::json& transport) {
    return test::simulate(one_host(1, kParams, transport, "async"), "between_graph")
        .step_time_s.mean;
  };
  // ideal: a PCIe copy each way and nothing else (what replisim charged before process costs).
  const double pcie_only = 2 * bytes / kPcieBytesPerS + compute_s;
  EXPECT_NEAR(step_s(nullptr), pcie_only, 0.01 * pcie_only);
  // Copies and message overheads alone are charged between machines only.
  const nlohmann::json machines_only = {{"copy_bandwidth", "2 GBps"},
                                        {"per_message_overhead", "0.5 ms"}};
  EXPECT_NEAR(step_s(machines_only), pcie_only, 0.01 * pcie_only);
  // With between_processes (which a loopback field implies): per tensor the message overhead,
  // the loopback latency, a serialisation and a deserialisation on h/cpu, and the bytes at the
  // loopback stream's 1 GB/s.
  nlohmann::json between = machines_only;
  between["loopback_bandwidth"] = "1 GBps";
  between["loopback_latency"] = "1 ms";
  const double tensor_s = 0.5e-3 + 1e-3 + 2 * bytes / 2e9 + bytes / 1e9;
  const double expected = 2 * tensor_s + compute_s;
  EXPECT_NEAR(step_s(between), expected, 0.01 * expected);
}

TEST(ProcessCosts, ProcessesSharingADeviceStillTalkThroughTheTransport) {
  // A CPU worker and its PS on the same CPU: two processes, so each tensor pays the loopback
  // (1 ms, 1 GB/s) though it never leaves the device.
  constexpr double kParams = 1e6;
  nlohmann::json doc = one_host(
      1, kParams, {{"loopback_bandwidth", "1 GBps"}, {"loopback_latency", "1 ms"}}, "async");
  doc["training"]["replicas"] = {"h/cpu"};
  const double expected = 2 * (1e-3 + 4 * kParams / 1e9) + 3 * 1e9 * 32 / 500e9;
  EXPECT_NEAR(test::simulate(doc, "between_graph").step_time_s.mean, expected, 0.01 * expected);
  // A two-tower worker whose PS sits on its CPU: the PS's value reaches the worker's copy on that
  // CPU over loopback (tf1_grpc_legacy: 150 MB/s per stream), so the step takes at least the
  // pull and the push of 4P each at that rate.
  nlohmann::json towers = one_host(2, 25e6, {{"preset", "tf1_grpc_legacy"}}, "async");
  towers["training"]["replicas"] = {{{"towers", "h/gpu*"}}};
  EXPECT_GE(test::simulate(towers, "between_graph").step_time_s.mean, 2 * 4 * 25e6 / 150e6);
  // A PS and its worker on one GPU exchange tensors through host memory: over the GPU's PCIe
  // link out and back (both directions at once, 16 GB/s each here), with or without a process
  // ceiling that never binds; a pull and a push per step.
  nlohmann::json gpu = one_host(1, 25e6, {{"between_processes", true}}, "async");
  gpu["training"]["ps"] = {"h/gpu0"};
  gpu["model"]["layers"][0]["forward_flops_per_sample"] = "1 FLOP";
  const double through_pcie = 2 * 4 * 25e6 / kPcieBytesPerS;
  const double step = test::simulate(gpu, "between_graph").step_time_s.mean;
  EXPECT_NEAR(step, through_pcie, 0.01 * through_pcie);
  gpu["cluster"]["transport"]["process_rpc_ceiling"] = "1000 TBps";
  EXPECT_NEAR(test::simulate(gpu, "between_graph").step_time_s.mean, step, 0.01 * step);
  // In-graph variables kept on the client's machine are in its process: no loopback at all.
  nlohmann::json in_graph = one_host(2, kParams, {{"preset", "tf1_grpc_legacy"}}, "async");
  in_graph["training"].erase("ps");
  in_graph["training"]["variables_on"] = "client";
  nlohmann::json ideal = in_graph;
  ideal["cluster"].erase("transport");
  for (const char* where : {"client", "h/gpu1"}) {
    in_graph["training"]["variables_on"] = where;
    ideal["training"]["variables_on"] = where;
    const double with_grpc = test::simulate(in_graph, "in_graph").throughput_samples_per_s;
    EXPECT_NEAR(with_grpc, test::simulate(ideal, "in_graph").throughput_samples_per_s,
                0.01 * with_grpc)
        << where;
  }
}

TEST(ProcessCosts, SixteenWorkersOnOneHostPlateauAtThePsProcessCeiling) {
  // Sixteen single-GPU sync workers and a PS, one process each, on one 16-GPU host. Every global
  // step the PS sends each worker the weights and receives its gradients: 16 x 2 x 4P bytes
  // through its RPC ceiling C, so the job plateaus at C / (32 x 4P) global steps per second,
  // whatever the PCIe links and GPUs could do.
  constexpr double kParams = 5e6;                                  // 20 MB
  constexpr double kCeiling = 2e8;                                 // 200 MB/s
  const double plateau = 16 * 32 * kCeiling / (32 * 4 * kParams);  // samples/s
  const nlohmann::json transport = {{"between_processes", true},
                                    {"process_rpc_ceiling", "200 MBps"}};
  const core::RunMetrics bound =
      test::simulate(one_host(16, kParams, transport, "sync"), "between_graph");
  EXPECT_NEAR(bound.throughput_samples_per_s, plateau, 0.05 * plateau);
  // The workers wait on the network; without the ceiling they run over three times faster.
  const std::vector<core::WaitBreakdown> kinds = core::average_waits_by_kind(bound.waits);
  ASSERT_FALSE(kinds.empty());
  EXPECT_GT(kinds.front().network, 0.9) << kinds.front().role_kind;
  // No utilisation row shows the ceiling; the critical path names it
  // (tests/sim/critical_path_test.cpp).
  ASSERT_FALSE(bound.bound_by.shares.empty());
  EXPECT_EQ(bound.bound_by.shares.front().bounds.front().first, "ps0 RPC ceiling 200 MB/s");
  const core::RunMetrics free =
      test::simulate(one_host(16, kParams, nullptr, "sync"), "between_graph");
  EXPECT_GT(free.throughput_samples_per_s, 3 * bound.throughput_samples_per_s);
}

TEST(ProcessCosts, AnRpcCeilingHoldsUnderLv08) {
  // LV08's reverse traffic loads a flow's reverse route with 5% of its rate, and the ceiling is
  // one link for both directions: its streams still get the ceiling itself. One worker and its
  // PS on one machine, 100 MB each way per step at 100 MB/s, compute free: 2 s.
  nlohmann::json doc = one_host(1, 25e6, {{"process_rpc_ceiling", "100 MBps"}}, "async");
  doc["cluster"]["network_model"] = "lv08";
  doc["model"]["layers"][0]["forward_flops_per_sample"] = "1 FLOP";
  EXPECT_NEAR(test::simulate(doc, "between_graph").step_time_s.mean, 2.0, 0.005);
}

TEST(ProcessCosts, AOneCorePsSaturatesItsCpuBeforeItsNic) {
  // Sixteen identical workers on their own machines (so in lockstep), their PS on a one-core CPU,
  // serialisation at 200 MB/s per core: c = 4P / 200 MB/s per tensor and end. Each step, the PS
  // core serialises the sixteen pulls (16 c, shared), they cross its NIC together (16 x 4P / B),
  // each worker deserialises (c), computes, serialises its gradients (c), they cross the NIC
  // again, and the PS core deserialises all sixteen (16 c):
  //   step = 2 x 16 c + 2 c + 2 x 16 x 4P / B + 3 F b / speed.
  // The PS's core is busy 32 c of it; its NIC, whose bytes are the same, a tenth as long.
  constexpr int kWorkers = 16;
  constexpr double kParams = 5e6;  // 20 MB
  std::vector<nlohmann::json> machines;
  std::vector<std::string> replicas;
  for (int w = 0; w < kWorkers; ++w) {
    const std::string name = "w" + std::to_string(w);
    machines.push_back(test::machine(name, "500 GFLOPS", {"8 TFLOPS"}, "10 Gbps", "0 us"));
    replicas.push_back(name + "/gpu0");
  }
  machines.push_back(test::machine("p", "500 GFLOPS", {}, "10 Gbps", "0 us"));
  machines.back()["cpu"]["cores"] = 1;
  nlohmann::json doc = test::scenario_json(
      machines, test::one_layer_model(kParams, "1 GFLOP"),
      {{"replicas", replicas}, {"ps", {"p/cpu"}}, {"costs", "none"}, {"jitter", 0}}, "ideal",
      "1 TBps");
  doc["cluster"]["switch"]["latency"] = "0 us";
  doc["cluster"]["transport"] = {{"copy_bandwidth", "200 MBps"}};
  const core::RunMetrics m = test::simulate(doc, "between_graph");
  const double c = 4 * kParams / 2e8;
  const double nic_s = kWorkers * 4 * kParams / 1.25e9;
  const double step = 2 * kWorkers * c + 2 * c + 2 * nic_s + 3 * 1e9 * 32 / 8e12;
  EXPECT_NEAR(m.step_time_s.mean, step, 0.01 * step);
  EXPECT_EQ(m.bottleneck.name, "p/cpu");
  EXPECT_NEAR(m.bottleneck.utilization, 2 * kWorkers * c / step, 0.02);
  for (const core::ResourceUse& link : m.links) {
    EXPECT_LT(link.utilization, 0.1) << link.name;
  }
}

TEST(ProcessCosts, ProcessesFollowTf1Tasks) {
  // Between-graph, sync, a two-GPU worker: the worker and its towers are one process, the
  // chief's queue runner is worker 0's thread, each PS is its own process.
  nlohmann::json host = test::machine("h", "500 GFLOPS", {"8 TFLOPS", "8 TFLOPS"}, "10 Gbps");
  nlohmann::json other = test::machine("g", "500 GFLOPS", {"8 TFLOPS"}, "10 Gbps");
  const nlohmann::json doc =
      test::scenario_json({host, other}, test::one_layer_model(1e6, "1 GFLOP"),
                          {{"replicas", {{{"towers", {"h/gpu0", "h/gpu1"}}}, "g/gpu0"}},
                           {"ps", {"h/cpu", "g/cpu"}},
                           {"sync", "sync"}});
  const core::Plan plan = core::compile_plan(test::parse(doc), "between_graph", {});
  const core::Processes processes = core::plan_processes(plan);
  auto process_of = [&](const std::string& role) {
    return processes.names[size_t(processes.of_role[size_t(plan.role_index(role))])];
  };
  EXPECT_EQ(process_of("worker0"), "worker0");
  EXPECT_EQ(process_of("chief/sync"), "worker0");
  // The sync op's ops run in the process of the PS whose variables they touch.
  for (const core::Op& op : plan.sync_replicas.chief_graph.ops) {
    if (op.kind == core::OpKind::kSend || op.kind == core::OpKind::kRecv) continue;
    const std::string device = plan.platform.devices[size_t(op.device)].name;
    EXPECT_EQ(processes.names[size_t(processes.of_role[size_t(op.role)])],
              device == "h/cpu" ? "ps0" : "ps1")
        << op.name;
  }
  EXPECT_EQ(process_of("ps0"), "ps0");
  EXPECT_EQ(process_of("ps1"), "ps1");
  EXPECT_EQ(processes.names.size(), 4u);
  // In-graph: towers on the client's machine run in its process; the other machine's in its task.
  const core::Plan in_graph = core::compile_plan(test::parse(doc), "in_graph", {});
  const core::Processes tasks = core::plan_processes(in_graph);
  for (size_t r = 0; r < in_graph.roles.size(); ++r) {
    const core::Role& role = in_graph.roles[r];
    if (role.kind != core::RoleKind::kTower) continue;
    const std::string machine =
        in_graph.platform.machines[size_t(in_graph.platform.devices[size_t(role.device)].machine)]
            .name;
    const std::string client_machine =
        in_graph.platform
            .machines[size_t(
                in_graph.platform
                    .devices[size_t(in_graph.roles[size_t(in_graph.role_index("client"))].device)]
                    .machine)]
            .name;
    EXPECT_EQ(tasks.names[size_t(tasks.of_role[r])],
              machine == client_machine ? "client" : machine + " task")
        << role.name;
  }
}

TEST(ProcessCosts, PresetsRoundTripsAndErrors) {
  const core::Scenario legacy =
      test::parse(one_host(1, 1e6, {{"preset", "tf1_grpc_legacy"}}, "async"));
  const core::Transport& t = legacy.cluster.transport;
  EXPECT_TRUE(t.between_processes);
  EXPECT_EQ(t.flow_rate_limit_bytes_per_s, 150e6);
  EXPECT_EQ(t.loopback_latency_s, 10e-6);
  EXPECT_FALSE(test::parse(one_host(1, 1e6, nullptr, "async")).cluster.transport.between_processes);
  const core::Plan plan = core::compile_plan(legacy, "between_graph", {});
  EXPECT_EQ(core::plan_to_json(core::plan_from_json(core::plan_to_json(plan), "p.json")),
            core::plan_to_json(plan));
  // A plan written before process costs (no such fields) reads as none.
  nlohmann::json old = core::plan_to_json(plan);
  for (const char* key : {"between_processes", "loopback_bandwidth_bytes_per_s",
                          "loopback_latency_s", "process_rpc_ceiling_bytes_per_s"}) {
    old["platform"]["transport"].erase(key);
  }
  EXPECT_FALSE(core::plan_from_json(old, "old.json").platform.transport.between_processes);
  for (const auto& [transport, path] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"process_rpc_ceiling", 100}}, "/cluster/transport/process_rpc_ceiling"},
           {{{"loopback_latency", "-1 us"}}, "/cluster/transport/loopback_latency"},
           {{{"loopback_bandwidth", "fast"}}, "/cluster/transport/loopback_bandwidth"},
           {{{"between_processes", "yes"}}, "/cluster/transport/between_processes"},
           {{{"loopback_bandwidth", "0.5 Bps"}}, "/cluster/transport/loopback_bandwidth"},
           {{{"between_processes", false}, {"process_rpc_ceiling", "1 GBps"}},
            "/cluster/transport/process_rpc_ceiling"}}) {
    try {
      test::parse(one_host(1, 1e6, transport, "async"));
      ADD_FAILURE() << transport.dump();
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.json_path(), path) << e.what();
    }
  }
}

}  // namespace
}  // namespace replisim
