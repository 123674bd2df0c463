// The runtime of one task (internal to real/): the mesh's handler, the task's trace and outcome,
// the plan's faults (deaths, job failures, slowdowns), the orderly stop and the failure that
// stops every task with its one line, and the wiring of the parts that own the rest, each with
// the frames it handles (FrameRouter) and a Host of its own (node_hooks.h): the step parts
// (StepRunner, TensorTransfers), the ops on values (VariableOps), the job's control (JobControl),
// quiescence, checkpoints, a restart's restore, training.steps "auto", the trace's gathering and
// the clocks. One thread runs it all (the io_context's); compute and copies run on engine threads
// and post their completions back.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <asio.hpp>
#include <nlohmann/json.hpp>

#include "core/backend/trace_recorder.h"
#include "core/base/unnamed_file.h"
#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/recovery_timeline.h"
#include "core/runtime/step_state.h"
#include "core/runtime/sync_queues.h"
#include "core/trace/trace_format.h"
#include "core/values/parameter_store.h"
#include "real/cluster.h"
#include "real/compute/cpu_engine.h"
#include "real/node/checkpoint_saver.h"
#include "real/node/clock_sync.h"
#include "real/node/collective_ops.h"
#include "real/node/frame_router.h"
#include "real/node/job_control.h"
#include "real/node/node.h"
#include "real/node/objective_gather.h"
#include "real/node/objective_values.h"
#include "real/node/part.h"
#include "real/node/payload.h"
#include "real/node/quiescence.h"
#include "real/node/restorer.h"
#include "real/node/steady_stop.h"
#include "real/node/step_runner.h"
#include "real/node/tensor_transfers.h"
#include "real/node/trace_gather.h"
#include "real/node/variable_ops.h"
#include "real/transport/mesh.h"

namespace replisim::real::detail {

struct NodeSetup {
  const core::Plan* plan = nullptr;
  ClusterSpec spec;
  TaskMap map;
  uint32_t self = 0;
  NodeOptions options;
  std::string cluster_file;  // for errors about the spec
};

class Node : public Mesh::Handler {
 public:
  // Binds the task's address (or takes the launcher's socket); throws core::InputError naming
  // the cluster file for an address that cannot be bound.
  explicit Node(const NodeSetup& setup);
  ~Node() override;
  // Runs until the job stops. Throws core::BackendError (one line naming role, host and step)
  // when this task failed or was stopped by another's failure.
  void run();

  // A gathering coordinator's run trace, every node's part merged (after run(); NodeOptions).
  const std::optional<core::Trace>& run_trace() const {
    static const std::optional<core::Trace> kNone;
    return gather_ ? gather_->run_trace() : kNone;
  }

 private:
  // Set-up (node_setup.cpp).
  std::vector<uint32_t> peers() const;
  void open_trace();
  void open_objective();
  void flush_trace_every(double period_s);  // launched nodes: what a kill -9 leaves readable
  void watch_cancel();
  std::string describe() const;  // "worker1 (task worker1 on 127.0.0.1) at step 3"
  // Mesh::Handler (node_frames.cpp).
  void on_connected() override;
  void on_frame(uint32_t peer, const FrameHeader& header, const uint8_t* payload) override;
  uint8_t* tensor_destination(uint32_t peer, const FrameHeader& header) override;
  void on_failure(const std::string& why) override;
  void on_refused(const std::string& line) override;
  void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                  const std::string& payload = {}, double time_s = 0);
  // Faults (node_faults.cpp).
  void arm_faults();
  std::vector<uint32_t> victims(const core::PlanFault& fault) const;
  void die(int fault);
  void on_peer_lost(uint32_t peer, const std::string& why) override;
  int planned_death(uint32_t peer) const;  // the fault that killed `peer`, or -1
  void unplanned_death(uint32_t peer, const std::string& why);
  void lose_graphs_of(uint32_t peer);
  void job_down(int fault);
  void detect_job_failure();
  void note_struck_while_down(const core::PlanFault& fault);
  // The parts' hosts (node_hooks.h): each part sees its node through its own small adapter.
  class ClockHooks;
  class GatherHooks;
  class SaverHooks;
  class StopHooks;
  class RestoreHooks;
  class ValueHooks;
  class WaveHooks;
  class StepHooks;
  class JobHooks;
  class CollectiveHooks;
  class ObjectiveHooks;
  struct Hooks;
  void background(std::function<void()> work, std::function<void()> done);
  bool live(uint32_t task) const { return !task_dead_[task]; }
  void end_waiting_step(int g);
  double now_s() const { return clock_s() - origin_local_s_; }  // the run's clock
  // Job control (node_control.cpp).
  void begin_training();
  void chief_duties(int g, std::function<void()> then);
  void write_summaries(int g, std::function<void()> then);
  // Ends this task's part of the run: STOP to every peer (with the job fault that failed the job,
  // if one did: a peer that has not seen it yet stops at its own detection), the trace written,
  // the parts gathered. `job_fault`: -1 for the run's orderly end.
  void stop(int job_fault = -1);
  void fail(const std::string& why);
  void write_trace_end();
  void note_faults_after_the_end();

  double clock_s() const;  // this machine's monotonic clock (s)
  bool chief() const { return int(self_) == map_.chief_task; }
  bool coordinator() const { return int(self_) == map_.coordinator_task; }
  void post(std::function<void()> work);  // onto the network thread, from any thread
  // Runs `work` on the network thread once `delay_s` has passed (not after the node is gone or
  // while it stops). `busy`: the wait counts as work under way, which quiescence waits for.
  void after(double delay_s, bool busy, std::function<void()> work);
  // The same at the run's time `at_s` (at once when it has passed).
  void at_run_time(double at_s, bool busy, std::function<void()> work) {
    after(origin_local_s_ + at_s - clock_s(), busy, std::move(work));
  }

  const core::Plan& plan_;
  ClusterSpec spec_;
  TaskMap map_;
  uint32_t self_;
  NodeOptions options_;
  std::string plan_hash_;
  std::unique_ptr<Hooks> hooks_;
  asio::io_context io_;
  std::unique_ptr<Mesh> mesh_;
  // The training objective's data, model and values where this task computes them (a worker's,
  // a PS's: objective_values.h); declared before the parts that use it.
  std::unique_ptr<ObjectiveValues> objective_;
  // The step parts: the graphs' parts, the client loops, the engines (step_runner.h).
  std::optional<StepRunner> steps_;
  // The ops on values and this task's parameter-server state (variable_ops.h).
  std::optional<VariableOps> vars_;
  // All-reduce plans: this task's ranks of the collectives (collective_ops.h).
  std::optional<CollectiveOps> collectives_;
  // The objective's evaluations, on the task that holds global_step and the parameter servers
  // that answer it (objective_gather.h).
  std::optional<ObjectiveGather> objective_gather_;
  // Clocks.
  double origin_local_s_ = 0;  // the run's t = 0 on this machine's clock
  // The job's control: start, progress, the clients' ends (job_control.h); global_step as this
  // task knows it; when the job ended (the coordinator's) or this task died.
  std::optional<JobControl> job_;
  int64_t global_step_seen_ = 0;
  std::optional<asio::steady_timer> wave_timer_;
  double end_s_ = 0;
  // Quiescence: the frames counted, the coordinator's waves (quiescence.h); work under way.
  std::optional<Quiescence> quiescence_;
  int timers_pending_ = 0;
  int work_pending_ = 0;  // posted completions and file writes not yet back
  // The trace and the outcome (the file has its name only once the run ended well).
  std::unique_ptr<core::UnnamedFile> trace_file_;
  std::unique_ptr<core::NativeTraceWriter> writer_;
  std::optional<core::TraceRecorder> recorder_;
  core::RunOutcome outcome_;
  // The parts that own their state and frames (FrameRouter): gathering the run's trace (nodes
  // not started by run).
  FrameRouter router_;
  std::optional<TraceGather> gather_;
  ClockSync clock_sync_;
  std::optional<CheckpointSaver> saver_;
  // Faults and restarts.
  std::optional<Resume> resume_;
  double incarnation_start_s_ = 0;  // faults before it struck an earlier incarnation
  std::vector<bool> task_dead_;     // per task: killed by a fault of the plan
  std::vector<bool> graph_dead_;    // per graph: its client was killed
  int job_fault_ = -1;              // a job fault struck: every client stops at its detection
  // A restarted incarnation's restore (restorer.h).
  std::optional<Restorer> restorer_;
  // training.steps "auto" (steady_stop.h).
  std::optional<SteadyStop> steady_stop_;
  bool stopping_ = false;
  bool cancelled_ = false;  // stopped by SIGINT or SIGTERM (NodeOptions::cancelled)
  bool failed_ = false;
  std::string error_line_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace replisim::real::detail
