#include "real/node/steady_stop.h"

#include <algorithm>
#include <string>

namespace replisim::real::detail {

SteadyStop::SteadyStop(Host& host, core::ClientLoop& loop, const std::vector<Part>& parts,
                       Setup setup)
    : host_(host), loop_(loop), parts_(parts), setup_(setup), clients_(parts.size()) {
  if (setup_.rule && setup_.self == setup_.coordinator) rule_.emplace(*setup_.plan);
}

void SteadyStop::own_frames(FrameRouter& router) {
  using channel::require;
  router.own(channel::kStopAsk, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    const Part& p = part_of_frame(parts_, peer, h, false);
    require(h, peer == setup_.coordinator && p.owner,
            "not from the coordinator, or for a graph whose client is not here");
    on_ask(p.index);
  });
  router.own(channel::kStopReply, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    require(h, rule_.has_value() && asked_, "not asked for");
    on_reply(part_of_frame(parts_, peer, h, true).index, h.step);
  });
  router.own(channel::kStopLimit, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    const Part& p = part_of_frame(parts_, peer, h, false);
    require(h, peer == setup_.coordinator && p.owner,
            "not from the coordinator, or for a graph whose client is not here");
    on_limit(p.index, h.step);
  });
}

void SteadyStop::step_ended(int g, int step, double start_s, double end_s, int64_t global_step) {
  if (rule_ && g < int(setup_.plan->clients.size()) &&
      rule_->step_ended(g, step, start_s, end_s, global_step)) {
    ask();
  }
}

void SteadyStop::update(double at_s, double samples, int64_t global_step) {
  if (rule_ && rule_->update(at_s, samples, global_step)) ask();
}

void SteadyStop::client_died(int g) {
  if (rule_ && g < int(setup_.plan->clients.size())) rule_->client_died(g);
}

std::optional<core::SteadyStateRecord> SteadyStop::record(double end_s, bool stalled) {
  if (!rule_) return std::nullopt;
  if (stalled) rule_->stop_overtaken();
  return rule_->record(end_s);
}

int64_t SteadyStop::position(int g) const {
  const core::LoopClient& loop = loop_.client(g);
  switch (loop.loop) {
    case core::LoopKind::kFixedSteps:
      return loop.step;
    case core::LoopKind::kSyncWorker:
      return loop.next_local_step;
    case core::LoopKind::kChiefSyncOp:
      return host_.global_step_seen();
  }
  return 0;
}

bool SteadyStop::within_limit(int g) const {
  const Asked& c = clients_[size_t(g)];
  if (!c.limit) return true;
  return loop_.client(g).loop == core::LoopKind::kFixedSteps ? position(g) <= *c.limit
                                                             : position(g) < *c.limit;
}

int64_t SteadyStop::last_global_step() const {
  const int64_t steps = setup_.plan->steps;
  return sync_limit_ >= 0 ? std::min<int64_t>(sync_limit_, steps) : steps;
}

bool SteadyStop::hold(int g) {
  Asked& c = clients_[size_t(g)];
  if (!c.asked || c.limit || position(g) <= c.reply) return false;
  c.held = true;
  return true;
}

void SteadyStop::ask() {
  if (asked_ || host_.stopping() || host_.job_finished()) return;
  asked_ = true;
  for (const Part& p : parts_) {
    if (host_.client_dead(p.index) || host_.client_finished(p.index)) continue;
    replies_[p.index] = -2;  // awaited
    if (p.owner_task != setup_.self) {
      host_.send_stop_frame(p.owner_task, channel::kStopAsk, -1, uint64_t(p.index));
    }
  }
  // This task's own clients answer at once (as in the simulator, the client whose step made the
  // rule hold ends there): from inside a step's end its step has ended and the next not begun;
  // from inside an update its step is active. Either way nothing of it is held yet.
  for (const Part& p : parts_) {
    if (p.owner_task == setup_.self && replies_.count(p.index) > 0) on_ask(p.index);
  }
  maybe_set_limits();
}

void SteadyStop::on_ask(int g) {
  Asked& c = clients_[size_t(g)];
  if (c.asked) throw FrameError("a second stop question for graph " + std::to_string(g));
  c.asked = true;
  // The chief's sync op answers with the updates made: the one it waits for may never come.
  c.reply = loop_.client(g).loop == core::LoopKind::kChiefSyncOp || parts_[size_t(g)].active
                ? position(g)
                : position(g) - 1;
  if (setup_.self == setup_.coordinator) {
    on_reply(g, c.reply);
  } else {
    host_.send_stop_frame(setup_.coordinator, channel::kStopReply, c.reply, uint64_t(g));
  }
}

void SteadyStop::on_reply(int g, int64_t last_step) {
  auto found = replies_.find(g);
  if (found == replies_.end() || found->second != -2) {
    throw FrameError("a stop reply for graph " + std::to_string(g) + " not asked for");
  }
  if (last_step < -1) throw FrameError("a stop reply before the first step");
  found->second = last_step;
  maybe_set_limits();
}

void SteadyStop::maybe_set_limits() {
  if (!asked_ || limits_sent_ || host_.stopping()) return;
  int64_t furthest = -1, sync_limit = 0;
  for (const auto& [g, last] : replies_) {
    if (host_.client_dead(g)) continue;
    if (last == -2) return;  // not every live client answered yet
    furthest = std::max(furthest, last);
    const core::LoopKind loop = loop_.client(g).loop;
    sync_limit = std::max(sync_limit, loop == core::LoopKind::kChiefSyncOp ? last : last + 1);
  }
  const bool synchronous = setup_.plan->sync == "sync";
  if (synchronous) sync_limit_ = sync_limit;
  // Workers that meet every step (barriers, or all-reduce rings) all stop after the same step:
  // one that stopped earlier would leave the others waiting for it.
  const bool barriers = setup_.plan->sync == core::kDistributedReplicated ||
                        setup_.plan->sync == core::kAllReduceSync;
  for (const auto& [g, last] : replies_) {
    if (host_.client_dead(g)) continue;
    const int64_t limit = synchronous ? sync_limit : barriers ? furthest : last;
    const Part& p = parts_[size_t(g)];
    if (p.owner_task == setup_.self) {
      on_limit(g, limit);
    } else {
      host_.send_stop_frame(p.owner_task, channel::kStopLimit, limit, uint64_t(g));
    }
  }
  limits_sent_ = true;
  host_.stop_limits_set();
}

void SteadyStop::on_limit(int g, int64_t limit) {
  Asked& c = clients_[size_t(g)];
  if (!c.asked || c.limit || limit < c.reply) {
    throw FrameError("a stop limit for graph " + std::to_string(g) + " not asked for");
  }
  c.limit = limit;
  if (host_.client_dead(g) || loop_.client(g).finished) return;
  if (c.held) {
    c.held = false;
    // Held before its first step (start_client: the session's checkpoint and input come first).
    if (loop_.client(g).step == 0 && loop_.client(g).loop != core::LoopKind::kChiefSyncOp) {
      loop_.start_client(g);
    } else {
      loop_.next_step(g);
    }
    return;
  }
  // The chief's sync op waits for an update past the limit (its step k makes update k + 1): no
  // worker will give it gradients. (global_step may already read the limit while the step that
  // made it still waits for some parameter servers' parts: that step ends as usual.)
  const Part& p = parts_[size_t(g)];
  if (loop_.client(g).loop == core::LoopKind::kChiefSyncOp && p.active && p.step >= limit) {
    host_.end_waiting_step(g);
  }
}

}  // namespace replisim::real::detail
