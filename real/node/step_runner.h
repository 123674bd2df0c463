// The step parts of a task (internal to real/node/): per step graph the part of it this task runs
// (Part, over core::StepState), the client loop of the graphs whose client is here
// (core::ClientLoop on this task's clock and sockets: it is the loop's StepHost), the devices'
// engines that run compute, and the step protocol between a graph's client and the other tasks
// of its step. The client starts each step (RUN to every task with ops in it), each task runs its
// part as its inputs come in, tensors and notices cross between tasks (chunked over one of the
// peer's connections, or copied when both ends are here), each task reports DONE, and the
// client's step ends when every part is done (a TF session.run returns when every op of the step
// has run). It owns the parts, the loop, the engines, the tensors (TensorTransfers) and the frames
// kRun and kDone (FrameRouter). The ops on values are VariableOps', through the Host.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "real/cluster.h"
#include "real/compute/cpu_engine.h"
#include "real/node/frame_router.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class DeviceValues;
class ObjectiveValues;
class TensorTransfers;

class StepRunner : public core::StepHost {
 public:
  // What it needs of its node. Calls come from the node's thread unless said.
  class Host {
   public:
    virtual ~Host() = default;
    virtual double now_s() const = 0;  // the run's clock (any thread)
    virtual bool stopping() const = 0;
    // Runs `work` on the node's thread (from any thread; not after the node is gone).
    virtual void post(std::function<void()> work) = 0;
    // Runs `work` at the run's time `at_s`; `busy`: the wait counts as work under way.
    virtual void at_run_time(double at_s, bool busy, std::function<void()> work) = 0;
    // A frame of the step protocol to `peer` (counted for quiescence).
    virtual void send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                            const std::string& payload) = 0;
    // A tensor's chunk to `peer` over connection `slot` (Mesh::send; counted): `data` kept alive
    // by `keep`, `written` (may be empty) once the last byte left.
    virtual int next_slot(uint32_t peer) = 0;
    virtual void send_chunk(uint32_t peer, const FrameHeader& header, const uint8_t* data,
                            size_t size, std::shared_ptr<const void> keep,
                            std::function<void()> written, int slot) = 0;
    virtual core::TraceRecorder& recorder() = 0;
    virtual int64_t global_step_seen() const = 0;
    // DONE frames carry global_step's value where it lives: the task has seen it.
    virtual void saw_global_step(int64_t global_step) = 0;
    // The ops on values (VariableOps): the loop's values and sync hooks; global_step when this
    // task holds it (else -1).
    virtual bool values(int g, int op) = 0;
    virtual void sync(int g, int op) = 0;
    // A kAllReduce op is ready (CollectiveOps::ready).
    virtual void collective(int g, int op) = 0;
    virtual int64_t global_step_here() const = 0;
    // The job's hooks on graph g's client (core::StepHost has their meaning).
    virtual bool client_dead(int g) const = 0;
    virtual bool within_stop_limit(int g) const = 0;
    virtual bool hold_step(int g) = 0;
    virtual bool session_checkpoint(int g, std::function<void(double)> then) = 0;
    virtual void chief_duties(int g, std::function<void()> then) = 0;
    // Graph g's client ended a step (steps_done steps now) over [start_s, end_s]; finished.
    virtual void step_counted(int g, int steps_done, double start_s, double end_s) = 0;
    virtual void client_finished(int g) = 0;
  };

  struct Setup {
    const core::Plan* plan = nullptr;
    const TaskMap* map = nullptr;
    uint32_t self = 0;
    int threads = 1;  // per compute op (NodeOptions::threads)
  };
  // Builds every step graph's part. `host` and what `setup` points to outlive it.
  StepRunner(Host& host, Setup setup);
  ~StepRunner() override;
  void own_frames(FrameRouter& router);
  // One engine per device this task runs ops on (the plan's GPUs of this task take this
  // machine's CUDA devices in device order), and one for copies and files. Returns the notes for
  // the run's report (which ops ran on a GPU, or why not).
  std::vector<std::string> open_engines();

  std::vector<Part>& parts() { return parts_; }
  const std::vector<Part>& parts() const { return parts_; }
  core::ClientLoop& loop() { return *loop_; }
  const core::ClientLoop& loop() const { return *loop_; }
  DeviceEngine& engine(int device);
  std::map<int, std::unique_ptr<DeviceEngine>>& engines() { return engines_; }
  DeviceEngine& copier() { return *copier_; }
  // The values this task keeps in its devices' memories (null before open_engines, or when none of
  // its devices has a memory of its own).
  DeviceValues* device_values() { return values_.get(); }
  // Per device with a memory, what it did (the run's notes).
  std::vector<std::string> device_memory_summaries() const;
  // Completions under way on the engines (quiescence waits for them).
  int work_pending() const { return work_pending_; }
  // Runs `then` once nothing begun on the engines is under way (a compute, copy or apply whose
  // write to the store could still come): at once when nothing is, else on the node's thread
  // after the last completion.
  void after_work(std::function<void()> then);
  // Runs `work` on `engine`, then `done` on the node's thread unless the node stops or graph g's
  // step `step` ended meanwhile (counted as work under way).
  void run_for_step(DeviceEngine& engine, int g, int64_t step, std::function<void()> work,
                    std::function<void()> done);
  // The training objective (objective_values.h; null: none): a worker's backward ops put the
  // proxy's gradient in the first floats of their gradients. Not owned; outlives the runner.
  void set_objective(ObjectiveValues* objective) { objective_ = objective; }
  // Whether this task computes the objective's gradients of part `p`'s graph: the task runs its
  // client (a worker, an all-reduce rank), or one of an in-graph client's towers.
  static bool computes_objective(const core::Plan& plan, const Part& p);
  // The floats of variable v's gradient tensor as this task's ops hand it on: the variable's
  // own, or with a training objective its slice group's (ObjectiveLayout::tensor_floats: a slice
  // op's tensor carries its members end to end); 0 for v < 0.
  size_t gradient_floats(int v) const;
  // What op `op` of part `p` hands the tasks whose ops take its output directly (no send): the
  // gradient of its one variable (gradient_floats), or, with a training objective, a parameter
  // server read's tensor (its slice group's buffers: a tower on the PS's machine in another
  // process computes the proxy's gradient at them). The floats and the value (null: none, or not
  // carried: the other tasks get a notice only).
  std::pair<size_t, BufferPtr> handed_value(const Part& p, int op) const;
  // The tensors in and out (tensor_transfers.h).
  TensorTransfers& transfers() { return *transfers_; }
  // Graph g's client died: its step in progress is dropped, as the simulation drops a dead
  // client's queued ops.
  void abandon(int g);
  // Elastic all-reduce (Horovod Elastic): graph g's step in progress failed with a rank's death;
  // nothing begun in it completes any more (Part::attempt), and nothing starts until
  // resume_after_rollback, which trains from step `step` with global_step `global_step` (the
  // root's commit; no new session: no session checkpoint).
  void roll_back(int g);
  void resume_after_rollback(int g, int step, int64_t global_step);

  // core::StepHost
  double now_s() const override { return host_.now_s(); }
  bool client_gone(int) const override { return host_.stopping(); }
  bool completions_stopped() const override { return host_.stopping(); }
  int64_t global_step_seen() const override { return host_.global_step_seen(); }
  bool within_stop_limit(int g) const override { return host_.within_stop_limit(g); }
  bool hold_step(int g) override { return host_.hold_step(g); }
  bool is_chief(int g) const override;
  void begin_step(int g) override;
  void produce(int g, int64_t batch) override;
  void step_ended(int g, int step, double start_s, double end_s) override;
  void step_counted(int g, double start_s, double end_s) override;
  bool session_checkpoint(int g, bool at_end, std::function<void(double)> then) override;
  void chief_duties(int g, double end_s, std::function<void(double)> then) override;
  void start_step_at(int g, double at_s) override;
  void finish_at(int g, double at_s) override;
  void finished(int g) override { host_.client_finished(g); }
  void recv(int g, int op) override;
  void send(int g, int op) override;  // TensorTransfers::send
  void sync(int g, int op) override { host_.sync(g, op); }
  void collective(int g, int op) override { host_.collective(g, op); }
  bool values(int g, int op) override { return host_.values(g, op); }
  void compute(int g, int op) override;
  void complete_now(int g, int op) override;

 private:
  void build_parts();
  void on_run(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void on_done(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  // Steps.
  void begin_part(Part& p, int64_t step, int64_t local_step);
  void replay_early(Part& p);
  void part_done(Part& p);
  void maybe_finish_step(Part& p);
  void finish_step(Part& p);

  Host& host_;
  Setup setup_;
  const core::Plan& plan_;
  std::vector<const core::ClientGraph*> graphs_;
  std::vector<Part> parts_;
  std::optional<core::ClientLoop> loop_;  // the graphs' loops (only the owned ones run)
  std::map<int, std::unique_ptr<DeviceEngine>> engines_;
  // The plan's gemm_lists as the engines take them (Op::gemms indexes both).
  std::vector<std::vector<SampleGemm>> sample_gemms_;
  std::unique_ptr<DeviceEngine> copier_;
  std::unique_ptr<DeviceValues> values_;
  std::unique_ptr<TensorTransfers> transfers_;
  ObjectiveValues* objective_ = nullptr;
  int work_pending_ = 0;
  std::vector<std::function<void()>> after_work_;  // waiting for work_pending_ to reach 0

  void work_ended();
};

}  // namespace replisim::real::detail
