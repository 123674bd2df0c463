// The chief's checkpoints (TF's CheckpointSaverHook over a Saver) and the coordinator's final
// save: every parameter server writes its shard "<name>.ps<j>" durably, then the saver writes the
// index "<name>.index" naming them — a checkpoint whose index exists is complete — and TF's Saver
// keeps the newest max_to_keep. One part of a task's runtime (internal to real/node/): it owns the
// save in flight, the checkpoints kept and their numbering, and the frames kSave and kSaved
// (FrameRouter).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/plan.h"
#include "core/values/checkpoint.h"
#include "core/values/parameter_store.h"
#include "real/node/frame_router.h"

namespace replisim::real::detail {

class CheckpointSaver {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double now_s() const = 0;  // the run's clock
    virtual bool stopping() const = 0;
    // An application frame to `peer` (counted for quiescence).
    virtual void send_frame(uint32_t peer, FrameType type, const std::string& payload) = 0;
    // Runs `work` on the copies' thread, then `done` on the node's thread unless the node stops
    // meanwhile; the two count as work under way (quiescence waits for them).
    virtual void background(std::function<void()> work, std::function<void()> done) = 0;
    // global_step as this task knows it (what a save records when no shard holds it).
    virtual int64_t global_step_seen() const = 0;
    // Per client graph, the steps that reached global_step's parameter server (this task's count,
    // read with global_step when this task holds it).
    virtual std::vector<int64_t> client_steps() const = 0;
    // Whether `task` is alive (an elastic all-reduce job goes on without a dead rank's copy).
    virtual bool live(uint32_t /*task*/) const { return true; }
  };

  // Where the saves go and who takes part: `dir` the checkpoint directory ("" when none was
  // given: a save fails naming the flag); `store` this task's parameter-server shard (null on a
  // task without one) with `ps_shard` its index; `ps_tasks` the tasks holding shards; `chief` and
  // `coordinator` the only tasks that may ask for a save. `plan`, `host` and `store` outlive it.
  struct Setup {
    const core::Plan* plan = nullptr;
    std::string dir;
    std::string plan_hash;
    core::ParameterStore* store = nullptr;
    int ps_shard = -1;
    uint32_t self = 0;
    std::vector<uint32_t> ps_tasks;
    uint32_t chief = 0;
    uint32_t coordinator = 0;
    // An all-reduce rank (its own copy of every variable): its shard is "<name>.rank<r>";
    // -1 for a parameter server's "<name>.ps<ps_shard>".
    int rank = -1;
  };
  CheckpointSaver(Host& host, Setup setup) : host_(host), setup_(std::move(setup)) {}
  void own_frames(FrameRouter& router);

  // Saves `name`: the shards, then the index. then(start_s, bytes, global_step) once the index is
  // written (at once for a plan without parameter servers: nothing to save). One save at a time.
  void save(const std::string& name, std::function<void(double, double, int64_t)> then);
  // The checkpoint hook's rule: training.checkpoint.every_s has passed since the last save.
  bool due() const;
  // The chief's next checkpoint name, "model.ckpt-N", numbered after every one begun so far.
  std::string next_name() { return "model.ckpt-" + std::to_string(next_number_++); }
  // After a restart: the run's checkpoints so far by number (the oldest go as max_to_keep says)
  // and the number the next one takes (after every one begun, complete or not).
  void continue_run(const std::vector<core::CheckpointIndex>& earlier, int next_number);
  // Task `task` died: the save in flight no longer waits for its shard (an elastic all-reduce
  // job goes on without the rank; its index lists the shards written).
  void task_died(uint32_t task);

 private:
  void on_save(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void on_saved(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  // This task's shard of `name`; done({file, bytes, global_step, client_steps}) once written.
  void write_shard(const std::string& name, std::function<void(const nlohmann::json&)> done);
  void shard_saved(const nlohmann::json& saved);
  void forget_old_checkpoints(const core::CheckpointIndex& saved);

  Host& host_;
  Setup setup_;
  // The save in flight.
  int pending_saves_ = 0;
  std::set<uint32_t> asked_;  // the other tasks whose saved frame the save waits for
  std::string saving_;
  double saving_start_s_ = 0;
  std::vector<int64_t> saved_client_steps_;
  std::vector<std::string> shard_files_;
  double shard_bytes_ = 0;
  int64_t saved_global_step_ = 0;
  std::function<void(double, int64_t)> saved_then_;  // (bytes, global_step)
  // The checkpoints written, oldest first, and the numbering.
  std::deque<core::CheckpointIndex> kept_;
  int next_number_ = 0;
  double last_save_s_ = 0;
};

}  // namespace replisim::real::detail
