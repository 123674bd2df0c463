// Scenario edits that more than one tool makes, written once: the viewer's scenario panel
// (gui/scenario_document.h) and the sweep's and whatif's knobs (sweep_knobs.h) turn the same
// file into the same scenario. They work on the file's JSON as written (key order kept, includes
// not merged: an edit changes only the fields it names) and refuse, with the file and JSON path,
// a document they cannot change as asked.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace replisim::core {

using ScenarioJson = nlohmann::ordered_json;

// The machines of /cluster/machines in order, templates expanded ({"name": "w", "count": 3} is
// w0, w1, w2). Entries without a string name are skipped.
std::vector<std::string> scenario_machine_names(const ScenarioJson& scenario);

// The replicas /training/replicas trains: between-graph's workers, SyncReplicasOptimizer's
// total_num_replicas (scenario.h's TrainingSpec::workers). A device name is one; a pattern one
// per device it matches ("w*/gpu*" over 8 machines of 4 GPUs: 32); a {"towers": ...} entry one
// worker (per machine it matches with "per": "machine"). 0 when the document has no replicas.
int scenario_replica_count(const ScenarioJson& scenario);

// What one more machine adds: the replicas a machine of the replicas' template holds (4 for
// "w*/gpu*" over machines of 4 GPUs), else 1 (a list grows a replica at a time).
int scenario_replica_step(const ScenarioJson& scenario);

// Sets the replica count to `count` (at least 1, at most limits::kMaxReplicas):
// - patterns over one machine template ("w*/gpu*" with {"name": "w", "count": N}): the template's
//   count becomes the one that gives `count` replicas; a count no number of whole machines gives
//   (33 where each machine holds 4) is refused, naming the nearest ones;
// - otherwise, fewer drops entries of /training/replicas from the end; more adds copies of the
//   fastest replica's machine (pc2 -> pc3, pc3/gpu0 joining the list).
// A /training/sync object's total_num_replicas follows, its backup workers kept.
// Throws InputError(file, JSON path, why) when the document cannot be changed so.
void set_scenario_replica_count(ScenarioJson& scenario, int count, const std::string& file);

}  // namespace replisim::core
