// The job's t = 0 on this task (the clients start, the coordinator's waves begin), the orderly
// stop (every task writes its trace, the parts are gathered) and the failure of one task stopping
// all of them with its one line; the trace's end (the outcome: restarts, steady state, notes).
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

constexpr double kStopFlushS = 5;   // a stopping task's last frames
constexpr double kErrorFlushS = 1;  // a failing task's ERROR lines
constexpr size_t kMaxErrorBytes = 2000;

}  // namespace

// --- the start -----------------------------------------------------------------------------

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

// The chief's sync op waited for an update past its stop limit: its step ends unfinished.
void Node::end_waiting_step(int g) {
  steps_->parts()[size_t(g)].active = false;
  steps_->loop().mark_finished(g);
}

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
  // A job that ends between START and its t = 0 (a death from outside) ends at 0.
  outcome_.end_s = std::max(0.0, coordinator() ? end_s_ : now_s());
  if (coordinator()) {
    // In the cluster spec's task order.
    outcome_.clock_offsets = job_->clock_offsets();
  }
  if (coordinator() && restorer_) {
    std::optional<double> next_fault_s;
    if (job_fault_ >= 0) next_fault_s = plan_.faults[size_t(job_fault_)].at_s;
    outcome_.restarts.push_back(restorer_->record(outcome_.end_s,
                                                  next_fault_s ? next_fault_s : outcome_.killed_s,
                                                  next_fault_s, graph_dead_));
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
  // What this task's devices' memories held and moved (DeviceValues).
  if (steps_) {
    for (const std::string& memory : steps_->device_memory_summaries()) {
      // A restarted job's tasks start again: each start's note says which it was.
      const std::string start =
          resume_ ? " (start " + std::to_string(resume_->incarnation + 1) + ")" : "";
      outcome_.notes.push_back("task " + spec_.tasks[self_].name() + start + " kept values in " +
                               memory);
    }
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
