#include "real/transport/frame.h"

#include <cmath>
#include <cstring>

namespace replisim::real {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'S', 'F', 'R'};

void put(uint8_t* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = uint8_t(value >> (8 * i));
}
uint64_t get(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

}  // namespace

bool is_transport_frame(FrameType type) {
  switch (type) {
    case FrameType::kHello:
    case FrameType::kHelloReply:
    case FrameType::kAuth:
    case FrameType::kAuthOk:
    case FrameType::kHeartbeat:
    case FrameType::kTensor:
    case FrameType::kStop:
    case FrameType::kError:
      return true;
  }
  return false;
}

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return "hello";
    case FrameType::kHelloReply:
      return "hello reply";
    case FrameType::kAuth:
      return "auth";
    case FrameType::kAuthOk:
      return "auth ok";
    case FrameType::kHeartbeat:
      return "heartbeat";
    case FrameType::kTensor:
      return "tensor";
    case FrameType::kStop:
      return "stop";
    case FrameType::kError:
      return "error";
  }
  return "application";
}

// Layout: magic 0..4, version 4..6, type 6..8, source 8..12, destination 12..16, step 16..24,
// tensor 24..32, chunk 32..36, chunks 36..40, length 40..44, time_s 44..52.
void encode_header(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
  std::memcpy(out, kMagic, 4);
  put(out + 4, kProtocolVersion, 2);
  put(out + 6, uint16_t(h.type), 2);
  put(out + 8, h.source, 4);
  put(out + 12, h.destination, 4);
  put(out + 16, uint64_t(h.step), 8);
  put(out + 24, h.tensor, 8);
  put(out + 32, h.chunk, 4);
  put(out + 36, h.chunks, 4);
  put(out + 40, h.length, 4);
  uint64_t bits = 0;
  std::memcpy(&bits, &h.time_s, 8);
  put(out + 44, bits, 8);
}

FrameHeader decode_header(const uint8_t* in) {
  if (std::memcmp(in, kMagic, 4) != 0) throw FrameError("not a replisim frame (bad magic)");
  const uint16_t version = uint16_t(get(in + 4, 2));
  if (version != kProtocolVersion) {
    throw FrameError("protocol version " + std::to_string(version) + ", this replisim speaks " +
                     std::to_string(kProtocolVersion));
  }
  FrameHeader h;
  const uint16_t type = uint16_t(get(in + 6, 2));
  if (type < uint16_t(FrameType::kHello) || type > kLastFrameType) {
    throw FrameError("unknown frame type " + std::to_string(type));
  }
  h.type = FrameType(type);
  h.source = uint32_t(get(in + 8, 4));
  h.destination = uint32_t(get(in + 12, 4));
  h.step = int64_t(get(in + 16, 8));
  h.tensor = get(in + 24, 8);
  h.chunk = uint32_t(get(in + 32, 4));
  h.chunks = uint32_t(get(in + 36, 4));
  h.length = uint32_t(get(in + 40, 4));
  const uint64_t bits = get(in + 44, 8);
  std::memcpy(&h.time_s, &bits, 8);
  if (h.source >= kMaxTasks || h.destination >= kMaxTasks) throw FrameError("task out of range");
  if (h.step < -1) throw FrameError("step below -1");
  if (h.chunks == 0 || h.chunk >= h.chunks) {
    throw FrameError("chunk " + std::to_string(h.chunk) + " of " + std::to_string(h.chunks));
  }
  if (h.type != FrameType::kTensor && is_transport_frame(h.type) && h.chunks != 1) {
    throw FrameError("chunks in a non-tensor frame");
  }
  if (h.length > kMaxFramePayloadBytes) {
    throw FrameError("frame of " + std::to_string(h.length) + " bytes above the limit of " +
                     std::to_string(kMaxFramePayloadBytes));
  }
  if (!std::isfinite(h.time_s)) throw FrameError("time not finite");
  return h;
}

void ChunkOrder::check(const FrameHeader& h) {
  if (h.type != FrameType::kTensor) return;
  const auto key = std::make_tuple(h.source, h.step, h.tensor);
  auto found = next_chunk_.find(key);
  const uint32_t expected = found == next_chunk_.end() ? 0 : found->second.first;
  if (h.chunk != expected) {
    throw FrameError("chunk " + std::to_string(h.chunk) + " of tensor " + std::to_string(h.tensor) +
                     " at step " + std::to_string(h.step) + " where chunk " +
                     std::to_string(expected) + " was due");
  }
  if (found != next_chunk_.end() && found->second.second != h.chunks) {
    throw FrameError("a tensor's chunk count changed from " + std::to_string(found->second.second) +
                     " to " + std::to_string(h.chunks));
  }
  if (h.chunk + 1 == h.chunks) {
    if (found != next_chunk_.end()) next_chunk_.erase(found);
    return;
  }
  if (next_chunk_.size() >= 4096 && found == next_chunk_.end()) {
    throw FrameError("more than 4096 tensors in progress on one connection");
  }
  next_chunk_[key] = {h.chunk + 1, h.chunks};
}

void FrameAssembler::feed(const uint8_t* data, size_t size) {
  buffer_.insert(buffer_.end(), data, data + size);
  size_t at = 0;
  while (buffer_.size() - at >= kFrameHeaderBytes) {
    const FrameHeader h = decode_header(buffer_.data() + at);
    if (buffer_.size() - at - kFrameHeaderBytes < h.length) break;
    order_.check(h);
    on_frame_(h, buffer_.data() + at + kFrameHeaderBytes);
    at += kFrameHeaderBytes + h.length;
  }
  buffer_.erase(buffer_.begin(), buffer_.begin() + long(at));
}

}  // namespace replisim::real
