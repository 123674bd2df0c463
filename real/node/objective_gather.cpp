// The objective's evaluations in a real run (objective_gather.h).
#include "real/node/objective_gather.h"

#include <cstring>

#include "real/node/channels.h"
#include "real/node/objective_values.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

ObjectiveGather::ObjectiveGather(Host& host, Setup setup) : host_(host), setup_(std::move(setup)) {
  for (int task : setup_.holder_of) {
    if (task >= 0 && uint32_t(task) != setup_.self) holders_.insert(uint32_t(task));
  }
}

void ObjectiveGather::own_frames(FrameRouter& router) {
  router.own(channel::kValuesAsk, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    channel::require(h, peer == setup_.evaluator && setup_.store != nullptr && h.step >= 0,
                     "not from the task that holds global_step, or to a task without variables");
    on_ask(peer, h);
  });
  router.own(channel::kValues, [this](uint32_t peer, const FrameHeader& h, const uint8_t* p) {
    if (host_.stopping()) return;
    channel::require(h, setup_.self == setup_.evaluator && holders_.count(peer) > 0,
                     "not from a parameter server, or to a task that does not evaluate");
    on_values(peer, h, p);
  });
}

void ObjectiveGather::read_own(std::vector<float>& values) const {
  if (setup_.store == nullptr) return;
  const ObjectiveLayout& layout = setup_.objective->layout();
  for (size_t v = 1; v < setup_.holder_of.size(); ++v) {
    if (setup_.holder_of[v] != int(setup_.self)) continue;
    const core::ValueSlice& s = layout.slice(int(v));
    setup_.store->read_front(int(v), values.data() + s.offset, s.size);
  }
}

void ObjectiveGather::evaluate_initial() {
  record(0, 0.0, setup_.objective->setup().initial_values());
}

void ObjectiveGather::evaluate(int64_t global_step, double at_s) {
  if (diverged_) return;
  std::vector<float> values(setup_.objective->layout().parameters(), 0.0f);
  read_own(values);
  if (holders_.empty()) {
    record(global_step, at_s, values);
    return;
  }
  for (uint32_t task : holders_) {
    if (!host_.live(task)) return;  // its values are gone: no evaluation of the job's values
  }
  Pending& p = pending_[global_step];
  p.at_s = at_s;
  p.values = std::move(values);
  for (uint32_t task : holders_) {
    p.waiting.insert(task);
    host_.send_frame(task, channel::kValuesAsk, global_step, {});
  }
}

// A holder's answer: its variables' slices, in variable order, float32.
void ObjectiveGather::on_ask(uint32_t peer, const FrameHeader& h) {
  const ObjectiveLayout& layout = setup_.objective->layout();
  std::string payload;
  for (size_t v = 1; v < setup_.holder_of.size(); ++v) {
    if (setup_.holder_of[v] != int(setup_.self)) continue;
    const core::ValueSlice& s = layout.slice(int(v));
    std::vector<float> slice(s.size);
    setup_.store->read_front(int(v), slice.data(), s.size);
    payload.append(reinterpret_cast<const char*>(slice.data()), 4 * slice.size());
  }
  host_.send_frame(peer, channel::kValues, h.step, payload);
}

void ObjectiveGather::on_values(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  // The answer to an evaluation dropped while it was on the way (a holder died, the values
  // diverged): nothing waits for it.
  const auto late = dropped_.find(h.step);
  if (late != dropped_.end() && late->second.erase(peer) > 0) {
    if (late->second.empty()) dropped_.erase(late);
    return;
  }
  const auto found = pending_.find(h.step);
  channel::require(h, found != pending_.end() && found->second.waiting.count(peer) > 0,
                   "for an evaluation that did not ask it");
  Pending& p = found->second;
  const ObjectiveLayout& layout = setup_.objective->layout();
  size_t expected = 0;
  for (size_t v = 1; v < setup_.holder_of.size(); ++v) {
    if (setup_.holder_of[v] == int(peer)) expected += layout.slice(int(v)).size;
  }
  channel::require(h, h.length == 4 * expected, "of another length than its variables' slices");
  size_t at = 0;
  for (size_t v = 1; v < setup_.holder_of.size(); ++v) {
    if (setup_.holder_of[v] != int(peer)) continue;
    const core::ValueSlice& s = layout.slice(int(v));
    std::memcpy(p.values.data() + s.offset, payload + 4 * at, 4 * s.size);
    at += s.size;
  }
  p.waiting.erase(peer);
  settle();
}

void ObjectiveGather::task_died(uint32_t task) {
  // An evaluation without a holder's values is no evaluation of the job's values.
  if (holders_.count(task) > 0) drop_pending();
  settle();
}

void ObjectiveGather::drop_pending() {
  for (auto& [step, p] : pending_) {
    if (!p.waiting.empty()) dropped_[step].insert(p.waiting.begin(), p.waiting.end());
  }
  pending_.clear();
}

void ObjectiveGather::when_idle(std::function<void()> then) {
  when_idle_.push_back(std::move(then));
  settle();
}

// Records the evaluations every holder has answered, in global-step order (an evaluation waits
// for the earlier ones: the curve is recorded in order), then runs what waited for none left.
void ObjectiveGather::settle() {
  while (!pending_.empty() && pending_.begin()->second.waiting.empty()) {
    auto first = pending_.extract(pending_.begin());
    record(first.key(), first.mapped().at_s, first.mapped().values);
  }
  if (!pending_.empty()) return;
  std::vector<std::function<void()>> ready;
  ready.swap(when_idle_);
  for (auto& then : ready) then();
}

void ObjectiveGather::record(int64_t global_step, double at_s, const std::vector<float>& values) {
  if (diverged_) return;
  const core::ValueEvaluation e = setup_.objective->setup().evaluate(values, global_step);
  if (!e.finite()) {  // a trace counter cannot hold it; the report shows the last finite one
    diverged_ = true;
    drop_pending();
    host_.note(core::diverged_note(e.global_step));
    return;
  }
  host_.recorder().counter("loss", at_s, e.result.loss);
  host_.recorder().counter("accuracy", at_s, e.result.accuracy);
}

}  // namespace replisim::real::detail
