// The simulator's settings of one run (core::RunOptions::settings): which network engine shares
// the links and SimGrid's timing tolerance, read, applied to SimGrid and recorded in provenance.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace replisim::sim {

// How link sharing is computed. Both give SimGrid's max-min sharing with the same factors
// (docs/model.md, "Simulation speed"):
// - kSimgrid: SimGrid's defaults (network/optim:Lazy, selective update of the sharing problem);
// - kAuto: network/optim:Full (the whole problem re-solved at each event, without first walking
//   the constraints that changed, which at scale reaches every flow anyway), and, in runs without
//   faults or caps it does not know, the exact sharing model of sim/sharing_model.h carrying the
//   flows instead of SimGrid's solver (O(log n) per flow that starts or ends in a saturated
//   parameter server's NIC instead of O(flows)); the solution is the same.
enum class NetworkEngine { kSimgrid, kAuto };

struct SimSettings {
  NetworkEngine network_engine = NetworkEngine::kAuto;
  // SimGrid's surf/precision (seconds): activities whose end falls within it of the current time
  // end together, up to this much early. Default SimGrid's own 1e-9 s.
  double tolerance_s = kDefaultToleranceS;

  // All-reduce: a ring with nothing else on its links may be carried whole (sim_collectives.h);
  // false carries every ring chunk by chunk (the differential test and benchmark; "settings"
  // key collective_fast_path).
  bool collective_fast_path = true;

  // For tests of how a bug reaches the user, not a flag: when >= 0, an invariant breaks on
  // purpose inside an actor at this simulated time (seconds).
  double internal_error_at_s = -1;

  static constexpr double kDefaultToleranceS = 1e-9;
  // Larger tolerances move step times by more than the differential test's 0.5%.
  static constexpr double kMaxToleranceS = 1e-3;
};

// What the `auto` engine's exact sharing model (docs/model.md) did in one run; all zero when the
// run did not use it (the `simgrid` engine, or a run with faults, stream or RPC ceilings).
struct SharingStats {
  int64_t flows = 0;          // flows sent while it was in use
  int64_t model_flows = 0;    // of them, ended by the model rather than by SimGrid's solver
  int64_t hand_backs = 0;     // times it handed every flow in flight to SimGrid
  int64_t take_overs = 0;     // times it took them back
  int64_t reassignments = 0;  // times it chose every flow's group again (full max-min)
};

// "simgrid", "auto".
const char* network_engine_name(NetworkEngine engine);

// Reads {"network_engine": "simgrid"|"auto", "tolerance_s": seconds}, each optional (and, for
// tests, "internal_error_at_s": seconds). Throws
// core::InputError naming the flag (--network-engine, --tolerance) for an unknown key, engine or a
// tolerance outside (0, kMaxToleranceS].
SimSettings read_sim_settings(const nlohmann::json& settings);

// {"network_engine": ..., "tolerance_s": ...}: what a trace records about them.
nlohmann::json sim_settings_provenance(const SimSettings& settings);

// Applies them to SimGrid's configuration: after the Engine exists, before the platform.
void configure_sim_settings(const SimSettings& settings);

}  // namespace replisim::sim
