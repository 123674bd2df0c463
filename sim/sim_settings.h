// The simulator's settings of one run (core::RunOptions::settings): which network engine shares
// the links and SimGrid's timing tolerance, read, applied to SimGrid and recorded in provenance.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace replisim::sim {

// How link sharing is computed. Both are SimGrid's max-min model with the same factors; they
// differ in how SimGrid updates it (docs/model.md, "Simulation speed"):
// - kSimgrid: SimGrid's defaults (network/optim:Lazy, selective update of the sharing problem);
// - kAuto: network/optim:Full, which re-solves the whole sharing problem at each event without
//   first walking the constraints that changed. When the parameter servers saturate every flow is
//   tied to every other, the walk reaches them all anyway, and skipping it saves about a quarter
//   of the simulation's time (docs/benchmarks.md); the solution is the same.
enum class NetworkEngine { kSimgrid, kAuto };

struct SimSettings {
  NetworkEngine network_engine = NetworkEngine::kAuto;
  // SimGrid's surf/precision (seconds): activities whose end falls within it of the current time
  // end together, up to this much early. Default SimGrid's own 1e-9 s.
  double tolerance_s = kDefaultToleranceS;

  static constexpr double kDefaultToleranceS = 1e-9;
  // Larger tolerances move step times by more than the differential test's 0.5%.
  static constexpr double kMaxToleranceS = 1e-3;
};

// "simgrid", "auto".
const char* network_engine_name(NetworkEngine engine);

// Reads {"network_engine": "simgrid"|"auto", "tolerance_s": seconds}, each optional. Throws
// core::InputError naming the flag (--network-engine, --tolerance) for an unknown key, engine or a
// tolerance outside (0, kMaxToleranceS].
SimSettings read_sim_settings(const nlohmann::json& settings);

// {"network_engine": ..., "tolerance_s": ...}: what a trace records about them.
nlohmann::json sim_settings_provenance(const SimSettings& settings);

// Applies them to SimGrid's configuration: after the Engine exists, before the platform.
void configure_sim_settings(const SimSettings& settings);

}  // namespace replisim::sim
