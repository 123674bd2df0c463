// A sweep's points: the cartesian product of its knobs' values over one scenario, each point's
// scenario (the base document with the knobs applied), and the key its result is cached under.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/scenario/scenario.h"

namespace replisim::core {

// One `--vary KEY=VALUES`: the knob and its values, expanded (sweep_values.h).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// Parses "KEY=VALUES". Throws InputError("", "--vary", ...) for a missing '=', an unknown key
// (listing the valid ones), or bad values.
SweepAxis parse_sweep_axis(const std::string& text);

// Refuses a key varied twice (InputError at --vary).
void check_sweep_axes(const std::vector<SweepAxis>& axes);

struct SweepPoint {
  size_t index = 0;  // position in the whole sweep's order (first axis outermost)
  std::vector<std::pair<std::string, std::string>> knobs;  // in the axes' order
  std::string label() const;  // "replicas=4 ps=2" ("base" without knobs)
  std::map<std::string, std::string> knob_map() const;
};

// The cartesian product, first axis outermost (its values change slowest), at most
// kMaxSweepPoints points (InputError at --vary beyond). No axes: the one base point.
std::vector<SweepPoint> sweep_points(const std::vector<SweepAxis>& axes);
inline constexpr size_t kMaxSweepPoints = 100000;

// "--shard I/N": the points whose index mod N is I. Throws InputError("", "--shard", ...) for
// any other form or I >= N.
std::pair<int, int> parse_shard(const std::string& text);
std::vector<SweepPoint> shard_points(const std::vector<SweepPoint>& points, int index, int count);

// A point made concrete: its scenario document and parsed scenario, and the strategy it compiles.
struct ResolvedPoint {
  nlohmann::json document;  // the base document with the knobs applied (no "include")
  Scenario scenario;
  std::string strategy;
};

// What a sweep's row needs of a point's scenario (kept instead of the parsed scenario, which at
// thousands of machines is large).
struct SweepPointFacts {
  std::string strategy;
  int replica_devices = 0;  // towers
  int workers = 0;          // between-graph workers; in-graph: 1 (the client)
  int ps_tasks = 0;
  std::set<std::string> ps_machines;         // machines that run a PS
  std::string client;                        // in-graph: the client's machine; "" otherwise
  std::string replica_role_kind = "worker";  // whose step breakdown describes a replica
};
SweepPointFacts sweep_point_facts(const ResolvedPoint& point);

// Applies `point`'s knobs to `base` (the merged document of `file`) in knob order, then parses
// the result. `default_strategy` applies unless the point varies `strategy`. Throws InputError:
// one naming the flag for a bad value, and for a point the scenario rejects its file and JSON
// path, prefixed with the point's label ("point replicas=64 backups=2: ...").
ResolvedPoint resolve_sweep_point(const nlohmann::json& base, const std::string& file,
                                  const SweepPoint& point, const std::string& default_strategy);

// The cache key of a point's result: FNV-1a over replisim's version, the point's canonical
// scenario JSON, its strategy, seed, steps, plan hash and network engine ("auto", the default,
// adds nothing) (16 hex digits).
std::string sweep_point_key(const ResolvedPoint& point, uint64_t seed, int steps,
                            const std::string& plan_hash,
                            const std::string& network_engine = "auto");

}  // namespace replisim::core
