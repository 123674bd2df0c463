#include "core/hardware/collective_transport.h"

namespace replisim::core {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Horovod's defaults (horovod/common/operations.cc, HOROVOD_FUSION_THRESHOLD and
// HOROVOD_CYCLE_TIME): 64 MiB and 5 ms until PR #2468 (merged 2020-11-19), 128 MiB and 1 ms since.
const std::vector<CollectivePreset>& presets() {
  static const std::vector<CollectivePreset> kPresets = {
      {"horovod", 128 * kMiB, 1e-3},
      {"horovod_0.x", 64 * kMiB, 5e-3},
  };
  return kPresets;
}

// NCCL's tuner (src/graph/tuning.cc, NCCL 2.12 and later): per ring step, hwLat[NET][Ring][Simple]
// = 14 us between machines and hwLat[PCI][Ring][Simple] = 5.7 us inside one; baseLat[Ring][Simple]
// = 8.4 us once per collective. NCCL 2.7-2.11 gave 9.6 us for the network step. NCCL uses the same
// network latency for its socket and InfiniBand/RoCE transports; what differs is the kernel's TCP
// stack, which RDMA bypasses. MPI and Gloo over TCP have no latency table of their own here: a
// step costs what any message costs on the platform (the route's latency and the cluster
// transport's per-message overhead), which also applies to every transport's steps.
const std::vector<CollectiveTransport>& transports() {
  static const std::vector<CollectiveTransport> kTransports = {
      {"nccl_socket", 14e-6, 5.7e-6, 8.4e-6, true},
      {"nccl_rdma", 14e-6, 5.7e-6, 8.4e-6, false},
      {"mpi", 0, 0, 0, true},
      {"gloo", 0, 0, 0, true},
  };
  return kTransports;
}

}  // namespace

const std::vector<std::string>& collective_algorithm_names() {
  static const std::vector<std::string> kNames = {"ring", "tree", "hierarchical"};
  return kNames;
}

bool is_collective_algorithm(const std::string& name) {
  for (const std::string& n : collective_algorithm_names()) {
    if (n == name) return true;
  }
  return false;
}

const CollectivePreset* find_collective_preset(const std::string& name) {
  for (const CollectivePreset& p : presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> collective_preset_names() {
  std::vector<std::string> names;
  for (const CollectivePreset& p : presets()) names.push_back(p.name);
  return names;
}

const CollectiveTransport* find_collective_transport(const std::string& name) {
  for (const CollectiveTransport& t : transports()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> collective_transport_names() {
  std::vector<std::string> names;
  for (const CollectiveTransport& t : transports()) names.push_back(t.name);
  return names;
}

}  // namespace replisim::core
