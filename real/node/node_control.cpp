// Job control: every task's clock against the coordinator's, the common start, the chief's checkpoints
// and summaries (the parameter servers write their shards, the chief the index), progress, the
// quiescence waves that find a synchronous stall or a deadlock, the orderly stop (every task
// writes its trace) and the failure of one task stopping all of them with its one line.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "core/base/error.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

namespace {

constexpr int kClockPings = 8;           // ping-pongs per task; the lowest round trip is kept
constexpr double kStartLeadS = 0.05;     // START goes out this long before the run's t = 0
constexpr double kWaveEveryS = 0.5;      // quiescence waves
constexpr double kProgressEveryS = 0.2;  // progress lines to the launcher, at most
constexpr double kStopFlushS = 5;        // a stopping task's last frames
constexpr double kErrorFlushS = 1;       // a failing task's ERROR lines
constexpr size_t kMaxErrorBytes = 2000;

}  // namespace

// --- clocks and start ---------------------------------------------------------------------

void Node::estimate_clock() {
  pings_left_ = kClockPings;
  best_rtt_s_ = std::numeric_limits<double>::infinity();
  send_frame(uint32_t(map_.coordinator_task), FrameType::kPing, -1, 0, pack_f64({clock_s()}));
}

// NTP's estimate from one exchange: the coordinator's clock read half-way through the round trip.
void Node::on_pong(const uint8_t* payload, size_t size, double coordinator_clock_s) {
  if (pings_left_ <= 0) throw FrameError("pong without a ping");
  const double sent_s = unpack_f64(payload, size, 0);
  const double back_s = clock_s();
  const double rtt_s = back_s - sent_s;
  if (rtt_s < 0) throw FrameError("a pong for a ping not sent yet");
  if (rtt_s < best_rtt_s_) {
    best_rtt_s_ = rtt_s;
    offset_s_ = coordinator_clock_s - 0.5 * (sent_s + back_s);
    uncertainty_s_ = 0.5 * rtt_s;
  }
  if (--pings_left_ > 0) {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kPing, -1, 0, pack_f64({clock_s()}));
    return;
  }
  send_frame(uint32_t(map_.coordinator_task), FrameType::kReady, -1, 0,
             pack_f64({offset_s_, uncertainty_s_}));
}

void Node::on_ready(uint32_t peer, const uint8_t* payload, size_t size) {
  if (ready_.count(peer) > 0 || started_) throw FrameError("a second ready");
  offsets_.push_back(
      {spec_.tasks[peer].name(), unpack_f64(payload, size, 0), unpack_f64(payload, size, 1)});
  ready_.insert(peer);
  maybe_start();
}

void Node::maybe_start() {
  if (started_ || ready_.size() != spec_.tasks.size()) return;
  const double origin_s = clock_s() + kStartLeadS;
  const bool progress = options_.progress_fd >= 0;
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    if (t != self_) send_frame(t, FrameType::kStart, -1, 0, pack_i64({progress}), origin_s);
  }
  start_job(origin_s, progress);
}

void Node::start_job(double origin_s, bool progress) {
  started_ = true;
  progress_ = progress;
  origin_local_s_ = origin_s - offset_s_;
  finished_.assign(parts_.size(), false);
  steps_seen_.assign(plan_.clients.size(), 0);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, origin_local_s_ - clock_s()))));
  ++timers_pending_;
  timer->async_wait([this, timer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (alive.expired()) return;
    --timers_pending_;
    if (!ec && !stopping_) begin_training();
  });
}

// t = 0: every client starts its loop (after its start-up stagger); the coordinator watches for
// quiescence.
void Node::begin_training() {
  if (coordinator()) {
    last_checkpoint_s_ = 0;
    wave_timer_.emplace(io_);
    schedule_wave();
  }
  for (Part& p : parts_) {
    if (!p.owner) continue;
    const int g = p.index;
    const double offset_s = p.graph->start_offset_s;
    if (offset_s <= 0) {
      start_client(g);
      continue;
    }
    auto timer = std::make_shared<asio::steady_timer>(io_);
    timer->expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offset_s)));
    ++timers_pending_;
    timer->async_wait(
        [this, g, timer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
          if (alive.expired()) return;
          --timers_pending_;
          if (!ec && !stopping_) start_client(g);
        });
  }
}

// --- the chief's checkpoints and summaries --------------------------------------------------

// After a chief step: the checkpoint hook saves when every_s has passed since the last save,
// the summary hook writes every summary_every_steps steps (TF's CheckpointSaverHook and
// SummarySaverHook, as the simulation's JobRecovery::chief_duties).
void Node::chief_duties(Part& p, std::function<void()> then) {
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const int g = p.index;
  auto summaries = [this, g, then = std::move(then)]() mutable {
    const Part& part = parts_[size_t(g)];
    const int n = plan_.checkpoints.summary_every_steps;
    if (n <= 0 || part.steps_done % n != 0) {
      then();
      return;
    }
    write_summaries(g, std::move(then));
  };
  if (policy.every_s > 0 && now_s() - last_checkpoint_s_ >= policy.every_s) {
    save_checkpoint("model.ckpt-" + std::to_string(checkpoints_++),
                    [this, g, summaries = std::move(summaries)](double start_s, double bytes,
                                                                int64_t global_step) mutable {
                      recorder_->checkpoint(g, parts_[size_t(g)].steps_done, start_s, now_s(),
                                            bytes, global_step, false);
                      summaries();
                    });
    return;
  }
  summaries();
}

// The summary hook's event file: summary_bytes appended to <checkpoint dir>/events.summaries.
void Node::write_summaries(int g, std::function<void()> then) {
  const std::string path = options_.checkpoint_dir + "/events.summaries";
  const size_t bytes = size_t(std::max(0.0, plan_.checkpoints.summary_bytes));
  const int64_t step = parts_[size_t(g)].steps_done;
  const int64_t global_step = global_step_seen_;
  ++work_pending_;
  copier_->submit([this, g, path, bytes, step, global_step, then = std::move(then)]() mutable {
    const double start_s = now_s();
    std::string error;
    {
      std::ofstream out(path, std::ios::binary | std::ios::app);
      const std::string block(bytes, '\0');
      out.write(block.data(), std::streamsize(block.size()));
      out.flush();
      if (!out) error = std::strerror(errno);
    }
    const double end_s = now_s();
    post([this, g, path, bytes, step, global_step, start_s, end_s, error, then = std::move(then)] {
      --work_pending_;
      if (stopping_) return;
      if (!error.empty()) throw core::OutputError(path, error);
      recorder_->checkpoint(g, step, start_s, end_s, double(bytes), global_step, true);
      then();
    });
  });
}

// A checkpoint: every parameter server writes its shard "<name>.ps<j>" (durably), then the chief
// writes the index "<name>.index" naming them: a checkpoint whose index exists is complete.
void Node::save_checkpoint(const std::string& name,
                           std::function<void(double, double, int64_t)> then) {
  const double start_s = now_s();
  last_checkpoint_s_ = start_s;
  saving_ = name;
  shard_files_.clear();
  shard_bytes_ = 0;
  saved_global_step_ = global_step_seen_;
  saved_then_ = [start_s, then = std::move(then)](double bytes, int64_t global_step) {
    then(start_s, bytes, global_step);
  };
  std::set<uint32_t> ps_tasks;
  for (int r : plan_.ps_roles) ps_tasks.insert(uint32_t(map_.task_of_role[size_t(r)]));
  pending_saves_ = int(ps_tasks.size());
  if (pending_saves_ == 0) {
    shard_saved({{"file", ""}, {"bytes", 0}, {"global_step", -1}});
    return;
  }
  for (uint32_t t : ps_tasks) {
    if (t == self_) {
      write_shard(name, [this](const nlohmann::json& saved) { shard_saved(saved); });
    } else {
      send_frame(t, FrameType::kSave, -1, 0, name);
    }
  }
}

void Node::on_save(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  const std::string name(reinterpret_cast<const char*>(payload), h.length);
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos || name[0] == '.') {
    throw FrameError("save under the name \"" + name.substr(0, 200) + "\"");
  }
  write_shard(name, [this, peer](const nlohmann::json& saved) {
    send_frame(peer, FrameType::kSaved, -1, 0, saved.dump());
  });
}

void Node::write_shard(const std::string& name, std::function<void(const nlohmann::json&)> done) {
  if (options_.checkpoint_dir.empty()) {
    throw core::OutputError("", "asked to save checkpoint " + name + " without --checkpoint-dir");
  }
  const int64_t global_step = store_->holds_global_step() ? store_->global_step : -1;
  const std::string file = name + ".ps" + std::to_string(ps_shard_);
  const std::string path = options_.checkpoint_dir + "/" + file;
  ++work_pending_;
  copier_->submit([this, file, path, global_step, done = std::move(done)]() mutable {
    std::string error;
    size_t bytes = 0;
    try {
      const CheckpointShard shard = store_->snapshot(plan_hash_, global_step);
      write_checkpoint_shard(path, shard);
      bytes = shard.bytes();
    } catch (const std::exception& e) {
      error = e.what();
    }
    post([this, file, path, global_step, bytes, error, done = std::move(done)] {
      --work_pending_;
      if (stopping_) return;
      if (!error.empty()) throw core::OutputError(path, error);
      done({{"file", file}, {"bytes", bytes}, {"global_step", global_step}});
    });
  });
}

void Node::on_saved(uint32_t, const FrameHeader& h, const uint8_t* payload) {
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(payload, payload + h.length);
    if (!saved.at("file").is_string() || !saved.at("bytes").is_number() ||
        !saved.at("global_step").is_number_integer()) {
      throw std::runtime_error("members of the wrong type");
    }
  } catch (const std::exception& e) {
    throw FrameError(std::string("a saved frame that is not {file, bytes, global_step}: ") +
                     e.what());
  }
  shard_saved(saved);
}

void Node::shard_saved(const nlohmann::json& saved) {
  const std::string file = saved.at("file").get<std::string>();
  if (!file.empty()) shard_files_.push_back(file);
  shard_bytes_ += saved.at("bytes").get<double>();
  const int64_t global_step = saved.at("global_step").get<int64_t>();
  if (global_step >= 0) saved_global_step_ = global_step;
  if (--pending_saves_ > 0) return;
  std::sort(shard_files_.begin(), shard_files_.end());
  if (!shard_files_.empty()) {
    CheckpointIndex index;
    index.name = saving_;
    index.plan_hash = plan_hash_;
    index.global_step = saved_global_step_;
    index.shards = shard_files_;
    index.bytes = shard_bytes_;
    write_checkpoint_index(options_.checkpoint_dir, index);
    if (saving_ != "final") forget_old_checkpoints(index);
  }
  auto then = std::move(saved_then_);
  saved_then_ = nullptr;
  then(shard_bytes_, saved_global_step_);
}

// TF's Saver keeps the last max_to_keep = 5 checkpoints: the oldest goes, its index first (so
// that no index ever names a missing shard). The shards are in this directory: every task of a
// run on one machine shares it.
void Node::forget_old_checkpoints(const CheckpointIndex& saved) {
  constexpr size_t kMaxToKeep = 5;
  kept_checkpoints_.push_back(saved);
  if (kept_checkpoints_.size() <= kMaxToKeep) return;
  const CheckpointIndex old = kept_checkpoints_.front();
  kept_checkpoints_.pop_front();
  std::remove((options_.checkpoint_dir + "/" + old.name + ".index").c_str());
  for (const std::string& shard : old.shards) {
    std::remove((options_.checkpoint_dir + "/" + shard).c_str());
  }
}

// --- progress and the end of the job --------------------------------------------------------

void Node::on_progress(int g, int steps_done, int64_t global_step) {
  if (g < int(steps_seen_.size()))
    steps_seen_[size_t(g)] = std::max(steps_seen_[size_t(g)], steps_done);
  global_step_seen_ = std::max(global_step_seen_, global_step);
  const double now = now_s();
  if (last_progress_s_ >= 0 && now - last_progress_s_ < kProgressEveryS) return;
  write_progress();
}

// One JSON line to the launcher: {"time_s", "global_step", "steps_done": [per client]}.
void Node::write_progress() {
  if (options_.progress_fd < 0) return;
  last_progress_s_ = now_s();
  const nlohmann::json line = {{"time_s", last_progress_s_},
                               {"global_step", global_step_seen_},
                               {"steps_done", steps_seen_}};
  const std::string text = line.dump() + "\n";
  // A launcher that went away is not this run's failure: its own end stops the run.
  if (::write(options_.progress_fd, text.data(), text.size()) < 0) options_.progress_fd = -1;
}

void Node::on_finished(int g) {
  if (finished_.empty()) throw FrameError("finished before the start");
  if (finished_[size_t(g)]) throw FrameError("graph " + std::to_string(g) + " finished twice");
  finished_[size_t(g)] = true;
  for (size_t c = 0; c < plan_.clients.size(); ++c) {
    if (!finished_[c]) return;
  }
  // Synchronous training that ends short of its steps (workers out of data) ends as a stall,
  // which the next quiescence wave records.
  if (plan_.sync == "sync" && global_step_seen_ < plan_.steps) return;
  finish_job();
}

void Node::finish_job() {
  if (all_finished_) return;
  all_finished_ = true;
  end_s_ = now_s();
  write_progress();
  if (!options_.checkpoint_dir.empty() && !plan_.ps_roles.empty()) {
    // The variables as the run left them, for whoever checks a run's arithmetic (not a
    // checkpoint of the plan's: the trace does not record it).
    save_checkpoint("final", [this](double, double, int64_t) { stop(); });
    return;
  }
  stop();
}

// --- quiescence -----------------------------------------------------------------------------

void Node::schedule_wave() {
  wave_timer_->expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWaveEveryS)));
  wave_timer_->async_wait([this, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (alive.expired() || ec || stopping_ || all_finished_) return;
    query_wave();
  });
}

void Node::query_wave() {
  ++wave_;
  wave_status_.clear();
  std::string finished;
  for (bool f : finished_) finished += f ? '1' : '0';
  wave_status_[self_] = status(finished);
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    if (t != self_) send_frame(t, FrameType::kQuery, wave_, 0, finished);
  }
  if (wave_status_.size() == spec_.tasks.size()) evaluate_wave();
}

void Node::on_query(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  const std::string finished(reinterpret_cast<const char*>(payload), h.length);
  if (finished.size() != parts_.size() || finished.find_first_not_of("01") != std::string::npos) {
    throw FrameError("a query whose payload is not one 0 or 1 per graph");
  }
  send_frame(peer, FrameType::kStatus, h.step, 0, status(finished).dump());
}

// This task's counters: frames sent and received (counted types), work under way, and, on the
// parameter server of synchronous training's queues, the stall it would report now.
nlohmann::json Node::status(const std::string& finished) const {
  nlohmann::json j = {{"sent", frames_sent_},
                      {"received", frames_received_},
                      {"busy", work_pending_ + timers_pending_ + int(mesh_->queued_frames()) +
                                   int(!pending_.empty())}};
  if (sync_ && store_->holds_global_step() && store_->global_step < plan_.steps) {
    std::vector<bool> done(parts_.size()), dead(parts_.size(), false);
    for (size_t g = 0; g < parts_.size(); ++g) done[g] = finished[g] == '1';
    const core::StallRecord s = sync_->stall(done, dead, last_update_s_, now_s());
    j["stall"] = {{"time_s", s.time_s},
                  {"global_step", s.global_step},
                  {"live_workers", s.live_workers},
                  {"detected_s", s.detected_s},
                  {"cause", s.cause}};
  }
  return j;
}

void Node::on_status(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (h.step != wave_) return;  // an answer to a wave already decided
  try {
    nlohmann::json j = nlohmann::json::parse(payload, payload + h.length);
    for (const char* key : {"sent", "received", "busy"}) {
      if (!j.at(key).is_number_integer()) throw std::runtime_error(std::string(key));
    }
    wave_status_[peer] = std::move(j);
  } catch (const std::exception& e) {
    throw FrameError(std::string("a status that is not {sent, received, busy}: ") + e.what());
  }
  if (wave_status_.size() == spec_.tasks.size()) evaluate_wave();
}

// Quiescent (Mattern's counting): every counted frame sent was received, nobody has work under
// way, and two waves in a row saw the same counts. Then synchronous training has stalled (the
// parameter server says why) or the run has deadlocked.
void Node::evaluate_wave() {
  int64_t sent = 0, received = 0, busy = 0;
  const nlohmann::json* stall = nullptr;
  for (const auto& [task, j] : wave_status_) {
    sent += j.at("sent").get<int64_t>();
    received += j.at("received").get<int64_t>();
    busy += j.at("busy").get<int64_t>();
    if (j.contains("stall")) stall = &j.at("stall");
  }
  const std::string counts = std::to_string(sent) + "/" + std::to_string(received);
  const bool quiet = busy == 0 && sent == received && counts == previous_wave_;
  previous_wave_ = busy == 0 && sent == received ? counts : std::string();
  if (!quiet) {
    schedule_wave();
    return;
  }
  if (stall != nullptr) {
    core::StallRecord s;
    s.time_s = stall->at("time_s").get<double>();
    s.global_step = stall->at("global_step").get<int64_t>();
    s.live_workers = stall->at("live_workers").get<int>();
    s.detected_s = stall->at("detected_s").get<double>();
    s.cause = stall->at("cause").get<std::string>();
    outcome_.stall = s;
    finish_job();
    return;
  }
  int unfinished = 0;
  for (size_t c = 0; c < plan_.clients.size(); ++c) unfinished += !finished_[c];
  fail("the run deadlocked: every task idle with " + std::to_string(unfinished) +
       " client(s) unfinished");
}

// --- stop and failure -----------------------------------------------------------------------

void Node::stop() {
  if (stopping_) return;
  stopping_ = true;
  if (wave_timer_) wave_timer_->cancel();
  FrameHeader h;
  h.type = FrameType::kStop;
  for (uint32_t t : mesh_->peer_tasks()) mesh_->send_on_every_slot(t, h);
  try {
    write_trace_end();
  } catch (const std::exception& e) {
    failed_ = true;
    error_line_ = describe() + ": " + e.what();
  }
  mesh_->flush_then(
      [this] {
        mesh_->shutdown();
        io_.stop();
      },
      kStopFlushS);
}

void Node::fail(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  stopping_ = true;
  if (wave_timer_) wave_timer_->cancel();
  error_line_ =
      why.rfind("stopped because", 0) == 0 ? describe() + " " + why : describe() + ": " + why;
  if (error_line_.size() > kMaxErrorBytes) error_line_.resize(kMaxErrorBytes);
  FrameHeader h;
  h.type = FrameType::kError;
  for (uint32_t t : mesh_->peer_tasks()) mesh_->send_on_every_slot(t, h, error_line_);
  mesh_->flush_then(
      [this] {
        mesh_->shutdown();
        io_.stop();
      },
      kErrorFlushS);
}

void Node::write_trace_end() {
  outcome_.end_s = coordinator() ? end_s_ : now_s();
  if (coordinator()) {
    // In the cluster spec's task order.
    outcome_.clock_offsets.clear();
    for (const ClusterTask& task : spec_.tasks) {
      for (const core::ClockOffset& o : offsets_) {
        if (o.task == task.name()) outcome_.clock_offsets.push_back(o);
      }
    }
  }
  writer_->end(outcome_);
  writer_->finish();
  trace_file_->publish();
}

}  // namespace replisim::real::detail
