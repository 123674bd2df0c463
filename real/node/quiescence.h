// Whether a run has gone quiet: the coordinator's waves that find a synchronous stall or a
// deadlock. Quiescent (Mattern's counting, per channel; F. Mattern, "Algorithms for distributed
// termination detection", Distributed Computing 2(3), 1987): every counted frame one live task
// sent another was received, nobody has work under way, and two waves in a row saw the same
// counts (frames to and from a task that died do not count). Then synchronous training has
// stalled (the parameter server says why) or the run has deadlocked. Not while the job is down: it
// ends at detection. One part of a task's runtime (internal to real/node/): it owns the frame
// counts, the wave in progress and its answers, and the frames kQuery and kStatus (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_meta.h"
#include "real/node/frame_router.h"

namespace replisim::real::detail {

class Quiescence {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual bool live(uint32_t task) const = 0;  // not killed by a fault of the plan
    // The run ends or ended: no wave any more.
    virtual bool stopping() const = 0;
    virtual bool job_finished() const = 0;
    // A job fault struck: every task stops at its detection (the run is not quiet, it is down).
    virtual bool job_down() const = 0;
    // This task's work under way: completions and file writes not back yet, timers that count,
    // frames queued, ops queued in the client loop.
    virtual int64_t work_under_way() const = 0;
    // Per graph '1' when its client finished (as the coordinator knows it), else '0'.
    virtual std::string finished_clients() const = 0;
    // The stall this task's sync queues would report now, given the coordinator's `finished`.
    virtual std::optional<core::StallRecord> stall_now(const std::string& finished) const = 0;
    // {value, updated_s} of global_step where this task holds it, else null.
    virtual nlohmann::json global_step_status() const = 0;
    // A query or status frame to `peer` (not counted: waves do not count themselves).
    virtual void send_wave_frame(uint32_t peer, FrameType type, int64_t wave,
                                 const std::string& payload) = 0;
    // Runs `work` once `delay_s` has passed, unless the run stops first.
    virtual void wave_timer(double delay_s, std::function<void()> work) = 0;
    // The verdicts: synchronous training stalled (the run ends with `stall`), or the run
    // deadlocked (it fails).
    virtual void stalled(const core::StallRecord& stall) = 0;
    virtual void deadlocked() = 0;
  };

  // `tasks`: the cluster's tasks (the counts' length); `graphs`: the step graphs.
  Quiescence(Host& host, uint32_t self, uint32_t coordinator, size_t tasks, size_t graphs);
  void own_frames(FrameRouter& router);

  // Whether frames of `type` count (the step protocol's, the parts' requests and answers; not the
  // transport's, the clocks', the waves' or the trace's), and one sent to or received from `peer`.
  static bool counted(FrameType type);
  void sent(uint32_t peer, FrameType type) {
    if (counted(type)) ++sent_to_[peer];
  }
  void received(uint32_t peer, FrameType type) {
    if (counted(type)) ++received_from_[peer];
  }
  // The coordinator, at t = 0: the waves begin (every kWaveEveryS while the run goes on).
  void start() { schedule(); }
  // A task died (the coordinator knows it now): the wave in progress, whose answers (this task's
  // own among them) were given before the survivors reacted to the death, is dropped and a new
  // one asked for, and quiet takes two waves after it again.
  void task_died();
  // Evaluates the wave in progress once every live task answered.
  void maybe_evaluate();

 private:
  void schedule();
  void query();
  nlohmann::json status(const std::string& finished) const;
  void on_status(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void evaluate();

  Host& host_;
  uint32_t self_;
  uint32_t coordinator_;
  size_t graphs_;
  std::vector<int64_t> sent_to_, received_from_;  // counted frames per peer task
  // The coordinator's wave in progress, its answers, and the counts the last quiet wave saw.
  int64_t wave_ = 0;
  std::map<uint32_t, nlohmann::json> status_;
  // The counts of the last quiet wave (none: no quiet wave since the last death or start).
  std::optional<std::string> previous_counts_;
};

}  // namespace replisim::real::detail
