// A device's memory for the values a real run keeps on a GPU (issue 44's "values on the device"):
// tensors allocated once for the run and reused every step, host <-> device copies through pinned
// staging buffers on one stream per direction, copies within a device and between two devices of
// one machine, and the BLAS-1 updates (axpy, scal) an SGD apply and a gradient mean are made of.
// Two implementations: the CUDA device's (gpu_cuda.cpp, GpuDevice::memory) and a stand-in in host
// memory (StandInMemory) that a plan's GPU without a CUDA device uses, so that the same calls,
// in the same order, run and are checked on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace replisim::real {

// A tensor in a device's memory: an index into its DeviceMemory's allocations (-1: none) and its
// size in bytes. Plain value; valid for the DeviceMemory's lifetime.
struct DeviceTensor {
  int id = -1;
  size_t bytes = 0;
  explicit operator bool() const { return id >= 0; }
};

// What one DeviceMemory did so far (the run's report prints it per device).
struct DeviceMemoryCounts {
  int64_t allocations = 0;
  double allocated_bytes = 0;
  int64_t uploads = 0;  // host -> device
  double upload_bytes = 0;
  int64_t downloads = 0;  // device -> host
  double download_bytes = 0;
  int64_t peer_copies = 0;  // from another device of this machine into this one
  double peer_bytes = 0;
  int64_t device_copies = 0;  // within this device
  int64_t updates = 0;        // axpy and scal calls
};

// One recorded call (StandInMemory records them all; a CUDA device when recording is on).
struct DeviceMemoryOp {
  enum Kind : uint8_t { kAllocate, kUpload, kDownload, kCopy, kPeerCopy, kAxpy, kScal };
  Kind kind = kAllocate;
  int tensor = -1;   // the tensor written (kDownload: read)
  int source = -1;   // kCopy, kPeerCopy, kAxpy: the tensor read
  size_t bytes = 0;  // bytes moved or allocated; kAxpy, kScal: 4 x elements
  bool operator==(const DeviceMemoryOp& o) const {
    return kind == o.kind && tensor == o.tensor && source == o.source && bytes == o.bytes;
  }
};

// A device's memory. Every call blocks until the device has done it (each copy waits for its
// stream), so that a value is in place when the caller's next op, on any thread, reads it. Any
// thread may call: uploads take turns through the upload direction's staging, downloads through
// the download direction's, and the rest (copies, axpy, scal: the compute stream) come from the
// device's engine thread. Calls that write the same tensor must not overlap (the step graph and
// the parameter store's per-variable lock order them). Errors (out of
// memory, a failed copy, a tensor out of range) throw std::runtime_error naming the device and
// the call. Floats are float32, in the host's byte order.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // `bytes` of device memory, zeroed, kept until this DeviceMemory goes.
  DeviceTensor allocate(size_t bytes);
  // host[0, bytes) into `to`'s first bytes through the upload direction's pinned buffer and stream.
  // bytes <= to.bytes.
  void upload(DeviceTensor to, const void* host, size_t bytes);
  // `from`'s first bytes into host[0, bytes) through the download direction's pinned buffer and
  // stream. bytes <= from.bytes.
  void download(DeviceTensor from, void* host, size_t bytes);
  // bytes from `from` + from_offset to `to` + to_offset, both on this device.
  void copy(DeviceTensor to, size_t to_offset, DeviceTensor from, size_t from_offset, size_t bytes);
  // `from` (a tensor of `source`, another device of this machine) into `to`'s first bytes: a peer
  // copy (cudaMemcpyPeer: direct where the pair allows peer access, else staged by the driver).
  void peer_copy(DeviceTensor to, DeviceMemory& source, DeviceTensor from, size_t bytes);
  // y[0, n) += alpha x[0, n) (cuBLAS saxpy), and y[0, n) *= alpha (sscal), in float32.
  void axpy(DeviceTensor y, float alpha, DeviceTensor x, size_t n);
  void scal(DeviceTensor y, float alpha, size_t n);

  // "pc1/gpu0 (stand-in)", "NVIDIA H100 (device 0)".
  virtual std::string name() const = 0;
  // Whether it is a real device's memory (false: the stand-in).
  virtual bool on_device() const = 0;

  DeviceMemoryCounts counts() const;
  // Records every call from now on (for tests: the op sequence of two memories compared).
  void record(bool on);
  std::vector<DeviceMemoryOp> recorded() const;

 protected:
  // The implementations' calls, after DeviceMemory has checked the tensors and sizes.
  virtual int do_allocate(size_t bytes) = 0;
  virtual void do_upload(int to, const void* host, size_t bytes) = 0;
  virtual void do_download(int from, void* host, size_t bytes) = 0;
  virtual void do_copy(int to, size_t to_offset, int from, size_t from_offset, size_t bytes) = 0;
  // `source` is of the same implementation (checked by the caller).
  virtual void do_peer_copy(int to, DeviceMemory& source, int from, size_t bytes) = 0;
  virtual void do_axpy(int y, float alpha, int x, size_t n) = 0;
  virtual void do_scal(int y, float alpha, size_t n) = 0;

 private:
  void note(DeviceMemoryOp op);
  void check_tensor(DeviceTensor t, size_t offset, size_t bytes, const char* call) const;
  mutable std::mutex mutex_;
  std::vector<size_t> sizes_;  // per tensor id
  DeviceMemoryCounts counts_;
  bool recording_ = false;
  std::vector<DeviceMemoryOp> recorded_;
};

// Host memory standing in for a device's: the same calls, each done with memcpy and plain loops.
class StandInMemory : public DeviceMemory {
 public:
  explicit StandInMemory(std::string device_name) : name_(std::move(device_name)) {}
  std::string name() const override { return name_ + " (stand-in)"; }
  bool on_device() const override { return false; }
  // A tensor's bytes (tests).
  const std::vector<uint8_t>& bytes(DeviceTensor t) const { return *buffers_.at(size_t(t.id)); }

 protected:
  int do_allocate(size_t bytes) override;
  void do_upload(int to, const void* host, size_t bytes) override;
  void do_download(int from, void* host, size_t bytes) override;
  void do_copy(int to, size_t to_offset, int from, size_t from_offset, size_t bytes) override;
  void do_peer_copy(int to, DeviceMemory& source, int from, size_t bytes) override;
  void do_axpy(int y, float alpha, int x, size_t n) override;
  void do_scal(int y, float alpha, size_t n) override;

 private:
  float* floats(int id) { return reinterpret_cast<float*>(buffers_[size_t(id)]->data()); }
  std::string name_;
  std::mutex mutex_;  // guards buffers_ (not the tensors' bytes: the step graph orders writers)
  std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers_;
};

// Fills `to`[0, n) floats with core::gradient_value's pattern for offset `start` (value i is
// (1 + (start + i) mod 8) / 64), on the device: the pattern's eight values from `table` (a tensor
// of 16 floats holding (1..8, 1..8) / 64, made by pattern_table), then doubling copies within the
// device (log2(n / 8) of them). No kernel, and exact in float32.
void fill_pattern(DeviceMemory& memory, DeviceTensor to, size_t n, DeviceTensor table,
                  uint64_t start);
// Allocates and uploads fill_pattern's table (once per device).
DeviceTensor pattern_table(DeviceMemory& memory);

}  // namespace replisim::real
