#include "real/compute/device_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace replisim::real {

DeviceTensor DeviceMemory::allocate(size_t bytes) {
  const int id = do_allocate(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (id != int(sizes_.size())) {
    throw std::logic_error(name() + ": allocation " + std::to_string(id) + " out of order");
  }
  sizes_.push_back(bytes);
  ++counts_.allocations;
  counts_.allocated_bytes += double(bytes);
  if (recording_) recorded_.push_back({DeviceMemoryOp::kAllocate, id, -1, bytes});
  return {id, bytes};
}

void DeviceMemory::check_tensor(DeviceTensor t, size_t offset, size_t bytes,
                                const char* call) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (t.id < 0 || size_t(t.id) >= sizes_.size()) {
    throw std::runtime_error(name() + ": " + call + " of tensor " + std::to_string(t.id) +
                             ", which was not allocated here");
  }
  if (offset > sizes_[size_t(t.id)] || bytes > sizes_[size_t(t.id)] - offset) {
    throw std::runtime_error(name() + ": " + call + " of " + std::to_string(bytes) + " bytes at " +
                             std::to_string(offset) + " of a tensor of " +
                             std::to_string(sizes_[size_t(t.id)]));
  }
}

void DeviceMemory::note(DeviceMemoryOp op) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (op.kind) {
    case DeviceMemoryOp::kAllocate:
      break;
    case DeviceMemoryOp::kUpload:
      ++counts_.uploads;
      counts_.upload_bytes += double(op.bytes);
      break;
    case DeviceMemoryOp::kDownload:
      ++counts_.downloads;
      counts_.download_bytes += double(op.bytes);
      break;
    case DeviceMemoryOp::kCopy:
      ++counts_.device_copies;
      break;
    case DeviceMemoryOp::kPeerCopy:
      ++counts_.peer_copies;
      counts_.peer_bytes += double(op.bytes);
      break;
    case DeviceMemoryOp::kAxpy:
    case DeviceMemoryOp::kScal:
      ++counts_.updates;
      break;
  }
  if (recording_) recorded_.push_back(op);
}

void DeviceMemory::upload(DeviceTensor to, const void* host, size_t bytes) {
  check_tensor(to, 0, bytes, "upload");
  if (bytes > 0) do_upload(to.id, host, bytes);
  note({DeviceMemoryOp::kUpload, to.id, -1, bytes});
}

void DeviceMemory::download(DeviceTensor from, void* host, size_t bytes) {
  check_tensor(from, 0, bytes, "download");
  if (bytes > 0) do_download(from.id, host, bytes);
  note({DeviceMemoryOp::kDownload, from.id, -1, bytes});
}

void DeviceMemory::copy(DeviceTensor to, size_t to_offset, DeviceTensor from, size_t from_offset,
                        size_t bytes) {
  check_tensor(to, to_offset, bytes, "copy");
  check_tensor(from, from_offset, bytes, "copy");
  if (bytes > 0) do_copy(to.id, to_offset, from.id, from_offset, bytes);
  note({DeviceMemoryOp::kCopy, to.id, from.id, bytes});
}

void DeviceMemory::peer_copy(DeviceTensor to, DeviceMemory& source, DeviceTensor from,
                             size_t bytes) {
  check_tensor(to, 0, bytes, "peer copy");
  source.check_tensor(from, 0, bytes, "peer copy");
  if (source.on_device() != on_device()) {
    throw std::runtime_error(name() + ": a peer copy from " + source.name() +
                             ", which is not the same kind of memory");
  }
  if (bytes > 0) do_peer_copy(to.id, source, from.id, bytes);
  note({DeviceMemoryOp::kPeerCopy, to.id, from.id, bytes});
}

void DeviceMemory::axpy(DeviceTensor y, float alpha, DeviceTensor x, size_t n) {
  check_tensor(y, 0, 4 * n, "axpy");
  check_tensor(x, 0, 4 * n, "axpy");
  if (n > 0) do_axpy(y.id, alpha, x.id, n);
  note({DeviceMemoryOp::kAxpy, y.id, x.id, 4 * n});
}

void DeviceMemory::scal(DeviceTensor y, float alpha, size_t n) {
  check_tensor(y, 0, 4 * n, "scal");
  if (n > 0) do_scal(y.id, alpha, n);
  note({DeviceMemoryOp::kScal, y.id, -1, 4 * n});
}

DeviceMemoryCounts DeviceMemory::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void DeviceMemory::record(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = on;
}

std::vector<DeviceMemoryOp> DeviceMemory::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_;
}

// StandInMemory

int StandInMemory::do_allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.push_back(std::make_unique<std::vector<uint8_t>>(bytes, uint8_t(0)));
  return int(buffers_.size()) - 1;
}

void StandInMemory::do_upload(int to, const void* host, size_t bytes) {
  std::memcpy(buffers_[size_t(to)]->data(), host, bytes);
}

void StandInMemory::do_download(int from, void* host, size_t bytes) {
  std::memcpy(host, buffers_[size_t(from)]->data(), bytes);
}

void StandInMemory::do_copy(int to, size_t to_offset, int from, size_t from_offset, size_t bytes) {
  std::memmove(buffers_[size_t(to)]->data() + to_offset,
               buffers_[size_t(from)]->data() + from_offset, bytes);
}

void StandInMemory::do_peer_copy(int to, DeviceMemory& source, int from, size_t bytes) {
  const auto& from_bytes = static_cast<StandInMemory&>(source).bytes({from, bytes});
  std::memcpy(buffers_[size_t(to)]->data(), from_bytes.data(), bytes);
}

void StandInMemory::do_axpy(int y, float alpha, int x, size_t n) {
  float* out = floats(y);
  const float* in = floats(x);
  for (size_t i = 0; i < n; ++i) out[i] += alpha * in[i];
}

void StandInMemory::do_scal(int y, float alpha, size_t n) {
  float* out = floats(y);
  for (size_t i = 0; i < n; ++i) out[i] *= alpha;
}

// The pattern

DeviceTensor pattern_table(DeviceMemory& memory) {
  float table[16];
  for (int i = 0; i < 16; ++i) table[i] = float(1 + i % 8) / 64.0f;
  const DeviceTensor t = memory.allocate(sizeof(table));
  memory.upload(t, table, sizeof(table));
  return t;
}

void fill_pattern(DeviceMemory& memory, DeviceTensor to, size_t n, DeviceTensor table,
                  uint64_t start) {
  if (n == 0) return;
  const size_t first = std::min<size_t>(n, 8);
  memory.copy(to, 0, table, 4 * size_t(start % 8), 4 * first);
  // Period 8: [0, filled) holds whole periods from the start, so [filled, 2 filled) repeats it.
  for (size_t filled = first; filled < n; filled *= 2) {
    memory.copy(to, 4 * filled, to, 0, 4 * std::min(filled, n - filled));
  }
}

}  // namespace replisim::real
