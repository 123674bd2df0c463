// The vocabulary of hardware below every input format: device kinds, device names
// ("<machine>/cpu", "<machine>/gpu<i>") and the network models a platform can be simulated with.
// Scenarios, plans, traces and both backends use these; none of them needs the scenario parser.
#pragma once

#include <string>

namespace replisim::core {

enum class DeviceKind { kCpu, kGpu };
const char* device_kind_name(DeviceKind kind);  // "cpu", "gpu"

// A device by name: "<machine>/cpu" or "<machine>/gpu<i>".
struct DeviceRef {
  std::string machine;
  DeviceKind kind = DeviceKind::kCpu;
  int gpu_index = 0;  // meaningful for kGpu only

  std::string str() const;
  bool operator==(const DeviceRef& other) const {
    return machine == other.machine && kind == other.kind &&
           (kind == DeviceKind::kCpu || gpu_index == other.gpu_index);
  }
};

// Parses "<machine>/cpu" or "<machine>/gpu<i>" (i without a sign, at most 6 digits) without
// checking that the device exists. Returns false, leaving `out` as it was, for any other form.
bool parse_device_ref(const std::string& text, DeviceRef* out);

// Transfer model used by the simulator (docs/scenario-format.md, "network_model").
enum class NetworkModel {
  kLv08,   // SimGrid's default TCP model (latency x13.01, bandwidth x0.97 between machines;
           // cross-traffic)
  kIdeal,  // bytes / bandwidth + latency exactly: CM02, no cross-traffic, no TCP window bound
};
const char* network_model_name(NetworkModel model);  // "lv08", "ideal"

// Most ops one device runs at once (a CPU's cores): far beyond any real machine.
inline constexpr int kMaxDeviceCores = 4096;

}  // namespace replisim::core
