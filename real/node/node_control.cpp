// Job control: every task's clock against the coordinator's, the common start, the chief's
// checkpoints and summaries (the parameter servers write their shards, the chief the index),
// progress, the quiescence waves that find a synchronous stall or a deadlock, the orderly stop
// (every task writes its trace) and the failure of one task stopping all of them with its one line.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "core/base/error.h"
#include "core/base/units.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

namespace {

constexpr double kStartLeadS = 0.05;     // START goes out this long before the run's t = 0
constexpr double kProgressEveryS = 0.2;  // progress lines to the launcher, at most
constexpr double kStopFlushS = 5;        // a stopping task's last frames
constexpr double kErrorFlushS = 1;       // a failing task's ERROR lines
constexpr size_t kMaxErrorBytes = 2000;

}  // namespace

// --- clocks and start ---------------------------------------------------------------------

void Node::on_ready(uint32_t peer, const uint8_t* payload, size_t size) {
  if (ready_.count(peer) > 0 || started_) throw FrameError("a second ready");
  offsets_.push_back(
      {spec_.tasks[peer].name(), unpack_f64(payload, size, 0), unpack_f64(payload, size, 1)});
  ready_.insert(peer);
  maybe_start();
}

void Node::maybe_start() {
  if (started_ || ready_.size() != spec_.tasks.size()) return;
  // A restart goes on with the run's clock (one machine: the launcher's is this one).
  const double origin_s = resume_ ? resume_->origin_clock_s : clock_s() + kStartLeadS;
  const bool progress = options_.progress_fd >= 0;
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    if (t != self_) send_frame(t, FrameType::kStart, -1, 0, pack_i64({progress}), origin_s);
  }
  start_job(origin_s, progress);
}

void Node::start_job(double origin_s, bool progress) {
  started_ = true;
  progress_ = progress;
  origin_local_s_ = origin_s - clock_sync_.offset_s();
  if (coordinator() && options_.progress_fd >= 0) {
    // The launcher's clock is this machine's: the run's t = 0 on it (for restarts).
    const std::string line = nlohmann::json{{"origin_clock_s", origin_local_s_}}.dump() + "\n";
    if (::write(options_.progress_fd, line.data(), line.size()) < 0) options_.progress_fd = -1;
  }
  finished_.assign(steps_->parts().size(), false);
  steps_seen_.assign(plan_.clients.size(), 0);
  at_run_time(0, true, [this] { begin_training(); });
}

// t = 0: every client starts its loop (after its start-up stagger); the coordinator watches for
// quiescence.
void Node::begin_training() {
  arm_faults();
  if (coordinator()) {
    wave_timer_.emplace(io_);
    quiescence_->start();
  }
  if (restorer_) {
    restorer_->begin();
    return;
  }
  for (Part& p : steps_->parts()) {
    if (!p.owner) continue;
    const int g = p.index;
    const double offset_s = p.graph->start_offset_s;
    if (offset_s <= 0) {
      steps_->loop().start_client(g);
      continue;
    }
    after(offset_s, true, [this, g] { steps_->loop().start_client(g); });
  }
}

// --- progress and the end of the job --------------------------------------------------------

void Node::on_progress(int g, int steps_done, int64_t global_step, double start_s, double end_s) {
  if (g < int(steps_seen_.size()))
    steps_seen_[size_t(g)] = std::max(steps_seen_[size_t(g)], steps_done);
  global_step_seen_ = std::max(global_step_seen_, global_step);
  steady_stop_->step_ended(g, steps_done - 1, start_s, end_s, global_step_seen_);
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
  maybe_end_job();
}

// The chief's sync op waited for an update past its stop limit: its step ends unfinished.
void Node::end_waiting_step(int g) {
  steps_->parts()[size_t(g)].active = false;
  steps_->loop().mark_finished(g);
}

// Every client finished (or died): the job ends. Synchronous training that ends short of its
// steps (workers out of data, or dead) ends as a stall, which the next quiescence wave records.
void Node::maybe_end_job() {
  for (size_t c = 0; c < plan_.clients.size(); ++c) {
    if (!finished_[c]) return;
  }
  if (plan_.sync == "sync" && global_step_seen_ < steady_stop_->last_global_step()) return;
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
    saver_->save("final", [this](double, double, int64_t) { stop(); });
    return;
  }
  stop();
}

// --- quiescence -----------------------------------------------------------------------------

// --- stop and failure -----------------------------------------------------------------------

void Node::stop(int job_fault) {
  if (stopping_) return;
  stopping_ = true;
  if (wave_timer_) wave_timer_->cancel();
  FrameHeader h;
  h.type = FrameType::kStop;
  const std::string why = job_fault >= 0 ? pack_i64({job_fault}) : std::string();
  for (uint32_t t : mesh_->peer_tasks()) mesh_->send_on_every_slot(t, h, why);
  try {
    write_trace_end();
  } catch (const std::exception& e) {
    failed_ = true;
    error_line_ = describe() + ": " + e.what();
  }
  auto close = [this] {
    mesh_->flush_then(
        [this] {
          mesh_->shutdown();
          io_.stop();
        },
        kStopFlushS);
  };
  // Nodes a cluster's launcher started: the coordinator gathers every part.
  if (gather_ && !failed_) {
    if (coordinator()) {
      gather_->gather(close);
      return;
    }
    if (live(uint32_t(map_.coordinator_task))) {
      gather_->send_part(close);
      return;
    }
    std::fprintf(stderr,
                 "replisim node %s: the coordinator (task %s) died: merge the nodes' parts with "
                 "replisim report --merge\n",
                 spec_.tasks[self_].name().c_str(),
                 spec_.tasks[size_t(map_.coordinator_task)].name().c_str());
  }
  close();
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

// The simulation's note for a fault that would strike after the run ended.
void Node::note_faults_after_the_end() {
  core::note_faults_after_the_end(plan_, outcome_.end_s, incarnation_start_s_, outcome_.notes);
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
  if (coordinator() && restorer_) {
    std::optional<double> next_fault_s;
    if (job_fault_ >= 0) next_fault_s = plan_.faults[size_t(job_fault_)].at_s;
    outcome_.restarts.push_back(restorer_->record(
        outcome_.end_s, next_fault_s ? next_fault_s : outcome_.killed_s, next_fault_s,
        graph_dead_));
  }
  if (auto record = steady_stop_->record(outcome_.end_s, outcome_.stall.has_value())) {
    outcome_.steady_state = std::move(*record);
  }
  if (coordinator() && !outcome_.killed_s) note_faults_after_the_end();
  if (options_.insecure_frames) {
    outcome_.notes.push_back(
        "frames between the tasks carried no MAC (--insecure-frames): an on-path attacker could "
        "have altered them");
  }
  // Strangers turned away: the run's report says so (its notes), whoever ran it.
  const std::string refused = mesh_->refusal_summary();
  if (!refused.empty())
    outcome_.notes.push_back("task " + spec_.tasks[self_].name() + " " + refused);
  writer_->end(outcome_);
  writer_->finish();
  // Durable (fsync) before it is named: the node traces are the only copy of the measurement.
  if (!trace_file_->finish(true) || !trace_file_->publish(true)) {
    throw core::OutputError(options_.trace_out,
                            std::string("could not write the trace: ") + std::strerror(errno));
  }
}

}  // namespace replisim::real::detail
