// The job's control (internal to real/node/): every task ready with its clock's offset against
// the coordinator's (ClockSync), the common start a little ahead on the run's clock, each
// client's progress (the launcher's progress lines, training.steps "auto") and end, and the end
// of the job once every client finished (synchronous training also waits for its global steps).
// One part of a task's runtime: it owns who is ready and their offsets, whether the job started,
// per graph whether its client finished, per client the steps seen, and the frames kReady,
// kStart, kFinished and kProgress (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/trace/trace_meta.h"
#include "real/cluster.h"
#include "real/node/frame_router.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class JobControl {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double clock_s() const = 0;  // this machine's monotonic clock
    virtual double now_s() const = 0;    // the run's clock (once started)
    virtual bool stopping() const = 0;
    // An application frame to `peer` (counted for quiescence).
    virtual void send_control_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                                    const std::string& payload, double time_s) = 0;
    // The run's t = 0 is `origin_s` on the coordinator's clock: the task's clock starts there, and
    // training begins at t = 0. Returns t = 0 on this machine's clock.
    virtual double start_clock(double origin_s) = 0;
    virtual int64_t global_step_seen() const = 0;
    virtual void saw_global_step(int64_t global_step) = 0;
    // The coordinator heard that client g ended its step `step` over [start_s, end_s].
    virtual void client_step_ended(int g, int step, double start_s, double end_s) = 0;
    // The step the chief's sync op stops at (training.steps "auto" may lower Plan::steps).
    virtual int64_t last_global_step() const = 0;
    // Every client finished at `end_s`: the job ends (the task saves, then stops).
    virtual void job_ended(double end_s) = 0;
  };

  // `restart_origin_s`: a restarted incarnation goes on with the run's clock (its t = 0 on this
  // machine's clock); none for the first start. `progress_fd`: the launcher's progress pipe (-1:
  // none). `plan`, `spec`, `parts` and `host` outlive it.
  struct Setup {
    const core::Plan* plan = nullptr;
    const ClusterSpec* spec = nullptr;
    uint32_t self = 0;
    uint32_t coordinator = 0;
    std::optional<double> restart_origin_s;
    int progress_fd = -1;
  };
  JobControl(Host& host, const std::vector<Part>& parts, Setup setup);
  void own_frames(FrameRouter& router);

  // The coordinator's own connections are up: it is ready (the job starts once every task is).
  void coordinator_ready();
  bool started() const { return started_; }
  // The coordinator asked for progress frames (a launcher reads progress lines).
  bool progress() const { return progress_; }
  // Client g finished (or, after a death, counts as finished): the coordinator's view.
  bool finished(int g) const { return !finished_.empty() && finished_[size_t(g)]; }
  void set_finished(int g) {
    if (!finished_.empty()) finished_[size_t(g)] = true;
  }
  // Per graph '1' when its client finished, else '0'; the unfinished clients.
  std::string finished_flags() const;
  int unfinished_clients() const;
  // The coordinator: client g finished; client g's step ended (steps_done steps now).
  void client_finished(int g);
  void client_progress(int g, int steps_done, int64_t global_step, double start_s, double end_s);
  // The coordinator: the steps client g was seen to finish (its progress frames; 0 without them).
  int steps_seen(int g) const {
    return g >= 0 && size_t(g) < steps_seen_.size() ? steps_seen_[size_t(g)] : 0;
  }
  // Every client finished (or died): the job ends. Synchronous training that ends short of its
  // steps (workers out of data, or dead) ends as a stall, which the next quiescence wave records.
  void maybe_end_job();
  void end_job();
  bool job_finished() const { return all_finished_; }
  // The clocks' offsets the tasks reported (the coordinator's; in the cluster spec's order).
  std::vector<core::ClockOffset> clock_offsets() const;

 private:
  void on_ready(uint32_t peer, const uint8_t* payload, size_t size);
  void maybe_start();
  void start(double origin_s, bool progress);
  void write_progress();
  bool coordinator() const { return setup_.self == setup_.coordinator; }

  Host& host_;
  const std::vector<Part>& parts_;
  Setup setup_;
  std::set<uint32_t> ready_;
  std::vector<core::ClockOffset> offsets_;
  bool started_ = false;
  bool progress_ = false;
  std::vector<bool> finished_;   // per graph (the coordinator's)
  std::vector<int> steps_seen_;  // per client
  double last_progress_s_ = -1;
  bool all_finished_ = false;
};

}  // namespace replisim::real::detail
