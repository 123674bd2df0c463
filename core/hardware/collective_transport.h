// The settings of an all-reduce job: Horovod's presets (fusion buffer, cycle time) and the
// transports its collectives run over (NCCL's socket or RDMA transport, MPI, Gloo), each with the
// per-step latencies its library's own cost model uses. Every constant's source is in
// collective_transport.cpp and docs/allreduce.md.
#pragma once

#include <string>
#include <vector>

namespace replisim::core {

// The all-reduce algorithms by name (CollectiveSpec::algorithm in core/plan/plan.h; programs in
// core/runtime/collectives.h): "ring", "tree", "hierarchical".
const std::vector<std::string>& collective_algorithm_names();
bool is_collective_algorithm(const std::string& name);

// Horovod's tensor fusion and background cycle.
struct CollectivePreset {
  std::string name;
  double fusion_threshold_bytes = 0;  // HOROVOD_FUSION_THRESHOLD
  double cycle_time_s = 0;            // HOROVOD_CYCLE_TIME
};
// "horovod_0.x" (64 MiB, 5 ms) and "horovod" (128 MiB, 1 ms); null for another name.
const CollectivePreset* find_collective_preset(const std::string& name);
std::vector<std::string> collective_preset_names();

// What one step of an algorithm costs before its bytes, by transport, on top of what any message
// costs on the platform (its route's latency; with kernel_tcp, the cluster transport's
// per-message overhead).
struct CollectiveTransport {
  std::string name;
  double step_latency_s = 0;        // one step between ranks on different machines
  double local_step_latency_s = 0;  // one step between ranks of one machine
  double launch_s = 0;              // once per collective
  // Whether the bytes cross the kernel's TCP stack (the platform transport's per-message costs
  // then apply); false for RDMA.
  bool kernel_tcp = true;
};
// "nccl_socket", "nccl_rdma", "mpi", "gloo"; null for another name.
const CollectiveTransport* find_collective_transport(const std::string& name);
std::vector<std::string> collective_transport_names();

}  // namespace replisim::core
