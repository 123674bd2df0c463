// Internal pieces of the scenario parser (scenario*.cpp). Not a public API.
#pragma once

#include <string>

#include "core/base/json_cursor.h"
#include "core/scenario/scenario.h"

namespace replisim::core::scenario_detail {

// Machine names: non-empty, at most limits::kMaxNameBytes, no '/', '*', '?', spaces or control
// characters.
bool valid_name(const std::string& name);

// "cluster": machines (with "count" templates), switch, network model.
ClusterSpec parse_cluster(const JsonCursor& c);

// A machine's hardware ({"cpu", "gpus", "nic", "pcie"}); `name` is set by the caller.
// `allowed_keys` lists the members the object may have. `defaults` (cluster.machine_defaults, or
// null) gives cpu.speed, cpu.cores, each gpus[] entry's speed and memory (its "gpu"),
// nic.bandwidth, nic.latency and pcie the machine leaves out.
MachineSpec parse_machine_hardware(const JsonCursor& c,
                                   const std::vector<std::string>& allowed_keys,
                                   const JsonCursor* defaults = nullptr);

// Adds a machine created by the scenario itself (dedicated PS machines), keeping the default
// switch non-blocking. Throws InputError at `where` when the name is taken.
void add_machine(ClusterSpec& cluster, MachineSpec machine, const JsonCursor& where);

// Where things run, from "training": replicas and workers, the client, the parameter servers (or
// variables_on) and model-parallel placement, into `t` (scenario_devices.cpp). May add
// dedicated PS machines to `cluster`.
void parse_where(const JsonCursor& c, ClusterSpec& cluster, const Model& model, TrainingSpec& t);

// "training". May add dedicated PS machines to `cluster`.
TrainingSpec parse_training(const JsonCursor& c, ClusterSpec& cluster, const Model& model);

// "training.objective", once the rest of "training" is parsed (`t`: the workers, the batch).
ObjectiveSpec parse_objective(const JsonCursor& c, const TrainingSpec& t);

// "faults": a list of {"kind": "role" | "machine" | "slowdown", ...} (docs/scenario-format.md).
std::vector<FaultSpec> parse_faults(const JsonCursor& c, const ClusterSpec& cluster,
                                    const TrainingSpec& training);

}  // namespace replisim::core::scenario_detail
