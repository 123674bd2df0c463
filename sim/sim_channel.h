// The pipe between a simulation child and its parent (internal to sim/). The child writes frames
// — [u8 type][u32 length, little-endian][payload] — as the run goes:
//   'R' records of the native trace format (strings, events, counters; core/trace/trace_format.h)
//   'P' progress: f64 simulated time, i64 global_step, u32 n, n x i64 steps done per client
//   'Z' the outcome: f64 engine wall seconds, then the outcome's JSON (core/trace/trace_meta.h)
//   'I' bad input: file, JSON path and message, separated by '\n'
//   'E' a failure: its message
//   'X' an internal error (a broken invariant, or an exception that left an actor): its message
// The parent reads the 'R' payloads as one stream, handling 'P' frames on the way, until the
// last frame; every read waits at most 100 ms before asking whether to cancel.
#pragma once

#include <cstdint>
#include <functional>
#include <streambuf>
#include <string>

#include "core/backend/backend.h"
#include "core/trace/trace_sink.h"
#include "sim/sim_settings.h"

namespace replisim::sim::detail {

// Child side: a TraceSink (strings, events, counters only: the parent begins and ends the run)
// that ships records in 'R' frames, plus the other frames. Writes block while the pipe is full.
// A failed write (the parent went away) throws std::runtime_error.
class ChildChannel : public core::TraceSink {
 public:
  explicit ChildChannel(int fd) : fd_(fd) {}
  ~ChildChannel() override = default;

  void begin(const core::TraceMeta&) override {}
  void string(uint32_t id, const std::string& text) override;
  void event(const core::TraceEvent& event) override;
  void counter(const core::CounterSample& sample) override;
  void end(const core::RunOutcome&) override {}

  void progress(const core::RunProgress& progress);
  void outcome(const core::RunOutcome& outcome, double engine_wall_s, double setup_wall_s,
               const SharingStats& sharing);
  void input_error(const std::string& file, const std::string& path, const std::string& message);
  void failure(const std::string& message);
  void internal_error(const std::string& message);

 private:
  void flush_records();
  void frame(char type, const std::string& payload);
  void write_all(const char* data, size_t size);

  int fd_;
  std::string records_;
  uint32_t strings_ = 0;
};

// Parent side: a streambuf over the pipe that yields the 'R' payloads and stops at the end.
class ParentChannel : public std::streambuf {
 public:
  // `cancelled` is polled at least every 100 ms while waiting; `progress` gets each 'P' frame.
  ParentChannel(int fd, std::function<bool()> cancelled,
                std::function<void(const core::RunProgress&)> progress);

  // How the stream ended.
  enum class End {
    kOpen,
    kOutcome,
    kInputError,
    kFailure,
    kInternalError,
    kClosed,
    kCancelled,
    kCorrupt
  };
  End end() const { return end_; }
  // The last frame's payload ('Z': outcome JSON; 'I', 'E', 'X': the text), the engine's wall time
  // and what the exact sharing model did.
  const std::string& final_payload() const { return final_; }
  double engine_wall_s() const { return engine_wall_s_; }
  double setup_wall_s() const { return setup_wall_s_; }
  const SharingStats& sharing_stats() const { return sharing_; }

 protected:
  int_type underflow() override;

 private:
  // Reads exactly `size` bytes; false at the end of the pipe or on cancellation.
  bool read_exactly(char* out, size_t size);
  bool next_frame();

  int fd_;
  std::function<bool()> cancelled_;
  std::function<void(const core::RunProgress&)> progress_;
  std::string buffer_;
  End end_ = End::kOpen;
  std::string final_;
  double engine_wall_s_ = 0;
  double setup_wall_s_ = 0;
  SharingStats sharing_;
};

}  // namespace replisim::sim::detail
