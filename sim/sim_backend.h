// The SimGrid backend: predicts a plan by simulation. Each run happens in a forked child process
// (SimGrid allows one engine per process), which streams the trace back through a pipe as it
// simulates, with progress records; cancelling kills the child.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "sim/sim_settings.h"

namespace replisim::sim {

class SimBackend : public core::Backend {
 public:
  SimBackend() = default;
  SimBackend(const SimBackend&) = delete;
  SimBackend& operator=(const SimBackend&) = delete;
  // Stops a simulation process that start_run() left without a do_run() (none normally).
  ~SimBackend() override;

  // "sim", with {"simgrid": simgrid_version()} as provenance.
  core::BackendInfo info() const override;

  // Wall-clock seconds the last run spent in SimGrid's engine, and in all (process start,
  // platform, engine, trace transport and decoding). For benchmarks.
  double last_engine_wall_s() const { return last_engine_wall_s_; }
  // The child's set-up before its engine ran (SimResult::setup_wall_s).
  double last_setup_wall_s() const { return last_setup_wall_s_; }
  double last_total_wall_s() const { return last_total_wall_s_; }
  // What the exact sharing model did in the last run (docs/model.md).
  const SharingStats& last_sharing_stats() const { return last_sharing_; }

 protected:
  // Forks the child process that simulates the plan (it sets up SimGrid while the parent
  // computes the trace's metadata). Throws core::InputError for bad settings, core::BackendError
  // when the process cannot start.
  void start_run(const core::Plan& plan, const core::RunOptions& options) override;
  // Kills the child start_run() forked and waits for it.
  void abandon_run() noexcept override;
  // Forwards the child's records into `sink` (forking it first if start_run() did not). Throws
  // core::InputError when the child finds the plan bad, core::BackendError when the simulation
  // fails (deadlock, crash of the child, a corrupt pipe), core::RunCancelled.
  core::RunOutcome do_run(const core::Plan& plan, core::TraceSink& sink,
                          const core::RunOptions& options) override;
  // {"network_engine", "tolerance_s"} of options.settings (sim/sim_settings.h).
  nlohmann::json settings_provenance(const core::RunOptions& options) const override;

 private:
  // The child start_run() forked, until do_run() or abandon_run() takes it (-1: none).
  int child_pid_ = -1;
  int child_fd_ = -1;  // the read end of its pipe
  std::chrono::steady_clock::time_point child_started_;
  double last_engine_wall_s_ = 0;
  double last_setup_wall_s_ = 0;
  double last_total_wall_s_ = 0;
  SharingStats last_sharing_;
};

// "SimGrid <major>.<minor>.<patch>" of the library this binary is linked against.
std::string simgrid_version();

// Registers "sim" in the core backend registry. Call once from main() (explicit registration:
// static constructors in libraries are dropped by linkers).
void register_sim_backend();

}  // namespace replisim::sim
