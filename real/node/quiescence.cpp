#include "real/node/quiescence.h"

#include "real/node/channels.h"

#include <stdexcept>

namespace replisim::real::detail {

namespace {

constexpr double kWaveEveryS = 0.5;  // between the coordinator's waves

}  // namespace

Quiescence::Quiescence(Host& host, uint32_t self, uint32_t coordinator, size_t tasks, size_t graphs)
    : host_(host),
      self_(self),
      coordinator_(coordinator),
      graphs_(graphs),
      sent_to_(tasks, 0),
      received_from_(tasks, 0) {}

bool Quiescence::counted(FrameType type) {
  switch (uint16_t(type)) {
    case uint16_t(channel::kRun):
    case uint16_t(channel::kDone):
    case uint16_t(FrameType::kTensor):
    case uint16_t(channel::kControl):
    case uint16_t(channel::kSave):
    case uint16_t(channel::kSaved):
    case uint16_t(channel::kFinished):
    case uint16_t(channel::kProgress):
    case uint16_t(channel::kRestore):
    case uint16_t(channel::kRestored):
    case uint16_t(channel::kModelQuery):
    case uint16_t(channel::kModelReady):
    case uint16_t(channel::kResumed):
    case uint16_t(channel::kStopAsk):
    case uint16_t(channel::kStopReply):
    case uint16_t(channel::kStopLimit):
    case uint16_t(channel::kValuesAsk):
    case uint16_t(channel::kValues):
      return true;
    default:
      return false;
  }
}

void Quiescence::own_frames(FrameRouter& router) {
  router.own(channel::kQuery, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (host_.stopping()) return;
    if (peer != coordinator_)
      throw FrameError(channel::name(h.type) + " frame not from the coordinator");
    const std::string finished(reinterpret_cast<const char*>(payload), h.length);
    if (finished.size() != graphs_ || finished.find_first_not_of("01") != std::string::npos) {
      throw FrameError("a query whose payload is not one 0 or 1 per graph");
    }
    host_.send_wave_frame(peer, channel::kStatus, h.step, status(finished).dump());
  });
  router.own(channel::kStatus, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (host_.stopping()) return;
    if (self_ != coordinator_) {
      throw FrameError(channel::name(h.type) + " frame sent to a task that is not the coordinator");
    }
    on_status(peer, h, payload);
  });
}

void Quiescence::schedule() {
  host_.wave_timer(kWaveEveryS, [this] {
    if (!host_.job_finished()) query();
  });
}

void Quiescence::query() {
  ++wave_;
  status_.clear();
  const std::string finished = host_.finished_clients();
  status_[self_] = status(finished);
  for (uint32_t t = 0; t < sent_to_.size(); ++t) {
    if (t != self_ && host_.live(t)) host_.send_wave_frame(t, channel::kQuery, wave_, finished);
  }
  maybe_evaluate();
}

void Quiescence::task_died() {
  previous_counts_.reset();
  if (status_.empty() || host_.job_finished() || host_.stopping()) return;  // between waves
  query();  // a new wave: answers to the old one are dropped (their wave number)
}

// Once every live task answered (a task that dies meanwhile is no longer waited for).
void Quiescence::maybe_evaluate() {
  if (status_.empty() || host_.job_finished() || host_.stopping()) return;
  for (uint32_t t = 0; t < sent_to_.size(); ++t) {
    if (host_.live(t) && status_.count(t) == 0) return;
  }
  evaluate();
}

// This task's counters: frames sent and received (counted types), work under way, and, on the
// parameter server of synchronous training's queues, the stall it would report now.
nlohmann::json Quiescence::status(const std::string& finished) const {
  nlohmann::json j = {
      {"sent", sent_to_}, {"received", received_from_}, {"busy", host_.work_under_way()}};
  if (const std::optional<core::StallRecord> s = host_.stall_now(finished)) {
    j["stall"] = {{"time_s", s->time_s},
                  {"global_step", s->global_step},
                  {"live_workers", s->live_workers},
                  {"detected_s", s->detected_s},
                  {"cause", s->cause}};
  }
  // The task holding global_step says where it stands: a barrier's task may hold no variable.
  if (nlohmann::json at = host_.global_step_status(); !at.is_null()) j["global_step"] = at;
  return j;
}

void Quiescence::on_status(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (h.step != wave_) return;  // an answer to a wave already decided
  try {
    nlohmann::json j = nlohmann::json::parse(payload, payload + h.length);
    if (!j.at("busy").is_number_integer()) throw std::runtime_error("busy");
    if (j.contains("global_step") && (!j.at("global_step").at("value").is_number_integer() ||
                                      !j.at("global_step").at("updated_s").is_number())) {
      throw std::runtime_error("global_step");
    }
    for (const char* key : {"sent", "received"}) {
      const nlohmann::json& counts = j.at(key);
      if (!counts.is_array() || counts.size() != sent_to_.size()) {
        throw std::runtime_error(std::string(key) + " is not one count per task");
      }
      for (const nlohmann::json& n : counts) {
        if (!n.is_number_integer()) throw std::runtime_error(key);
      }
    }
    status_[peer] = std::move(j);
  } catch (const std::exception& e) {
    throw FrameError(std::string("a status that is not {sent, received, busy}: ") + e.what());
  }
  maybe_evaluate();
}

void Quiescence::evaluate() {
  int64_t busy = 0;
  bool balanced = true;
  std::string counts;
  std::optional<nlohmann::json> stall, global_step;
  for (const auto& [a, j] : status_) {
    if (!host_.live(a)) continue;
    busy += j.at("busy").get<int64_t>();
    if (j.contains("stall")) stall = j.at("stall");
    if (j.contains("global_step")) global_step = j.at("global_step");
    for (const auto& [b, k] : status_) {
      if (a == b || !host_.live(b)) continue;
      const int64_t sent = j.at("sent")[b].get<int64_t>();
      balanced &= sent == k.at("received")[a].get<int64_t>();
      counts += std::to_string(sent) + ",";
    }
  }
  const bool quiet = busy == 0 && balanced && previous_counts_ == counts && !host_.job_down();
  previous_counts_ = busy == 0 && balanced ? std::optional<std::string>(counts) : std::nullopt;
  status_.clear();
  if (!quiet) {
    schedule();
    return;
  }
  if (!stall) {
    host_.deadlocked();
    return;
  }
  core::StallRecord s;
  s.time_s = stall->at("time_s").get<double>();
  s.global_step = stall->at("global_step").get<int64_t>();
  s.live_workers = stall->at("live_workers").get<int>();
  s.detected_s = stall->at("detected_s").get<double>();
  s.cause = stall->at("cause").get<std::string>();
  if (global_step) {
    s.global_step = global_step->at("value").get<int64_t>();
    s.time_s = global_step->at("updated_s").get<double>();
  }
  host_.stalled(s);
}

}  // namespace replisim::real::detail
