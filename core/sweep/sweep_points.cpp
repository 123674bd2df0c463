#include "core/sweep/sweep_points.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/base/version.h"
#include "core/strategy/strategy.h"
#include "core/sweep/sweep_knobs.h"
#include "core/sweep/sweep_values.h"

namespace replisim::core {

SweepAxis parse_sweep_axis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    throw InputError("", "--vary",
                     "expected KEY=VALUES (replicas=1..64x2, ps=1,2,4), got \"" + text + "\"");
  }
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  const SweepKnob& knob = find_sweep_knob(axis.key);
  axis.values = expand_sweep_values("--vary " + axis.key, text.substr(eq + 1));
  if (!knob.apply) {  // strategy: checked here, as no scenario field will check it
    for (const std::string& v : axis.values) {
      if (find_strategy(v) == nullptr) {
        throw InputError("", "--vary strategy",
                         "unknown strategy \"" + v + "\"; valid: " + join_names(strategy_names()));
      }
    }
  }
  return axis;
}

void check_sweep_axes(const std::vector<SweepAxis>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (axes[i].key == axes[j].key) {
        throw InputError("", "--vary", axes[i].key + " is varied twice; give its values once");
      }
    }
  }
}

std::string SweepPoint::label() const {
  std::string out;
  for (const auto& [key, value] : knobs) out += (out.empty() ? "" : " ") + key + "=" + value;
  return out.empty() ? "base" : out;
}

std::map<std::string, std::string> SweepPoint::knob_map() const {
  return {knobs.begin(), knobs.end()};
}

std::vector<SweepPoint> sweep_points(const std::vector<SweepAxis>& axes) {
  size_t total = 1;
  for (const SweepAxis& a : axes) {
    total *= a.values.size();
    if (total > kMaxSweepPoints) {
      throw InputError("", "--vary",
                       "more than " + std::to_string(kMaxSweepPoints) +
                           " points; split the sweep (or use --shard)");
    }
  }
  std::vector<SweepPoint> points(total);
  for (size_t i = 0; i < total; ++i) {
    points[i].index = i;
    size_t rest = i;
    std::vector<std::pair<std::string, std::string>> knobs(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {  // the last axis changes fastest
      knobs[a] = {axes[a].key, axes[a].values[rest % axes[a].values.size()]};
      rest /= axes[a].values.size();
    }
    points[i].knobs = std::move(knobs);
  }
  return points;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const std::string expected =
      "expected I/N with 0 <= I < N (0/3, 1/3, 2/3 split a sweep in three), got \"" + text + "\"";
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw InputError("", "--shard", expected);
  auto number = [&](const std::string& part) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno == ERANGE || v < 0 || v > 100000 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("", "--shard", expected);
    }
    return int(v);
  };
  const int index = number(text.substr(0, slash));
  const int count = number(text.substr(slash + 1));
  if (count < 1 || index >= count) throw InputError("", "--shard", expected);
  return {index, count};
}

std::vector<SweepPoint> shard_points(const std::vector<SweepPoint>& points, int index, int count) {
  std::vector<SweepPoint> out;
  for (const SweepPoint& p : points) {
    if (int(p.index % size_t(count)) == index) out.push_back(p);
  }
  return out;
}

ResolvedPoint resolve_sweep_point(const nlohmann::json& base, const std::string& file,
                                  const SweepPoint& point, const std::string& default_strategy) {
  ResolvedPoint resolved{base, Scenario{}, default_strategy};
  const std::map<std::string, std::string> knobs = point.knob_map();
  if (auto it = knobs.find("strategy"); it != knobs.end()) resolved.strategy = it->second;
  const KnobContext context{file, &knobs, resolved.strategy};
  std::vector<std::pair<const SweepKnob*, std::string>> ordered;
  for (const auto& [key, value] : point.knobs) ordered.emplace_back(&find_sweep_knob(key), value);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first->order < b.first->order; });
  try {
    for (const auto& [knob, value] : ordered) {
      if (knob->apply) knob->apply(resolved.document, value, context);
    }
    resolved.scenario = parse_scenario(resolved.document, file);
  } catch (const InputError& e) {
    if (point.knobs.empty()) throw;
    throw InputError(e.file(), e.json_path(), "point " + point.label() + ": " + e.message());
  }
  return resolved;
}

SweepPointFacts sweep_point_facts(const ResolvedPoint& point) {
  const TrainingSpec& t = point.scenario.training;
  SweepPointFacts f;
  f.strategy = point.strategy;
  f.replica_devices = int(t.replicas.size());
  const Strategy* found = find_strategy(point.strategy);
  if (found == nullptr) {
    throw InputError(
        "", "--strategy",
        "unknown strategy \"" + point.strategy + "\"; valid: " + join_names(strategy_names()));
  }
  const Strategy& strategy = *found;
  f.workers = strategy.one_client         ? 1
              : strategy.rank_per_replica ? int(t.replicas.size())
                                          : int(t.workers.size());
  if (!strategy.rank_per_replica) {  // all-reduce starts none of the scenario's PS tasks
    f.ps_tasks = int(t.ps.size());
    for (const DeviceRef& d : t.ps) f.ps_machines.insert(d.machine);
  }
  if (strategy.one_client) f.client = t.client;
  f.replica_role_kind = strategy.replica_role_kind;
  return f;
}

std::string sweep_point_key(const ResolvedPoint& point, uint64_t seed, int steps,
                            const std::string& plan_hash, const std::string& network_engine) {
  std::string text = std::string(kVersion) + "\n" + kGitDescribe + "\n" + point.strategy + "\n" +
                     std::to_string(seed) + "\n" + std::to_string(steps) + "\n" + plan_hash + "\n" +
                     point.document.dump();
  // The default engine adds nothing, so that keys computed before the flag existed stay valid.
  if (network_engine != "auto") text += "\nnetwork_engine " + network_engine;
  return fnv1a_hex(text);
}

}  // namespace replisim::core
