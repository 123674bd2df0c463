#include "core/metrics/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/base/units.h"
#include "core/metrics/critical_path_streams.h"

namespace replisim::core {
namespace {

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string percent(double fraction) {
  return fixed(fraction * 100.0, 0) + "%";
}

std::string milliseconds(double seconds) {
  return fixed(seconds * 1e3, 2);
}

std::string wait_text(const WaitBreakdown& w) {
  struct Part {
    const char* name;
    double value;
  };
  std::vector<Part> parts = {{"compute", w.compute}, {"collective", w.collective},
                             {"network", w.network}, {"peers", w.peers},
                             {"client", w.client},   {"ps", w.ps},
                             {"token", w.token},     {"other", w.other}};
  std::string out;
  for (const Part& p : parts) {
    if (p.value < 0.005) continue;
    if (!out.empty()) out += " ";
    out += std::string(p.name) + " " + percent(p.value);
  }
  return out;
}

std::string rate_text(const ClientMetrics& c) {
  return (c.measured_steps > 0 ? fixed(c.step_rate_per_s, 2) : std::string("-")) +
         (c.died ? " (died)" : "");
}

std::string client_rates(const RunMetrics& r) {
  if (r.clients.size() <= 4) {
    std::string out;
    for (const ClientMetrics& c : r.clients) {
      if (!out.empty()) out += ", ";
      out += c.name + " " + rate_text(c);
    }
    return out;
  }
  double lo = 1e300, hi = 0;
  for (const ClientMetrics& c : r.clients) {
    lo = std::min(lo, c.step_rate_per_s);
    hi = std::max(hi, c.step_rate_per_s);
  }
  return fixed(lo, 2) + " .. " + fixed(hi, 2) + " (" + std::to_string(r.clients.size()) +
         " clients)";
}

// The widest a cell's line gets in the report's table: two runs side by side, with the labels,
// stay within about 160 columns.
constexpr size_t kCellColumns = 64;

// `text` split at each `separator` outside parentheses and brackets, the separator kept at the
// end of every part but the last ("a; b (c; d)" by "; ": "a;", "b (c; d)").
std::vector<std::string> split_outside_parentheses(const std::string& text,
                                                   const std::string& separator) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(' || text[i] == '[') ++depth;
    if ((text[i] == ')' || text[i] == ']') && depth > 0) --depth;
    if (depth == 0 && text.compare(i, separator.size(), separator) == 0) {
      parts.push_back(text.substr(begin, i + separator.size() - 1 - begin));  // keeps ';' or ','
      begin = i + separator.size();
      i = begin - 1;
    }
  }
  parts.push_back(text.substr(begin));
  return parts;
}

// `cell` as lines of at most kCellColumns (bytes). Each entry of a list of faults or failures
// ("; " outside parentheses) starts a line; within one, lines break between its items (", "
// outside parentheses) where they fit, else between words, and go on indented by two. A word
// longer than a line stands alone on its line.
std::vector<std::string> wrap_cell(const std::string& cell) {
  const std::string indent = "  ";
  std::vector<std::string> lines;
  for (const std::string& entry : split_outside_parentheses(cell, "; ")) {
    // The pieces lines are made of: whole items where one fits on an indented line, else words.
    std::vector<std::string> pieces;
    for (const std::string& item : split_outside_parentheses(entry, ", ")) {
      if (indent.size() + item.size() <= kCellColumns) {
        pieces.push_back(item);
        continue;
      }
      std::istringstream words(item);
      for (std::string word; words >> word;) pieces.push_back(word);
    }
    std::string line;
    bool first = true;
    for (const std::string& piece : pieces) {
      if (piece.empty()) continue;
      if (line.empty()) {
        line = (first ? "" : indent) + piece;
      } else if (line.size() + 1 + piece.size() <= kCellColumns) {
        line += " " + piece;
      } else {
        lines.push_back(line);
        first = false;
        line = indent + piece;
      }
    }
    lines.push_back(line);
  }
  return lines;
}

// The report's rows: a label and one cell per run.
class ReportTable {
 public:
  explicit ReportTable(const std::vector<RunMetrics>& runs) : runs_(runs) {}
  const std::vector<RunMetrics>& runs() const { return runs_; }
  template <typename Cell>
  void row(const std::string& label, Cell&& cell) {
    std::vector<std::string> cells;
    for (const RunMetrics& r : runs_) cells.push_back(cell(r));
    rows_.emplace_back(label, std::move(cells));
  }
  template <typename Predicate>
  bool any(Predicate&& predicate) const {
    return std::any_of(runs_.begin(), runs_.end(), predicate);
  }
  template <typename Predicate>
  bool all(Predicate&& predicate) const {
    return !runs_.empty() && std::all_of(runs_.begin(), runs_.end(), predicate);
  }
  // The title, a blank line, then the rows in aligned columns. A cell wider than kCellColumns
  // (faults, job failures) continues on the lines below its row, in its own column.
  std::string render(const std::string& title) const {
    size_t label_width = 0;
    std::vector<size_t> widths(runs_.size(), 0);
    std::vector<std::pair<std::string, std::vector<std::vector<std::string>>>> wrapped;
    for (const auto& [label, cells] : rows_) {
      label_width = std::max(label_width, label.size());
      std::vector<std::vector<std::string>> lines;
      for (size_t i = 0; i < cells.size(); ++i) {
        lines.push_back(wrap_cell(cells[i]));
        for (const std::string& l : lines.back()) widths[i] = std::max(widths[i], l.size());
      }
      wrapped.emplace_back(label, std::move(lines));
    }
    std::string out = title + "\n\n";
    for (const auto& [label, cells] : wrapped) {
      size_t height = 1;
      for (const auto& lines : cells) height = std::max(height, lines.size());
      for (size_t k = 0; k < height; ++k) {
        const std::string head = k == 0 ? label : std::string();
        std::string line = head + std::string(label_width - head.size() + 2, ' ');
        for (size_t i = 0; i < cells.size(); ++i) {
          const std::string part = k < cells[i].size() ? cells[i][k] : std::string();
          line += part + std::string(widths[i] - part.size() + 3, ' ');
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + "\n";
      }
    }
    return out;
  }

 private:
  const std::vector<RunMetrics>& runs_;
  std::vector<std::pair<std::string, std::vector<std::string>>> rows_;
};

// Column headings, also naming the runs' notes and warnings. Runs of different scenarios
// (report on several traces) are told apart by their names, and runs that would still share a
// heading by their column number.
std::vector<std::string> column_labels(const std::vector<RunMetrics>& runs) {
  bool several_scenarios = false;
  for (const RunMetrics& r : runs) several_scenarios |= r.scenario != runs.front().scenario;
  std::vector<std::string> headings;
  for (const RunMetrics& r : runs) {
    headings.push_back(several_scenarios ? r.scenario + ": " + r.strategy : r.strategy);
  }
  std::vector<std::string> labels = headings;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (std::count(headings.begin(), headings.end(), headings[i]) > 1) {
      labels[i] += " #" + std::to_string(i + 1);
    }
  }
  return labels;
}

// training.steps "auto": the throughput's 95% interval and where the run stopped.
void add_steady_rows(ReportTable& t) {
  if (!t.any([](const RunMetrics& r) { return r.steady_state.has_value(); })) return;
  t.row("steady state (95% interval)", [](const RunMetrics& r) {
    return r.steady_state ? steady_state_text(*r.steady_state) : std::string("-");
  });
}

void add_sync_rows(ReportTable& t) {
  if (!t.any([](const RunMetrics& r) {
        return r.synchronous || r.stalled || r.sync_variant == kDistributedReplicated ||
               r.sync_variant == kAllReduceSync;
      })) {
    return;
  }
  t.row("sync mode", [](const RunMetrics& r) {
    if (r.sync_variant == kDistributedReplicated) return r.sync_variant + " (barriers)";
    if (r.sync_variant == kAllReduceSync) return r.sync_variant + " (every rank, every step)";
    if (!r.synchronous) return std::string(r.worker_clients ? "async" : "-");
    return "sync " + r.sync_variant + ", R " + std::to_string(r.replicas_to_aggregate) + " of T " +
           std::to_string(r.total_num_replicas);
  });
  // SyncReplicasOptimizer's own figures (distributed_replicated drops nothing).
  if (t.any([](const RunMetrics& r) { return r.synchronous; })) {
    t.row("computed (samples/s)", [](const RunMetrics& r) {
      return r.synchronous ? fixed(r.computed_samples_per_s, 1) : std::string("-");
    });
    t.row("dropped gradients", [](const RunMetrics& r) {
      return r.synchronous ? std::to_string(r.dropped_gradients) : std::string("-");
    });
  }
  t.row("stall", [](const RunMetrics& r) {
    if (!r.stalled) return std::string("-");
    return "from " + fixed(r.stall_start_s, 3) + " s at global_step " +
           std::to_string(r.stall_global_step);
  });
}

}  // namespace

std::string faults_text(const RunMetrics& r) {
  std::string out;
  for (const FaultRecord& f : r.faults) {
    if (!out.empty()) out += "; ";
    const std::string until = f.open_ended ? " on" : " to " + fixed(f.end_s, 3) + " s";
    out += f.description + (f.end_s > f.start_s ? " from " + fixed(f.start_s, 3) + " s" + until
                                                : " at " + fixed(f.start_s, 3) + " s");
    if (f.lost_step >= 0) {
      out += " (" + f.target + " lost " + fixed(f.lost_work_s, 3) + " s of step " +
             std::to_string(f.lost_step) + ")";
    }
    if (f.throughput_before_samples_per_s >= 0 || f.throughput_after_samples_per_s >= 0) {
      auto rate = [](double v) { return v >= 0 ? fixed(v, 1) : std::string("-"); };
      out += " [samples/s before " + rate(f.throughput_before_samples_per_s) + ", after " +
             rate(f.throughput_after_samples_per_s) + "]";
    }
  }
  return out.empty() ? std::string("-") : out;
}

namespace {

// How a restart ended: every client back, a failure before that, or workers that died first.
std::string restart_outcome_text(const RecoveryRecord& k) {
  if (k.interrupted_s >= 0 && k.interrupted_s < k.resumed_s) {
    return "failed again at " + fixed(k.interrupted_s, 3) + " s while the chief was restoring";
  }
  std::string out = "training again after " + fixed(k.recovery_time_s, 3) + " s ";
  if (k.interrupted_s >= 0) {
    return out + "(failed again at " + fixed(k.interrupted_s, 3) +
           " s, before every client was back)";
  }
  out += "(every " + std::string(k.workers_lost.empty() ? "" : "other ") + "client back after " +
         fixed(k.workers_resumed_s - k.fault_s, 3) + " s";
  if (!k.workers_lost.empty()) {
    std::string names;
    for (const std::string& w : k.workers_lost) names += (names.empty() ? "" : ", ") + w;
    out += "; " + names + " died before " + (k.workers_lost.size() == 1 ? "it was" : "they were") +
           " back";
  }
  return out + ")";
}

}  // namespace

std::string job_failures_text(const RunMetrics& r) {
  std::string out;
  for (const RecoveryRecord& k : r.recoveries) {
    if (!out.empty()) out += "; ";
    out += k.cause + " at " + fixed(k.fault_s, 3) + " s: restarted from global_step " +
           std::to_string(k.checkpoint_global_step) + ", lost " +
           std::to_string(k.lost_global_steps) + " global steps (" + fixed(k.lost_work_s, 3) +
           " s of work), " + restart_outcome_text(k);
  }
  if (r.job_failed) {
    // A death from outside is named here (the plan's own faults are in the faults row).
    out += std::string(out.empty() ? "" : "; ") +
           (r.job_failure_unplanned ? r.job_failure_cause + ": " : std::string()) + "failed at " +
           fixed(r.job_failure_s, 3) + " s, not restarted";
  }
  return out.empty() ? std::string("-") : out;
}

namespace {

// Faults, job failures and the chief's writes, when any run has them.
void add_fault_rows(ReportTable& t) {
  if (t.any([](const RunMetrics& r) { return !r.faults.empty(); })) t.row("faults", faults_text);
  if (t.any([](const RunMetrics& r) { return !r.recoveries.empty() || r.job_failed; })) {
    t.row("job failures", job_failures_text);
  }
  if (t.any([](const RunMetrics& r) { return r.checkpoints_written + r.summaries_written > 0; })) {
    t.row("chief checkpoints / summaries", [](const RunMetrics& r) {
      return std::to_string(r.checkpoints_written) + " / " + std::to_string(r.summaries_written) +
             " (" + fixed(r.chief_writing_s, 3) + " s writing)";
    });
  }
}

void add_step_rows(ReportTable& t) {
  t.row("step time mean (ms)",
        [](const RunMetrics& r) { return milliseconds(r.step_time_s.mean); });
  t.row("step time p50 / p95 (ms)", [](const RunMetrics& r) {
    return milliseconds(r.step_time_s.p50) + " / " + milliseconds(r.step_time_s.p95);
  });
  t.row("step rate per client (steps/s)", client_rates);
  // A forward-only run has no update: its zeros are no measurement, so the rows say so.
  t.row("global update interval (ms)", [](const RunMetrics& r) {
    return r.forward_only ? std::string(kNoUpdatesText) : milliseconds(r.update_interval_s);
  });
  t.row("staleness mean / max (global steps)", [](const RunMetrics& r) {
    return r.forward_only ? std::string(kNoUpdatesText)
                          : fixed(r.staleness_mean, 2) + " / " + fixed(r.staleness_max, 0);
  });
}

// training.objective, when any run computed it: the target, when it was first reached (simulated
// time and global step), and the last evaluation.
void add_objective_rows(ReportTable& t) {
  if (!t.any([](const RunMetrics& r) { return r.objective.has_value(); })) return;
  t.row("objective target", [](const RunMetrics& r) {
    if (!r.objective) return std::string("-");
    return "test " + r.objective->target + (r.objective->target == "accuracy" ? " >= " : " <= ") +
           fixed(r.objective->target_value, 4);
  });
  t.row("time to target (s)", [](const RunMetrics& r) {
    if (!r.objective || r.objective->evaluations == 0) return std::string("-");
    return r.objective->reached() ? fixed(r.objective->time_to_target_s, 3)
                                  : std::string("not reached");
  });
  t.row("global steps to target", [](const RunMetrics& r) {
    if (!r.objective || !r.objective->reached()) return std::string("-");
    return std::to_string(r.objective->global_steps_to_target);
  });
  t.row("final accuracy / loss (global step)", [](const RunMetrics& r) {
    if (!r.objective || r.objective->evaluations == 0) return std::string("no evaluation");
    return fixed(r.objective->final_accuracy * 100.0, 1) + "% / " +
           fixed(r.objective->final_loss, 4) + " (" +
           std::to_string(r.objective->final_global_step) + ")";
  });
}

// A bound of the critical path's transfers that no utilisation row shows (a stream ceiling, a
// loopback stream, a process's RPC ceiling), not a fixed cost or an unknown: a tensor queued
// behind others counts under the bound of those.
std::string ceiling_of_bound(const RunMetrics& r, const std::string& bound) {
  const std::string queued = std::string(path_detail::kQueuedOnStream) + " (their bound: ";
  if (bound.rfind(queued, 0) == 0 && bound.size() > queued.size() && bound.back() == ')') {
    return ceiling_of_bound(r, bound.substr(queued.size(), bound.size() - queued.size() - 1));
  }
  if (bound == "latency and per-message overhead" || bound == "not known" ||
      bound.rfind(path_detail::kQueuedOnStream, 0) == 0 ||
      bound.find("->") != std::string::npos) {  // an all-reduce chunk's direction
    return "";
  }
  for (const std::vector<ResourceUse>* rows : {&r.devices, &r.links}) {
    for (const ResourceUse& row : *rows) {
      if (row.name == bound) return "";
    }
  }
  return bound;
}

// "; <ceiling> binds (<n>% of the critical path)" beside a busiest resource below
// kSaturatedUtilization when a transport ceiling holds at least kCeilingNoted of the path: the
// row would otherwise name a resource that is far from what holds the steps.
constexpr double kCeilingNoted = 0.25;
std::string ceiling_beside_bottleneck(const RunMetrics& r) {
  if (r.bottleneck.utilization >= kSaturatedUtilization || r.bound_by.seconds <= 0) return "";
  std::vector<std::pair<std::string, double>> ceilings;
  for (const PathShare& share : r.bound_by.shares) {
    for (const auto& [bound, seconds] : share.bounds) {
      const std::string ceiling = ceiling_of_bound(r, bound);
      if (ceiling.empty()) continue;
      auto it = std::find_if(ceilings.begin(), ceilings.end(),
                             [&ceiling](const auto& c) { return c.first == ceiling; });
      if (it == ceilings.end()) {
        ceilings.emplace_back(ceiling, seconds);
      } else {
        it->second += seconds;
      }
    }
  }
  const auto most =
      std::max_element(ceilings.begin(), ceilings.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == ceilings.end() || most->second < kCeilingNoted * r.bound_by.seconds) return "";
  return "; " + most->first + " binds (" + percent(most->second / r.bound_by.seconds) +
         " of the critical path)";
}

void add_resource_rows(ReportTable& t) {
  t.row("bottleneck (busiest resource)", [](const RunMetrics& r) {
    return r.bottleneck.name + " " + percent(r.bottleneck.utilization) +
           ceiling_beside_bottleneck(r);
  });
  t.row("second busiest resource", [](const RunMetrics& r) {
    std::vector<ResourceUse> all = r.devices;
    all.insert(all.end(), r.links.begin(), r.links.end());
    std::stable_sort(all.begin(), all.end(), [](const ResourceUse& x, const ResourceUse& y) {
      return x.utilization > y.utilization;
    });
    return all.size() < 2 ? std::string("-") : all[1].name + " " + percent(all[1].utilization);
  });
  t.row("parameter bytes per PS", [](const RunMetrics& r) {
    std::string out;
    for (double b : r.bytes_per_ps) {
      if (!out.empty()) out += " ";
      out += format_quantity(b, Dimension::kBytes, 3);
    }
    return out;
  });
  if (t.any([](const RunMetrics& r) { return !r.memory.empty(); })) {
    // A lower bound: weights, gradients, optimizer state and layer outputs × batch only (no
    // workspace, fragmentation or framework overhead; docs/model.md), so "free" may be less.
    t.row("GPU memory (lower bound), tightest GPU", [](const RunMetrics& r) {
      if (r.memory.empty()) return std::string("-");
      const MemoryUse& m = r.memory.front();
      const double headroom = m.headroom_bytes();
      return m.device + " " + percent(m.needed_bytes / m.capacity_bytes) + " used, " +
             format_quantity(std::fabs(headroom), Dimension::kBytes, 3) +
             (headroom >= 0 ? " free" : " short");
    });
  }
}

// Where each kind of role spent its time, for the kinds present.
void add_wait_rows(ReportTable& t) {
  for (const char* kind : {"worker", "tower", "client"}) {
    const bool present = t.any([kind](const RunMetrics& r) {
      return std::any_of(r.waits.begin(), r.waits.end(),
                         [kind](const WaitBreakdown& w) { return w.role_kind == kind; });
    });
    if (!present) continue;
    t.row(std::string("time of ") + kind + "s", [kind](const RunMetrics& r) {
      for (const WaitBreakdown& w : average_waits_by_kind(r.waits)) {
        if (w.role_kind == kind) return wait_text(w);
      }
      return std::string("-");
    });
  }
}

void add_run_rows(ReportTable& t) {
  t.row("measured window (s)", [](const RunMetrics& r) {
    return fixed(r.window_start_s, 3) + " .. " + fixed(r.window_end_s, 3);
  });
  // A real run's clock is the chief's: its length is the run's wall time.
  const bool real = t.all([](const RunMetrics& r) { return r.backend == "real"; });
  t.row(real ? "run time (s)" : "simulated time (s)",
        [](const RunMetrics& r) { return fixed(r.simulated_time_s, 3); });
  t.row("events", [](const RunMetrics& r) { return std::to_string(r.events); });
  t.row("op granularity", [](const RunMetrics& r) {
    return r.granularity == "layer" ? std::string("per layer") : r.granularity + " of layers";
  });
}

}  // namespace

std::string steady_state_text(const SteadyStateRecord& s) {
  const std::string interval = s.half_width_fraction >= 0
                                   ? "+-" + fixed(100 * s.half_width_fraction, 2) + "%"
                                   : "no interval";
  if (!s.converged) {
    return "not within +-" + fixed(100 * s.tolerance, 2) + "% when the run ended (" + interval +
           " over " + std::to_string(s.updates) + " updates)";
  }
  return interval + " after " + std::to_string(s.updates) + " updates, stopped at " +
         fixed(s.stop_s, 3) + " s";
}

std::string format_report(const std::vector<RunMetrics>& runs, const std::string& title) {
  ReportTable table(runs);
  const std::vector<std::string> labels = column_labels(runs);
  size_t column = 0;
  table.row("", [&](const RunMetrics&) { return labels[column++]; });
  const bool paths = table.any([](const RunMetrics& r) { return !r.bound_by.shares.empty(); });
  if (paths) {
    table.row("bound by (critical path)", [](const RunMetrics& r) {
      return r.bound_by.shares.empty() ? std::string("-") : describe_path(r.bound_by, 2, false);
    });
  }
  table.row("throughput (samples/s)",
            [](const RunMetrics& r) { return fixed(r.throughput_samples_per_s, 1); });
  add_steady_rows(table);
  add_sync_rows(table);
  add_fault_rows(table);
  add_step_rows(table);
  add_objective_rows(table);
  add_resource_rows(table);
  add_wait_rows(table);
  add_run_rows(table);
  std::string out = table.render(title);
  for (size_t i = 0; i < runs.size() && paths; ++i) {
    if (runs[i].bound_by.shares.empty()) continue;
    out += "bound by (" + labels[i] + "): " + describe_path(runs[i].bound_by, 4, true) + "\n";
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const std::string& note : runs[i].notes) out += "note (" + labels[i] + "): " + note + "\n";
    for (const std::string& warning : runs[i].warnings) {
      out += "warning (" + labels[i] + "): " + warning + "\n";
    }
  }
  return out;
}

namespace {

// The sync settings, stall, faults, job failures and the chief's writes of a run.
void add_training_events_json(const RunMetrics& r, nlohmann::json& run) {
  if (r.synchronous) {
    run["sync"] = {{"variant", r.sync_variant},
                   {"replicas_to_aggregate", r.replicas_to_aggregate},
                   {"total_num_replicas", r.total_num_replicas}};
    run["computed_samples_per_s"] = r.computed_samples_per_s;
    run["dropped_gradients"] = r.dropped_gradients;
  } else if (r.sync_variant == kDistributedReplicated || r.sync_variant == kAllReduceSync) {
    run["sync"] = {{"variant", r.sync_variant}};
  }
  if (r.stalled) {
    run["stall"] = {{"start_s", r.stall_start_s},
                    {"end_s", r.stall_end_s},
                    {"global_step", r.stall_global_step},
                    {"cause", r.stall_cause}};
  }
  run["faults"] = nlohmann::json::array();
  for (const FaultRecord& f : r.faults) {
    run["faults"].push_back({{"target", f.target},
                             {"description", f.description},
                             {"start_s", f.start_s},
                             {"end_s", f.end_s},
                             {"lost_work_s", f.lost_work_s},
                             {"lost_step", f.lost_step},
                             {"throughput_before_samples_per_s", f.throughput_before_samples_per_s},
                             {"throughput_after_samples_per_s", f.throughput_after_samples_per_s}});
    if (f.unplanned) run["faults"].back()["unplanned"] = true;  // a death from outside
  }
  run["recoveries"] = nlohmann::json::array();
  for (const RecoveryRecord& k : r.recoveries) {
    run["recoveries"].push_back({{"cause", k.cause},
                                 {"fault_s", k.fault_s},
                                 {"detected_s", k.detected_s},
                                 {"resumed_s", k.resumed_s},
                                 {"workers_resumed_s", k.workers_resumed_s},
                                 {"recovery_time_s", k.recovery_time_s},
                                 {"checkpoint_global_step", k.checkpoint_global_step},
                                 {"global_step_at_failure", k.global_step_at_failure},
                                 {"lost_global_steps", k.lost_global_steps},
                                 {"lost_work_s", k.lost_work_s}});
    if (k.interrupted_s >= 0) run["recoveries"].back()["interrupted_s"] = k.interrupted_s;
    if (!k.workers_lost.empty()) run["recoveries"].back()["workers_lost"] = k.workers_lost;
  }
  if (r.job_failed) {
    run["job_failure"] = {{"time_s", r.job_failure_s}, {"cause", r.job_failure_cause}};
  }
  run["checkpoints"] = {{"checkpoints_written", r.checkpoints_written},
                        {"summaries_written", r.summaries_written},
                        {"chief_writing_s", r.chief_writing_s}};
}

// Per client, per GPU and per role: step rates, memory and where the time went.
void add_per_role_json(const RunMetrics& r, nlohmann::json& run) {
  if (!r.bound_by.shares.empty()) {
    run["bound_by"] = critical_path_json(r.bound_by);
    run["bound_by"]["text"] = describe_path(r.bound_by, 4, true);
  }
  run["clients"] = nlohmann::json::array();
  for (const ClientMetrics& c : r.clients) {
    run["clients"].push_back({{"name", c.name},
                              {"measured_steps", c.measured_steps},
                              {"mean_step_time_s", c.mean_step_time_s},
                              {"step_rate_per_s", c.step_rate_per_s},
                              {"died", c.died},
                              {"updates", c.updates},
                              {"staleness",
                               {{"mean", c.staleness_mean},
                                {"max", c.staleness_max},
                                {"histogram", c.staleness_histogram}}},
                              {"dropped_gradients", c.dropped_gradients}});
    for (const CriticalPath& path : r.paths) {
      if (path.client == c.name) run["clients"].back()["bound_by"] = critical_path_json(path);
    }
  }
  run["memory"] = nlohmann::json::array();
  for (const MemoryUse& m : r.memory) {
    run["memory"].push_back({{"device", m.device},
                             {"needed_bytes", m.needed_bytes},
                             {"capacity_bytes", m.capacity_bytes},
                             {"headroom_bytes", m.headroom_bytes()}});
  }
  if (r.steady_state) {
    nlohmann::json& s = run["steady_state"] = steady_state_to_json(*r.steady_state);
    // Values a run that ended first does not have.
    if (!r.steady_state->converged) s["stop_s"] = s["stop_global_step"] = nullptr;
    if (r.steady_state->half_width_fraction < 0) s["half_width_fraction"] = nullptr;
  }
  run["waits"] = nlohmann::json::array();
  for (const WaitBreakdown& w : r.waits) {
    run["waits"].push_back({{"role", w.role},
                            {"role_kind", w.role_kind},
                            {"compute", w.compute},
                            {"network", w.network},
                            {"collective", w.collective},
                            {"peers", w.peers},
                            {"client", w.client},
                            {"ps", w.ps},
                            {"token", w.token},
                            {"other", w.other}});
  }
}

nlohmann::json run_json(const RunMetrics& r) {
  nlohmann::json run;
  run["strategy"] = r.strategy;
  run["throughput_samples_per_s"] = r.throughput_samples_per_s;
  run["step_time_s"] = {
      {"mean", r.step_time_s.mean}, {"p50", r.step_time_s.p50}, {"p95", r.step_time_s.p95}};
  if (r.forward_only) run["forward_only"] = true;  // the update figures below are 0: none happened
  run["update_interval_s"] = r.update_interval_s;
  run["updates_in_window"] = r.updates_in_window;
  run["staleness"] = {{"mean", r.staleness_mean}, {"max", r.staleness_max}};
  if (r.objective) {
    const ObjectiveMetrics& o = *r.objective;
    // -1: not reached (time_to_target_s, global_steps_to_target).
    run["objective"] = {{"target", o.target},
                        {"target_value", o.target_value},
                        {"evaluations", o.evaluations},
                        {"time_to_target_s", o.time_to_target_s},
                        {"global_steps_to_target", o.global_steps_to_target},
                        {"final_accuracy", o.final_accuracy},
                        {"final_loss", o.final_loss},
                        {"final_s", o.final_s},
                        {"final_global_step", o.final_global_step}};
  }
  run["bottleneck"] = {{"resource", r.bottleneck.name}, {"utilization", r.bottleneck.utilization}};
  run["bytes_per_ps"] = r.bytes_per_ps;
  run["simulated_time_s"] = r.simulated_time_s;
  run["events"] = r.events;
  run["window_s"] = {r.window_start_s, r.window_end_s};
  for (const ResourceUse& d : r.devices) run["utilization"]["devices"][d.name] = d.utilization;
  for (const ResourceUse& l : r.links) run["utilization"]["links"][l.name] = l.utilization;
  add_training_events_json(r, run);
  add_per_role_json(r, run);
  run["warnings"] = r.warnings;
  run["notes"] = r.notes;
  run["granularity"] = r.granularity;
  return run;
}

}  // namespace

nlohmann::json summary_json(const std::vector<RunMetrics>& runs, const nlohmann::json& provenance) {
  nlohmann::json j;
  j["scenario"] = runs.empty() ? "" : runs.front().scenario;
  j["provenance"] = provenance;
  j["runs"] = nlohmann::json::array();
  for (const RunMetrics& r : runs) j["runs"].push_back(run_json(r));
  return j;
}

}  // namespace replisim::core
