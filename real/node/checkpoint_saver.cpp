#include "real/node/checkpoint_saver.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/base/error.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

using core::CheckpointIndex;
using core::CheckpointShard;
using core::ParameterStore;
using core::write_checkpoint_index;
using core::write_checkpoint_shard;

void CheckpointSaver::own_frames(FrameRouter& router) {
  router.own(channel::kSave, [this](uint32_t peer, const FrameHeader& h, const uint8_t* p) {
    if (host_.stopping()) return;
    if ((peer != setup_.chief && peer != setup_.coordinator) || setup_.store == nullptr) {
      throw FrameError(
          "save frame not from the chief or the coordinator, or to a task without variables");
    }
    on_save(peer, h, p);
  });
  router.own(channel::kSaved, [this](uint32_t peer, const FrameHeader& h, const uint8_t* p) {
    if (host_.stopping()) return;
    if ((setup_.self != setup_.chief && setup_.self != setup_.coordinator) || pending_saves_ <= 0) {
      throw FrameError("saved frame not expected");
    }
    on_saved(peer, h, p);
  });
}

bool CheckpointSaver::due() const {
  const double every_s = setup_.plan->checkpoints.every_s;
  return every_s > 0 && host_.now_s() - last_save_s_ >= every_s;
}

void CheckpointSaver::continue_run(const std::vector<CheckpointIndex>& earlier, int next_number) {
  kept_.assign(earlier.begin(), earlier.end());
  next_number_ = std::max(next_number_, next_number);
}

void CheckpointSaver::save(const std::string& name,
                           std::function<void(double, double, int64_t)> then) {
  const double start_s = host_.now_s();
  last_save_s_ = start_s;
  saving_ = name;
  saving_start_s_ = start_s;
  saved_client_steps_.clear();
  shard_files_.clear();
  shard_bytes_ = 0;
  saved_global_step_ = host_.global_step_seen();
  saved_then_ = [start_s, then = std::move(then)](double bytes, int64_t global_step) {
    then(start_s, bytes, global_step);
  };
  std::vector<uint32_t> tasks;
  for (uint32_t t : setup_.ps_tasks) {
    if (host_.live(t)) tasks.push_back(t);
  }
  pending_saves_ = int(tasks.size());
  if (pending_saves_ == 0) {
    pending_saves_ = 1;
    shard_saved({{"file", ""}, {"bytes", 0}, {"global_step", -1}});
    return;
  }
  asked_.clear();
  for (uint32_t t : tasks) {
    if (t == setup_.self) {
      write_shard(name, [this](const nlohmann::json& saved) { shard_saved(saved); });
    } else {
      asked_.insert(t);
      host_.send_frame(t, channel::kSave, name);
    }
  }
}

void CheckpointSaver::task_died(uint32_t task) {
  if (!saved_then_ || asked_.erase(task) == 0) return;
  shard_saved({{"file", ""}, {"bytes", 0}, {"global_step", -1}});  // no shard of it
}

void CheckpointSaver::on_save(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  const std::string name(reinterpret_cast<const char*>(payload), h.length);
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos || name[0] == '.') {
    throw FrameError("save under the name \"" + name.substr(0, 200) + "\"");
  }
  write_shard(name, [this, peer](const nlohmann::json& saved) {
    host_.send_frame(peer, channel::kSaved, saved.dump());
  });
}

void CheckpointSaver::write_shard(const std::string& name,
                                  std::function<void(const nlohmann::json&)> done) {
  if (setup_.dir.empty()) {
    throw core::OutputError("", "asked to save checkpoint " + name + " without --checkpoint-dir");
  }
  ParameterStore& store = *setup_.store;
  const int64_t global_step = store.holds_global_step() ? store.global_step : -1;
  // The steps that reached global_step's PS, read with it (what a restart resumes from).
  const std::vector<int64_t> client_steps =
      store.holds_global_step() ? host_.client_steps() : std::vector<int64_t>();
  const std::string file = setup_.rank >= 0 ? name + ".rank" + std::to_string(setup_.rank)
                                            : name + ".ps" + std::to_string(setup_.ps_shard);
  const std::string path = setup_.dir + "/" + file;
  struct Written {
    size_t bytes = 0;
    std::string error;
  };
  auto written = std::make_shared<Written>();
  host_.background(
      [this, &store, path, global_step, written] {
        try {
          const CheckpointShard shard = store.snapshot(setup_.plan_hash, global_step);
          write_checkpoint_shard(path, shard);
          written->bytes = shard.bytes();
        } catch (const std::exception& e) {
          written->error = e.what();
        }
      },
      [file, path, global_step, client_steps, written, done = std::move(done)] {
        if (!written->error.empty()) throw core::OutputError(path, written->error);
        done({{"file", file},
              {"bytes", written->bytes},
              {"global_step", global_step},
              {"client_steps", client_steps}});
      });
}

void CheckpointSaver::on_saved(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(payload, payload + h.length);
    if (!saved.at("file").is_string() || !saved.at("bytes").is_number() ||
        !saved.at("global_step").is_number_integer()) {
      throw std::runtime_error("members of the wrong type");
    }
    if (saved.contains("client_steps")) {
      const nlohmann::json& steps = saved.at("client_steps");
      if (!steps.is_array() || (!steps.empty() && steps.size() != setup_.plan->clients.size())) {
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
  asked_.erase(peer);
  shard_saved(saved);
}

void CheckpointSaver::shard_saved(const nlohmann::json& saved) {
  const std::string file = saved.at("file").get<std::string>();
  if (!file.empty()) shard_files_.push_back(file);
  shard_bytes_ += saved.at("bytes").get<double>();
  const int64_t global_step = saved.at("global_step").get<int64_t>();
  // An all-reduce job's index carries rank 0's step and counts (every rank restores rank 0's
  // copy, restorer.cpp); each rank holds a global_step of its own and may be a step apart.
  const bool counts = setup_.rank < 0 || file == saving_ + ".rank0";
  if (global_step >= 0 && counts) saved_global_step_ = global_step;
  if (counts && saved.contains("client_steps") && !saved.at("client_steps").empty()) {
    saved_client_steps_ = saved.at("client_steps").get<std::vector<int64_t>>();
  }
  if (--pending_saves_ > 0) return;
  std::sort(shard_files_.begin(), shard_files_.end());
  if (!shard_files_.empty()) {
    CheckpointIndex index;
    index.name = saving_;
    index.plan_hash = setup_.plan_hash;
    index.global_step = saved_global_step_;
    index.start_s = saving_start_s_;
    index.written_s = host_.now_s();
    index.client_steps = saved_client_steps_;
    index.shards = shard_files_;
    index.bytes = shard_bytes_;
    write_checkpoint_index(setup_.dir, index);
    if (saving_ != "final") forget_old_checkpoints(index);
  }
  auto then = std::move(saved_then_);
  saved_then_ = nullptr;
  then(shard_bytes_, saved_global_step_);
}

// TF's Saver keeps the newest max_to_keep checkpoints (training.checkpoint.max_to_keep, default
// 5; 0: all): the oldest goes, its index first (so that no index ever names a missing shard). The
// shards are in this directory: every task of a run on one machine shares it.
void CheckpointSaver::forget_old_checkpoints(const CheckpointIndex& saved) {
  const size_t keep = size_t(setup_.plan->checkpoints.max_to_keep);
  kept_.push_back(saved);
  if (keep == 0 || kept_.size() <= keep) return;
  const CheckpointIndex old = kept_.front();
  kept_.pop_front();
  std::remove((setup_.dir + "/" + old.name + ".index").c_str());
  for (const std::string& shard : old.shards) std::remove((setup_.dir + "/" + shard).c_str());
}

}  // namespace replisim::real::detail
