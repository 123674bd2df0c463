// The one interface every backend implements: run a Plan, return its Trace. Backends are
// registered by name from their own library (explicit calls, no static constructors).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/trace/trace.h"

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

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;
  // Runs every step of `plan` and returns the trace (its `meta` filled by trace_meta_from_plan
  // plus the backend's own provenance). Blocking. Throws InputError for a plan the backend
  // cannot run and BackendError when the run fails.
  virtual Trace run(const Plan& plan) = 0;
};

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
// platform, roles (with device names), clients, variables and PS shards, and the plan hash.
nlohmann::json trace_meta_from_plan(const Plan& plan);

}  // namespace replisim::core
