// The chief's hooks after its steps (TF's CheckpointSaverHook and SummarySaverHook): a checkpoint
// through the task's CheckpointSaver (checkpoint_saver.h) when every_s has passed, the summaries'
// event file every summary_every_steps steps; and the node's work off its thread.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/base/error.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

// --- the chief's checkpoints and summaries --------------------------------------------------

// After a chief step: the checkpoint hook saves when every_s has passed since the last save,
// the summary hook writes every summary_every_steps steps (TF's CheckpointSaverHook and
// SummarySaverHook, as the simulation's JobRecovery::chief_duties).
void Node::chief_duties(int g, std::function<void()> then) {
  auto summaries = [this, g, then = std::move(then)]() mutable {
    const int n = plan_.checkpoints.summary_every_steps;
    if (n <= 0 || steps_->loop().client(g).step % n != 0) {
      then();
      return;
    }
    write_summaries(g, std::move(then));
  };
  if (saver_->due()) {
    saver_->save(saver_->next_name(),
                 [this, g, summaries = std::move(summaries)](double start_s, double bytes,
                                                             int64_t global_step) mutable {
                   recorder_->checkpoint(g, steps_->loop().client(g).step, start_s, now_s(), bytes,
                                         global_step, false);
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
  const int64_t step = steps_->loop().client(g).step;
  const int64_t global_step = global_step_seen_;
  struct Written {
    double start_s = 0, end_s = 0;
    std::string error;
  };
  auto written = std::make_shared<Written>();
  background(
      [this, path, bytes, written] {
        written->start_s = now_s();
        std::ofstream out(path, std::ios::binary | std::ios::app);
        const std::string block(bytes, '\0');
        out.write(block.data(), std::streamsize(block.size()));
        out.flush();
        if (!out) written->error = std::strerror(errno);
        written->end_s = now_s();
      },
      [this, g, path, bytes, step, global_step, written, then = std::move(then)] {
        if (!written->error.empty()) throw core::OutputError(path, written->error);
        recorder_->checkpoint(g, step, written->start_s, written->end_s, double(bytes), global_step,
                              true);
        then();
      });
}

void Node::background(std::function<void()> work, std::function<void()> done) {
  ++work_pending_;
  steps_->copier().submit([this, work = std::move(work), done = std::move(done)]() mutable {
    work();
    post([this, done = std::move(done)] {
      --work_pending_;
      if (!stopping_) done();
    });
  });
}

}  // namespace replisim::real::detail
