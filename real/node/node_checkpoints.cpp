// The chief's checkpoints and summaries (TF's CheckpointSaverHook and SummarySaverHook): the
// parameter servers write their shards, the chief the index that makes a checkpoint whole; the
// newest max_to_keep (5) are kept, as TF's Saver keeps them. The coordinator saves the run's final
// variables the same way.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/base/error.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

// --- the chief's checkpoints and summaries --------------------------------------------------

// After a chief step: the checkpoint hook saves when every_s has passed since the last save,
// the summary hook writes every summary_every_steps steps (TF's CheckpointSaverHook and
// SummarySaverHook, as the simulation's JobRecovery::chief_duties).
void Node::chief_duties(Part& p, std::function<void()> then) {
  const core::CheckpointPolicy& policy = plan_.checkpoints;
  const int g = p.index;
  auto summaries = [this, g, then = std::move(then)]() mutable {
    const int n = plan_.checkpoints.summary_every_steps;
    if (n <= 0 || loop_->client(g).step % n != 0) {
      then();
      return;
    }
    write_summaries(g, std::move(then));
  };
  if (policy.every_s > 0 && now_s() - last_checkpoint_s_ >= policy.every_s) {
    save_checkpoint("model.ckpt-" + std::to_string(checkpoints_++),
                    [this, g, summaries = std::move(summaries)](double start_s, double bytes,
                                                                int64_t global_step) mutable {
                      recorder_->checkpoint(g, loop_->client(g).step, start_s, now_s(), bytes,
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
  const int64_t step = loop_->client(g).step;
  const int64_t global_step = global_step_seen_;
  ++work_pending_;
  copier_->submit([this, g, path, bytes, step, global_step, then = std::move(then)]() mutable {
    const double start_s = now_s();
    std::string error;
    {
      std::ofstream out(path, std::ios::binary | std::ios::app);
      const std::string block(bytes, '\0');
      out.write(block.data(), std::streamsize(block.size()));
      out.flush();
      if (!out) error = std::strerror(errno);
    }
    const double end_s = now_s();
    post([this, g, path, bytes, step, global_step, start_s, end_s, error, then = std::move(then)] {
      --work_pending_;
      if (stopping_) return;
      if (!error.empty()) throw core::OutputError(path, error);
      recorder_->checkpoint(g, step, start_s, end_s, double(bytes), global_step, true);
      then();
    });
  });
}

// A checkpoint: every parameter server writes its shard "<name>.ps<j>" (durably), then the chief
// writes the index "<name>.index" naming them: a checkpoint whose index exists is complete.
void Node::save_checkpoint(const std::string& name,
                           std::function<void(double, double, int64_t)> then) {
  const double start_s = now_s();
  last_checkpoint_s_ = start_s;
  saving_ = name;
  saving_start_s_ = start_s;
  saved_client_steps_.clear();
  shard_files_.clear();
  shard_bytes_ = 0;
  saved_global_step_ = global_step_seen_;
  saved_then_ = [start_s, then = std::move(then)](double bytes, int64_t global_step) {
    then(start_s, bytes, global_step);
  };
  std::set<uint32_t> ps_tasks;
  for (int r : plan_.ps_roles) ps_tasks.insert(uint32_t(map_.task_of_role[size_t(r)]));
  pending_saves_ = int(ps_tasks.size());
  if (pending_saves_ == 0) {
    shard_saved({{"file", ""}, {"bytes", 0}, {"global_step", -1}});
    return;
  }
  for (uint32_t t : ps_tasks) {
    if (t == self_) {
      write_shard(name, [this](const nlohmann::json& saved) { shard_saved(saved); });
    } else {
      send_frame(t, FrameType::kSave, -1, 0, name);
    }
  }
}

void Node::on_save(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  const std::string name(reinterpret_cast<const char*>(payload), h.length);
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos || name[0] == '.') {
    throw FrameError("save under the name \"" + name.substr(0, 200) + "\"");
  }
  write_shard(name, [this, peer](const nlohmann::json& saved) {
    send_frame(peer, FrameType::kSaved, -1, 0, saved.dump());
  });
}

void Node::write_shard(const std::string& name, std::function<void(const nlohmann::json&)> done) {
  if (options_.checkpoint_dir.empty()) {
    throw core::OutputError("", "asked to save checkpoint " + name + " without --checkpoint-dir");
  }
  const int64_t global_step = store_->holds_global_step() ? store_->global_step : -1;
  // The steps that reached global_step's PS, read with it (what a restart resumes from).
  const std::vector<int64_t> client_steps =
      store_->holds_global_step() ? graph_steps_ : std::vector<int64_t>();
  const std::string file = name + ".ps" + std::to_string(ps_shard_);
  const std::string path = options_.checkpoint_dir + "/" + file;
  ++work_pending_;
  copier_->submit([this, file, path, global_step, client_steps, done = std::move(done)]() mutable {
    std::string error;
    size_t bytes = 0;
    try {
      const CheckpointShard shard = store_->snapshot(plan_hash_, global_step);
      write_checkpoint_shard(path, shard);
      bytes = shard.bytes();
    } catch (const std::exception& e) {
      error = e.what();
    }
    post([this, file, path, global_step, client_steps, bytes, error, done = std::move(done)] {
      --work_pending_;
      if (stopping_) return;
      if (!error.empty()) throw core::OutputError(path, error);
      done({{"file", file},
            {"bytes", bytes},
            {"global_step", global_step},
            {"client_steps", client_steps}});
    });
  });
}

void Node::on_saved(uint32_t, const FrameHeader& h, const uint8_t* payload) {
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(payload, payload + h.length);
    if (!saved.at("file").is_string() || !saved.at("bytes").is_number() ||
        !saved.at("global_step").is_number_integer()) {
      throw std::runtime_error("members of the wrong type");
    }
    if (saved.contains("client_steps")) {
      const nlohmann::json& steps = saved.at("client_steps");
      if (!steps.is_array() || (!steps.empty() && steps.size() != plan_.clients.size())) {
        throw std::runtime_error("client_steps is not one count per client");
      }
      for (const nlohmann::json& n : steps) {
        if (!n.is_number_integer() || n.get<int64_t>() < 0) {
          throw std::runtime_error("a client's steps that is not a count");
        }
      }
    }
  } catch (const std::exception& e) {
    throw FrameError(std::string("a saved frame that is not {file, bytes, global_step}: ") +
                     e.what());
  }
  shard_saved(saved);
}

void Node::shard_saved(const nlohmann::json& saved) {
  const std::string file = saved.at("file").get<std::string>();
  if (!file.empty()) shard_files_.push_back(file);
  shard_bytes_ += saved.at("bytes").get<double>();
  const int64_t global_step = saved.at("global_step").get<int64_t>();
  if (global_step >= 0) saved_global_step_ = global_step;
  if (saved.contains("client_steps") && !saved.at("client_steps").empty()) {
    saved_client_steps_ = saved.at("client_steps").get<std::vector<int64_t>>();
  }
  if (--pending_saves_ > 0) return;
  std::sort(shard_files_.begin(), shard_files_.end());
  if (!shard_files_.empty()) {
    CheckpointIndex index;
    index.name = saving_;
    index.plan_hash = plan_hash_;
    index.global_step = saved_global_step_;
    index.start_s = saving_start_s_;
    index.written_s = now_s();
    index.client_steps = saved_client_steps_;
    index.shards = shard_files_;
    index.bytes = shard_bytes_;
    write_checkpoint_index(options_.checkpoint_dir, index);
    if (saving_ != "final") forget_old_checkpoints(index);
  }
  auto then = std::move(saved_then_);
  saved_then_ = nullptr;
  then(shard_bytes_, saved_global_step_);
}

// TF's Saver keeps the newest max_to_keep checkpoints (training.checkpoint.max_to_keep, default
// 5; 0: all): the oldest goes, its index first (so that no index ever names a missing shard). The
// shards are in this directory: every task of a run on one machine shares it.
void Node::forget_old_checkpoints(const CheckpointIndex& saved) {
  const size_t keep = size_t(plan_.checkpoints.max_to_keep);
  kept_checkpoints_.push_back(saved);
  if (keep == 0 || kept_checkpoints_.size() <= keep) return;
  const CheckpointIndex old = kept_checkpoints_.front();
  kept_checkpoints_.pop_front();
  std::remove((options_.checkpoint_dir + "/" + old.name + ".index").c_str());
  for (const std::string& shard : old.shards) {
    std::remove((options_.checkpoint_dir + "/" + shard).c_str());
  }
}

}  // namespace replisim::real::detail
