// The simulated hardware as plain data: machines, devices (CPU, GPUs), links (NICs, PCIe, the
// switch) and the route between any two devices. Shared by the plan, both backends and metrics.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware/device.h"
#include "core/hardware/transport.h"

namespace replisim::core {

struct PlatformDevice {
  std::string name;  // "<machine>/cpu" or "<machine>/gpu<i>"
  int machine = -1;  // index into Platform::machines
  DeviceKind kind = DeviceKind::kCpu;
  double speed_flop_per_s = 0;  // one core's (a GPU: the device's)
  int cores = 1;                // ops it runs at once (CPUs: cpu.cores; GPUs: 1, one stream)
  int pcie_link = -1;       // GPUs: index of the PCIe link to the host; CPUs: -1 (on the host bus)
  double memory_bytes = 0;  // GPUs: capacity when given in the scenario; 0 = unknown
};

// A link. Split-duplex links (NICs, PCIe) have independent "up" and "down" directions of
// `bandwidth_bytes_per_s` each; the switch is one shared link for every flow crossing it.
struct PlatformLink {
  std::string name;  // "<machine>/nic", "<machine>/pcie/gpu<i>", "switch"
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  bool split_duplex = true;
};

struct PlatformMachine {
  std::string name;
  int nic_link = -1;
  std::vector<int> devices;  // the CPU first, then GPUs in index order
};

enum class LinkDirection { kUp, kDown, kShared };

// One hop of a route: a link crossed in one direction. "Up" is away from a device toward the
// switch (GPU -> host for PCIe, machine -> switch for a NIC).
struct Hop {
  int link = -1;
  LinkDirection direction = LinkDirection::kShared;
};

struct Platform {
  std::vector<PlatformMachine> machines;
  std::vector<PlatformDevice> devices;
  std::vector<PlatformLink> links;
  int switch_link = -1;
  NetworkModel network_model = NetworkModel::kLv08;
  Transport transport;  // between machines

  // Index of the device called `name`, or -1.
  int find_device(const std::string& name) const;
  int find_device(const DeviceRef& ref) const { return find_device(ref.str()); }
  int cpu_of_machine(int machine) const { return machines[size_t(machine)].devices.front(); }

  // Links crossed from `src` to `dst` (device indices, src != dst): the source's PCIe up (GPU),
  // then, between machines, the source NIC up, the switch and the destination NIC down, then the
  // destination's PCIe down (GPU). Same device: empty.
  std::vector<Hop> route(int src, int dst) const;
  // The links a tensor from `src` to `dst` crosses: route(src, dst), and on one GPU (two
  // processes there, Transport::between_processes) its PCIe link up and down, through host
  // memory where the processes exchange it.
  std::vector<Hop> transfer_route(int src, int dst) const;
  // Sum of hop latencies and minimum hop bandwidth of route(src, dst) (the closed forms' L and B).
  double route_latency_s(int src, int dst) const;
  double route_bandwidth_bytes_per_s(int src, int dst) const;

  // Directed link resources ("channels") used by utilisation metrics: split-duplex link i has
  // channels 2i (up) and 2i+1 (down); a shared link has channel 2i only.
  int channel_of(const Hop& hop) const;
  int channel_count() const { return int(links.size()) * 2; }
  bool channel_exists(int channel) const;
  // "<machine>/nic/up", "<machine>/pcie/gpu0/down", "switch".
  std::string channel_name(int channel) const;
  double channel_bandwidth_bytes_per_s(int channel) const;
};

nlohmann::json platform_to_json(const Platform& platform);
// Throws InputError naming `file` and the JSON path on a malformed platform.
Platform platform_from_json(const nlohmann::json& j, const std::string& file,
                            const std::string& path);

}  // namespace replisim::core
