// The "real" backend: runs a plan on real processes of this machine over loopback TCP. It starts
// one `replisim node` per task of the plan (cluster.h), each on a listening socket the launcher
// bound (127.0.0.1, a free port) and with a fresh random cluster token in its environment, waits
// for them, and merges their native traces onto the chief's clock (docs/real-runs.md).
//
// RunOptions::settings it takes (every one optional):
//   "threads"           SGEMM threads per op (int, 1..64; default 1)
//   "checkpoint_dir"    an existing directory for the chief's checkpoints and summaries and the
//                       run's final variables ("final.index" and its shards); required when the
//                       plan writes checkpoints or summaries
//   "node_binary"       the replisim executable to start (default: this process's own)
//   "connect_timeout_s" every task connected and authenticated by then (default 30)
//   "isolate"           "netns": each machine of the plan in its own network namespace, its NIC
//                       shaped with tc tbf, the plan's link faults played on it (real/isolate,
//                       root); "none" (default): loopback
// The plan's role, machine and slowdown faults happen for real (real/node/node_faults.cpp); its
// link faults need "isolate": "netns" (InputError otherwise).
#pragma once

#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "real/backend/launcher.h"

namespace replisim::real {

class RealBackend : public core::Backend {
 public:
  static constexpr const char* kName = "real";
  core::BackendInfo info() const override;
  // The run directories of this object's runs (plan, cluster spec, each node's log and trace),
  // kept from now on; otherwise each is removed when the object goes.
  std::vector<std::string> keep_measurements() override;

 protected:
  // Throws core::InputError for a fault it cannot play or a bad setting (or an --isolate this
  // machine cannot make), core::BackendError naming
  // the role, host and step of the task that failed first (a failed run leaves no trace),
  // core::RunCancelled (every node killed and reaped).
  core::RunOutcome do_run(const core::Plan& plan, core::TraceSink& sink,
                          const core::RunOptions& options) override;
  // core::objective_evaluated_by_real_run: every plan whose objective a real run computes.
  bool records_objective(const core::Plan& plan) const override;

 private:
  std::vector<launch::RunDir> finished_;  // the runs' directories, until the object goes
};

// Registers "real" (core::register_backend).
void register_real_backend();

}  // namespace replisim::real
