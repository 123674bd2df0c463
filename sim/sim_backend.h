// The SimGrid backend: predicts a plan by simulation. Each run happens in a forked child process
// (SimGrid allows one engine per process), which streams the trace back through a pipe as it
// simulates, with progress records; cancelling kills the child.
#pragma once

#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "sim/sim_settings.h"

namespace replisim::sim {

class SimBackend : public core::Backend {
 public:
  // "sim", with {"simgrid": simgrid_version()} as provenance.
  core::BackendInfo info() const override;

  // Wall-clock seconds the last run spent in SimGrid's engine, and in all (process start,
  // platform, engine, trace transport and decoding). For benchmarks.
  double last_engine_wall_s() const { return last_engine_wall_s_; }
  double last_total_wall_s() const { return last_total_wall_s_; }
  // What the exact sharing model did in the last run (docs/model.md).
  const SharingStats& last_sharing_stats() const { return last_sharing_; }

 protected:
  // Runs the plan in a child process and forwards its records into `sink`. Throws
  // core::InputError when the child finds the plan bad, core::BackendError when the simulation
  // fails (deadlock, crash of the child, a corrupt pipe), core::RunCancelled.
  core::RunOutcome do_run(const core::Plan& plan, core::TraceSink& sink,
                          const core::RunOptions& options) override;
  // {"network_engine", "tolerance_s"} of options.settings (sim/sim_settings.h).
  nlohmann::json settings_provenance(const core::RunOptions& options) const override;

 private:
  double last_engine_wall_s_ = 0;
  double last_total_wall_s_ = 0;
  SharingStats last_sharing_;
};

// "SimGrid <major>.<minor>.<patch>" of the library this binary is linked against.
std::string simgrid_version();

// Registers "sim" in the core backend registry. Call once from main() (explicit registration:
// static constructors in libraries are dropped by linkers).
void register_sim_backend();

}  // namespace replisim::sim
