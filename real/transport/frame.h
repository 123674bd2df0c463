// The real backend's wire format: versioned, little-endian frames of a fixed 52-byte header and a
// payload. Header: magic "RSFR", protocol version, type, source and destination task, step, tensor
// id, chunk index and count, payload length, and a time on the chief's clock. Tensors larger than
// a chunk travel as several frames, in order. Decoding trusts nothing: every field is checked
// before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace replisim::real {

// Version 2: restarts (restore, model queries), trace parts gathered by the coordinator.
// 3: the stop frames; 4: the dialer proves first, and frames after the handshake carry a MAC.
// (The application channels' split from the transport's frames kept version 4's numbers.)
inline constexpr uint16_t kProtocolVersion = 4;
inline constexpr size_t kFrameHeaderBytes = 52;
// Payloads above this are refused (a corrupt or hostile length): 16 MiB.
inline constexpr uint32_t kMaxFramePayloadBytes = uint32_t(16) << 20;
// Tensors are cut into chunks of this size by default: 1 MiB (as large as iperf3 writes; a
// tensor interleaves with others on a connection a chunk at a time).
inline constexpr uint32_t kDefaultChunkBytes = uint32_t(1) << 20;
// Tasks of one job, at most.
inline constexpr uint32_t kMaxTasks = uint32_t(1) << 20;

// The transport's own frames. Every other type up to kLastFrameType is an application channel:
// the transport carries it as it is (one frame, or chunks the application reassembles) and the
// application names and checks it (a real node: real/node/channels.h). The values are the wire's
// (protocol version 4 numbered transport frames and channels in one space; they keep it).
enum class FrameType : uint16_t {
  kHello = 1,       // handshake: the dialer's task and challenge
  kHelloReply = 2,  // handshake: the listener's challenge
  kAuth = 3,        // handshake: the dialer's plan hash and proof
  kAuthOk = 4,      // handshake: accepted; the listener's plan hash and proof
  kHeartbeat = 5,   // nothing else to send for a while
  kTensor = 11,     // bulk data in chunks, in order, each received in place
                    // (Mesh::Handler::tensor_destination); time_s = when the sender started it
  kStop = 16,       // the sender closes: its last frame on every connection (payload: its reason)
  kError = 17,      // the sender stops because of the error in the payload (also: a refusal)
};
inline constexpr uint16_t kLastFrameType = 63;
// Whether `type` is one of the transport's frames (not an application channel).
bool is_transport_frame(FrameType type);
// The transport frame's name ("hello", "tensor"); "application" for a channel.
const char* frame_type_name(FrameType type);

struct FrameHeader {
  FrameType type = FrameType::kHeartbeat;
  uint32_t source = 0;       // task index (cluster spec order)
  uint32_t destination = 0;  // task index
  int64_t step = -1;
  uint64_t tensor = 0;
  uint32_t chunk = 0;   // this frame's chunk of the tensor, from 0
  uint32_t chunks = 1;  // the tensor's chunk count (1 for every other frame)
  uint32_t length = 0;  // payload bytes that follow the header
  double time_s = 0;    // seconds on the chief's clock (0 when the type has none)
};

// A frame that breaks the protocol: why, in one line (the caller names the peer).
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes the header's 52 bytes.
void encode_header(const FrameHeader& header, uint8_t out[kFrameHeaderBytes]);

// Reads and checks 52 bytes: magic, version, a type from 1 to kLastFrameType, chunk < chunks,
// chunks >= 1 (more than one only for a tensor or an application channel), length at most
// kMaxFramePayloadBytes, a finite time, tasks below kMaxTasks. Throws FrameError.
FrameHeader decode_header(const uint8_t* data);

// The order of one connection's tensor chunks: each tensor's chunks come 0, 1, ..., chunks - 1,
// every one with the same chunk count. Throws FrameError for a chunk out of that order.
class ChunkOrder {
 public:
  void check(const FrameHeader& header);
  size_t open_tensors() const { return next_chunk_.size(); }

 private:
  // (source, step, tensor) -> the chunk expected next and the tensor's chunk count.
  std::map<std::tuple<uint32_t, int64_t, uint64_t>, std::pair<uint32_t, uint32_t>> next_chunk_;
};

// Cuts a byte stream into frames: feed it what the socket gave, in order, and it calls
// `on_frame` for each complete frame (header checked, chunks in order). Memory is bounded by one
// frame. Throws FrameError at the first bad header or out-of-order chunk (feed nothing more
// then). Connections read headers and payloads in place instead; this is the same checks over a
// buffer, for tests and the fuzzer.
class FrameAssembler {
 public:
  using OnFrame = std::function<void(const FrameHeader& header, const uint8_t* payload)>;
  explicit FrameAssembler(OnFrame on_frame) : on_frame_(std::move(on_frame)) {}
  void feed(const uint8_t* data, size_t size);
  // Bytes of a frame received but not complete yet.
  size_t pending() const { return buffer_.size(); }

 private:
  OnFrame on_frame_;
  std::vector<uint8_t> buffer_;
  ChunkOrder order_;
};

}  // namespace replisim::real
