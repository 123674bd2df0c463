// The sweep knobs of all-reduce training: Horovod's algorithm, fusion buffer and cycle time
// (training.allreduce) and NCCL's streams per peer (cluster.transport.connections_per_peer).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/hardware/collective_transport.h"
#include "core/plan/kinds.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "core/sweep/sweep_knobs_detail.h"

namespace replisim::core::sweep_detail {
namespace {

using nlohmann::json;

// The most streams NCCL opens per peer (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD <= 64), the
// bound cluster.transport.connections_per_peer takes.
constexpr int kMaxNcclStreams = 64;

// Training.allreduce's fields apply to the allreduce strategy only: on another point's plan they
// would change nothing, and two points would differ only in a field no compiler reads.
void require_allreduce_point(const std::string& key, const std::string& value,
                             const KnobContext& ctx) {
  const Strategy* strategy = find_strategy(ctx.strategy);
  if (strategy == nullptr || strategy->rank_per_replica) return;
  throw InputError("", "--vary " + key,
                   key + "=" + value + " applies to the allreduce strategy (training.allreduce); " +
                       "this point is " + ctx.strategy + " (vary strategy=allreduce, or give " +
                       "--strategy allreduce)");
}

json& allreduce_object(json& s, const KnobContext& ctx) {
  if (!s.is_object() || !s.contains("training") || !s["training"].is_object()) {
    throw InputError(ctx.file, "/training", "missing");
  }
  json& a = s["training"]["allreduce"];
  if (a.is_null()) a = json::object();
  if (!a.is_object()) throw InputError(ctx.file, "/training/allreduce", "expected an object");
  return a;
}

// The preset a point's training.allreduce names ("horovod" when it names none): a field left out
// takes its value.
const CollectivePreset& allreduce_preset(const json& a) {
  const std::string name = a.contains("preset") && a["preset"].is_string()
                               ? a["preset"].get<std::string>()
                               : std::string("horovod");
  const CollectivePreset* preset = find_collective_preset(name);
  if (preset == nullptr) preset = find_collective_preset("horovod");  // the parser names the error
  REPLISIM_ASSERT(preset != nullptr, "the horovod preset is registered");
  return *preset;
}

// Sets training.allreduce.`field` to `value` ("64 MB", "5 ms") or to the point's own value times a
// factor ("x2"; the field's preset value when the scenario leaves it out). Zero is allowed (no
// fusion; no wait between cycles), as the scenario allows it.
void set_allreduce_quantity(json& s, const std::string& key, const std::string& field,
                            const std::string& value, Dimension dimension, double preset_value,
                            const KnobContext& ctx) {
  const std::string flag = "--vary " + key;
  json& a = allreduce_object(s, ctx);
  double factor = 0;
  double result = 0;
  if (parse_sweep_factor(flag, value, &factor)) {
    double current = preset_value;
    if (a.contains(field)) {
      try {
        current =
            parse_quantity(a[field].is_string() ? a[field].get<std::string>() : "", dimension);
      } catch (const UnitError& e) {
        throw InputError(ctx.file, "/training/allreduce/" + field,
                         std::string("cannot scale this value: ") + e.what());
      }
    }
    result = current * factor;
  } else {
    try {
      result = parse_quantity(value, dimension);
    } catch (const UnitError& e) {
      throw InputError("", flag, "\"" + value + "\": " + e.what());
    }
    if (!(result >= 0)) throw InputError("", flag, "\"" + value + "\" must be 0 or more");
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g %s", result,
                dimension == Dimension::kBytes ? "B" : "s");
  a[field] = buffer;
}

void apply_algorithm(json& s, const std::string& value, const KnobContext& ctx) {
  if (!is_collective_algorithm(value)) {
    throw InputError(
        "", "--vary algorithm",
        "unknown value \"" + value + "\"; valid: " + join_names(collective_algorithm_names()));
  }
  require_allreduce_point("algorithm", value, ctx);
  allreduce_object(s, ctx)["algorithm"] = value;
}

void apply_fusion_threshold(json& s, const std::string& value, const KnobContext& ctx) {
  require_allreduce_point("fusion_threshold", value, ctx);
  const double preset = allreduce_preset(allreduce_object(s, ctx)).fusion_threshold_bytes;
  set_allreduce_quantity(s, "fusion_threshold", "fusion_threshold", value, Dimension::kBytes,
                         preset, ctx);
}

void apply_cycle_time(json& s, const std::string& value, const KnobContext& ctx) {
  require_allreduce_point("cycle_time", value, ctx);
  const double preset = allreduce_preset(allreduce_object(s, ctx)).cycle_time_s;
  set_allreduce_quantity(s, "cycle_time", "cycle_time", value, Dimension::kTime, preset, ctx);
}

int parse_stream_count(const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || n < 1 || n > kMaxNcclStreams) {
    throw InputError("", "--vary nccl_streams",
                     "expected a count from 1 to " + std::to_string(kMaxNcclStreams) +
                         " or a factor x2, got \"" + value + "\"");
  }
  return int(n);
}

// NCCL's socket transport opens NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD streams per peer,
// which is what cluster.transport.connections_per_peer models for every transfer between machines
// (so it changes a PS run's transfers too).
void apply_nccl_streams(json& s, const std::string& value, const KnobContext& ctx) {
  double factor = 0;
  int streams = 0;
  if (parse_sweep_factor("--vary nccl_streams", value, &factor)) {
    // The point's own count, a transport preset's included.
    const int current = parse_scenario(s, ctx.file).cluster.transport.connections_per_peer;
    const double n = std::round(current * factor);
    if (n < 1 || n > kMaxNcclStreams) {
      throw InputError("", "--vary nccl_streams",
                       value + " of " + std::to_string(current) + " is outside 1.." +
                           std::to_string(kMaxNcclStreams));
    }
    streams = int(n);
  } else {
    streams = parse_stream_count(value);
  }
  if (!s.contains("cluster") || !s["cluster"].is_object()) {
    throw InputError(ctx.file, "/cluster", "missing");
  }
  json& transport = s["cluster"]["transport"];
  if (transport.is_null()) transport = json::object();
  if (!transport.is_object())
    throw InputError(ctx.file, "/cluster/transport", "expected an object");
  transport["connections_per_peer"] = streams;
}

}  // namespace

void add_allreduce_knobs(std::vector<SweepKnob>& knobs) {
  knobs.push_back({"algorithm",
                   "the all-reduce algorithm (training.allreduce.algorithm): ring, tree or "
                   "hierarchical; allreduce points only",
                   apply_algorithm});
  knobs.push_back({"fusion_threshold",
                   "Horovod's fusion buffer (training.allreduce.fusion_threshold): \"64 MB\", 0 "
                   "(no fusion) or a factor x2 of the preset's; allreduce points only",
                   apply_fusion_threshold});
  knobs.push_back({"cycle_time",
                   "Horovod's cycle time (training.allreduce.cycle_time): \"5 ms\" or a factor x2 "
                   "of the preset's; allreduce points only",
                   apply_cycle_time});
  knobs.push_back({"nccl_streams",
                   "streams per peer (cluster.transport.connections_per_peer; NCCL's "
                   "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD): 1 to 64 or a factor x2",
                   apply_nccl_streams});
}

}  // namespace replisim::core::sweep_detail
