#include "real/node/clock_sync.h"

#include "real/node/payload.h"

namespace replisim::real::detail {

void ClockSync::own_frames(FrameRouter& router) {
  // The coordinator answers with its clock.
  router.own(channel::kPing, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (host_.stopping()) return;
    if (self_ != coordinator_) {
      throw FrameError(channel::name(h.type) + " frame sent to a task that is not the coordinator");
    }
    FrameHeader pong;
    pong.type = channel::kPong;
    pong.time_s = host_.clock_s();
    host_.mesh().send(peer, pong, std::string(reinterpret_cast<const char*>(payload), h.length));
  });
  router.own(channel::kPong, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (host_.stopping()) return;
    if (peer != coordinator_) {
      throw FrameError(channel::name(h.type) + " frame not from the coordinator");
    }
    on_pong(payload, h.length, h.time_s);
  });
}

void ClockSync::send(FrameType type, const std::string& payload, double time_s) {
  FrameHeader h;
  h.type = type;
  h.time_s = time_s;
  host_.mesh().send(coordinator_, h, payload);
}

void ClockSync::estimate() {
  pings_left_ = kPings;
  best_rtt_s_ = std::numeric_limits<double>::infinity();
  send(channel::kPing, pack_f64({host_.clock_s()}));
}

// NTP's estimate from one exchange: the coordinator's clock read half-way through the round trip.
void ClockSync::on_pong(const uint8_t* payload, size_t size, double coordinator_clock_s) {
  if (pings_left_ <= 0) throw FrameError("pong without a ping");
  const double sent_s = unpack_f64(payload, size, 0);
  const double back_s = host_.clock_s();
  const double rtt_s = back_s - sent_s;
  if (rtt_s < 0) throw FrameError("a pong for a ping not sent yet");
  if (rtt_s < best_rtt_s_) {
    best_rtt_s_ = rtt_s;
    offset_s_ = coordinator_clock_s - 0.5 * (sent_s + back_s);
    uncertainty_s_ = 0.5 * rtt_s;
  }
  if (--pings_left_ > 0) {
    send(channel::kPing, pack_f64({host_.clock_s()}));
    return;
  }
  send(channel::kReady, pack_f64({offset_s_, uncertainty_s_}));
}

}  // namespace replisim::real::detail
