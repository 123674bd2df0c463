// What the topology view draws of one run, at any time of its clock: the cluster from the
// trace's platform (machines, their CPU and GPUs, the roles on each, PS marked; NIC, switch and
// PCIe links), each link direction's utilisation then, and the tensors in flight with how far
// along their route each is. No Qt type; read-only after construction.
#pragma once

#include <string>
#include <vector>

#include "core/hardware/platform.h"
#include "core/trace/trace.h"

namespace replisim::gui {

struct TopologyDevice {
  int device = -1;   // index into Platform::devices
  std::string name;  // "pc1/gpu0"
  core::DeviceKind kind = core::DeviceKind::kCpu;
  std::vector<std::string> roles;  // the roles placed there ("ps0", "worker1"), as in the trace
  bool parameter_server = false;   // a PS role is among them
};

struct TopologyMachine {
  std::string name;
  int nic_link = -1;                    // index into Platform::links
  std::vector<TopologyDevice> devices;  // the CPU first, then the GPUs
};

// What a tensor crossing the network carries, for its dot's colour: a variable's value (PS to
// worker), a gradient (worker to PS, or between towers), anything else (tokens, activations).
enum class TensorRole { kParameter, kGradient, kOther };

// A transfer under way at some time: `progress` in [0, 1) of its duration (each tensor moves at
// its mean rate, as the timeline's link tracks assume).
struct TransferInFlight {
  size_t event = 0;  // index into Trace::events
  int src_device = -1, dst_device = -1;
  std::vector<core::Hop> route;  // Platform::transfer_route
  double bytes = 0;
  double progress = 0;
  TensorRole tensor = TensorRole::kOther;
};

// Every link direction's state at one time.
struct TopologyState {
  double time_s = 0;
  // Per channel (Platform::channel_of): the summed mean rates of the transfers crossing it at
  // time_s over its bandwidth; may pass 1 a little where a fair share fell below a transfer's
  // mean rate. 0 for a channel that does not exist.
  std::vector<double> channel_utilisation;
  std::vector<TransferInFlight> in_flight;  // by start time
  // The busier direction of `link` (a shared link: its one channel).
  double link_utilisation(const core::Platform& platform, int link) const;
};

class TopologyModel {
 public:
  // Reads the platform, the roles and the transfers of `trace` (which must outlive the model).
  // A trace without a platform (a Chrome trace read back) gives a model with no machines.
  explicit TopologyModel(const core::Trace& trace);

  const core::Trace& trace() const { return *trace_; }
  const core::Platform& platform() const { return trace_->meta.platform; }
  const std::vector<TopologyMachine>& machines() const { return machines_; }
  // The run's strategy ("in_graph"), "" when the trace does not say.
  const std::string& strategy() const { return trace_->meta.strategy; }
  // The last transfer's end (0 without transfers).
  double transfers_end_s() const { return transfers_end_s_; }
  size_t transfer_count() const { return transfers_.size(); }

  // The state at `time_s`: a transfer is in flight over [start_s, end_s). Costs a binary search
  // and a scan over the transfers that started within the longest transfer's duration before.
  TopologyState state_at(double time_s) const;

 private:
  struct Transfer {
    size_t event;
    int src, dst;
    std::vector<core::Hop> route;
    double start_s, end_s, bytes;
    TensorRole tensor;
  };

  const core::Trace* trace_;
  std::vector<TopologyMachine> machines_;
  std::vector<Transfer> transfers_;  // by start
  double longest_s_ = 0;
  double transfers_end_s_ = 0;
};

}  // namespace replisim::gui
