// build_platform: the input format's cluster turned into the platform that plans, traces and
// backends share (core/hardware/platform.h), which knows nothing of scenarios.
#include "core/scenario/scenario.h"

namespace replisim::core {

Platform build_platform(const ClusterSpec& cluster) {
  Platform p;
  p.network_model = cluster.network_model;
  p.transport = cluster.transport;
  p.links.push_back(
      {"switch", cluster.switch_link.bandwidth_bytes_per_s, cluster.switch_link.latency_s, false});
  p.switch_link = 0;
  for (const MachineSpec& m : cluster.machines) {
    PlatformMachine machine;
    machine.name = m.name;
    const int machine_index = int(p.machines.size());
    machine.nic_link = int(p.links.size());
    p.links.push_back({m.name + "/nic", m.nic.bandwidth_bytes_per_s, m.nic.latency_s, true});
    machine.devices.push_back(int(p.devices.size()));
    p.devices.push_back({m.name + "/cpu", machine_index, DeviceKind::kCpu, m.cpu_speed_flop_per_s,
                         m.cpu_cores, -1});
    for (size_t g = 0; g < m.gpus.size(); ++g) {
      const std::string gpu_name = "gpu" + std::to_string(g);
      const int pcie = int(p.links.size());
      p.links.push_back(
          {m.name + "/pcie/" + gpu_name, m.pcie.bandwidth_bytes_per_s, m.pcie.latency_s, true});
      machine.devices.push_back(int(p.devices.size()));
      p.devices.push_back({m.name + "/" + gpu_name, machine_index, DeviceKind::kGpu,
                           m.gpus[g].speed_flop_per_s, 1, pcie, m.gpus[g].memory_bytes});
    }
    p.machines.push_back(std::move(machine));
  }
  return p;
}

}  // namespace replisim::core
