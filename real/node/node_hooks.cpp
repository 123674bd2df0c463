#include "real/node/node_hooks.h"

#include <chrono>
#include <stdexcept>

namespace replisim::real::detail {

void Node::GatherHooks::timer(double delay_s, std::function<void()> work) {
  auto timer = std::make_shared<asio::steady_timer>(n_.io_);
  timer->expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, delay_s))));
  timer->async_wait([timer, work = std::move(work),
                     alive = std::weak_ptr<bool>(n_.alive_)](const asio::error_code&) {
    if (!alive.expired()) work();
  });
}

// The session's first checkpoint: the chief's client, on the chief's task, when the plan saves.
bool Node::StepHooks::session_checkpoint(int g, std::function<void(double)> then) {
  if (!n_.chief() || !n_.steps_->is_chief(g) || n_.plan_.checkpoints.every_s <= 0) return false;
  n_.saver_->save(n_.saver_->next_name(), [&n = n_, g, then = std::move(then)](
                                              double start_s, double bytes, int64_t global_step) {
    n.recorder_->checkpoint(g, n.steps_->loop().client(g).step, start_s, n.now_s(), bytes,
                            global_step, false);
    then(n.now_s());
  });
  return true;
}

void Node::StepHooks::collective(int g, int op) {
  if (!n_.collectives_) throw std::logic_error("an all-reduce op in a plan without collectives");
  n_.collectives_->ready(g, op);
}

// The coordinator hears of each step's end: progress lines, training.steps "auto".
void Node::StepHooks::step_counted(int g, int steps_done, double start_s, double end_s) {
  if (n_.collectives_) n_.collectives_->step_done(g, steps_done);
  if (n_.coordinator()) {
    n_.job_->client_progress(g, steps_done, n_.global_step_seen_, start_s, end_s);
  } else if (n_.job_->progress() || n_.steady_stop_->reports_steps()) {
    n_.send_frame(uint32_t(n_.map_.coordinator_task), channel::kProgress, steps_done, uint64_t(g),
                  pack_i64({n_.global_step_seen_}) + pack_f64({start_s, end_s}));
  }
}

void Node::StepHooks::client_finished(int g) {
  if (n_.coordinator()) {
    n_.job_->client_finished(g);
  } else {
    n_.send_frame(uint32_t(n_.map_.coordinator_task), channel::kFinished, -1, uint64_t(g));
  }
}

// The node's one wave timer (stop and fail cancel it).
void Node::WaveHooks::wave_timer(double delay_s, std::function<void()> work) {
  n_.wave_timer_->expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay_s)));
  n_.wave_timer_->async_wait([&n = n_, alive = std::weak_ptr<bool>(n_.alive_),
                              work = std::move(work)](const asio::error_code& ec) {
    if (alive.expired() || ec || n.stopping_) return;
    work();
  });
}

void Node::WaveHooks::deadlocked() {
  std::string what;
  if (n_.collectives_) {  // an all-reduce waits for a rank that will not come
    const std::string waiting = n_.collectives_->waiting_for();
    if (!waiting.empty()) what = " (" + waiting + ")";
  }
  n_.fail("the run deadlocked: every task idle with " +
          std::to_string(n_.job_->unfinished_clients()) + " client(s) unfinished" + what);
}

// The run's t = 0 on this machine's clock; training begins there.
double Node::JobHooks::start_clock(double origin_s) {
  n_.origin_local_s_ = origin_s - n_.clock_sync_.offset_s();
  n_.at_run_time(0, true, [&n = n_] { n.begin_training(); });
  return n_.origin_local_s_;
}

// Every client finished: the variables as the run left them are saved (for whoever checks a
// run's arithmetic; not a checkpoint of the plan's: the trace does not record it), then the task
// stops.
void Node::JobHooks::job_ended(double end_s) {
  n_.end_s_ = end_s;
  // The last evaluations first: their answers are on the way (objective_gather.h).
  if (n_.objective_gather_) {
    n_.objective_gather_->when_idle([this] { save_final_and_stop(); });
    return;
  }
  save_final_and_stop();
}

void Node::JobHooks::save_final_and_stop() {
  if (!n_.options_.checkpoint_dir.empty() &&
      (!n_.plan_.ps_roles.empty() || n_.plan_.sync == core::kAllReduceSync)) {
    n_.saver_->save("final", [&n = n_](double, double, int64_t) { n.stop(); });
    return;
  }
  n_.stop();
}

}  // namespace replisim::real::detail
