// One TCP connection carrying frames (frame.h), on standalone Asio: a read loop that reads each
// header, checks it, then reads the payload in place (a tensor chunk straight into its tensor's
// buffer), and a write queue that sends header and payload of several frames in one
// scatter/gather write. Once the handshake is done, every frame carries a MAC each way
// (frame_mac.h), checked before the frame is delivered. Single-threaded: every call and callback on
// the io_context's thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "real/transport/frame.h"
#include "real/transport/frame_mac.h"

namespace replisim::real {

using Clock = std::chrono::steady_clock;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // A whole frame: `payload` holds header.length bytes (for a tensor chunk, in the place
    // tensor_destination gave). May throw FrameError: the connection then fails with it.
    virtual void on_frame(Connection& connection, const FrameHeader& header,
                          const uint8_t* payload) = 0;
    // Where a tensor chunk's header.length bytes go; nullptr: a scratch buffer. May throw
    // FrameError (a chunk that no tensor expects).
    virtual uint8_t* tensor_destination(Connection& connection, const FrameHeader& header) = 0;
    // The connection broke (end of stream, a socket error, a bad frame): why, in words. Called
    // once, after which the connection is closed; not called after close().
    virtual void on_failure(Connection& connection, const std::string& why) = 0;
  };

  // Takes the connected socket; sets TCP_NODELAY. `handler` must outlive the connection or be
  // replaced with set_handler first.
  Connection(asio::ip::tcp::socket socket, Handler* handler);
  void set_handler(Handler* handler) { handler_ = handler; }
  // Payloads above this are refused before they are read (the handshake allows a few bytes;
  // an authenticated peer up to kMaxFramePayloadBytes).
  void set_max_payload(uint32_t bytes) { max_payload_ = bytes; }
  // TCP congestion control for this connection (TCP_CONGESTION, e.g. "cubic"); false when the
  // kernel does not offer it (the system default then stays).
  bool set_congestion_control(const std::string& name);
  void start();
  // From now on, frames sent carry a MAC under keys.send and frames read must carry one under
  // keys.receive (a frame whose MAC does not match fails the connection). Called by each side
  // when its handshake is done: after the listener queued its acceptance, when the dialer read it.
  void enable_macs(const FrameKeys& keys);

  // Queues a frame (header.length is set to `size`). The `size` bytes at `data` must stay valid
  // and unchanged until written: `keep` owns them until then. `written` runs once they are.
  void send(FrameHeader header, const uint8_t* data, size_t size,
            std::shared_ptr<const void> keep = {}, std::function<void()> written = {});
  // Copies the payload.
  void send(const FrameHeader& header, const std::string& payload);
  // Closes the socket; queued frames are dropped; no callback follows.
  void close();
  bool closed() const { return closed_; }

  // Frames sent and read, and when the last byte was read or written.
  Clock::time_point last_read() const { return last_read_; }
  Clock::time_point last_write() const { return last_write_; }
  bool writing() const { return writing_; }
  size_t queued_frames() const { return queue_.size(); }
  // The peer's address as "host:port" ("?" once the socket is gone).
  const std::string& remote() const { return remote_; }

  // Set by the owner: which task and slot this connection serves (-1 until the handshake).
  int64_t peer = -1;
  int slot = 0;
  // The peer said it stops (a stop or error frame came on this connection): its end of stream
  // that follows is no failure.
  bool peer_stopping = false;

 private:
  struct Pending {
    std::array<uint8_t, kFrameHeaderBytes> header;
    const uint8_t* data;
    size_t size;
    std::shared_ptr<const void> keep;
    std::function<void()> written;
    bool has_mac = false;
    FrameMacBytes mac{};
  };
  // Whether a read ended the connection (closed, or failed: then fail() was called); otherwise
  // notes when it read. `inside_frame`: a payload or MAC was due.
  bool read_failed(const asio::error_code& ec, bool inside_frame);
  void read_header();
  void read_payload(size_t offset);
  // The frame's payload is in: its MAC next when MACs are on, else deliver().
  void payload_read();
  void read_mac();
  void deliver();
  void write_more();
  void fail(const std::string& why);

  asio::ip::tcp::socket socket_;
  Handler* handler_;
  std::string remote_;
  uint32_t max_payload_ = 1024;
  std::array<uint8_t, kFrameHeaderBytes> header_bytes_{};
  FrameHeader header_;
  ChunkOrder order_;
  uint8_t* destination_ = nullptr;
  std::unique_ptr<FrameMac> send_mac_, receive_mac_;
  FrameMacBytes mac_bytes_{};
  std::vector<uint8_t> scratch_;
  std::deque<Pending> queue_;
  size_t in_flight_ = 0;  // frames of the queue's front in the current write
  bool writing_ = false;
  bool closed_ = false;
  Clock::time_point last_read_, last_write_;
};

}  // namespace replisim::real
