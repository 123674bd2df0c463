// training.steps "auto" in a real run: the simulator's stopping rule (core/runtime/steady_state.h)
// applied online, and the stop limits the coordinator gives the clients once it holds. One part of
// a task's runtime (internal to real/node/): it owns the rule (on the coordinator, which holds
// global_step and hears every step's end), the question and answers, the limits, and the frames
// kStopAsk, kStopReply and kStopLimit (FrameRouter).
//
// When the rule holds, the coordinator asks every live client which step it will end last, and
// once every answer is in it gives each a limit:
// - asynchronous and in-graph clients: their own answer (each ends the step it is in when the
//   question comes, as the simulator's clients do; the client whose step end made the rule hold
//   has usually begun its next step by then, one more than the simulator runs);
// - distributed_replicated workers: the largest answer (workers meet at barriers, so each runs up
//   to the furthest step any worker is in, none waiting for one that stopped);
// - SyncReplicas: a global step G past every token a worker holds (a worker that runs on token t
//   gives its gradient to update t + 1) and at least the updates the chief's sync op has made; the
//   sync op stops at G and the workers at the token G that update enqueues, as a run of G global
//   steps would end.
// Between the question and the limit, a client does not begin a step beyond its answer (it holds
// for one round trip at most), so no answer is out of date when the limit comes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/plan/plan.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/steady_state.h"
#include "core/trace/trace_meta.h"
#include "real/node/frame_router.h"
#include "real/node/part.h"

namespace replisim::real::detail {

class SteadyStop {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    virtual bool stopping() const = 0;
    virtual int64_t global_step_seen() const = 0;
    // The coordinator: every client finished and the job ends (no question goes out any more).
    virtual bool job_finished() const = 0;
    // Graph g's client died; graph g's client finished (as the coordinator knows it).
    virtual bool client_dead(int g) const = 0;
    virtual bool client_finished(int g) const = 0;
    // An application frame to `peer` (counted for quiescence): `step` the frame's step field,
    // `graph` its tensor field.
    virtual void send_stop_frame(uint32_t peer, FrameType type, int64_t step, uint64_t graph) = 0;
    // The chief's sync op, waiting for an update past its limit, ends its step unfinished.
    virtual void end_waiting_step(int g) = 0;
    // Every client has its limit (the job may end now).
    virtual void stop_limits_set() = 0;
  };

  // `rule`: the plan's steps are "auto" in this incarnation (a restarted one has lost the estimate
  // and runs to max_steps; run refuses the combination). `plan`, `host`, `loop` and `parts`
  // outlive it; `parts` is the node's per-graph state (indexed as the loop's clients).
  struct Setup {
    const core::Plan* plan = nullptr;
    bool rule = false;
    uint32_t self = 0;
    uint32_t coordinator = 0;
  };
  SteadyStop(Host& host, core::ClientLoop& loop, const std::vector<Part>& parts, Setup setup);
  void own_frames(FrameRouter& router);

  // Every task reports its clients' step ends to the coordinator (the rule needs them).
  bool reports_steps() const { return setup_.rule; }
  // The coordinator's rule, fed as training goes: a client's step `step` ended over
  // [start_s, end_s]; an update made global_step `global_step` at `at_s` carrying `samples`. When
  // the rule holds the question goes out.
  void step_ended(int g, int step, double start_s, double end_s, int64_t global_step);
  void update(double at_s, double samples, int64_t global_step);
  // Graph g's client died: it opens no window and answers no question.
  void client_died(int g);
  // The coordinator, after deaths: once every live client answered, each gets its limit.
  void maybe_set_limits();
  // The coordinator's record for the run's outcome (nullopt without the rule). `stalled`: the run
  // ended in a stall, after the rule may have held.
  std::optional<core::SteadyStateRecord> record(double end_s, bool stalled);

  // The step loop's questions (core::StepHost): may graph g begin its next step, and must it wait
  // for its limit first (the limit starts it again).
  bool within_limit(int g) const;
  bool hold(int g);
  // The step the chief's sync op stops at: Plan::steps, or the limit once the rule held.
  int64_t last_global_step() const;

 private:
  // Per client, once the coordinator asked: the last step it said it would end (a synchronous
  // worker: the token it would run on; the chief's sync op: global_step), and the coordinator's
  // limit (none until it comes). `held`: it would begin a step beyond its reply and waits.
  struct Asked {
    bool asked = false;
    int64_t reply = -1;
    std::optional<int64_t> limit;
    bool held = false;
  };
  // Where a client's loop stands, in the unit of its limit: the next step to begin (fixed steps),
  // the token its next step runs on (a synchronous worker), global_step (the chief's sync op).
  int64_t position(int g) const;
  void ask();
  void on_ask(int g);
  void on_reply(int g, int64_t last_step);
  void on_limit(int g, int64_t limit);

  Host& host_;
  core::ClientLoop& loop_;
  const std::vector<Part>& parts_;
  Setup setup_;
  std::vector<Asked> clients_;
  // The coordinator's side.
  std::optional<core::SteadyStateStop> rule_;
  bool asked_ = false;
  bool limits_sent_ = false;
  std::map<int, int64_t> replies_;  // per live graph asked: its answer (-2: awaited)
  int64_t sync_limit_ = -1;         // synchronous: the limit every sync graph was given
};

}  // namespace replisim::real::detail
