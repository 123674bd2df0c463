// What binds a run: the critical path of each measured step through its step graph, from the
// trace alone (the graphs in TraceMeta::graphs, the events' op_index and, for transfers, what
// bounded their rate). Definitions: docs/metrics.md#bound-by.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/json_cursor.h"
#include "core/trace/trace.h"

namespace replisim::core {

// One resource or cap on the path and the time it held the path.
struct PathShare {
  // A device ("pc1/gpu0"; "input pipeline on pc1/cpu"; in-graph, the client's own part: "client
  // split on pc1/cpu", "client input on pc1/cpu"), the
  // network between two machines ("pc1<->ps network"; inside one machine "pc1 local
  // transfers"), serialisation ("copies on pc1/cpu"), "token queue" (a synchronous worker
  // waiting for the chief, or at a barrier, when the wait cannot be followed to the worker it
  // waited for) or
  // "other" (no op of the step active: start-up, step bookkeeping).
  std::string name;
  double seconds = 0;
  // Transfers only: the seconds by what they carried ("pull": a variable's value, "push": a
  // gradient, "batch": input samples, "activations": a layer's output to the next device,
  // "sync": synchronous training's tokens and accumulators, "other") and by what bounded their rate
  // (TraceEvent::bound, or "not known"), largest first.
  std::vector<std::pair<std::string, double>> directions;
  std::vector<std::pair<std::string, double>> bounds;
  // A device of the client's own ops (its GPU, its towers' devices): combine_paths sums these
  // over clients as one share, "compute".
  bool own_compute = false;
  // A network share with one end on the client's own machine: the other end's machine
  // (combine_paths sums these over clients as "<machine> network"); "" otherwise.
  std::string peer_machine;
};

struct CriticalPath {
  std::string client;             // the client role ("worker0", "client"); "" for several together
  int steps = 0;                  // the steps walked
  double seconds = 0;             // their durations, summed (= the sum of the shares)
  std::vector<PathShare> shares;  // largest first
};

// Per client (Trace::meta.clients order, those with a measured step), the critical path of each
// of its steps that lies wholly inside [window_start_s, window_end_s]: from the op that finished
// last, back through the input that finished last, to the step's start. Each op's time goes to
// its resource; time it waited with its inputs in goes to its resource too (it was busy with
// other work, or its connection with other tensors). A synchronous worker's token wait is
// followed into the chief's sync op and from its take to the worker whose accumulate released
// it (the straggler); a distributed_replicated barrier's wait to the worker that reached that
// barrier last in the same step. Empty when the trace has no step graphs (written before
// 2026-12-03).
std::vector<CriticalPath> critical_paths(const Trace& trace, double window_start_s,
                                         double window_end_s);

// Several clients' paths as one (seconds summed per share; with more than one path, each client's
// own devices summed as "compute" and its network to machine X as "X network", so that sixty-four
// workers' GPUs, or their links to one PS machine, read as one share).
CriticalPath combine_paths(const std::vector<CriticalPath>& paths);

// "pc1<->ps network 79% (pull 41%, push 38%; the 150 MB/s stream ceiling binds), pc1/gpu0 21%":
// the shares of at least 1% (at most `max_shares`), with, when `detailed`, a network share's
// directions and the bound that held it longest. "" when the path is empty.
std::string describe_path(const CriticalPath& path, int max_shares, bool detailed);

// The share of `path` held by transfers and their caps (network shares), 0..1.
double network_fraction(const CriticalPath& path);

// What kind of thing a share is, in a capacity planner's words (sweeps' and plots'
// `bound_by_kind`): "network" (transfers between two machines or inside one: a share with
// directions), "input" (an input pipeline, in-graph's client input), "copies" (serialisation on a
// CPU), "sync" (a token queue or barrier wait), "other" (no op active), else "compute" (a device,
// in-graph's split, the combined "compute").
std::string path_share_kind(const PathShare& share);

// {"steps", "seconds", "shares": [{"name", "seconds", "fraction", network shares also
// "directions": {what: s}, "bounds": {bound: s}}]} (the summary's `bound_by`, docs/metrics.md).
nlohmann::json critical_path_json(const CriticalPath& path);
// What critical_path_json wrote (directions and bounds largest first again); throws InputError
// naming the cursor's file and JSON path when a member is missing or of the wrong type.
CriticalPath critical_path_from_json(const JsonCursor& path);

}  // namespace replisim::core
