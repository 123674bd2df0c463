// The wire format: headers round-trip, every bad field is refused, chunks must come in order.
#include "real/transport/frame.h"

#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace replisim::real {
namespace {

FrameHeader tensor_chunk(uint32_t chunk, uint32_t chunks, uint32_t length) {
  FrameHeader h;
  h.type = FrameType::kTensor;
  h.source = 3;
  h.destination = 7;
  h.step = 41;
  h.tensor = (uint64_t(2) << 32) | 17;
  h.chunk = chunk;
  h.chunks = chunks;
  h.length = length;
  h.time_s = 1.25;
  return h;
}

std::string bytes_of(const FrameHeader& h, const std::string& payload = "") {
  uint8_t out[kFrameHeaderBytes];
  encode_header(h, out);
  return std::string(reinterpret_cast<const char*>(out), kFrameHeaderBytes) + payload;
}

std::string decode_error(std::string bytes) {
  try {
    decode_header(reinterpret_cast<const uint8_t*>(bytes.data()));
  } catch (const FrameError& e) {
    return e.what();
  }
  return "";
}

TEST(Frame, HeaderRoundTripsLittleEndian) {
  const FrameHeader h = tensor_chunk(1, 3, 4096);
  const std::string b = bytes_of(h);
  ASSERT_EQ(b.size(), kFrameHeaderBytes);
  EXPECT_EQ(b.substr(0, 4), "RSFR");
  EXPECT_EQ(uint8_t(b[4]), kProtocolVersion);  // version, low byte first
  EXPECT_EQ(uint8_t(b[6]), uint8_t(FrameType::kTensor));
  EXPECT_EQ(uint8_t(b[8]), 3);
  EXPECT_EQ(uint8_t(b[28]), 2);  // the tensor id's high half: the graph
  const FrameHeader back = decode_header(reinterpret_cast<const uint8_t*>(b.data()));
  EXPECT_EQ(back.type, h.type);
  EXPECT_EQ(back.source, h.source);
  EXPECT_EQ(back.destination, h.destination);
  EXPECT_EQ(back.step, h.step);
  EXPECT_EQ(back.tensor, h.tensor);
  EXPECT_EQ(back.chunk, h.chunk);
  EXPECT_EQ(back.chunks, h.chunks);
  EXPECT_EQ(back.length, h.length);
  EXPECT_EQ(back.time_s, h.time_s);
}

TEST(Frame, BadHeadersAreRefusedWithTheReason) {
  auto patched = [](size_t offset, const std::string& with) {
    std::string b = bytes_of(tensor_chunk(0, 1, 10));
    b.replace(offset, with.size(), with);
    return decode_error(b);
  };
  auto has = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  has(patched(0, "XSFR"), "bad magic");
  has(patched(4, std::string("\x09\x00", 2)), "protocol version 9");
  has(patched(6, std::string("\x63\x00", 2)), "unknown frame type 99");
  has(patched(6, std::string("\x00\x00", 2)), "unknown frame type 0");
  has(patched(40, std::string("\x00\x00\x00\x02", 4)), "above the limit");
  has(patched(36, std::string("\x00\x00\x00\x00", 4)), "chunk 0 of 0");
  has(patched(32, std::string("\x05\x00\x00\x00", 4)), "chunk 5 of 1");
  has(patched(8, std::string("\xff\xff\xff\xff", 4)), "task out of range");
  has(patched(16, std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8)), "step below -1");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string bits(8, '\0');
  std::memcpy(bits.data(), &nan, 8);
  has(patched(44, bits), "time not finite");
  FrameHeader heartbeat;
  heartbeat.chunks = 2;
  has(decode_error(bytes_of(heartbeat)), "chunks in a non-tensor frame");
  has(patched(6, std::string("\x40\x00", 2)), "unknown frame type 64");  // past kLastFrameType
}

TEST(Frame, AnApplicationChannelPassesAsItIsChunksIncluded) {
  // Any type up to kLastFrameType that is no transport frame is the application's to name and
  // check (a real node's channels: real/node/channels.h); it may come in chunks.
  FrameHeader h;
  h.type = FrameType(kLastFrameType);
  h.chunk = 1;
  h.chunks = 3;
  const std::string b = bytes_of(h);
  const FrameHeader back = decode_header(reinterpret_cast<const uint8_t*>(b.data()));
  EXPECT_EQ(uint16_t(back.type), kLastFrameType);
  EXPECT_FALSE(is_transport_frame(back.type));
  EXPECT_STREQ(frame_type_name(back.type), "application");
  EXPECT_TRUE(is_transport_frame(FrameType::kTensor));
}

TEST(Frame, TheAssemblerCutsAStreamFedInAnyPiecesIntoFrames) {
  std::string stream = bytes_of(tensor_chunk(0, 2, 5), "hello") +
                       bytes_of(tensor_chunk(1, 2, 3), "abc") + bytes_of(FrameHeader{});
  std::mt19937 random(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> seen;
    FrameAssembler assembler([&](const FrameHeader& h, const uint8_t* payload) {
      seen.push_back(std::string(frame_type_name(h.type)) + ":" +
                     std::string(reinterpret_cast<const char*>(payload), h.length));
    });
    for (size_t at = 0; at < stream.size();) {
      const size_t piece = std::min<size_t>(1 + random() % 20, stream.size() - at);
      assembler.feed(reinterpret_cast<const uint8_t*>(stream.data() + at), piece);
      at += piece;
    }
    EXPECT_EQ(seen, std::vector<std::string>({"tensor:hello", "tensor:abc", "heartbeat:"}));
    EXPECT_EQ(assembler.pending(), 0u);
  }
}

TEST(Frame, ChunksOutOfOrderAreRefused) {
  auto feed = [](const std::vector<FrameHeader>& frames) -> std::string {
    FrameAssembler assembler([](const FrameHeader&, const uint8_t*) {});
    try {
      for (const FrameHeader& h : frames) {
        const std::string b = bytes_of(h, std::string(h.length, 'x'));
        assembler.feed(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      }
    } catch (const FrameError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(feed({tensor_chunk(0, 3, 1), tensor_chunk(1, 3, 1), tensor_chunk(2, 3, 1)}), "");
  EXPECT_NE(feed({tensor_chunk(1, 3, 1)}).find("chunk 1 of tensor"), std::string::npos);
  EXPECT_NE(feed({tensor_chunk(0, 3, 1), tensor_chunk(2, 3, 1)}).find("chunk 1 was due"),
            std::string::npos);
  EXPECT_NE(feed({tensor_chunk(0, 3, 1), tensor_chunk(1, 4, 1)}).find("chunk count changed"),
            std::string::npos);
  FrameHeader next_step = tensor_chunk(0, 2, 1);
  next_step.step = 42;  // another tensor: its own order
  EXPECT_EQ(feed({tensor_chunk(0, 2, 1), next_step, tensor_chunk(1, 2, 1)}), "");
}

}  // namespace
}  // namespace replisim::real
