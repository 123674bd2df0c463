// Classroom mode's catalog (scenarios/classroom.catalog): per bundled seed and classroom scenario,
// the seed's claim it shows, where on the timeline to look, how to run it interactively, and a
// "what to notice" caption per strategy whose numbers come from the run's metrics ({link:...}).
#pragma once

#include <QString>
#include <map>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"

namespace replisim::gui {

struct ClassroomEntry {
  std::string file;   // relative to the scenarios folder: "seed/two_machines.json"
  std::string title;  // a few words
  std::string claim;  // one line: the seed's claim it shows
  std::string look;   // where on the timeline to look
  std::string
      strategy;  // what the panel runs: a --strategy value ("both", "all", "in_graph,allreduce")
  int interactive_steps = 0;        // steps of an interactive run (0: the file's own)
  int interactive_granularity = 0;  // layer groups of an interactive run (0: the file's own)
  std::string steps_note;           // why those steps (e.g. they keep the fault's window)
  std::map<std::string, std::string> captions;  // strategy -> caption template
  // strategy -> the actors (row groups) "look" names: shown unfolded and highlighted, the others
  // folded, when the runs are shown. Empty: every row as it is.
  std::map<std::string, std::vector<std::string>> rows;
};

// Reads `<scenarios_dir>/classroom.catalog` (JSON: {"scenarios": [{"file", "title", "claim",
// "look", "strategy", "interactive_steps", "interactive_granularity", "steps_note", "captions":
// {strategy: text}, "rows": {strategy: [actor]}}]}).
// Throws std::runtime_error with one line naming the file and the entry on anything missing or
// malformed: a caption whose placeholders are unknown, or that names no cause from the run's
// critical path ({bound_by} or {bound_by_path}), included.
std::vector<ClassroomEntry> load_classroom_catalog(const std::string& scenarios_dir);

// The caption `text` with its placeholders filled from `metrics`: {throughput} (samples/s),
// {step_ms}, {update_ms}, {link:NAME} and {device:NAME} (utilisation, %), {bottleneck},
// {bottleneck_pct}, {fastest_client}, {slowest_client}, {fastest_rate}, {slowest_rate}
// (steps/s), {client_rate:NAME}, {dropped}, {computed_vs_applied} (%), {lost_steps},
// {lost_work_s}, {recovery_s}, {fault_s}, {wait:KIND.PART} (KIND worker, tower or client; PART
// compute, network, peers, client, ps, token or other; %), {waiting_most:KIND.PART} (the role of
// KIND with the largest PART share of its steps) and {waiting_most_pct:KIND.PART}; what bound the
// run, from its critical path (RunMetrics::bound_by, the report's "bound by" row): {bound_by}
// (its largest share's name, the row's first entry), {bound_by_pct} (% of the path) and
// {bound_by_path} (the row's text: "pc2/gpu0 60%, pc1<->pc2 network 40%"); {workers} (the
// clients), {staleness} (mean, global steps); training.objective's {target} (its value),
// {time_to_target_ms}, {steps_to_target} (global steps) and {final_accuracy} (%). Throws
// std::invalid_argument with one line for an unknown placeholder or a figure the run does not
// have (a link it never used, a restart in a run without one, no critical path).
std::string render_caption(const std::string& text, const core::RunMetrics& metrics);

// What a run's caption says when the catalog's cannot be filled from it (a knob took away what it
// speaks of, e.g. the fault): its cause ("bound by " and the report's row, or without a critical
// path its busiest resource), throughput and step time.
std::string fallback_caption(const core::RunMetrics& metrics);

// "" when every placeholder of `text` is known, else the one-line reason.
std::string check_caption(const std::string& text);

// The bundled scenarios: $REPLISIM_SCENARIOS, else scenarios/ above the executable's folder (the
// build tree's bin/ lies in the repository), else ./scenarios.
QString default_scenarios_dir();

}  // namespace replisim::gui
