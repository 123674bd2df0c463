// Frames after the handshake carry a MAC (real/transport/frame_mac.h): a connection delivers the
// frames whose MAC matches, in sequence, and fails at an altered, injected or replayed one.
#include "real/transport/connection.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace replisim::real {
namespace {

struct Recorder : Connection::Handler {
  std::vector<std::string> payloads;
  std::string failure;
  void on_frame(Connection&, const FrameHeader& h, const uint8_t* payload) override {
    payloads.emplace_back(reinterpret_cast<const char*>(payload), h.length);
  }
  uint8_t* tensor_destination(Connection&, const FrameHeader&) override { return nullptr; }
  void on_failure(Connection&, const std::string& why) override { failure = why; }
};

FrameKey key_of(uint8_t fill) {
  FrameKey k{};
  k.fill(fill);
  return k;
}

FrameHeader frame(uint32_t length) {
  FrameHeader h;
  h.type = FrameType(21);  // an application channel: the transport carries it as it is
  h.source = 1;
  h.destination = 2;
  h.step = 7;
  h.length = length;
  return h;
}

// The wire bytes of a frame with its MAC from `mac` (the next number of its sequence).
std::string wire(FrameMac& mac, const std::string& payload) {
  uint8_t header[kFrameHeaderBytes];
  encode_header(frame(uint32_t(payload.size())), header);
  const FrameMacBytes m =
      mac.next(header, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  return std::string(reinterpret_cast<const char*>(header), kFrameHeaderBytes) + payload +
         std::string(reinterpret_cast<const char*>(m.data()), m.size());
}

// A connection on the accepting side of a loopback pair, with MACs on, and the raw other end.
struct MacPair {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  asio::ip::tcp::socket raw{io};
  Recorder recorder;
  std::shared_ptr<Connection> connection;

  MacPair() {
    raw.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket accepted(io);
    acceptor.accept(accepted);
    connection = std::make_shared<Connection>(std::move(accepted), &recorder);
    connection->set_max_payload(1024);
    connection->enable_macs({key_of(1), key_of(2)});  // it reads under key 2
    connection->start();
  }
  // Writes `bytes` from the raw end and lets the connection read them.
  void send_raw(const std::string& bytes) {
    asio::write(raw, asio::buffer(bytes));
    for (int i = 0; i < 50; ++i) io.run_for(std::chrono::milliseconds(2));
  }
};

TEST(FrameMacs, FramesWithTheirMacsAreDeliveredInSequence) {
  MacPair p;
  FrameMac mac(key_of(2));
  std::string bytes = wire(mac, "first");  // one at a time: their sequence numbers in order
  bytes += wire(mac, "");
  bytes += wire(mac, "third");
  p.send_raw(bytes);
  EXPECT_EQ(p.recorder.payloads, (std::vector<std::string>{"first", "", "third"}));
  EXPECT_EQ(p.recorder.failure, "");
}

TEST(FrameMacs, AnAlteredFrameFailsTheConnection) {
  MacPair p;
  FrameMac mac(key_of(2));
  std::string bytes = wire(mac, "tensor bytes");
  bytes[kFrameHeaderBytes + 3] ^= 0x20;  // one bit of the payload
  p.send_raw(bytes);
  EXPECT_TRUE(p.recorder.payloads.empty());
  EXPECT_NE(p.recorder.failure.find("MAC does not match"), std::string::npos) << p.recorder.failure;
}

TEST(FrameMacs, AReplayedOrForeignFrameFailsTheConnection) {
  MacPair replayed;
  FrameMac mac(key_of(2));
  const std::string once = wire(mac, "apply");
  replayed.send_raw(once + once);  // the same bytes again: checked as the next in sequence
  EXPECT_EQ(replayed.recorder.payloads, std::vector<std::string>{"apply"});
  EXPECT_NE(replayed.recorder.failure.find("MAC does not match"), std::string::npos);
  MacPair foreign;
  FrameMac other(key_of(1));  // the other direction's key
  foreign.send_raw(wire(other, "apply"));
  EXPECT_TRUE(foreign.recorder.payloads.empty());
  EXPECT_NE(foreign.recorder.failure.find("MAC does not match"), std::string::npos);
}

// A connection's own frames carry the MAC its peer checks: two connections with mirrored keys.
TEST(FrameMacs, TwoConnectionsWithMirroredKeysTalk) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  asio::ip::tcp::socket dialled(io), accepted(io);
  dialled.connect(acceptor.local_endpoint());
  acceptor.accept(accepted);
  Recorder a_side, b_side;
  auto a = std::make_shared<Connection>(std::move(dialled), &a_side);
  auto b = std::make_shared<Connection>(std::move(accepted), &b_side);
  a->enable_macs({key_of(7), key_of(9)});
  b->enable_macs({key_of(9), key_of(7)});
  a->start();
  b->start();
  a->send(frame(0), "from a");
  b->send(frame(0), "from b");
  a->send(frame(0), "again from a");
  for (int i = 0; i < 50; ++i) io.run_for(std::chrono::milliseconds(2));
  EXPECT_EQ(b_side.payloads, (std::vector<std::string>{"from a", "again from a"}));
  EXPECT_EQ(a_side.payloads, std::vector<std::string>{"from b"});
  EXPECT_EQ(a_side.failure + b_side.failure, "");
}

}  // namespace
}  // namespace replisim::real
