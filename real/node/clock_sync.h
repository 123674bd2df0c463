// Every task's clock against the coordinator's (NTP's estimate: a few ping-pongs, the one with
// the lowest round trip kept; the coordinator's clock read half-way through it), then READY to
// the coordinator with the offset and its uncertainty. One part of a task's runtime (internal to
// real/node/): it owns the exchange's state and the frames kPing and kPong (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "real/node/frame_router.h"
#include "real/transport/mesh.h"

namespace replisim::real::detail {

class ClockSync {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual Mesh& mesh() = 0;
    virtual double clock_s() const = 0;  // this machine's monotonic clock
    virtual bool stopping() const = 0;   // the node stops: frames of the exchange are ignored
  };

  ClockSync(Host& host, uint32_t self, uint32_t coordinator)
      : host_(host), self_(self), coordinator_(coordinator) {}
  void own_frames(FrameRouter& router);

  // A task other than the coordinator, once connected: starts the exchange; READY follows it.
  void estimate();
  // The coordinator's clock minus this machine's (s), and half the round trip it was read over.
  double offset_s() const { return offset_s_; }
  double uncertainty_s() const { return uncertainty_s_; }

  static constexpr int kPings = 8;  // ping-pongs per task; the lowest round trip is kept

 private:
  void send(FrameType type, const std::string& payload, double time_s = 0);
  void on_pong(const uint8_t* payload, size_t size, double coordinator_clock_s);

  Host& host_;
  uint32_t self_;
  uint32_t coordinator_;
  double offset_s_ = 0;  // coordinator = this + offset
  double uncertainty_s_ = 0;
  int pings_left_ = 0;
  double best_rtt_s_ = std::numeric_limits<double>::infinity();
};

}  // namespace replisim::real::detail
