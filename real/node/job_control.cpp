#include "real/node/job_control.h"

#include <algorithm>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "real/node/payload.h"

namespace replisim::real::detail {

namespace {

constexpr double kStartLeadS = 0.05;     // START goes out this long before the run's t = 0
constexpr double kProgressEveryS = 0.2;  // progress lines to the launcher, at most

}  // namespace

JobControl::JobControl(Host& host, const std::vector<Part>& parts, Setup setup)
    : host_(host), parts_(parts), setup_(std::move(setup)) {}

void JobControl::own_frames(FrameRouter& router) {
  using channel::require;
  const char* not_coordinator = "sent to a task that is not the coordinator";
  router.own(channel::kReady,
             [this, not_coordinator](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (host_.stopping()) return;
               require(h, coordinator(), not_coordinator);
               on_ready(peer, payload, h.length);
             });
  router.own(channel::kStart, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (host_.stopping()) return;
    require(h, peer == setup_.coordinator && !started_,
            "not from the coordinator, or a second one");
    start(h.time_s, unpack_i64(payload, h.length, 0) != 0);
  });
  router.own(channel::kFinished,
             [this, not_coordinator](uint32_t peer, const FrameHeader& h, const uint8_t*) {
               if (host_.stopping()) return;
               require(h, coordinator(), not_coordinator);
               client_finished(part_of_frame(parts_, peer, h, true).index);
             });
  router.own(channel::kProgress,
             [this, not_coordinator](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (host_.stopping()) return;
               require(h, coordinator(), not_coordinator);
               client_progress(part_of_frame(parts_, peer, h, true).index, int(h.step),
                               unpack_i64(payload, h.length, 0), unpack_f64(payload, h.length, 1),
                               unpack_f64(payload, h.length, 2));
             });
}

void JobControl::coordinator_ready() {
  ready_.insert(setup_.self);
  maybe_start();
}

void JobControl::on_ready(uint32_t peer, const uint8_t* payload, size_t size) {
  if (ready_.count(peer) > 0 || started_) throw FrameError("a second ready");
  offsets_.push_back({setup_.spec->tasks[peer].name(), unpack_f64(payload, size, 0),
                      unpack_f64(payload, size, 1)});
  ready_.insert(peer);
  maybe_start();
}

void JobControl::maybe_start() {
  if (started_ || ready_.size() != setup_.spec->tasks.size()) return;
  // A restart goes on with the run's clock (one machine: the launcher's is this one).
  const double origin_s =
      setup_.restart_origin_s ? *setup_.restart_origin_s : host_.clock_s() + kStartLeadS;
  const bool progress = setup_.progress_fd >= 0;
  for (uint32_t t = 0; t < setup_.spec->tasks.size(); ++t) {
    if (t != setup_.self) {
      host_.send_control_frame(t, channel::kStart, -1, 0, pack_i64({progress}), origin_s);
    }
  }
  start(origin_s, progress);
}

void JobControl::start(double origin_s, bool progress) {
  started_ = true;
  progress_ = progress;
  finished_.assign(parts_.size(), false);
  steps_seen_.assign(setup_.plan->clients.size(), 0);
  const double origin_local_s = host_.start_clock(origin_s);
  if (coordinator() && setup_.progress_fd >= 0) {
    // The launcher's clock is this machine's: the run's t = 0 on it (for restarts).
    const std::string line = nlohmann::json{{"origin_clock_s", origin_local_s}}.dump() + "\n";
    if (::write(setup_.progress_fd, line.data(), line.size()) < 0) setup_.progress_fd = -1;
  }
}

void JobControl::client_progress(int g, int steps_done, int64_t global_step, double start_s,
                                 double end_s) {
  if (g < int(steps_seen_.size())) {
    steps_seen_[size_t(g)] = std::max(steps_seen_[size_t(g)], steps_done);
  }
  host_.saw_global_step(global_step);
  host_.client_step_ended(g, steps_done - 1, start_s, end_s);
  const double now = host_.now_s();
  if (last_progress_s_ >= 0 && now - last_progress_s_ < kProgressEveryS) return;
  write_progress();
}

// One JSON line to the launcher: {"time_s", "global_step", "steps_done": [per client]}.
void JobControl::write_progress() {
  if (setup_.progress_fd < 0 || !coordinator()) return;
  last_progress_s_ = host_.now_s();
  const nlohmann::json line = {{"time_s", last_progress_s_},
                               {"global_step", host_.global_step_seen()},
                               {"steps_done", steps_seen_}};
  const std::string text = line.dump() + "\n";
  // A launcher that went away is not this run's failure: its own end stops the run.
  if (::write(setup_.progress_fd, text.data(), text.size()) < 0) setup_.progress_fd = -1;
}

void JobControl::client_finished(int g) {
  if (finished_.empty()) throw FrameError("finished before the start");
  if (finished_[size_t(g)]) throw FrameError("graph " + std::to_string(g) + " finished twice");
  finished_[size_t(g)] = true;
  maybe_end_job();
}

void JobControl::maybe_end_job() {
  if (finished_.empty()) return;
  for (size_t c = 0; c < setup_.plan->clients.size(); ++c) {
    if (!finished_[c]) return;
  }
  if (setup_.plan->sync == "sync" && host_.global_step_seen() < host_.last_global_step()) return;
  end_job();
}

void JobControl::end_job() {
  if (all_finished_) return;
  all_finished_ = true;
  const double end_s = host_.now_s();
  write_progress();
  host_.job_ended(end_s);
}

std::string JobControl::finished_flags() const {
  std::string flags;
  for (bool f : finished_) flags += f ? '1' : '0';
  return flags;
}

int JobControl::unfinished_clients() const {
  int unfinished = 0;
  for (size_t c = 0; c < setup_.plan->clients.size() && c < finished_.size(); ++c) {
    unfinished += !finished_[c];
  }
  return unfinished;
}

std::vector<core::ClockOffset> JobControl::clock_offsets() const {
  std::vector<core::ClockOffset> ordered;
  for (const ClusterTask& task : setup_.spec->tasks) {
    for (const core::ClockOffset& o : offsets_) {
      if (o.task == task.name()) ordered.push_back(o);
    }
  }
  return ordered;
}

}  // namespace replisim::real::detail
