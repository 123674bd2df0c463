#include "real/transport/connection.h"

#include <algorithm>
#include <limits>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace replisim::real {
namespace {

// A payload is read in pieces of at most this, so that a slow link still shows progress to the
// silence check between two pieces: 1 MiB.
constexpr size_t kReadPieceBytes = size_t(1) << 20;
// Frames gathered into one write, at most.
constexpr size_t kFramesPerWrite = 64;

// Asio's own completion conditions (transfer_all, transfer_exactly) hand the socket at most 64 KiB
// per read or write call (asio::default_max_transfer_size), so a 1 MiB frame costs 16 system calls
// and as many wake-ups at each end. This one lets every call take what the socket can.
struct WholeTransfer {
  size_t operator()(const asio::error_code& ec, size_t) const {
    return ec ? 0 : std::numeric_limits<int32_t>::max();
  }
};

std::string endpoint_text(const asio::ip::tcp::socket& socket) {
  asio::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "?";
  const std::string host = endpoint.address().to_string();
  return (endpoint.address().is_v6() ? "[" + host + "]" : host) + ":" +
         std::to_string(endpoint.port());
}

}  // namespace

Connection::Connection(asio::ip::tcp::socket socket, Handler* handler)
    : socket_(std::move(socket)), handler_(handler), remote_(endpoint_text(socket_)) {
  asio::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  last_read_ = last_write_ = Clock::now();
}

bool Connection::set_congestion_control(const std::string& name) {
  return ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CONGESTION, name.data(),
                      socklen_t(name.size())) == 0;
}

void Connection::start() {
  read_header();
}

void Connection::enable_macs(const FrameKeys& keys) {
  send_mac_ = std::make_unique<FrameMac>(keys.send);
  receive_mac_ = std::make_unique<FrameMac>(keys.receive);
}

bool Connection::read_failed(const asio::error_code& ec, bool inside_frame) {
  if (closed_) return true;
  if (ec) {
    fail(ec != asio::error::eof ? "connection lost: " + ec.message()
         : inside_frame         ? "closed the connection inside a frame"
                                : "closed the connection");
    return true;
  }
  last_read_ = Clock::now();
  return false;
}

void Connection::read_header() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(header_bytes_), WholeTransfer(),
                   [this, self](const asio::error_code& ec, size_t) {
                     if (read_failed(ec, false)) return;
                     try {
                       header_ = decode_header(header_bytes_.data());
                       if (header_.length > max_payload_) {
                         throw FrameError("a " + std::string(frame_type_name(header_.type)) +
                                          " frame of " + std::to_string(header_.length) +
                                          " bytes where at most " + std::to_string(max_payload_) +
                                          " are allowed now");
                       }
                       order_.check(header_);
                       destination_ = nullptr;
                       if (header_.type == FrameType::kTensor && header_.length > 0) {
                         destination_ = handler_->tensor_destination(*this, header_);
                       }
                       if (destination_ == nullptr) {
                         scratch_.resize(header_.length);
                         destination_ = scratch_.data();
                       }
                     } catch (const FrameError& e) {
                       fail(e.what());
                       return;
                     }
                     if (header_.length == 0) {
                       payload_read();
                     } else {
                       read_payload(0);
                     }
                   });
}

void Connection::read_payload(size_t offset) {
  auto self = shared_from_this();
  const size_t piece = std::min(kReadPieceBytes, size_t(header_.length) - offset);
  asio::async_read(socket_, asio::buffer(destination_ + offset, piece), WholeTransfer(),
                   [this, self, offset, piece](const asio::error_code& ec, size_t) {
                     if (read_failed(ec, true)) return;
                     if (offset + piece < header_.length) {
                       read_payload(offset + piece);
                     } else {
                       payload_read();
                     }
                   });
}

void Connection::payload_read() {
  if (receive_mac_) {
    read_mac();
  } else {
    deliver();
  }
}

void Connection::read_mac() {
  auto self = shared_from_this();
  asio::async_read(
      socket_, asio::buffer(mac_bytes_), WholeTransfer(),
      [this, self](const asio::error_code& ec, size_t) {
        if (read_failed(ec, true)) return;
        const FrameMacBytes expected =
            receive_mac_->next(header_bytes_.data(), destination_, header_.length);
        if (!same_mac(expected, mac_bytes_.data())) {
          fail("a " + std::string(frame_type_name(header_.type)) +
               " frame whose MAC does not match (altered, injected or replayed on the way)");
          return;
        }
        deliver();
      });
}

void Connection::deliver() {
  try {
    handler_->on_frame(*this, header_, destination_);
  } catch (const FrameError& e) {
    fail(e.what());
    return;
  }
  if (!closed_) read_header();
}

void Connection::send(FrameHeader header, const uint8_t* data, size_t size,
                      std::shared_ptr<const void> keep, std::function<void()> written) {
  if (closed_) return;
  header.length = uint32_t(size);
  Pending p;
  encode_header(header, p.header.data());
  if (send_mac_) {
    p.mac = send_mac_->next(p.header.data(), data, size);
    p.has_mac = true;
  }
  p.data = data;
  p.size = size;
  p.keep = std::move(keep);
  p.written = std::move(written);
  queue_.push_back(std::move(p));
  if (!writing_) write_more();
}

void Connection::send(const FrameHeader& header, const std::string& payload) {
  auto copy = std::make_shared<std::string>(payload);
  const auto* data = reinterpret_cast<const uint8_t*>(copy->data());
  send(header, data, copy->size(), copy);
}

void Connection::write_more() {
  if (queue_.empty() || closed_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  std::vector<asio::const_buffer> buffers;
  in_flight_ = std::min(queue_.size(), kFramesPerWrite);
  for (size_t i = 0; i < in_flight_; ++i) {
    buffers.emplace_back(queue_[i].header.data(), kFrameHeaderBytes);
    if (queue_[i].size > 0) buffers.emplace_back(queue_[i].data, queue_[i].size);
    if (queue_[i].has_mac) buffers.emplace_back(queue_[i].mac.data(), kFrameMacBytes);
  }
  auto self = shared_from_this();
  asio::async_write(socket_, buffers, WholeTransfer(),
                    [this, self](const asio::error_code& ec, size_t) {
                      if (closed_) return;
                      if (ec) {
                        fail("cannot send: " + ec.message());
                        return;
                      }
                      last_write_ = Clock::now();
                      std::vector<std::function<void()>> done;
                      for (size_t i = 0; i < in_flight_; ++i) {
                        if (queue_.front().written)
                          done.push_back(std::move(queue_.front().written));
                        queue_.pop_front();
                      }
                      in_flight_ = 0;
                      write_more();
                      for (auto& callback : done) callback();
                    });
}

void Connection::fail(const std::string& why) {
  if (closed_) return;
  close();
  handler_->on_failure(*this, why);
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  queue_.clear();
  writing_ = false;
}

}  // namespace replisim::real
