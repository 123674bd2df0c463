// The node's side of each part's Host (internal to real/node/): one small adapter per part, so
// that a part sees its task only through what its Host offers and Node keeps no method that only
// a part calls. Included by node_setup.cpp, which builds them.
#pragma once

#include <algorithm>
#include <string>

#include "real/node/runtime.h"

namespace replisim::real::detail {

class Node::ClockHooks final : public ClockSync::Host {
 public:
  explicit ClockHooks(Node& n) : n_(n) {}
  Mesh& mesh() override { return *n_.mesh_; }
  double clock_s() const override { return n_.clock_s(); }
  bool stopping() const override { return n_.stopping_; }

 private:
  Node& n_;
};

class Node::GatherHooks final : public TraceGather::Host {
 public:
  explicit GatherHooks(Node& n) : n_(n) {}
  void send(uint32_t peer, const FrameHeader& header, const uint8_t* data, size_t size,
            std::shared_ptr<const void> keep) override {
    n_.mesh_->send(peer, header, data, size, std::move(keep));
  }
  void timer(double delay_s, std::function<void()> work) override;
  bool live(uint32_t task) const override { return n_.live(task); }
  void gather_failed(const std::string& why) override {
    n_.failed_ = true;
    n_.error_line_ = n_.describe() + ": " + why;
  }

 private:
  Node& n_;
};

class Node::SaverHooks final : public CheckpointSaver::Host {
 public:
  explicit SaverHooks(Node& n) : n_(n) {}
  double now_s() const override { return n_.now_s(); }
  bool stopping() const override { return n_.stopping_; }
  void send_frame(uint32_t peer, FrameType type, const std::string& payload) override {
    n_.send_frame(peer, type, -1, 0, payload);
  }
  void background(std::function<void()> work, std::function<void()> done) override {
    n_.background(std::move(work), std::move(done));
  }
  int64_t global_step_seen() const override { return n_.global_step_seen_; }
  std::vector<int64_t> client_steps() const override { return n_.vars_->client_steps(); }
  bool live(uint32_t task) const override { return n_.live(task); }

 private:
  Node& n_;
};

class Node::StopHooks final : public SteadyStop::Host {
 public:
  explicit StopHooks(Node& n) : n_(n) {}
  bool stopping() const override { return n_.stopping_; }
  int64_t global_step_seen() const override { return n_.global_step_seen_; }
  bool job_finished() const override { return n_.job_->job_finished(); }
  bool client_dead(int g) const override { return n_.graph_dead_[size_t(g)]; }
  bool client_finished(int g) const override { return n_.job_->finished(g); }
  void send_stop_frame(uint32_t peer, FrameType type, int64_t step, uint64_t graph) override {
    n_.send_frame(peer, type, step, graph);
  }
  void end_waiting_step(int g) override { n_.end_waiting_step(g); }
  void stop_limits_set() override { n_.job_->maybe_end_job(); }

 private:
  Node& n_;
};

class Node::RestoreHooks final : public Restorer::Host {
 public:
  explicit RestoreHooks(Node& n) : n_(n) {}
  double now_s() const override { return n_.now_s(); }
  bool stopping() const override { return n_.stopping_; }
  void after(double delay_s, bool busy, std::function<void()> work) override {
    n_.after(delay_s, busy, std::move(work));
  }
  void background(std::function<void()> work, std::function<void()> done) override {
    n_.background(std::move(work), std::move(done));
  }
  void send_restore_frame(uint32_t peer, FrameType type, uint64_t tensor,
                          const std::string& payload, double time_s) override {
    n_.send_frame(peer, type, -1, tensor, payload, time_s);
  }
  void global_step_restored(int64_t global_step,
                            const std::vector<int64_t>& client_steps) override {
    n_.vars_->restored(global_step, client_steps);
    n_.global_step_seen_ = global_step;
  }
  void saw_global_step(int64_t global_step) override {
    n_.global_step_seen_ = std::max(n_.global_step_seen_, global_step);
  }
  void note_struck_while_down(const core::PlanFault& fault) override {
    n_.note_struck_while_down(fault);
  }
  core::TraceRecorder& recorder() override { return *n_.recorder_; }

 private:
  Node& n_;
};

class Node::ValueHooks final : public VariableOps::Host {
 public:
  explicit ValueHooks(Node& n) : n_(n) {}
  double now_s() const override { return n_.now_s(); }
  core::TraceRecorder& recorder() override { return *n_.recorder_; }
  DeviceEngine& engine(int device) override { return n_.steps_->engine(device); }
  void run_for_step(DeviceEngine& engine, int g, int64_t step, std::function<void()> work,
                    std::function<void()> done) override {
    n_.steps_->run_for_step(engine, g, step, std::move(work), std::move(done));
  }
  DeviceEngine& copier() override { return n_.steps_->copier(); }
  int64_t global_step_seen() const override { return n_.global_step_seen_; }
  void saw_global_step(int64_t global_step) override {
    n_.global_step_seen_ = std::max(n_.global_step_seen_, global_step);
  }
  void update_made(int /*g*/, double at_s, int64_t global_step, int samples) override {
    n_.steady_stop_->update(at_s, samples, global_step);
  }
  int update_samples(int g) const override {
    if (n_.collectives_) return n_.collectives_->live_samples_per_step();
    return n_.recorder_->samples_per_step(g);
  }
  bool client_dead(int g) const override { return n_.graph_dead_[size_t(g)]; }
  void evaluation_due(int64_t global_step, double at_s) override {
    if (n_.objective_gather_) n_.objective_gather_->evaluate(global_step, at_s);
  }

 private:
  Node& n_;
};

class Node::WaveHooks final : public Quiescence::Host {
 public:
  explicit WaveHooks(Node& n) : n_(n) {}
  bool live(uint32_t task) const override { return n_.live(task); }
  bool stopping() const override { return n_.stopping_; }
  bool job_finished() const override { return n_.job_->job_finished(); }
  bool job_down() const override { return n_.job_fault_ >= 0; }
  int64_t work_under_way() const override {
    return n_.work_pending_ + n_.steps_->work_pending() + n_.timers_pending_ +
           int64_t(n_.mesh_->queued_frames()) + int64_t(!n_.steps_->loop().idle());
  }
  std::string finished_clients() const override { return n_.job_->finished_flags(); }
  std::optional<core::StallRecord> stall_now(const std::string& finished) const override {
    return n_.vars_->stall(finished, n_.graph_dead_, n_.steady_stop_->last_global_step());
  }
  nlohmann::json global_step_status() const override { return n_.vars_->global_step_status(); }
  void send_wave_frame(uint32_t peer, FrameType type, int64_t wave,
                       const std::string& payload) override {
    n_.send_frame(peer, type, wave, 0, payload);
  }
  void wave_timer(double delay_s, std::function<void()> work) override;
  void stalled(const core::StallRecord& stall) override {
    n_.outcome_.stall = stall;
    n_.job_->end_job();
  }
  void deadlocked() override;

 private:
  Node& n_;
};

class Node::StepHooks final : public StepRunner::Host {
 public:
  explicit StepHooks(Node& n) : n_(n) {}
  double now_s() const override { return n_.now_s(); }
  bool stopping() const override { return n_.stopping_; }
  void post(std::function<void()> work) override { n_.post(std::move(work)); }
  void at_run_time(double at_s, bool busy, std::function<void()> work) override {
    n_.at_run_time(at_s, busy, std::move(work));
  }
  void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                  const std::string& payload) override {
    n_.send_frame(peer, type, step, tensor, payload);
  }
  int next_slot(uint32_t peer) override { return n_.mesh_->next_slot(peer); }
  void send_chunk(uint32_t peer, const FrameHeader& header, const uint8_t* data, size_t size,
                  std::shared_ptr<const void> keep, std::function<void()> written,
                  int slot) override {
    n_.quiescence_->sent(peer, FrameType::kTensor);
    n_.mesh_->send(peer, header, data, size, std::move(keep), std::move(written), slot);
  }
  core::TraceRecorder& recorder() override { return *n_.recorder_; }
  int64_t global_step_seen() const override { return n_.global_step_seen_; }
  void saw_global_step(int64_t global_step) override {
    n_.global_step_seen_ = std::max(n_.global_step_seen_, global_step);
  }
  bool values(int g, int op) override { return n_.vars_->values(g, op); }
  void sync(int g, int op) override { n_.vars_->sync(g, op); }
  void collective(int g, int op) override;
  int64_t global_step_here() const override { return n_.vars_->global_step_here(); }
  bool client_dead(int g) const override { return n_.graph_dead_[size_t(g)]; }
  bool within_stop_limit(int g) const override { return n_.steady_stop_->within_limit(g); }
  bool hold_step(int g) override { return n_.steady_stop_->hold(g); }
  bool session_checkpoint(int g, std::function<void(double)> then) override;
  void chief_duties(int g, std::function<void()> then) override {
    n_.chief_duties(g, std::move(then));
  }
  void step_counted(int g, int steps_done, double start_s, double end_s) override;
  void client_finished(int g) override;

 private:
  Node& n_;
};

class Node::JobHooks final : public JobControl::Host {
 public:
  explicit JobHooks(Node& n) : n_(n) {}
  double clock_s() const override { return n_.clock_s(); }
  double now_s() const override { return n_.now_s(); }
  bool stopping() const override { return n_.stopping_; }
  void send_control_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                          const std::string& payload, double time_s) override {
    n_.send_frame(peer, type, step, tensor, payload, time_s);
  }
  double start_clock(double origin_s) override;
  int64_t global_step_seen() const override { return n_.global_step_seen_; }
  void saw_global_step(int64_t global_step) override {
    n_.global_step_seen_ = std::max(n_.global_step_seen_, global_step);
  }
  void client_step_ended(int g, int step, double start_s, double end_s) override {
    n_.steady_stop_->step_ended(g, step, start_s, end_s, n_.global_step_seen_);
  }
  int64_t last_global_step() const override { return n_.steady_stop_->last_global_step(); }
  void job_ended(double end_s) override;

 private:
  // The final save of the variables (when the run keeps checkpoints), then the stop.
  void save_final_and_stop();
  Node& n_;
};

class Node::CollectiveHooks final : public CollectiveOps::Host {
 public:
  explicit CollectiveHooks(Node& n) : n_(n) {}
  double now_s() const override { return n_.now_s(); }
  bool stopping() const override { return n_.stopping_; }
  void post(std::function<void()> work) override { n_.post(std::move(work)); }
  void at_run_time(double at_s, std::function<void()> work) override {
    n_.at_run_time(at_s, true, std::move(work));
  }
  void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                  const std::string& payload) override {
    n_.send_frame(peer, type, step, tensor, payload);
  }
  int next_slot(uint32_t peer) override { return n_.mesh_->next_slot(peer); }
  void send_chunk(uint32_t peer, const FrameHeader& header, const uint8_t* data, size_t size,
                  std::shared_ptr<const void> keep, std::function<void()> written,
                  int slot) override {
    n_.quiescence_->sent(peer, header.type);
    n_.mesh_->send(peer, header, data, size, std::move(keep), std::move(written), slot);
  }
  void roll_back_client(int g) override { n_.steps_->roll_back(g); }
  void resume_client(int g, int step, int64_t global_step) override {
    n_.global_step_seen_ = global_step;
    n_.steps_->resume_after_rollback(g, step, global_step);
  }
  void after_step_work(std::function<void()> then) override {
    n_.steps_->after_work(std::move(then));
  }
  core::ParameterStore* store() override { return n_.vars_->store(); }
  const std::string& plan_hash() const override { return n_.plan_hash_; }

 private:
  Node& n_;
};

// Every part's adapter, built with the node (before its parts).
class Node::ObjectiveHooks final : public ObjectiveGather::Host {
 public:
  explicit ObjectiveHooks(Node& n) : n_(n) {}
  core::TraceRecorder& recorder() override { return *n_.recorder_; }
  void send_frame(uint32_t peer, FrameType type, int64_t step,
                  const std::string& payload) override {
    n_.send_frame(peer, type, step, 0, payload);
  }
  bool live(uint32_t task) const override { return n_.live(task); }
  bool stopping() const override { return n_.stopping_; }
  void note(const std::string& line) override { n_.outcome_.notes.push_back(line); }

 private:
  Node& n_;
};

struct Node::Hooks {
  explicit Hooks(Node& n)
      : clock(n),
        gather(n),
        saver(n),
        stop(n),
        restore(n),
        values(n),
        waves(n),
        steps(n),
        job(n),
        collectives(n),
        objective(n) {}
  ClockHooks clock;
  GatherHooks gather;
  SaverHooks saver;
  StopHooks stop;
  RestoreHooks restore;
  ValueHooks values;
  WaveHooks waves;
  StepHooks steps;
  JobHooks job;
  CollectiveHooks collectives;
  ObjectiveHooks objective;
};

}  // namespace replisim::real::detail
