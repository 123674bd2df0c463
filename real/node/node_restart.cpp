// A restart after a job failure (training.recovery), as TF 1.x's MonitoredTrainingSession
// recovers: the launcher starts every task again on the run's clock (NodeOptions::resume_path);
// the chief restores the last checkpoint that was complete when the role died (each parameter
// server loads its shard, global_step included: training resumes from it), then saves its
// session-start checkpoint and trains; every other worker, once up (spaced as at the first start),
// asks for the restored model every recovery_wait (SessionManager.wait_for_session) and trains from
// the checkpoint's global_step. The coordinator records the restart as the simulation does.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

Resume read_resume_file(const std::string& path) {
  const nlohmann::json j = core::read_json_file(path);
  const core::JsonCursor c(j, path);
  c.expect_object();
  c.check_keys({"incarnation", "origin_clock_s", "fault", "fault_s", "detected_s", "restart_s",
                "global_step_at_failure", "previous_resumed_s"});
  Resume r;
  r.incarnation = int(c.at("incarnation").as_int(1, 1 << 20));
  r.origin_clock_s = c.at("origin_clock_s").as_number_in(-1e12, 1e12);
  r.fault = int(c.at("fault").as_int(0, 1 << 20));
  r.fault_s = c.at("fault_s").as_number_in(0, 1e9);
  r.detected_s = c.at("detected_s").as_number_in(r.fault_s, 1e9);
  r.restart_s = c.at("restart_s").as_number_in(r.detected_s, 1e9);
  r.global_step_at_failure = c.at("global_step_at_failure").as_int(0, int64_t(1) << 53);
  r.previous_resumed_s = c.at("previous_resumed_s").as_number_in(0, r.fault_s);
  return r;
}

// The restarted incarnation's start: the chief restores the model; every other client polls for
// it after its start-up stagger; the chief's sync op starts with the chief.
void Node::begin_restored_training() {
  // Deaths planned between the clients' detection and the restart struck no running task (the
  // tasks struck before the detection said so themselves). The coordinator knows what the chief
  // will restore (its record stands even when the chief does not get that far).
  if (coordinator()) {
    if (!chief()) restored_ = restore_target(checkpoint_to_restore(nullptr));
    for (size_t f = 0; f < plan_.faults.size(); ++f) {
      const core::PlanFault& fault = plan_.faults[f];
      if (!fault.is_death() || int(f) == resume_->fault || fault.at_s < resume_->detected_s ||
          fault.at_s >= resume_->restart_s) {
        continue;
      }
      note_struck_while_down(fault);
    }
  }
  for (Part& p : parts_) {
    if (!p.owner) continue;
    const int g = p.index;
    const bool with_chief = loop_->client(g).loop == core::LoopKind::kChiefSyncOp || is_chief(g);
    if (with_chief) continue;
    awaiting_model_.resize(parts_.size(), false);
    awaiting_model_[size_t(g)] = true;
    after(p.graph->start_offset_s, true, [this, g] { poll_model(g); });
  }
  if (chief()) restore_model();
}

// The chief: the last checkpoint whose index was written by the time the role died (TF's
// Saver.latest_checkpoint of a run where nothing completes after the death); each parameter server
// loads its shard. No such checkpoint: a fresh start from global_step 0.
// The last checkpoint whose index was written by the time the job's role died (none: nullopt),
// and every checkpoint of the run so far by number (`earlier`, when asked).
std::optional<CheckpointIndex> Node::checkpoint_to_restore(
    std::map<int, CheckpointIndex>* earlier) const {
  std::optional<CheckpointIndex> best;
  if (!options_.checkpoint_dir.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(options_.checkpoint_dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("model.ckpt-", 0) != 0 || entry.path().extension() != ".index") continue;
      const CheckpointIndex index = read_checkpoint_index(entry.path().string());
      if (index.plan_hash != plan_hash_) continue;
      const std::string number = index.name.substr(std::string("model.ckpt-").size());
      if (number.empty() || number.size() > 9 ||
          number.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      if (earlier != nullptr) (*earlier)[std::stoi(number)] = index;
      if (!core::RecoveryTimeline::restorable(index.written_s, resume_->fault_s)) continue;
      if (!best || index.written_s > best->written_s) best = index;
    }
  }
  return best;
}

nlohmann::json Node::restore_target(const std::optional<CheckpointIndex>& best) {
  return {{"checkpoint", best ? best->name : ""},
          {"start_s", best ? std::max(0.0, best->start_s) : 0.0},
          {"global_step", best ? best->global_step : 0},
          {"client_steps", best ? best->client_steps : std::vector<int64_t>()},
          {"bytes", best ? best->bytes : 0.0}};
}

void Node::restore_model() {
  restore_start_s_ = now_s();
  // The run's checkpoints so far, by number: the new ones continue the numbering, and the oldest
  // go as the Saver's max_to_keep says (TF's Saver recovers its last checkpoints so).
  std::map<int, CheckpointIndex> earlier;
  const std::optional<CheckpointIndex> best = checkpoint_to_restore(&earlier);
  std::vector<CheckpointIndex> kept;
  for (const auto& [number, index] : earlier) kept.push_back(index);
  // New checkpoints are numbered after every one begun so far: one that a death cut short left
  // shards (or their temporaries) without an index, which no new checkpoint may meet.
  int next = 0;
  const auto files = options_.checkpoint_dir.empty()
                         ? std::filesystem::directory_iterator()
                         : std::filesystem::directory_iterator(options_.checkpoint_dir);
  for (const auto& entry : files) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "model.ckpt-";
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t digits = name.find_first_not_of("0123456789", prefix.size());
    const std::string number = name.substr(prefix.size(), digits - prefix.size());
    if (!number.empty() && number.size() <= 9) next = std::max(next, std::stoi(number) + 1);
  }
  saver_->continue_run(kept, next);
  restored_ = restore_target(best);
  std::set<uint32_t> ps_tasks;
  for (int r : plan_.ps_roles) ps_tasks.insert(uint32_t(map_.task_of_role[size_t(r)]));
  if (!best || ps_tasks.empty()) {  // nothing to load (a plan without parameter servers)
    model_restored();
    return;
  }
  pending_restores_ = int(ps_tasks.size());
  const std::string payload =
      nlohmann::json{{"name", best->name}, {"client_steps", best->client_steps}}.dump();
  for (uint32_t t : ps_tasks) {
    if (t == self_) {
      on_restore(self_, FrameHeader{}, nullptr);
    } else {
      send_frame(t, FrameType::kRestore, -1, 0, payload);
    }
  }
}

// A parameter server loads its shard of the checkpoint named in the payload (the chief's own
// shard: `payload` null, the name in restored_), then says so.
void Node::on_restore(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  nlohmann::json request;
  if (payload == nullptr) {
    request = {{"name", restored_.at("checkpoint")},
               {"client_steps", restored_.at("client_steps")}};
  } else {
    try {
      request = nlohmann::json::parse(payload, payload + h.length);
      if (!request.at("name").is_string() || !request.at("client_steps").is_array()) {
        throw std::runtime_error("members of the wrong type");
      }
    } catch (const std::exception& e) {
      throw FrameError(std::string("a restore that is not {name, client_steps}: ") + e.what());
    }
  }
  const std::string name = request.at("name").get<std::string>();
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos || name[0] == '.') {
    throw FrameError("restore of \"" + name.substr(0, 200) + "\"");
  }
  const std::string path = options_.checkpoint_dir + "/" + name + ".ps" + std::to_string(ps_shard_);
  const std::vector<int64_t> steps = request.at("client_steps").get<std::vector<int64_t>>();
  struct Read {
    int64_t global_step = 0;
    std::string error;
  };
  auto read = std::make_shared<Read>();
  background(
      [this, path, read] {
        try {
          if (store_->bytes() > 0 || store_->holds_global_step()) {
            const CheckpointShard shard = read_checkpoint_shard(path);
            if (shard.plan_hash != plan_hash_) throw std::runtime_error("a shard of another plan");
            store_->restore(shard);
            read->global_step = shard.global_step;
          }
        } catch (const std::exception& e) {
          read->error = e.what();
        }
      },
      [this, peer, path, steps, read] {
        if (!read->error.empty()) {
          throw core::OutputError(path, "cannot restore from it: " + read->error);
        }
        if (store_->holds_global_step()) {
          store_->global_step = std::max<int64_t>(0, read->global_step);
          global_step_seen_ = store_->global_step;
          for (size_t c = 0; c < graph_steps_.size() && c < steps.size(); ++c) {
            graph_steps_[c] = steps[c];
          }
          last_update_s_ = now_s();
          recorder_->global_step(now_s(), store_->global_step);
          if (sync_) sync_->reset();  // a new session's empty accumulators and initial tokens
        }
        if (peer == self_) {
          on_restored(self_, FrameHeader{}, nullptr);
        } else {
          send_frame(peer, FrameType::kRestored, -1, 0, "{}");
        }
      });
}

void Node::on_restored(uint32_t, const FrameHeader&, const uint8_t*) {
  if (pending_restores_ <= 0) throw FrameError("restored without a restore");
  if (--pending_restores_ == 0) model_restored();
}

// The chief's model is back: the coordinator hears of it (the recovery slice, the restart's
// record) and the chief trains from the checkpoint's steps, its sync op with it.
void Node::model_restored() {
  const double now = now_s();
  restored_["ready_s"] = now;
  restored_["restore_s"] = now - restore_start_s_;
  const int64_t global_step = restored_.at("global_step").get<int64_t>();
  const std::vector<int64_t> steps = restored_.at("client_steps").get<std::vector<int64_t>>();
  if (coordinator()) {
    FrameHeader h;
    h.time_s = now;
    const std::string text = restored_.dump();
    on_resumed(self_, h, reinterpret_cast<const uint8_t*>(text.data()));
  } else {
    send_frame(uint32_t(map_.coordinator_task), FrameType::kResumed, -1, 0, restored_.dump(), now);
  }
  for (Part& p : parts_) {
    const bool with_chief =
        p.owner &&
        (loop_->client(p.index).loop == core::LoopKind::kChiefSyncOp || is_chief(p.index));
    if (with_chief) resume_client(p.index, global_step, steps);
  }
}

// A restarted worker asks the coordinator whether the model is back.
void Node::poll_model(int g) {
  if (coordinator()) {
    const nlohmann::json state = model_state();
    FrameHeader h;
    h.tensor = uint64_t(g);
    const std::string text = state.dump();
    h.length = uint32_t(text.size());
    on_model_ready(h, reinterpret_cast<const uint8_t*>(text.data()));
    return;
  }
  send_frame(uint32_t(map_.coordinator_task), FrameType::kModelQuery, -1, uint64_t(g));
}

nlohmann::json Node::model_state() const {
  return {{"ready", model_ready_},
          {"global_step", model_ready_ ? restored_.at("global_step").get<int64_t>() : 0},
          {"client_steps", model_ready_ ? restored_.at("client_steps") : nlohmann::json::array()}};
}

void Node::on_model_query(uint32_t peer, const FrameHeader& h) {
  send_frame(peer, FrameType::kModelReady, -1, h.tensor, model_state().dump());
}

// Ready: the worker trains from the checkpoint's steps; not yet: it asks again recovery_wait
// later.
void Node::on_model_ready(const FrameHeader& h, const uint8_t* payload) {
  const uint64_t g = h.tensor;
  if (g >= plan_.clients.size() || !parts_[size_t(g)].owner) {
    throw FrameError("a model answer for graph " + std::to_string(g) + ", not this task's");
  }
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(payload, payload + h.length);
    if (!state.at("ready").is_boolean() || !state.at("global_step").is_number_integer() ||
        !state.at("client_steps").is_array()) {
      throw std::runtime_error("members of the wrong type");
    }
  } catch (const std::exception& e) {
    throw FrameError(
        std::string("a model answer that is not {ready, global_step, client_steps}: ") + e.what());
  }
  if (state.at("ready").get<bool>()) {
    resume_client(int(g), state.at("global_step").get<int64_t>(),
                  state.at("client_steps").get<std::vector<int64_t>>());
    return;
  }
  after(plan_.recovery.recovery_wait_s, true, [this, g] { poll_model(int(g)); });
}

// Graph g's client trains again from the restored state: its step count and input go back to the
// checkpoint's, a synchronous worker's next local step is the restored global_step.
void Node::resume_client(int g, int64_t global_step, const std::vector<int64_t>& client_steps) {
  const Part& p = parts_[size_t(g)];
  if (size_t(g) < awaiting_model_.size()) awaiting_model_[size_t(g)] = false;
  const int step = g < int(plan_.clients.size())
                       ? int(core::RecoveryTimeline::resumed_step(plan_, client_steps, size_t(g)))
                       : loop_->client(g).step;
  loop_->resume(g, step, global_step);
  global_step_seen_ = std::max(global_step_seen_, global_step);
  const double now = now_s();
  if (g < int(plan_.clients.size()) && !plan_.roles[size_t(p.graph->role)].chief) {
    if (coordinator()) {
      resumed_s_[size_t(g)] = now;
    } else {
      send_frame(uint32_t(map_.coordinator_task), FrameType::kResumed, -1, uint64_t(g), "{}", now);
    }
  }
  loop_->start_client(g);
}

// The coordinator: the chief's restore (payload: what it restored) or a worker training again.
void Node::on_resumed(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (!resume_) throw FrameError("resumed in a run that did not restart");
  if (peer == uint32_t(map_.chief_task) && !model_ready_) {
    try {
      restored_ = nlohmann::json::parse(payload, payload + h.length);
      for (const char* key : {"start_s", "restore_s", "ready_s"}) {
        if (!restored_.at(key).is_number()) throw std::runtime_error(key);
      }
      if (!restored_.at("global_step").is_number_integer() ||
          !restored_.at("client_steps").is_array() || !restored_.at("checkpoint").is_string()) {
        throw std::runtime_error("members of the wrong type");
      }
    } catch (const std::exception& e) {
      throw FrameError(std::string("a restore report that is not the chief's: ") + e.what());
    }
    model_ready_ = true;
    chief_ready_s_ = h.time_s;
    const core::PlanFault& f = plan_.faults[size_t(resume_->fault)];
    const int64_t from = restored_.at("global_step").get<int64_t>();
    recorder_->recovery(
        f.roles.empty() ? std::string("job") : plan_.roles[size_t(f.roles.front())].name,
        f.description + ": restart from global_step " + std::to_string(from), resume_->fault_s,
        chief_ready_s_, from, resume_->global_step_at_failure);
    return;
  }
  if (h.tensor >= plan_.clients.size()) throw FrameError("resumed for a graph that is no client");
  resumed_s_[size_t(h.tensor)] = h.time_s;
}

// The coordinator's record of the restart that started this incarnation (the simulation's
// JobRecovery::record_restart).
void Node::record_restart() {
  const core::PlanFault& f = plan_.faults[size_t(resume_->fault)];
  core::RestartRecord k;
  k.cause = f.description;
  k.fault_s = resume_->fault_s;
  k.detected_s = resume_->detected_s;
  k.restart_s = resume_->restart_s;
  k.resumed_s = model_ready_ ? chief_ready_s_ : outcome_.end_s;
  k.workers_resumed_s = k.resumed_s;
  bool all_back = model_ready_;
  for (size_t c = 0; c < plan_.clients.size(); ++c) {
    if (resumed_s_[c] >= 0) k.workers_resumed_s = std::max(k.workers_resumed_s, resumed_s_[c]);
    const bool chief_client = plan_.roles[size_t(plan_.clients[c].role)].chief;
    all_back &= chief_client || resumed_s_[c] >= 0 || graph_dead_[c];
  }
  k.workers_lost = lost_before_back_;
  if (!restored_.is_null()) {
    if (model_ready_) k.restore_s = restored_.at("restore_s").get<double>();
    k.checkpoint_start_s = std::min(k.fault_s, restored_.at("start_s").get<double>());
    k.checkpoint_global_step = restored_.at("global_step").get<int64_t>();
  }
  // A job failure (this task's death among them) before every client was back: the restart was
  // cut short (while the chief was restoring, when the model was never back).
  std::optional<double> interrupted;
  if (outcome_.killed_s) interrupted = *outcome_.killed_s;
  if (job_fault_ >= 0) interrupted = plan_.faults[size_t(job_fault_)].at_s;
  if (interrupted && !all_back) {
    k.interrupted_s = std::max(*interrupted, k.detected_s);
    if (!model_ready_) {
      k.resumed_s = std::nextafter(k.interrupted_s, 1e12);
      // The recovery slice ends there (the chief never trained again).
      const core::PlanFault& first = plan_.faults[size_t(resume_->fault)];
      recorder_->recovery(
          first.roles.empty() ? std::string("job") : plan_.roles[size_t(first.roles.front())].name,
          first.description + ": restart from global_step " +
              std::to_string(k.checkpoint_global_step),
          k.fault_s, k.interrupted_s, k.checkpoint_global_step, resume_->global_step_at_failure);
    }
    k.workers_resumed_s = std::max(k.workers_resumed_s, k.resumed_s);
  }
  const double work_from_s = std::max(k.checkpoint_start_s, resume_->previous_resumed_s);
  k.lost_work_s = std::clamp(k.fault_s - work_from_s, 0.0, k.fault_s);
  k.global_step_at_failure = std::max(resume_->global_step_at_failure, k.checkpoint_global_step);
  k.lost_global_steps = k.global_step_at_failure - k.checkpoint_global_step;
  // Another job failure before every worker was back.
  if (job_fault_ >= 0) {
    const double next_s = plan_.faults[size_t(job_fault_)].at_s;
    if (next_s < k.workers_resumed_s) {
      k.interrupted_s = std::max(next_s, k.detected_s);
    }
  }
  outcome_.restarts.push_back(std::move(k));
}

}  // namespace replisim::real::detail
