// The one interface every backend implements: run a Plan, emitting its trace into a TraceSink.
// Backend::run is not virtual: it validates the plan, writes the metadata (the plan's summary, the
// backend's name and provenance merged with the caller's) and ends the sink with the outcome, so
// no backend can forget any of it; a backend implements only do_run. Backends are registered by
// name from their own library (explicit calls, no static constructors).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/plan/plan.h"
#include "core/trace/trace.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

// A modelled or real failure of a run (not bad input): e.g. the simulation deadlocked or a
// worker process crashed. Maps to exit code 1.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a backend says about itself: its registered name, one line, and what every trace it
// writes records about it under "provenance" (e.g. {"simgrid": "SimGrid 3.32.0"}: its engine's
// version), merged with the caller's provenance.
struct BackendInfo {
  std::string name;
  std::string description;
  nlohmann::json provenance = nlohmann::json::object();
};

// How far a run has got: sent now and then while it goes on.
struct RunProgress {
  double time_s = 0;                // the run's clock (simulated seconds for a simulation)
  int64_t global_step = 0;          // updates applied (as the run counts them: a restart
                                    // sets it back to its checkpoint's)
  std::vector<int64_t> steps_done;  // per plan client, the steps it has finished
};

struct RunOptions {
  // The caller's provenance (command line, scenario, seed, ...): the trace's metadata records it
  // with the backend's own (BackendInfo::provenance) merged in.
  nlohmann::json provenance = nlohmann::json::object();
  // Called from the thread that called run(), a few times a second at most, while the run goes
  // on. Null: no progress.
  std::function<void(const RunProgress&)> progress;
  // Polled from the thread that called run(), at least every 100 ms while the run goes on; true
  // stops it: everything it started is stopped and reaped, and run() throws RunCancelled
  // (core/base/error.h).
  std::function<bool()> cancelled;
  // Settings of the backend's own (the real backend's "threads", "checkpoint_dir", ...: see its
  // header; the simulator's in sim/sim_settings.h). A backend refuses a key it does not know with
  // InputError naming it.
  nlohmann::json settings = nlohmann::json::object();
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;

  // Runs every step of `plan` and emits its trace into `sink`: begin(metadata), the run's
  // strings, events and counters, end(outcome). Blocking; one run at a time per object.
  // Throws InputError for a plan that breaks its invariants (validate_plan) or that the backend
  // cannot run, BackendError when the run fails, RunCancelled. When it throws after
  // begin(), the sink holds a partial run that the caller must discard.
  void run(const Plan& plan, TraceSink& sink, const RunOptions& options = {});

  // Keeps on disk what this object's runs measured (a real run's node traces: its only copy of the
  // measurement), which it would otherwise remove when it goes, and returns where: for a caller
  // whose outputs could not be written. Default: nothing kept, none returned (a simulation can be
  // run again).
  virtual std::vector<std::string> keep_measurements() { return {}; }

 protected:
  // Called once the plan is valid, before the metadata is computed (plan_hash serialises the
  // whole plan: about half a second at 1,024 workers): a backend that runs the plan in another
  // process can start it here, so that the two overlap. Then do_run() follows, or, when the
  // metadata or the sink's begin() throws, abandon_run(). Default: nothing.
  virtual void start_run(const Plan& plan, const RunOptions& options);
  // Stops what start_run() started (no do_run() will come). Default: nothing.
  virtual void abandon_run() noexcept;
  // Emits the run's strings, events and counters into `sink` (whose begin() has been called)
  // and returns its outcome. `plan` is valid.
  virtual RunOutcome do_run(const Plan& plan, TraceSink& sink, const RunOptions& options) = 0;
  // What this run's settings (RunOptions::settings) make of the backend, as the trace's metadata
  // records it under "provenance" (the simulator's network engine and tolerance); called before
  // the run starts. Throws InputError for settings the backend refuses. Default: nothing.
  virtual nlohmann::json settings_provenance(const RunOptions& options) const;
  // Whether this backend's run of `plan` records the training objective's evaluations (the
  // trace's "loss" and "accuracy" counters): when not, the metadata names no objective target,
  // so that a report gives no time to target. Default: objective_computed_by_simulator.
  virtual bool records_objective(const Plan& plan) const;
};

// Runs `plan` on `backend` and returns its trace (what most callers want).
Trace run_to_trace(Backend& backend, const Plan& plan, const RunOptions& options = {});

struct BackendEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Backend>()> create;
};

// Adds a backend; a second entry with the same name replaces the first.
void register_backend(BackendEntry entry);
const std::vector<BackendEntry>& registered_backends();
// The backend called `name`; throws InputError listing the valid names when there is none.
std::unique_ptr<Backend> create_backend(const std::string& name);

// Metadata every trace carries about its plan: strategy, scenario, steps, warm-up, batch, the
// platform, roles (with device names), clients, variables and PS shards, memory, notes and the
// plan hash (backend and provenance are Backend::run's to fill in).
TraceMeta trace_meta_from_plan(const Plan& plan);

}  // namespace replisim::core
