#include "real/node/node_hooks.h"

#include <chrono>

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

// Runs `work` on `engine`, then `done` on the network thread unless the job stopped or the step
// moved on meanwhile.
void Node::ValueHooks::run_for_step(DeviceEngine& engine, int g, int64_t step,
                                    std::function<void()> work, std::function<void()> done) {
  Node& n = n_;
  ++n.work_pending_;
  engine.submit([&n, g, step, work = std::move(work), done = std::move(done)]() mutable {
    work();
    n.post([&n, g, step, done = std::move(done)] {
      --n.work_pending_;
      const Part& part = n.parts_[size_t(g)];
      if (n.stopping_ || !part.active || part.step != step) return;
      done();
    });
  });
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
  int unfinished = 0;
  for (size_t c = 0; c < n_.plan_.clients.size(); ++c) unfinished += !n_.finished_[c];
  n_.fail("the run deadlocked: every task idle with " + std::to_string(unfinished) +
          " client(s) unfinished");
}

}  // namespace replisim::real::detail
