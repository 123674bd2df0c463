#include "core/hardware/device.h"

#include <cstdlib>

namespace replisim::core {

const char* device_kind_name(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? "gpu" : "cpu";
}

std::string DeviceRef::str() const {
  return machine + (kind == DeviceKind::kCpu ? "/cpu" : "/gpu" + std::to_string(gpu_index));
}

bool parse_device_ref(const std::string& text, DeviceRef* out) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || text.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  DeviceRef ref;
  ref.machine = text.substr(0, slash);
  const std::string device = text.substr(slash + 1);
  if (device == "cpu") {
    ref.kind = DeviceKind::kCpu;
  } else if (device.size() > 3 && device.compare(0, 3, "gpu") == 0 &&
             device.find_first_not_of("0123456789", 3) == std::string::npos && device.size() <= 9) {
    ref.kind = DeviceKind::kGpu;
    ref.gpu_index = std::atoi(device.c_str() + 3);
  } else {
    return false;
  }
  *out = ref;
  return true;
}

const char* network_model_name(NetworkModel model) {
  return model == NetworkModel::kIdeal ? "ideal" : "lv08";
}

}  // namespace replisim::core
