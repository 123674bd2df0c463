// A sweep's results: one row per point (its knobs and figures, from the point's simulate --json
// summary), scaling efficiency, and the CSV and JSON files `sweep`, `merge` and `plot` share
// (docs/capacity-planning.md).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sweep/sweep_objective.h"
#include "core/sweep/sweep_points.h"

namespace replisim::core {

struct SweepRow {
  size_t index = 0;                                        // the point's index in the sweep
  std::vector<std::pair<std::string, std::string>> knobs;  // as in SweepPoint
  std::string strategy;
  std::string key;          // the cache key (sweep_point_key)
  int replica_devices = 0;  // towers: GPUs (or CPUs) that compute replicas
  int workers = 0;          // between-graph workers (in-graph: 1 client)
  int ps_tasks = 0;
  std::string error;  // a point whose simulation failed: its one line; no figures
  double throughput_samples_per_s = 0;
  double step_time_mean_s = 0, step_time_p50_s = 0, step_time_p95_s = 0;
  // throughput per replica device ÷ that of the point with the fewest replica devices among those
  // that differ only in `replicas` (the same strategy and other knobs); unset in a shard, and
  // unset where those rows all have one replica-device count (`replicas` not varied).
  std::optional<double> scaling_efficiency;
  // What bound the step: simulate's "bound by (critical path)" row (its two largest shares,
  // "w0 network 51%, compute 45%"; docs/metrics.md#bound-by), the largest share's kind (compute,
  // network, input, copies, sync, other; core::path_share_kind), its name and its fraction of
  // the path.
  // Empty (kind "") when the point measured no step.
  std::string bound_by;
  std::string bound_by_share;  // the largest share's name ("ps0 network", "compute")
  std::string bound_by_kind;
  double bound_by_fraction = 0;
  std::string bottleneck;       // the busiest resource ("ps0/nic/up"), a second opinion
  std::string bottleneck_kind;  // gpu, cpu, ps nic, worker nic, client nic, switch, pcie
  double bottleneck_utilization = 0;
  double ps_bytes_max = 0, ps_bytes_mean = 0;       // parameter bytes per PS shard
  std::optional<double> gpu_memory_headroom_bytes;  // the tightest GPU's; unset when not given
  // Mean shares of a replica's step (between-graph workers, in-graph towers): computing, on the
  // network, waiting (for peers, the client, the PS, a token, or nothing active).
  double compute_share = 0, network_share = 0, waiting_share = 0;
  // training.objective's time and global steps to the target and final accuracy; unset when the
  // point's scenario has no objective (sweep_objective.h).
  std::optional<SweepObjective> objective;
  double wall_s = 0;  // the point's simulation, wall-clock seconds (its first computation)
  std::vector<std::string>
      warnings;  // the simulation's caveats (an empty window, nothing saturated)
};

// The row of one point from the `runs[0]` of its simulate --json summary (`facts` name the PS
// machines, whose NICs are "ps nic", and in-graph's client). Throws InputError(file, json path)
// when the summary lacks a field or holds a negative figure.
SweepRow sweep_row_from_summary(const SweepPoint& point, const SweepPointFacts& facts,
                                const std::string& key, const nlohmann::json& summary,
                                const std::string& file, double wall_s);

// A sweep's whole output (the JSON file's content).
struct SweepResults {
  std::string scenario_name;
  std::string scenario_file;
  std::string scenario_hash;
  std::vector<SweepAxis> axes;
  std::string default_strategy = "between_graph";
  uint64_t seed = 1;
  int steps = 0;         // --steps (0: the scenario's)
  std::string sweep_id;  // FNV-1a of the scenario hash, axes, strategy, seed, steps (and target)
  // --objective-target's value ("accuracy=0.8"; "": the scenario's own target).
  std::string objective_target;
  int shard_index = 0;
  int shard_count = 1;
  size_t points_total = 0;  // of the whole sweep, every shard
  nlohmann::json provenance;
  std::vector<SweepRow> rows;  // by index
};

std::string sweep_id(const SweepResults& results);

// Sets every row's scaling_efficiency (see SweepRow); rows with an error get none.
void compute_scaling_efficiency(std::vector<SweepRow>& rows);

// {"format": "replisim-sweep", "version": 1, ...} (docs/capacity-planning.md).
nlohmann::json sweep_results_to_json(const SweepResults& results);
// Reads what sweep_results_to_json wrote; throws InputError(file, json path) otherwise.
SweepResults sweep_results_from_json(const nlohmann::json& document, const std::string& file);
SweepResults read_sweep_results(const std::string& file);

// One header line, then one line per row (RFC 4180 quoting); empty cells for unset figures.
void write_sweep_csv(const SweepResults& results, std::ostream& out);

// Joins the shards of one sweep (`files` name them in errors): each shard of the same sweep_id and
// shard count exactly once. Throws InputError for another sweep, a repeated or missing shard.
SweepResults merge_sweep_shards(const std::vector<SweepResults>& shards,
                                const std::vector<std::string>& files);

}  // namespace replisim::core
