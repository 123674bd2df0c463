#include "real/node/restorer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/runtime/recovery_timeline.h"

namespace replisim::real::detail {

using core::CheckpointIndex;
using core::CheckpointShard;
using core::ParameterStore;
using core::read_checkpoint_index;
using core::read_checkpoint_shard;

Resume read_resume_file(const std::string& path) {
  const nlohmann::json j = core::read_json_file(path);
  const core::JsonCursor c(j, path);
  c.expect_object();
  c.check_keys({"incarnation", "origin_clock_s", "fault", "cause", "actor", "fault_s", "detected_s",
                "restart_s", "global_step_at_failure", "previous_resumed_s"});
  Resume r;
  r.incarnation = int(c.at("incarnation").as_int(1, 1 << 20));
  r.origin_clock_s = c.at("origin_clock_s").as_number_in(-1e12, 1e12);
  r.fault = int(c.at("fault").as_int(-1, 1 << 20));
  if (r.fault < 0) {  // a death from outside: what it was
    r.cause = c.at("cause").as_string();
    r.actor = c.at("actor").as_string();
  }
  r.fault_s = c.at("fault_s").as_number_in(0, 1e9);
  r.detected_s = c.at("detected_s").as_number_in(r.fault_s, 1e9);
  r.restart_s = c.at("restart_s").as_number_in(r.detected_s, 1e9);
  r.global_step_at_failure = c.at("global_step_at_failure").as_int(0, int64_t(1) << 53);
  r.previous_resumed_s = c.at("previous_resumed_s").as_number_in(0, r.fault_s);
  return r;
}

Restorer::Restorer(Host& host, core::ClientLoop& loop, const std::vector<Part>& parts,
                   CheckpointSaver& saver, Setup setup)
    : host_(host),
      loop_(loop),
      parts_(parts),
      saver_(saver),
      setup_(std::move(setup)),
      resumed_s_(parts.size(), -1),
      awaiting_model_(parts.size(), false) {}

void Restorer::own_frames(FrameRouter& router) {
  using channel::require;
  router.own(channel::kRestore,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (host_.stopping()) return;
               require(h, peer == setup_.chief && setup_.store != nullptr,
                       "not from the chief of a restarted run, or to a task without variables");
               on_restore(peer, h, payload);
             });
  router.own(channel::kRestored, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    require(h, chief() && restoring_.erase(peer) > 0, "not expected");
    on_restored();
  });
  router.own(channel::kModelQuery, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    require(h, coordinator(), "to a task that is not the coordinator");
    host_.send_restore_frame(peer, channel::kModelReady, h.tensor, model_state().dump(), 0);
  });
  router.own(channel::kModelReady,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (host_.stopping()) return;
               require(h, peer == setup_.coordinator, "not from the coordinator");
               on_model_ready(h, payload);
             });
  router.own(channel::kResumed,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (host_.stopping()) return;
               require(h, coordinator(), "sent to a task that is not the coordinator");
               on_resumed(peer, h, payload);
             });
}

bool Restorer::with_chief(int g) const {
  const core::ClientGraph& graph = *parts_[size_t(g)].graph;
  return loop_.client(g).loop == core::LoopKind::kChiefSyncOp ||
         (g < int(setup_.plan->clients.size()) && setup_.plan->roles[size_t(graph.role)].chief);
}

namespace {

// What the chief restores (the coordinator's record stands even when the chief does not get that
// far): {checkpoint, start_s, global_step, client_steps, bytes}, a fresh start without one.
nlohmann::json restore_target(const std::optional<CheckpointIndex>& best) {
  return {{"checkpoint", best ? best->name : ""},
          {"start_s", best ? std::max(0.0, best->start_s) : 0.0},
          {"global_step", best ? best->global_step : 0},
          {"client_steps", best ? best->client_steps : std::vector<int64_t>()},
          {"bytes", best ? best->bytes : 0.0}};
}

// A peer's per-client step counts: a JSON array of integers (throws std::runtime_error
// otherwise, inside the callers' checks of the frame).
std::vector<int64_t> step_counts(const nlohmann::json& j) {
  if (!j.is_array()) throw std::runtime_error("client_steps is not an array");
  for (const nlohmann::json& n : j) {
    if (!n.is_number_integer()) throw std::runtime_error("client_steps holds a non-integer");
  }
  return j.get<std::vector<int64_t>>();
}

}  // namespace

void Restorer::begin() {
  const core::Plan& plan = *setup_.plan;
  // Deaths planned between the clients' detection and the restart struck no running task (the
  // tasks struck before the detection said so themselves).
  if (coordinator()) {
    if (!chief()) restored_ = restore_target(checkpoint_to_restore(nullptr));
    for (size_t f = 0; f < plan.faults.size(); ++f) {
      const core::PlanFault& fault = plan.faults[f];
      if (!fault.is_death() || int(f) == setup_.resume.fault ||
          fault.at_s < setup_.resume.detected_s || fault.at_s >= setup_.resume.restart_s) {
        continue;
      }
      host_.note_struck_while_down(fault);
    }
  }
  for (const Part& p : parts_) {
    if (!p.owner || with_chief(p.index)) continue;
    const int g = p.index;
    awaiting_model_[size_t(g)] = true;
    host_.after(core::relaunch_offset_s(*setup_.plan, *p.graph), true,
                [this, g] { poll_model(g); });
  }
  if (chief()) restore_model();
}

// The chief: the last checkpoint whose index was written by the time the role died (TF's
// Saver.latest_checkpoint of a run where nothing completes after the death); each parameter server
// loads its shard. No such checkpoint: a fresh start from global_step 0.
std::optional<CheckpointIndex> Restorer::checkpoint_to_restore(
    std::map<int, CheckpointIndex>* earlier) const {
  std::optional<CheckpointIndex> best;
  if (setup_.checkpoint_dir.empty()) return best;
  for (const auto& entry : std::filesystem::directory_iterator(setup_.checkpoint_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("model.ckpt-", 0) != 0 || entry.path().extension() != ".index") continue;
    const CheckpointIndex index = read_checkpoint_index(entry.path().string());
    if (index.plan_hash != setup_.plan_hash) continue;
    const std::string number = index.name.substr(std::string("model.ckpt-").size());
    if (number.empty() || number.size() > 9 ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    if (earlier != nullptr) (*earlier)[std::stoi(number)] = index;
    if (!core::RecoveryTimeline::restorable(index.written_s, setup_.resume.fault_s)) continue;
    if (!best || index.written_s > best->written_s) best = index;
  }
  return best;
}

void Restorer::restore_model() {
  restore_start_s_ = host_.now_s();
  // The run's checkpoints so far, by number: the new ones continue the numbering, and the oldest
  // go as the Saver's max_to_keep says (TF's Saver recovers its last checkpoints so).
  std::map<int, CheckpointIndex> earlier;
  const std::optional<CheckpointIndex> best = checkpoint_to_restore(&earlier);
  std::vector<CheckpointIndex> kept;
  for (const auto& [number, index] : earlier) kept.push_back(index);
  // New checkpoints are numbered after every one begun so far: one that a death cut short left
  // shards (or their temporaries) without an index, which no new checkpoint may meet.
  int next = 0;
  const auto files = setup_.checkpoint_dir.empty()
                         ? std::filesystem::directory_iterator()
                         : std::filesystem::directory_iterator(setup_.checkpoint_dir);
  for (const auto& entry : files) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "model.ckpt-";
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t digits = name.find_first_not_of("0123456789", prefix.size());
    const std::string number = name.substr(prefix.size(), digits - prefix.size());
    if (!number.empty() && number.size() <= 9) next = std::max(next, std::stoi(number) + 1);
  }
  saver_.continue_run(kept, next);
  restored_ = restore_target(best);
  if (!best || setup_.ps_tasks.empty()) {  // nothing to load (a plan without parameter servers)
    model_restored();
    return;
  }
  restoring_.insert(setup_.ps_tasks.begin(), setup_.ps_tasks.end());
  const std::string payload =
      nlohmann::json{{"name", best->name}, {"client_steps", best->client_steps}}.dump();
  for (uint32_t t : setup_.ps_tasks) {
    if (t == setup_.self) {
      on_restore(setup_.self, FrameHeader{}, nullptr);
    } else {
      host_.send_restore_frame(t, channel::kRestore, 0, payload, 0);
    }
  }
}

// A parameter server loads its shard of the checkpoint named in the payload (the chief's own
// shard: `payload` null, the name in restored_), then says so.
void Restorer::on_restore(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  nlohmann::json request;
  std::vector<int64_t> steps;
  if (payload == nullptr) {
    request = {{"name", restored_.at("checkpoint")},
               {"client_steps", restored_.at("client_steps")}};
  } else {
    try {
      request = nlohmann::json::parse(payload, payload + h.length);
      if (!request.at("name").is_string()) throw std::runtime_error("members of the wrong type");
      steps = step_counts(request.at("client_steps"));
    } catch (const std::exception& e) {
      throw FrameError(std::string("a restore that is not {name, client_steps}: ") + e.what());
    }
  }
  const std::string name = request.at("name").get<std::string>();
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos || name[0] == '.') {
    throw FrameError("restore of \"" + name.substr(0, 200) + "\"");
  }
  // An all-reduce rank loads rank 0's copy, whichever rank it is: Horovod restores on rank 0 and
  // broadcasts its variables to every rank (BroadcastGlobalVariablesHook(0), Horovod's
  // "Usage" docs), so the ranks resume bitwise equal even where their own copies were saved a
  // step apart.
  const std::string path =
      setup_.checkpoint_dir + "/" + name +
      (setup_.rank >= 0 ? std::string(".rank0") : ".ps" + std::to_string(setup_.ps_shard));
  if (payload == nullptr) steps = step_counts(request.at("client_steps"));
  struct Read {
    int64_t global_step = 0;
    std::string error;
  };
  auto read = std::make_shared<Read>();
  ParameterStore* store = setup_.store;
  host_.background(
      [store, path, read, hash = setup_.plan_hash] {
        try {
          if (store->bytes() > 0 || store->holds_global_step()) {
            const CheckpointShard shard = read_checkpoint_shard(path);
            if (shard.plan_hash != hash) throw std::runtime_error("a shard of another plan");
            store->restore(shard);
            read->global_step = shard.global_step;
          }
        } catch (const std::exception& e) {
          read->error = e.what();
        }
      },
      [this, peer, path, steps, read, store] {
        if (!read->error.empty()) {
          throw core::OutputError(path, "cannot restore from it: " + read->error);
        }
        if (store->holds_global_step()) {
          host_.global_step_restored(std::max<int64_t>(0, read->global_step), steps);
        }
        if (peer == setup_.self) {
          restoring_.erase(setup_.self);
          on_restored();
        } else {
          host_.send_restore_frame(peer, channel::kRestored, 0, "{}", 0);
        }
      });
}

void Restorer::on_restored() {
  if (restoring_.empty()) model_restored();
}

// The chief's model is back: the coordinator hears of it (the recovery slice, the restart's
// record) and the chief trains from the checkpoint's steps, its sync op with it.
void Restorer::model_restored() {
  const double now = host_.now_s();
  restored_["ready_s"] = now;
  restored_["restore_s"] = now - restore_start_s_;
  const int64_t global_step = restored_.at("global_step").get<int64_t>();
  const std::vector<int64_t> steps = restored_.at("client_steps").get<std::vector<int64_t>>();
  const std::string text = restored_.dump();
  if (coordinator()) {
    FrameHeader h;
    h.time_s = now;
    h.length = uint32_t(text.size());
    on_resumed(setup_.self, h, reinterpret_cast<const uint8_t*>(text.data()));
  } else {
    host_.send_restore_frame(setup_.coordinator, channel::kResumed, 0, text, now);
  }
  for (const Part& p : parts_) {
    if (p.owner && with_chief(p.index)) resume_client(p.index, global_step, steps);
  }
}

// A restarted worker asks the coordinator whether the model is back.
void Restorer::poll_model(int g) {
  if (!coordinator()) {
    host_.send_restore_frame(setup_.coordinator, channel::kModelQuery, uint64_t(g), "", 0);
    return;
  }
  FrameHeader h;
  h.tensor = uint64_t(g);
  const std::string text = model_state().dump();
  h.length = uint32_t(text.size());
  on_model_ready(h, reinterpret_cast<const uint8_t*>(text.data()));
}

nlohmann::json Restorer::model_state() const {
  return {{"ready", model_ready_},
          {"global_step", model_ready_ ? restored_.at("global_step").get<int64_t>() : 0},
          {"client_steps", model_ready_ ? restored_.at("client_steps") : nlohmann::json::array()}};
}

// Ready: the worker trains from the checkpoint's steps; not yet: it asks again recovery_wait
// later.
void Restorer::on_model_ready(const FrameHeader& h, const uint8_t* payload) {
  const uint64_t g = h.tensor;
  if (g >= setup_.plan->clients.size() || !parts_[size_t(g)].owner) {
    throw FrameError("a model answer for graph " + std::to_string(g) + ", not this task's");
  }
  if (!awaiting_model_[size_t(g)]) {
    throw FrameError("a model answer for graph " + std::to_string(g) + ", which asked for none");
  }
  nlohmann::json state;
  std::vector<int64_t> steps;
  try {
    state = nlohmann::json::parse(payload, payload + h.length);
    if (!state.at("ready").is_boolean() || !state.at("global_step").is_number_integer()) {
      throw std::runtime_error("members of the wrong type");
    }
    steps = step_counts(state.at("client_steps"));
  } catch (const std::exception& e) {
    throw FrameError(
        std::string("a model answer that is not {ready, global_step, client_steps}: ") + e.what());
  }
  if (state.at("ready").get<bool>()) {
    resume_client(int(g), state.at("global_step").get<int64_t>(), steps);
    return;
  }
  host_.after(setup_.plan->recovery.recovery_wait_s, true, [this, g] { poll_model(int(g)); });
}

// Graph g's client trains again from the restored state: its step count and input go back to the
// checkpoint's, a synchronous worker's next local step is the restored global_step.
void Restorer::resume_client(int g, int64_t global_step, const std::vector<int64_t>& client_steps) {
  const core::Plan& plan = *setup_.plan;
  awaiting_model_[size_t(g)] = false;
  const bool client = g < int(plan.clients.size());
  const int step = client ? int(core::RecoveryTimeline::resumed_step(plan, client_steps, size_t(g)))
                          : loop_.client(g).step;
  loop_.resume(g, step, global_step);
  host_.saw_global_step(global_step);
  const double now = host_.now_s();
  if (client && !plan.roles[size_t(parts_[size_t(g)].graph->role)].chief) {
    if (coordinator()) {
      resumed_s_[size_t(g)] = now;
    } else {
      host_.send_restore_frame(setup_.coordinator, channel::kResumed, uint64_t(g), "{}", now);
    }
  }
  loop_.start_client(g);
}

// The coordinator: the chief's restore (payload: what it restored) or a worker training again.
void Restorer::on_resumed(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (peer == setup_.chief && !model_ready_) {
    try {
      restored_ = nlohmann::json::parse(payload, payload + h.length);
      for (const char* key : {"start_s", "restore_s", "ready_s"}) {
        if (!restored_.at(key).is_number()) throw std::runtime_error(key);
      }
      if (!restored_.at("global_step").is_number_integer() ||
          !restored_.at("checkpoint").is_string()) {
        throw std::runtime_error("members of the wrong type");
      }
      step_counts(restored_.at("client_steps"));
    } catch (const std::exception& e) {
      throw FrameError(std::string("a restore report that is not the chief's: ") + e.what());
    }
    model_ready_ = true;
    chief_ready_s_ = h.time_s;
    record_recovery_slice(restored_.at("global_step").get<int64_t>(), chief_ready_s_);
    return;
  }
  if (h.tensor >= setup_.plan->clients.size()) {
    throw FrameError("resumed for a graph that is no client");
  }
  resumed_s_[size_t(h.tensor)] = h.time_s;
}

std::string restart_cause(const core::Plan& plan, const Resume& resume) {
  return resume.fault < 0 ? resume.cause : plan.faults[size_t(resume.fault)].description;
}

std::string restart_actor(const core::Plan& plan, const Resume& resume) {
  if (resume.fault < 0) return resume.actor;
  const core::PlanFault& f = plan.faults[size_t(resume.fault)];
  return f.roles.empty() ? std::string("job") : plan.roles[size_t(f.roles.front())].name;
}

void Restorer::record_recovery_slice(int64_t from_step, double end_s) {
  const Resume& resume = setup_.resume;
  host_.recorder().recovery(restart_actor(*setup_.plan, resume),
                            restart_cause(*setup_.plan, resume) + ": restart from global_step " +
                                std::to_string(from_step),
                            resume.fault_s, end_s, from_step, resume.global_step_at_failure);
}

void Restorer::client_lost(size_t c, const std::string& name) {
  if (coordinator() && resumed_s_[c] < 0) lost_before_back_.push_back(name);
}

core::RestartRecord Restorer::record(double end_s, std::optional<double> interrupted_s,
                                     std::optional<double> next_fault_s,
                                     const std::vector<bool>& dead) {
  const core::Plan& plan = *setup_.plan;
  const Resume& resume = setup_.resume;
  core::RestartRecord k;
  k.cause = restart_cause(plan, resume);
  k.fault_s = resume.fault_s;
  k.detected_s = resume.detected_s;
  k.restart_s = resume.restart_s;
  k.resumed_s = model_ready_ ? chief_ready_s_ : end_s;
  k.workers_resumed_s = k.resumed_s;
  bool all_back = model_ready_;
  for (size_t c = 0; c < plan.clients.size(); ++c) {
    if (resumed_s_[c] >= 0) k.workers_resumed_s = std::max(k.workers_resumed_s, resumed_s_[c]);
    const bool chief_client = plan.roles[size_t(plan.clients[c].role)].chief;
    all_back &= chief_client || resumed_s_[c] >= 0 || dead[c];
  }
  k.workers_lost = lost_before_back_;
  if (!restored_.is_null()) {
    if (model_ready_) k.restore_s = restored_.at("restore_s").get<double>();
    k.checkpoint_start_s = std::min(k.fault_s, restored_.at("start_s").get<double>());
    k.checkpoint_global_step = restored_.at("global_step").get<int64_t>();
  }
  // A job failure (this task's death among them) before every client was back: the restart was
  // cut short (while the chief was restoring, when the model was never back).
  if (interrupted_s && !all_back) {
    k.interrupted_s = std::max(*interrupted_s, k.detected_s);
    if (!model_ready_) {
      k.resumed_s = std::nextafter(k.interrupted_s, 1e12);
      // The recovery slice ends there (the chief never trained again).
      record_recovery_slice(k.checkpoint_global_step, k.interrupted_s);
    }
    k.workers_resumed_s = std::max(k.workers_resumed_s, k.resumed_s);
  }
  const double work_from_s = std::max(k.checkpoint_start_s, resume.previous_resumed_s);
  k.lost_work_s = std::clamp(k.fault_s - work_from_s, 0.0, k.fault_s);
  k.global_step_at_failure = std::max(resume.global_step_at_failure, k.checkpoint_global_step);
  k.lost_global_steps = k.global_step_at_failure - k.checkpoint_global_step;
  // Another job failure before every worker was back.
  if (next_fault_s && *next_fault_s < k.workers_resumed_s) {
    k.interrupted_s = std::max(*next_fault_s, k.detected_s);
  }
  return k;
}

}  // namespace replisim::real::detail
