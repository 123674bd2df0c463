// The driver of one simulation run (internal to sim/): the step engine — per device a compute
// actor per core taking ops one at a time from the device's queue, per client a step loop driven
// by op completions, a driver actor serving timed events (step starts, faults, restarts) — over
// the parts that own the rest: the network, link faults, the sync queues and job recovery.
// One SimRun per process (SimGrid allows one engine per process): use SimBackend, which forks.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/backend/backend.h"
#include "core/backend/trace_recorder.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/steady_state.h"
#include "core/runtime/sync_queues.h"
#include "core/values/value_engine.h"
#include "sim/sim_collectives.h"
#include "sim/sim_faults.h"
#include "sim/sim_network.h"
#include "sim/sim_recovery.h"
#include "sim/sim_run_state.h"
#include "sim/sim_settings.h"

namespace replisim::sim::detail {

class SimRun : public core::SyncHost, public core::StepHost, public NetworkHost {
 public:
  using Progress = std::function<void(const core::RunProgress&)>;
  // `plan` (valid) and `sink` must outlive the run. `progress`, when set, is called from inside
  // the simulation at most every kProgressEvery of wall time.
  SimRun(const core::Plan& plan, core::TraceSink& sink, Progress progress,
         const SimSettings& settings);

  // Runs the simulation to its end and returns the outcome; events went to the sink.
  // Throws core::BackendError when it deadlocks before every client finished.
  // `finished` (when set) is called with the outcome while the engine still exists.
  core::RunOutcome run(const std::function<void(const core::RunOutcome&)>& finished = {});
  double engine_wall_s() const { return engine_wall_s_; }
  double setup_wall_s() const { return setup_wall_s_; }
  SharingStats sharing_stats() const;

  static constexpr std::chrono::milliseconds kProgressEvery{200};

  // SyncHost
  void sync_complete(int c, int op) override { loop_.complete(c, op); }
  int64_t global_step() const override { return global_step_; }
  bool client_dead(int c) const override { return clients_[size_t(c)].dead; }
  int64_t local_step(int c) const override { return clients_[size_t(c)].global_step_read; }
  void set_next_local_step(int c, int64_t value) override {
    loop_.client(c).next_local_step = value;
  }
  // StepHost (sim_steps.cpp): the client loop on SimGrid's clock.
  double now_s() const override { return sg4::Engine::get_clock(); }
  bool client_gone(int c) const override { return clients_[size_t(c)].dead; }
  int64_t global_step_seen() const override { return global_step_; }
  bool within_stop_limit(int c) const override;
  bool is_chief(int c) const override { return c == recovery_.chief_client(); }
  void begin_step(int c) override;
  void produce(int c, int64_t batch) override;
  void step_ended(int c, int step, double start_s, double end_s) override;
  void step_counted(int, double, double) override { report_progress(); }
  bool session_checkpoint(int c, bool at_end, std::function<void(double)> then) override;
  void chief_duties(int c, double end_s, std::function<void(double)> then) override;
  double step_gap_s(int c, double step_s) override;
  void start_step_at(int c, double at_s) override;
  void finish_at(int c, double at_s) override;
  void finished(int c) override;
  void recv(int, int) override {}  // completes when the network delivers the tensor
  void send(int c, int op) override;
  void sync(int c, int op) override;
  void collective(int c, int op) override;
  void compute(int c, int op) override;
  void complete_now(int c, int op) override;
  // NetworkHost
  bool void_send(const PendingSend& send) const override {
    return void_item(send.client, send.incarnation, send.op);
  }
  void copied(const PendingSend& send, int cpu, bool receiving, double start_s,
              double flop) override;
  void delivered(const PendingSend& send, double start_s, int64_t message_id,
                 const std::string& bound) override;

 private:
  // Set-up and outcome (sim_run.cpp).
  void build_platform();
  void create_actors();
  void use_sharing_model();
  void driver();
  void serve(const Timer& timer);
  void record_outcome();
  void report_progress();
  // The step engine (sim_steps.cpp).
  void compute_loop(int device, int core);
  void wake_compute(int device);
  // Dispatches a ready op through the loop unless its client died or a job fault killed a role
  // it needs.
  void dispatch(int c, int op);
  // Records a finished step's duration; returns the median of the client's last few (s).
  static double typical_step_s(ClientState& s, double step_s);
  double jitter_factor(int c, int device, int64_t step) const;
  // Work that must not run or complete: its client died or was restarted, or a role it needs died
  // with the job.
  bool void_item(int c, int incarnation, int op) const;
  // Role and job faults, restarts (sim_run_faults.cpp).
  void schedule_faults();
  void inject_fault(int fault, bool window_end);
  void kill_client(int c);
  void fail_job(int fault);
  void detect_job_failure();
  void restart_job();
  // Elastic all-reduce: a rank died, and the survivors go back to the lowest live rank's last
  // commit (its steps done), training again from there at resume_s (the rendezvous's end).
  void roll_back_survivors(double resume_s);
  void note_lost_before_back(int c);
  std::vector<int> client_steps() const;

  // The training objective (sim_values.cpp): the value engine's meaning of op `op` of client c
  // at its completion, before global_step moves; values_updated after an update (recorded
  // first) records the evaluation that falls on the new global_step.
  void compute_values(int c, int op);
  void values_updated(double at_s);
  void record_evaluation(const core::ValueEvaluation& evaluation, double at_s);

  const core::Plan& plan_;
  Progress progress_;
  SimSettings settings_;
  core::RunOutcome outcome_;  // its notes fill as the run goes
  core::TraceRecorder recorder_;
  std::vector<const core::ClientGraph*> graphs_;  // core::step_graphs(plan_)
  std::vector<DeviceState> devices_;
  std::vector<ClientState> clients_;  // one per graph
  core::ClientLoop loop_;             // the graphs' loops (this run is its host)
  LinkFaults links_;
  Network network_;
  core::SyncQueues sync_;
  std::optional<SimCollectives> collectives_;  // all-reduce plans
  // Work the collectives asked for at a later time (TimerKind::kDeferred), by key.
  std::unordered_map<int, std::function<void()>> deferred_;
  int next_deferred_ = 0;
  JobRecovery recovery_;
  // training.steps "auto": the stopping rule, and what it decided. Asynchronous and in-graph
  // clients end the step they are in (or about to start) once stop_requested_; synchronous
  // training ends at global step steps_limit_ (Plan::steps until the rule lowers it).
  core::SteadyStateStop steady_;
  bool stop_requested_ = false;
  // distributed_replicated: once stop_requested_, every worker ends with this step (-1: none).
  int64_t last_barrier_step_ = -1;
  int64_t steps_limit_ = 0;
  sg4::Host* service_host_ = nullptr;  // runs the driver; no links, never fails
  int64_t global_step_ = 0;
  // The objective's values (core::objective_computed_by_simulator); null: rates only.
  std::unique_ptr<core::ValueEngine> values_;
  bool objective_diverged_ = false;  // an evaluation was not finite: none is recorded after it
  double last_update_s_ = 0;         // when global_step last moved
  int finished_clients_ = 0;
  // Step starts, faults and restarts waiting for their time, served by the driver actor.
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  sg4::MutexPtr driver_mutex_;
  sg4::ConditionVariablePtr driver_wake_;
  std::vector<sg4::Host*> endpoint_hosts_;  // per Network::process_endpoints()
  double engine_wall_s_ = 0;
  double setup_wall_s_ = 0;
  std::chrono::steady_clock::time_point next_progress_;
};

}  // namespace replisim::sim::detail
