// The knobs a sweep can vary (`--vary KEY=VALUES`, docs/capacity-planning.md): each names the
// scenario fields it changes and refuses a scenario that has no such field to change.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace replisim::core {

// What a knob sees when it changes one point's scenario.
struct KnobContext {
  std::string file;  // the scenario file, for errors
  // The point's knob values (key -> value as typed), for knobs that depend on another
  // (`backups` refuses sync=async).
  const std::map<std::string, std::string>* point = nullptr;
  std::string strategy;  // the point's strategy (varied or the sweep's default)
};

struct SweepKnob {
  std::string key;
  std::string description;  // one line: what it changes and what values it takes
  // Changes `scenario` (a merged scenario document, includes resolved) to `value`. Throws
  // InputError naming the flag for a value of the wrong form, and the scenario file and JSON path
  // for a scenario the knob cannot change (saying what the scenario needs). Empty for `strategy`,
  // which chooses the compiler instead of a field.
  std::function<void(nlohmann::json& scenario, const std::string& value, const KnobContext&)> apply;
  // Knobs whose change depends on the point's other knobs run after them (`backups` counts the
  // workers that `replicas` made).
  int order = 0;
};

// Every knob, in the order docs/capacity-planning.md lists them.
const std::vector<SweepKnob>& sweep_knobs();
// The knob named `key`; an unknown key throws InputError("", "--vary", ...) listing the valid ones.
const SweepKnob& find_sweep_knob(const std::string& key);
std::vector<std::string> sweep_knob_keys();

// "x2", "x0.5": a multiplier of the scenario's own value; false for any other text. Throws
// InputError("", `flag`, ...) for "x" followed by anything but a finite factor > 0.
bool parse_sweep_factor(const std::string& flag, const std::string& value, double* factor);

// The index in /cluster/machines of the one machine template the replicas spread over, the one
// the `machines` knob resizes ("w*/gpu*" over {"name": "w", "count": N}). Throws InputError(file,
// JSON path, what the scenario needs) as that knob does. (Non-const: the knob's lookups take the
// document as it is edited; nothing is changed.)
size_t replicas_machine_template(nlohmann::json& scenario, const std::string& file);

}  // namespace replisim::core
