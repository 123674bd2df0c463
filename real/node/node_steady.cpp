// training.steps "auto" in a real run: the simulator's stopping rule (core/runtime/steady_state.h)
// applied online. The coordinator holds global_step, so it runs every update and feeds the rule
// with them; the clients' tasks report each step's end (progress frames). When the rule holds, the
// coordinator asks every live client which step it will end last, and once every answer is in it
// gives each a limit:
// - asynchronous and in-graph clients: their own answer (each ends the step it is in when the
//   question comes, as the simulator's clients do; the client whose step end made the rule hold
//   has usually begun its next step by then, one more than the simulator runs);
// - distributed_replicated workers: the largest answer (workers meet at barriers, so each runs up
//   to the furthest step any worker is in, none waiting for one that stopped);
// - SyncReplicas: a global step G past every token a worker holds (a worker that runs on token t
//   gives its gradient to update t + 1) and at least the updates the chief's sync op has made; the
//   sync op stops at G and the workers at the token G that update enqueues, as a run of G global
//   steps would end.
// Between the question and the limit, a client does not begin a step beyond its answer (it holds
// for one round trip at most), so no answer is out of date when the limit comes.
#include "real/node/runtime.h"

namespace replisim::real::detail {

// Where a client's loop stands, in the unit of its limit: the next step to begin (fixed steps),
// the token its next step runs on (a synchronous worker), global_step (the chief's sync op).
int64_t Node::stop_position(const Part& p) const {
  const core::LoopClient& loop = loop_->client(p.index);
  switch (loop.loop) {
    case core::LoopKind::kFixedSteps:
      return loop.step;
    case core::LoopKind::kSyncWorker:
      return loop.next_local_step;
    case core::LoopKind::kChiefSyncOp:
      return global_step_seen_;
  }
  return 0;
}

int64_t Node::last_global_step() const {
  return stop_global_step_ >= 0 ? std::min<int64_t>(stop_global_step_, plan_.steps) : plan_.steps;
}

bool Node::held_for_stop_limit(Part& p) {
  if (!p.stop_asked || p.stop_limit || stop_position(p) <= p.stop_reply) return false;
  p.held = true;
  return true;
}

void Node::ask_to_stop() {
  if (stop_asked_ || stopping_ || all_finished_) return;
  stop_asked_ = true;
  for (const Part& p : parts_) {
    if (graph_dead_[size_t(p.index)] || finished_[size_t(p.index)]) continue;
    stop_replies_[p.index] = -2;  // awaited
    if (p.owner_task != self_) {
      send_frame(p.owner_task, FrameType::kStopAsk, -1, uint64_t(p.index));
    }
  }
  // This task's own clients answer at once (as in the simulator, the client whose step made the
  // rule hold ends there): from inside finish_step its step has ended and the next not begun;
  // from inside an update its step is active. Either way nothing of it is held yet.
  for (Part& p : parts_) {
    if (p.owner_task == self_ && stop_replies_.count(p.index) > 0) on_stop_ask(p);
  }
  maybe_set_stop_limits();
}

void Node::on_stop_ask(Part& p) {
  if (p.stop_asked) throw FrameError("a second stop question for graph " + std::to_string(p.index));
  p.stop_asked = true;
  const int64_t position = stop_position(p);
  // The chief's sync op answers with the updates made: the one it waits for may never come.
  p.stop_reply = loop_->client(p.index).loop == core::LoopKind::kChiefSyncOp || p.active
                     ? position
                     : position - 1;
  if (coordinator()) {
    on_stop_reply(p, p.stop_reply);
  } else {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kStopReply, p.stop_reply,
               uint64_t(p.index));
  }
}

void Node::on_stop_reply(Part& p, int64_t last_step) {
  auto found = stop_replies_.find(p.index);
  if (found == stop_replies_.end() || found->second != -2) {
    throw FrameError("a stop reply for graph " + std::to_string(p.index) + " not asked for");
  }
  if (last_step < -1) throw FrameError("a stop reply before the first step");
  found->second = last_step;
  maybe_set_stop_limits();
}

void Node::maybe_set_stop_limits() {
  if (!stop_asked_ || stop_limits_sent_ || stopping_) return;
  int64_t furthest = -1, sync_limit = 0;
  for (const auto& [g, last] : stop_replies_) {
    if (graph_dead_[size_t(g)]) continue;
    if (last == -2) return;  // not every live client answered yet
    furthest = std::max(furthest, last);
    const core::LoopKind loop = loop_->client(g).loop;
    sync_limit = std::max(sync_limit, loop == core::LoopKind::kChiefSyncOp ? last : last + 1);
  }
  const bool synchronous = plan_.sync == "sync";
  if (synchronous) stop_global_step_ = sync_limit;
  const bool barriers = plan_.sync == core::kDistributedReplicated;
  for (const auto& [g, last] : stop_replies_) {
    if (graph_dead_[size_t(g)]) continue;
    const int64_t limit = synchronous ? sync_limit : barriers ? furthest : last;
    Part& p = parts_[size_t(g)];
    if (p.owner_task == self_) {
      on_stop_limit(p, limit);
    } else {
      send_frame(p.owner_task, FrameType::kStopLimit, limit, uint64_t(g));
    }
  }
  stop_limits_sent_ = true;
  maybe_end_job();
}

void Node::on_stop_limit(Part& p, int64_t limit) {
  if (!p.stop_asked || p.stop_limit || limit < p.stop_reply) {
    throw FrameError("a stop limit for graph " + std::to_string(p.index) + " not asked for");
  }
  p.stop_limit = limit;
  if (graph_dead_[size_t(p.index)] || loop_->client(p.index).finished) return;
  if (p.held) {
    p.held = false;
    // Held before its first step (start_client: the session's checkpoint and input come first).
    if (loop_->client(p.index).step == 0 &&
        loop_->client(p.index).loop != core::LoopKind::kChiefSyncOp) {
      loop_->start_client(p.index);
    } else {
      loop_->next_step(p.index);
    }
    return;
  }
  // The chief's sync op waits for an update past the limit (its step k makes update k + 1): no
  // worker will give it gradients. (global_step may already read the limit while the step that
  // made it still waits for some parameter servers' parts: that step ends as usual.)
  if (loop_->client(p.index).loop == core::LoopKind::kChiefSyncOp && p.active && p.step >= limit) {
    p.active = false;
    loop_->mark_finished(p.index);
  }
}

}  // namespace replisim::real::detail
