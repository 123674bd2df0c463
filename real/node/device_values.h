// The values a task keeps in its devices' memories (internal to real/node/): for every op of this
// task on a device with a memory of its own (a CUDA device, or the stand-in of a plan's GPU that
// found none: DeviceEngine::memory), the tensors its values take there, allocated once when the
// engines open and reused every step, as TensorFlow's GPU device keeps a step's tensors in its
// allocator: a recv's tensor (uploaded when it arrives from another device), a backward op's
// gradients (made on the device), a send's source (downloaded when the tensor leaves), and, per
// device, the gradient pattern's table. Each such device also gets a thread per copy direction
// (its upload and download streams), so that copies overlap its compute.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/plan/plan.h"
#include "core/values/parameter_store.h"
#include "real/compute/cpu_engine.h"
#include "real/compute/device_memory.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class DeviceValues : public core::ValueHome {
 public:
  // `engine(d)`: device d's engine (outlives this); `gradient_floats(v)`: the floats of variable
  // v's gradient tensor. Allocates every tensor (throws std::runtime_error naming the device when
  // its memory cannot hold them).
  DeviceValues(const core::Plan& plan, const std::vector<Part>& parts,
               const std::function<DeviceEngine&(int)>& engine,
               const std::function<size_t(int)>& gradient_floats);
  ~DeviceValues() override;  // joins the copy threads (before the engines' memories go)

  // Places in their devices' memories (ParameterStore::place, this the home) the variables
  // `store` holds whose reads and applies this task runs on one device with a memory, under the
  // plan's "sgd" optimizer (momentum's and Adam's slots stay in host memory). Their tensors (the
  // value, and a gradient tensor for gradients that come from host memory) are allocated now.
  // Returns how many it placed.
  int place_variables(core::ParameterStore& store);
  // Placed variable v's SGD update, value -= rate x gradient (TF's ApplyGradientDescent), as an
  // axpy on its device, under the store's lock (apply_placed): the gradient is the device tensor
  // op `in` of graph g made or received on v's device, or else `host` (n floats; null: zeros)
  // uploaded first. On v's device's engine thread.
  void apply_variable(core::ParameterStore& store, int v, int g, int in, const core::Bytes* host,
                      size_t n, float rate);
  // Whether op `op` of graph g hands its output to an op that takes it in host memory.
  bool host_takes(int g, int op) const { return host_takes_[size_t(g)][size_t(op)]; }
  // core::ValueHome: a placed variable's value from and to its device.
  void load(int variable, float* values, size_t n) override;
  void store(int variable, const float* values, size_t n) override;

  // Device d keeps values in a memory of its own (null: no).
  DeviceMemory* memory(int device) const;
  // Its copy threads: uploads (and peer copies into it), downloads.
  DeviceEngine& uploads(int device) const;
  DeviceEngine& downloads(int device) const;

  // Backward op `op` of graph g made variable v's gradient at `step` on its device: the pattern
  // core::fill_gradient gives, made on the device (fill_pattern), or, with a training objective,
  // `host` (the proxy's gradient, computed on the host) uploaded. Returns the host copy that ops
  // on the host take (a download), or null when only compute and leaving sends take it. On the
  // device's engine thread.
  BufferPtr make_gradient(int g, int op, int v, int64_t step, const core::Bytes* host);
  // The tensor send op `send` of graph g takes leaves its device: its `bytes` (the plan's edge;
  // the tensor's own, zero-padded) downloaded into a new host buffer. On a download thread.
  BufferPtr download_sent(int g, int send, size_t bytes);
  // A tensor reached recv op `recv` of graph g on its device from another device: `data` uploaded
  // into the recv's tensor. On an upload thread.
  void upload_received(int g, int recv, const core::Bytes& data);
  // Send op `send`'s tensor into its recv's tensor on another device of this task (both with
  // memories): a peer copy. Returns the host copy ops on the host take from the recv, or null. On
  // the target's upload thread.
  BufferPtr peer_copy(int g, int send);
  // Whether send op `send` of graph g leaves a device with a memory (its source is there).
  bool sends_from_device(int g, int send) const;
  bool receives_on_device(int g, int recv) const;

  // Per device, what its memory did ("pc1/gpu0 (stand-in): 6 tensors (1.2 MB) allocated once;
  // 40 uploads (...), ... SGD updates on it (axpy)"), for the run's notes.
  std::vector<std::string> summaries() const;

 private:
  struct OnDevice {
    DeviceMemory* memory = nullptr;
    DeviceTensor pattern;
    std::unique_ptr<DeviceEngine> uploads, downloads;
  };
  // (graph, op, variable): variable -1: the op's output. A placed variable v: (-1, -1, v) its
  // value, (-1, -2, v) its gradient from host memory.
  using Key = std::tuple<int, int, int>;
  DeviceTensor tensor(const Key& key) const;
  // The device tensor of op `op` of graph g on `device` (its gradient of v, or its output), or
  // none.
  DeviceTensor device_tensor_of(int g, int op, int v, int device) const;
  // Whether every input of apply op `apply` hands its gradient of v in a device tensor there.
  bool device_gradient(int g, int apply, int v) const;
  DeviceTensor add(int device, const Key& key, size_t bytes);
  // Ops on the host (not compute on the device, not a send leaving it) take op's output.
  bool host_takes(const Part& p, int op) const;

  const core::Plan& plan_;
  const std::vector<Part>& parts_;
  std::function<DeviceEngine&(int)> engine_;
  std::map<int, OnDevice> devices_;
  std::map<Key, std::pair<int, DeviceTensor>> tensors_;  // key -> (device, tensor)
  std::map<std::pair<int, int>, Key> send_source_;       // (graph, send) -> its source's key
  std::map<int, int> placed_;                            // placed variable -> its device
  std::vector<std::vector<bool>> host_takes_;            // per graph, per op
};

}  // namespace replisim::real::detail
