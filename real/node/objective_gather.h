// The training objective's evaluations in a real run (issue 40; internal to real/node/): the task
// that holds global_step (the coordinator) evaluates the proxy's values on the test set at the
// start and at every update whose global_step is a multiple of objective.evaluate_every_steps,
// and records the "loss" and "accuracy" counters at the update's instant (core/metrics reads the
// curve from them). When other parameter servers hold some of the variables, it asks each for its
// variables' slices of the proxy (kValuesAsk; the answer kValues: their first floats, in variable
// order) and evaluates once every one has answered — their values as they are a round trip after
// the update, its own at the update. The job's end waits for the answers (when_idle), so the last
// evaluation is in the trace. One part of a task's runtime: it owns the frames kValuesAsk and
// kValues (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/backend/trace_recorder.h"
#include "core/plan/plan.h"
#include "core/values/parameter_store.h"
#include "real/node/frame_router.h"

namespace replisim::real::detail {

class ObjectiveValues;

class ObjectiveGather {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual core::TraceRecorder& recorder() = 0;
    virtual void send_frame(uint32_t peer, FrameType type, int64_t step,
                            const std::string& payload) = 0;
    virtual bool live(uint32_t task) const = 0;
    virtual bool stopping() const = 0;
    // A line for the run's notes (the trace's outcome; the report prints it).
    virtual void note(const std::string& line) = 0;
  };
  struct Setup {
    const core::Plan* plan = nullptr;
    const ObjectiveValues* objective = nullptr;
    const core::ParameterStore* store = nullptr;  // this task's variables (null: none)
    uint32_t self = 0;
    uint32_t evaluator = 0;  // the task that holds global_step
    // Per plan variable, the task that holds it (-1: global_step, or no slice of the proxy).
    std::vector<int> holder_of;
  };
  // `host`, and what `setup` points to, outlive it.
  ObjectiveGather(Host& host, Setup setup);
  void own_frames(FrameRouter& router);

  // The evaluator: the values of the update that made global_step `global_step` at `at_s` (the
  // run's clock) are evaluated and recorded — at once when this task holds every slice, else
  // when the last holder answered.
  void evaluate(int64_t global_step, double at_s);
  // The evaluator: the proxy's initial values, at t = 0 (a run's start; not a restart's).
  void evaluate_initial();
  // Runs `then` once no evaluation waits for an answer: at once when none does; a holder that
  // died is not waited for.
  void when_idle(std::function<void()> then);
  // A task died: its answers are not waited for (an evaluation it owed is dropped).
  void task_died(uint32_t task);

 private:
  struct Pending {
    double at_s = 0;
    std::vector<float> values;  // the proxy's flat vector, filled as answers come
    std::set<uint32_t> waiting;
  };
  void on_ask(uint32_t peer, const FrameHeader& h);
  void on_values(uint32_t peer, const FrameHeader& h, const uint8_t* payload);
  // Reads the slices of the variables `task` holds from `store` into `values` (the flat vector).
  void read_own(std::vector<float>& values) const;
  void record(int64_t global_step, double at_s, const std::vector<float>& values);
  void settle();
  // Drops the evaluations that wait for answers; their answers, when they come, are ignored.
  void drop_pending();

  Host& host_;
  Setup setup_;
  std::set<uint32_t> holders_;  // the other tasks that hold slices
  std::map<int64_t, Pending> pending_;
  // Per dropped evaluation (its global step), the holders whose answers are still on the way.
  std::map<int64_t, std::set<uint32_t>> dropped_;
  std::vector<std::function<void()>> when_idle_;
  bool diverged_ = false;
};

}  // namespace replisim::real::detail
