#include "core/metrics/validation.h"
#include "core/metrics/validation_detail.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/units.h"
#include "core/metrics/metrics_detail.h"
#include "core/metrics/report.h"

namespace replisim::core {
namespace {

// The client steps inside a run's measurement window: client name -> step -> duration (s).
using WindowSteps = std::map<std::string, std::map<int64_t, double>>;

WindowSteps window_steps(const Trace& trace, const RunMetrics& m) {
  WindowSteps steps;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kStep || e.actor == kNoString) continue;
    if (e.start_s < m.window_start_s || e.end_s > m.window_end_s) continue;
    steps[trace.str(e.actor)][e.step] = e.end_s - e.start_s;
  }
  return steps;
}

size_t step_count(const WindowSteps& steps) {
  size_t n = 0;
  for (const auto& [client, of_client] : steps) n += of_client.size();
  return n;
}

// Per phase: the summed durations of the events of the window's steps; and each joined op's
// duration by "actor\x1fstep\x1flabel".
struct PhaseTimes {
  double total_s[kPhaseCount] = {};
  std::unordered_map<std::string, double> op_s[kPhaseCount];
};

PhaseTimes phase_times(const Trace& trace, const WindowSteps& steps) {
  PhaseTimes times;
  for (const TraceEvent& e : trace.events) {
    const std::optional<Phase> phase = phase_of(e);
    if (!phase || e.client == kNoString || e.step < 0) continue;
    const auto client = steps.find(trace.str(e.client));
    if (client == steps.end() || client->second.count(e.step) == 0) continue;
    const double d = std::max(0.0, e.end_s - e.start_s);
    const int p = int(*phase);
    times.total_s[p] += d;
    const std::string key = (e.actor == kNoString ? std::string() : trace.str(e.actor)) + '\x1f' +
                            std::to_string(e.step) + '\x1f' +
                            (e.label == kNoString ? std::string() : trace.str(e.label));
    times.op_s[p][key] += d;
  }
  return times;
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

std::string signed_percent(double x) {
  if (!std::isfinite(x)) return "n/a";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * x);
  return buffer;
}

std::string number(double x, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
  return buffer;
}

std::string pad(std::string s, size_t width) {
  // Widths count characters, not bytes ("µ", "…" are two and three bytes).
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

std::string ms(double s) {
  return number(s * 1e3, 2);
}

std::string seconds_text(double s) {
  return format_quantity(s, Dimension::kTime, 4);
}

// "4.003 s" or "4.001 s .. 4.010 s".
std::string range_text(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.front() == v.back()) return seconds_text(v.front());
  return seconds_text(v.front()) + " .. " + seconds_text(v.back());
}

// A JSON number, or null for NaN and infinities (JSON has neither).
nlohmann::json finite(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}

nlohmann::json compared_json(const Compared& c) {
  nlohmann::json j = {{"name", c.name},
                      {"predicted", c.predicted},
                      {"predicted_min", c.predicted_min},
                      {"predicted_max", c.predicted_max},
                      {"measured_mean", c.measured_mean},
                      {"measured_min", c.measured_min},
                      {"measured_max", c.measured_max},
                      {"relative_error", finite(c.relative_error())}};
  if (!c.absent.empty()) j["absent"] = c.absent;
  return j;
}

// An earlier validation's relative error of the row called `name` in `list`, if there is one.
std::optional<double> baseline_error(const nlohmann::json* baseline, const char* list,
                                     const std::string& name) {
  if (baseline == nullptr || !baseline->contains(list) || !(*baseline)[list].is_array()) {
    return std::nullopt;
  }
  for (const nlohmann::json& row : (*baseline)[list]) {
    if (!row.is_object() || row.value("name", "") != name) continue;
    const nlohmann::json* c = &row;
    if (row.contains("time_per_step_s")) c = &row["time_per_step_s"];
    if (c->contains("relative_error") && (*c)["relative_error"].is_number()) {
      return (*c)["relative_error"].get<double>();
    }
  }
  return std::nullopt;
}

std::string with_baseline(double error, const std::optional<double>& before) {
  std::string text = signed_percent(error);
  if (before) text += " (was " + signed_percent(*before) + ")";
  return text;
}

}  // namespace

namespace validation_detail {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

Compared compare(const std::string& name, const std::vector<double>& predicted,
                 const std::vector<double>& measured) {
  Compared c;
  c.name = name;
  c.predicted = mean_of(predicted);
  c.predicted_min = *std::min_element(predicted.begin(), predicted.end());
  c.predicted_max = *std::max_element(predicted.begin(), predicted.end());
  c.measured_min = *std::min_element(measured.begin(), measured.end());
  c.measured_max = *std::max_element(measured.begin(), measured.end());
  double sum = 0;
  for (double x : measured) sum += x;
  c.measured_mean = sum / double(measured.size());
  return c;
}

}  // namespace validation_detail

using validation_detail::compare;
using validation_detail::mean_of;

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kCompute:
      return "compute";
    case Phase::kPull:
      return "pull";
    case Phase::kPush:
      return "push";
    case Phase::kApply:
      return "apply";
    case Phase::kToken:
      return "token";
    case Phase::kOther:
      return "other";
  }
  return "other";
}

std::optional<Phase> phase_of(const TraceEvent& e) {
  if (e.kind == EventKind::kCompute) {
    if (!e.op) return Phase::kOther;
    switch (*e.op) {
      case OpKind::kInput:
      case OpKind::kSplit:
      case OpKind::kForward:
      case OpKind::kLoss:
      case OpKind::kBackward:
      case OpKind::kAggregate:
      case OpKind::kLocalStep:
        return Phase::kCompute;
      case OpKind::kReadVariable:
        return Phase::kPull;
      case OpKind::kAllReduce:  // its gradient's exchange: the all-reduce's push
        return Phase::kPush;
      case OpKind::kApply:
      case OpKind::kAccumulate:
      case OpKind::kTakeGradient:
      case OpKind::kGlobalStepIncrement:
        return Phase::kApply;
      case OpKind::kTokenDequeue:
      case OpKind::kTokenEnqueue:
      case OpKind::kBarrier:
        return Phase::kToken;
      case OpKind::kSend:
      case OpKind::kRecv:
        return Phase::kOther;
    }
    return Phase::kOther;
  }
  // A rank's phases of an all-reduce (negotiation, the reduction, the fusion buffer's copies):
  // its gradients' exchange, as a PS worker's gradient transfers are.
  if (e.kind == EventKind::kCollective) return Phase::kPush;
  if (e.kind == EventKind::kTransfer) {
    if (!e.producer) return Phase::kOther;
    switch (*e.producer) {
      case OpKind::kAllReduce:  // a chunk: inside its ranks' collective spans, counted there
        return std::nullopt;
      case OpKind::kReadVariable:
        return Phase::kPull;
      case OpKind::kBackward:
      case OpKind::kAggregate:
        return Phase::kPush;
      case OpKind::kTokenDequeue:
      case OpKind::kTokenEnqueue:
      case OpKind::kTakeGradient:
      case OpKind::kBarrier:
        return Phase::kToken;
      default:
        return Phase::kOther;
    }
  }
  return std::nullopt;
}

double Compared::relative_error() const {
  if (predicted == 0) {
    return measured_mean == 0 ? 0 : std::numeric_limits<double>::quiet_NaN();
  }
  return (measured_mean - predicted) / predicted;
}

double ks_distance(std::vector<double> a, std::vector<double> b) {
  if (a.empty() || b.empty()) return 0;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    d = std::max(d, std::fabs(double(i) / double(a.size()) - double(j) / double(b.size())));
  }
  return d;
}

Validation validate_runs(const std::vector<const Trace*>& predicted_runs,
                         const std::vector<const Trace*>& measured, double tolerance,
                         const std::string& source) {
  if (predicted_runs.empty()) throw InputError(source, "", "no predicted run to compare");
  if (measured.empty()) throw InputError(source, "", "no measured run to compare");
  const Trace& predicted = *predicted_runs.front();
  for (const Trace* t : measured) {
    if (t->meta.plan_hash != predicted.meta.plan_hash) {
      throw InputError(source, "",
                       "a measured run is of another plan (plan hash " + t->meta.plan_hash +
                           ", predicted " + predicted.meta.plan_hash + ")");
    }
  }
  Validation v;
  v.scenario = predicted.meta.scenario;
  v.strategy = predicted.meta.strategy;
  v.repeats = int(measured.size());
  v.seeds = int(predicted_runs.size());
  v.tolerance = tolerance;
  std::vector<RunMetrics> pms;
  for (const Trace* t : predicted_runs) pms.push_back(compute_metrics(*t, source));
  const RunMetrics& pm = pms.front();
  std::vector<RunMetrics> mm;
  for (const Trace* t : measured) mm.push_back(compute_metrics(*t, source));

  const auto of = [](const std::vector<RunMetrics>& runs, double (*get)(const RunMetrics&)) {
    std::vector<double> out;
    for (const RunMetrics& m : runs) out.push_back(get(m));
    return out;
  };
  const auto row = [&](const char* name, double (*get)(const RunMetrics&)) {
    v.metrics.push_back(compare(name, of(pms, get), of(mm, get)));
  };
  row("throughput (samples/s)", [](const RunMetrics& m) { return m.throughput_samples_per_s; });
  row("step time p50 (s)", [](const RunMetrics& m) { return m.step_time_s.p50; });
  row("step time p95 (s)", [](const RunMetrics& m) { return m.step_time_s.p95; });
  row("global update interval (s)", [](const RunMetrics& m) { return m.update_interval_s; });
  row("staleness mean", [](const RunMetrics& m) { return m.staleness_mean; });
  row("parameter bytes per PS (max)", [](const RunMetrics& m) { return max_of(m.bytes_per_ps); });
  if (pm.forward_only) {  // no update happened: the update figures' zeros are no measurement
    for (Compared& c : v.metrics) {
      if (c.name.rfind("global update interval", 0) == 0 || c.name.rfind("staleness", 0) == 0) {
        c.absent = kNoUpdatesText;
      }
    }
  }

  // Phases: time per step, and the joined ops (the first seed's).
  std::vector<WindowSteps> p_steps_all;
  std::vector<PhaseTimes> p_times_all;
  for (size_t k = 0; k < predicted_runs.size(); ++k) {
    p_steps_all.push_back(window_steps(*predicted_runs[k], pms[k]));
    p_times_all.push_back(phase_times(*predicted_runs[k], p_steps_all.back()));
  }
  const WindowSteps& p_steps = p_steps_all.front();
  const PhaseTimes& p_times = p_times_all.front();
  std::vector<WindowSteps> m_steps;
  std::vector<PhaseTimes> m_times;
  for (size_t r = 0; r < measured.size(); ++r) {
    m_steps.push_back(window_steps(*measured[r], mm[r]));
    m_times.push_back(phase_times(*measured[r], m_steps.back()));
  }
  const auto nothing_measured = [&source](const std::string& run) {
    throw InputError(source, "",
                     run +
                         " has no step wholly inside its measurement window, so there is nothing "
                         "to compare: raise --steps (or training.steps)");
  };
  for (size_t k = 0; k < p_steps_all.size(); ++k) {
    if (step_count(p_steps_all[k]) == 0) {
      nothing_measured(k == 0 ? std::string("the prediction")
                              : "the prediction of seed +" + std::to_string(k));
    }
  }
  for (size_t r = 0; r < m_steps.size(); ++r) {
    if (step_count(m_steps[r]) == 0) nothing_measured("real run " + std::to_string(r + 1));
  }
  for (int p = 0; p < kPhaseCount; ++p) {
    PhaseComparison c;
    c.phase = Phase(p);
    std::vector<double> per_step, predicted_per_step;
    for (size_t r = 0; r < measured.size(); ++r) {
      per_step.push_back(m_times[r].total_s[p] / double(step_count(m_steps[r])));
    }
    for (size_t k = 0; k < p_times_all.size(); ++k) {
      predicted_per_step.push_back(p_times_all[k].total_s[p] / double(step_count(p_steps_all[k])));
    }
    c.time_per_step_s = compare(phase_name(Phase(p)), predicted_per_step, per_step);
    std::vector<double> pred, meas;
    double abs_sum = 0, signed_sum = 0;
    size_t counted = 0;
    for (const PhaseTimes& times : m_times) {
      for (const auto& [key, m_s] : times.op_s[p]) {
        const auto found = p_times.op_s[p].find(key);
        if (found == p_times.op_s[p].end()) continue;
        ++c.joined_ops;
        pred.push_back(found->second);
        meas.push_back(m_s);
        if (found->second <= kMinJoinedDurationS) continue;
        const double error = (m_s - found->second) / found->second;
        abs_sum += std::fabs(error);
        signed_sum += error;
        ++counted;
        if (std::fabs(error) > std::fabs(c.worst_error)) {
          c.worst_error = error;
          std::string op = key;
          std::replace(op.begin(), op.end(), '\x1f', ' ');
          const size_t space = op.find(' ');
          if (space != std::string::npos) op.insert(space + 1, "step ");
          c.worst_op = op;
        }
      }
    }
    if (counted > 0) {
      c.mean_abs_percentage_error = abs_sum / double(counted);
      c.bias = signed_sum / double(counted);
    }
    c.predicted_p50_s = metrics_detail::percentile(pred, 0.5);
    c.predicted_p95_s = metrics_detail::percentile(pred, 0.95);
    c.measured_p50_s = metrics_detail::percentile(meas, 0.5);
    c.measured_p95_s = metrics_detail::percentile(meas, 0.95);
    if (pm.forward_only && (c.phase == Phase::kPush || c.phase == Phase::kApply)) {
      c.time_per_step_s.absent = kNoUpdatesText;
    }
    v.phases.push_back(c);
  }

  // Step-time distributions per client.
  for (const auto& [client, steps] : p_steps) {
    StepDistribution d;
    d.client = client;
    std::vector<double> a, b;
    for (const WindowSteps& w : p_steps_all) {
      const auto found = w.find(client);
      if (found == w.end()) continue;
      for (const auto& [step, s] : found->second) a.push_back(s);
    }
    for (const WindowSteps& w : m_steps) {
      const auto found = w.find(client);
      if (found == w.end()) continue;
      for (const auto& [step, s] : found->second) b.push_back(s);
    }
    d.predicted_steps = a.size();
    d.measured_steps = b.size();
    d.ks_distance = ks_distance(a, b);
    v.clients.push_back(d);
  }

  // Faults and restarts, in the order they struck.
  for (size_t f = 0; f < pm.faults.size(); ++f) {
    const FaultRecord& p = pm.faults[f];
    std::string line = p.description + ": predicted at " + seconds_text(p.start_s);
    if (p.lost_step >= 0) line += " (lost " + seconds_text(p.lost_work_s) + " of work)";
    line += ", measured";
    std::vector<double> at, lost;
    for (const RunMetrics& m : mm) {
      // The run's f-th planned fault (deaths from outside are listed below).
      size_t seen = 0;
      for (const FaultRecord& g : m.faults) {
        if (g.unplanned || seen++ != f) continue;
        if (g.description != p.description) break;
        at.push_back(g.start_s);
        if (g.lost_step >= 0) lost.push_back(g.lost_work_s);
      }
    }
    line += at.empty() ? " in no run" : " at " + range_text(at);
    if (!lost.empty()) line += " (lost " + range_text(lost) + " of work)";
    v.faults.push_back(line);
  }
  // Deaths the plan did not have (a task killed from outside during a run): that run is not the
  // plan's, and its figures say so.
  for (size_t run = 0; run < mm.size(); ++run) {
    for (const FaultRecord& g : mm[run].faults) {
      if (!g.unplanned) continue;
      std::string line = g.description + ": observed in run " + std::to_string(run + 1) + " at " +
                         seconds_text(g.start_s);
      if (g.lost_step >= 0) {
        line += " (lost " + seconds_text(g.lost_work_s) + " of step " +
                std::to_string(g.lost_step) + ")";
      }
      v.faults.push_back(line + "; the plan has no such fault, so that run measured another job");
    }
    if (mm[run].job_failed && mm[run].job_failure_unplanned) {
      v.faults.push_back("run " + std::to_string(run + 1) + ": the job failed at " +
                         seconds_text(mm[run].job_failure_s) + ": " + mm[run].job_failure_cause);
    }
  }
  for (size_t k = 0; k < pm.recoveries.size(); ++k) {
    const RecoveryRecord& p = pm.recoveries[k];
    std::vector<double> recovery;
    std::vector<int64_t> lost;
    for (const RunMetrics& m : mm) {
      if (k < m.recoveries.size()) {
        recovery.push_back(m.recoveries[k].recovery_time_s);
        lost.push_back(m.recoveries[k].lost_global_steps);
      }
    }
    std::string line = "restart after " + p.cause + ": recovery predicted " +
                       seconds_text(p.recovery_time_s) + ", " +
                       std::to_string(p.lost_global_steps) + " global steps lost; measured ";
    if (recovery.empty()) {
      line += "in no run";
    } else {
      std::sort(lost.begin(), lost.end());
      line += range_text(recovery) + ", " + std::to_string(lost.front()) +
              (lost.front() != lost.back() ? ".." + std::to_string(lost.back()) : "") +
              " global steps lost";
    }
    v.faults.push_back(line);
  }
  const auto add_warnings = [&v](const std::string& whose, const std::vector<std::string>& w) {
    for (const std::string& text : w) {
      const std::string line = whose + ": " + text;
      if (std::find(v.warnings.begin(), v.warnings.end(), line) == v.warnings.end()) {
        v.warnings.push_back(line);
      }
    }
  };
  if (pm.steady_state)
    v.steady_states.push_back("predicted: " + steady_state_text(*pm.steady_state));
  for (size_t r = 0; r < mm.size(); ++r) {
    if (!mm[r].steady_state) continue;
    v.steady_states.push_back("real run " + std::to_string(r + 1) + ": " +
                              steady_state_text(*mm[r].steady_state));
  }
  add_warnings("predicted", pm.warnings);
  for (size_t r = 0; r < mm.size(); ++r) {
    add_warnings("real run " + std::to_string(r + 1), mm[r].warnings);
  }

  v.within_tolerance = true;
  for (size_t i : {size_t(0), size_t(1)}) {
    const double e = v.metrics[i].relative_error();
    if (!(std::fabs(e) <= tolerance)) {
      v.within_tolerance = false;
      std::string name = v.metrics[i].name;
      const size_t unit = name.find(" (");
      if (unit != std::string::npos) name.erase(unit);  // "step time p50", "throughput"
      v.outside.push_back(name + " " + signed_percent(e));
    }
  }
  v.objective = compare_objective(predicted_runs, measured);
  if (v.objective && v.objective->measured_evaluated > 0) {
    const ObjectiveComparison& o = *v.objective;
    if (!o.time_to_target_within) {
      v.within_tolerance = false;
      v.outside.push_back(
          o.measured_reached < v.repeats || o.predicted_reached < v.seeds
              ? "time to target reached by " + std::to_string(o.predicted_reached) + " of " +
                    std::to_string(v.seeds) + " predicted and " +
                    std::to_string(o.measured_reached) + " of " + std::to_string(v.repeats) +
                    " measured runs"
              : "time to target " + signed_percent(o.time_to_target_s.relative_error()) +
                    " (its bound: within " + number(100 * kTimeToTargetTolerance, 0) +
                    "% or the measured range)");
    }
    if (!o.curves_within) {
      v.within_tolerance = false;
      v.outside.push_back(
          "accuracy over global steps " + number(100 * o.max_distance_by_global_step, 2) +
          " points apart (its bound: " + number(100 * kCurveTolerancePoints, 0) + " point)");
    }
  }
  return v;
}

std::string compute_mismatch(const Validation& v) {
  const PhaseComparison* compute = nullptr;
  int transfers = 0;
  for (const PhaseComparison& p : v.phases) {
    const double e = p.time_per_step_s.relative_error();
    if (p.phase == Phase::kCompute) compute = &p;
    if ((p.phase == Phase::kPull || p.phase == Phase::kPush) && p.time_per_step_s.predicted > 0) {
      if (!(std::fabs(e) <= kTransfersMatch)) return "";
      ++transfers;
    }
  }
  if (compute == nullptr || transfers == 0 || !(compute->time_per_step_s.predicted > 0)) return "";
  const double e = compute->time_per_step_s.relative_error();
  if (!(std::fabs(e) > v.tolerance) || !(compute->time_per_step_s.measured_mean > 0)) return "";
  const double ratio = compute->time_per_step_s.measured_mean / compute->time_per_step_s.predicted;
  char text[96];
  std::snprintf(text, sizeof text, "compute ran %.2f× %s than calibrated",
                ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "slower" : "faster");
  return text;
}

nlohmann::json validation_to_json(const Validation& v) {
  nlohmann::json j = {{"scenario", v.scenario},   {"strategy", v.strategy},
                      {"repeats", v.repeats},     {"seeds", v.seeds},
                      {"tolerance", v.tolerance}, {"within_tolerance", v.within_tolerance},
                      {"outside", v.outside}};
  j["metrics"] = nlohmann::json::array();
  for (const Compared& c : v.metrics) j["metrics"].push_back(compared_json(c));
  j["phases"] = nlohmann::json::array();
  for (const PhaseComparison& p : v.phases) {
    j["phases"].push_back({{"name", phase_name(p.phase)},
                           {"time_per_step_s", compared_json(p.time_per_step_s)},
                           {"joined_ops", p.joined_ops},
                           {"mean_abs_percentage_error", p.mean_abs_percentage_error},
                           {"worst_error", p.worst_error},
                           {"worst_op", p.worst_op},
                           {"bias", p.bias},
                           {"predicted_p50_s", p.predicted_p50_s},
                           {"predicted_p95_s", p.predicted_p95_s},
                           {"measured_p50_s", p.measured_p50_s},
                           {"measured_p95_s", p.measured_p95_s}});
  }
  j["faults"] = v.faults;
  j["steady_states"] = v.steady_states;
  j["warnings"] = v.warnings;
  j["host"] = v.host;
  j["clients"] = nlohmann::json::array();
  for (const StepDistribution& d : v.clients) {
    j["clients"].push_back({{"client", d.client},
                            {"predicted_steps", d.predicted_steps},
                            {"measured_steps", d.measured_steps},
                            {"ks_distance", d.ks_distance}});
  }
  if (v.objective) {
    const ObjectiveComparison& o = *v.objective;
    j["objective"] = {{"target", o.target},
                      {"predicted_reached", o.predicted_reached},
                      {"measured_reached", o.measured_reached},
                      {"measured_evaluated", o.measured_evaluated},
                      {"final_accuracy", compared_json(o.final_accuracy)},
                      {"joined_by_global_step", o.joined_by_global_step},
                      {"max_distance_by_global_step", o.max_distance_by_global_step},
                      {"mean_distance_by_global_step", o.mean_distance_by_global_step},
                      {"joined_by_time", o.joined_by_time},
                      {"max_distance_by_time", o.max_distance_by_time},
                      {"mean_distance_by_time", o.mean_distance_by_time},
                      {"time_to_target_within", o.time_to_target_within},
                      {"curves_within", o.curves_within}};
    if (!o.time_to_target_s.name.empty()) {
      j["objective"]["time_to_target_s"] = compared_json(o.time_to_target_s);
      j["objective"]["global_steps_to_target"] = compared_json(o.global_steps_to_target);
    }
  }
  return j;
}

namespace {

// A table of cells, rendered as padded text or as Markdown.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string render(bool markdown) const {
    std::string out;
    if (markdown) {
      const auto line = [](const std::vector<std::string>& cells) {
        std::string l = "|";
        for (const std::string& c : cells) l += " " + c + " |";
        return l + "\n";
      };
      out += line(header);
      out += "|";
      for (size_t i = 0; i < header.size(); ++i) out += i == 0 ? "---|" : "---:|";
      out += "\n";
      for (const auto& r : rows) out += line(r);
      return out;
    }
    std::vector<size_t> width(header.size(), 0);
    const auto chars = [](const std::string& t) {
      size_t n = 0;
      for (unsigned char c : t) n += (c & 0xC0) != 0x80;
      return n;
    };
    for (size_t i = 0; i < header.size(); ++i) width[i] = chars(header[i]);
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], chars(r[i]));
    }
    const auto line = [&](const std::vector<std::string>& cells) {
      std::string l;
      for (size_t i = 0; i < cells.size(); ++i) {
        l += i + 1 == cells.size() ? cells[i] : pad(cells[i], width[i] + 2);
      }
      return l + "\n";
    };
    out += line(header);
    for (const auto& r : rows) out += line(r);
    return out;
  }
};

// training.objective's lines: the table of time to target and final accuracy, and the curves'
// distances; empty without an objective.
std::string objective_text(const Validation& v, bool markdown) {
  if (!v.objective) return "";
  const ObjectiveComparison& o = *v.objective;
  const std::string head = "objective (" + o.target + ")";
  if (o.measured_evaluated == 0) {
    return (markdown ? "\n" : "") + head +
           ": the measured runs recorded no evaluation (a real run that does not compute the "
           "objective): the curves are not compared\n";
  }
  Table t{{head, "predicted", "measured mean (min..max)", "error"}, {}};
  const auto add = [&t](const Compared& c, int decimals) {
    if (c.name.empty()) return;
    const bool seconds = c.name.find("(s)") != std::string::npos;  // shown in ms
    const auto f = [decimals, seconds](double x) { return seconds ? ms(x) : number(x, decimals); };
    std::string name = c.name;
    if (seconds) name.replace(name.find("(s)"), 3, "(ms)");
    t.rows.push_back(
        {name, f(c.predicted),
         f(c.measured_mean) + " (" + f(c.measured_min) + ".." + f(c.measured_max) + ")",
         signed_percent(c.relative_error())});
  };
  add(o.time_to_target_s, 3);
  add(o.global_steps_to_target, 0);
  add(o.final_accuracy, 4);
  std::string out = (markdown ? "\n" : "") + t.render(markdown);
  const std::string reached = "reached by " + std::to_string(o.predicted_reached) + " of " +
                              std::to_string(v.seeds) + " predicted and " +
                              std::to_string(o.measured_reached) + " of " +
                              std::to_string(v.repeats) + " measured runs";
  const std::string indent = markdown ? "- " : "  ";
  out += (markdown ? "\n" : "") + indent + "target " + reached + "\n";
  out += indent + "accuracy over global steps: max " +
         number(100 * o.max_distance_by_global_step, 2) + " points apart, mean " +
         number(100 * o.mean_distance_by_global_step, 2) + " (" +
         std::to_string(o.joined_by_global_step) +
         " evaluations joined; near 0 when the updates land in the same order)\n";
  out += indent + "accuracy over time: max " + number(100 * o.max_distance_by_time, 2) +
         " points apart, mean " + number(100 * o.mean_distance_by_time, 2) +
         " (the timing error)\n";
  return out;
}

std::string format(const Validation& v, const nlohmann::json* baseline, bool markdown) {
  const bool spread = v.seeds > 1;
  const std::string predicted_head = spread ? "predicted mean (min..max)" : "predicted";
  // A predicted value, with its range over the seeds when there are several.
  const auto predicted_cell = [spread](const Compared& c, const auto& fmt) {
    return fmt(c.predicted) +
           (spread ? " (" + fmt(c.predicted_min) + ".." + fmt(c.predicted_max) + ")" : "");
  };
  Table metrics{{"metric", predicted_head, "measured mean (min..max)", "error"}, {}};
  for (const Compared& c : v.metrics) {
    const bool seconds = c.name.find("(s)") != std::string::npos;
    std::string name = c.name;
    const auto fmt = [&](double x) {
      if (seconds) return ms(x);
      if (name.find("bytes") != std::string::npos) return format_quantity(x, Dimension::kBytes, 4);
      return number(x, 2);
    };
    if (seconds) name.replace(name.find("(s)"), 3, "(ms)");
    if (!c.absent.empty()) {
      metrics.rows.push_back({name, c.absent, c.absent, "-"});
      continue;
    }
    metrics.rows.push_back(
        {name, predicted_cell(c, fmt),
         fmt(c.measured_mean) + " (" + fmt(c.measured_min) + ".." + fmt(c.measured_max) + ")",
         with_baseline(c.relative_error(), baseline_error(baseline, "metrics", c.name))});
  }
  Table phases{{"phase (time per step, ms)", predicted_head, "measured mean (min..max)", "error",
                "ops joined", "MAPE", "bias", "worst op"},
               {}};
  Table durations{
      {"op durations (ms)", "p50 predicted", "p50 measured", "p95 predicted", "p95 measured"}, {}};
  for (const PhaseComparison& p : v.phases) {
    const Compared& c = p.time_per_step_s;
    const bool joined = p.joined_ops > 0;
    if (!c.absent.empty()) {
      phases.rows.push_back({c.name, c.absent, c.absent, "-", "0", "-", "-", "-"});
      continue;
    }
    phases.rows.push_back(
        {c.name, predicted_cell(c, ms),
         ms(c.measured_mean) + " (" + ms(c.measured_min) + ".." + ms(c.measured_max) + ")",
         with_baseline(c.relative_error(), baseline_error(baseline, "phases", c.name)),
         std::to_string(p.joined_ops),
         joined ? number(100 * p.mean_abs_percentage_error, 1) + "%" : "-",
         joined ? signed_percent(p.bias) : "-",
         p.worst_op.empty() ? std::string("-") : p.worst_op + " " + signed_percent(p.worst_error)});
    if (joined) {
      durations.rows.push_back({phase_name(p.phase), ms(p.predicted_p50_s), ms(p.measured_p50_s),
                                ms(p.predicted_p95_s), ms(p.measured_p95_s)});
    }
  }
  Table clients{{"client", "Kolmogorov-Smirnov distance", "steps predicted", "steps measured"}, {}};
  for (const StepDistribution& d : v.clients) {
    clients.rows.push_back({d.client, number(d.ks_distance, 2), std::to_string(d.predicted_steps),
                            std::to_string(d.measured_steps)});
  }
  std::string verdict;
  if (v.within_tolerance) {
    verdict = "within ±" + number(100 * v.tolerance, 1) + "% (throughput " +
              signed_percent(v.metrics[0].relative_error()) + ", step time p50 " +
              signed_percent(v.metrics[1].relative_error()) + ")";
  } else {
    verdict = "outside ±" + number(100 * v.tolerance, 1) + "%:";
    for (const std::string& o : v.outside) verdict += " " + o + ";";
    verdict.pop_back();
  }
  const std::string runs = std::to_string(v.repeats) + (v.repeats == 1 ? " run" : " runs") +
                           (v.seeds > 1 ? ", " + std::to_string(v.seeds) + " predicted seeds" : "");
  std::string out;
  if (markdown) {
    out += "### " + v.scenario + " (" + v.strategy + ", " + runs + ")\n\n";
    out += metrics.render(true) + "\n" + phases.render(true) + "\n" + durations.render(true) +
           "\n" + clients.render(true) + objective_text(v, true);
    if (!v.faults.empty()) {
      out += "\nFaults and restarts:\n\n";
      for (const std::string& f : v.faults) out += "- " + f + "\n";
    }
    if (!v.steady_states.empty()) {
      out += "\nSteady state (95% interval):\n\n";
      for (const std::string& line : v.steady_states) out += "- " + line + "\n";
    }
    if (!v.warnings.empty()) {
      out += "\nWarnings:\n\n";
      for (const std::string& w : v.warnings) out += "- " + w + "\n";
    }
    if (!v.host.empty()) {
      out += "\nThe host during the real runs:\n\n";
      for (const std::string& line : v.host) out += "- " + line + "\n";
    }
    out += "\nVerdict: " + verdict + ".\n";
    return out;
  }
  out += "predicted (sim) against measured (real, " + runs + "): " + v.strategy + "\n\n";
  out += metrics.render(false) + "\n" + phases.render(false) + "\n";
  out += "ops joined by (role, step, op):\n" + durations.render(false) + "\n";
  out +=
      "step times per client (Kolmogorov-Smirnov distance: 0 the same distribution, 1 "
      "disjoint):\n" +
      clients.render(false);
  if (v.objective) out += "\n" + objective_text(v, false);
  if (!v.faults.empty()) {
    out += "\nfaults and restarts:\n";
    for (const std::string& f : v.faults) out += "  " + f + "\n";
  }
  if (!v.steady_states.empty()) {
    out += "\nsteady state (95% interval):\n";
    for (const std::string& line : v.steady_states) out += "  " + line + "\n";
  }
  for (const std::string& w : v.warnings)
    out += "warning (" + w.substr(0, w.find(':')) + ")" + w.substr(w.find(':')) + "\n";
  if (!v.host.empty()) {
    out += "\nthe host during the real runs:\n";
    for (const std::string& line : v.host) out += "  " + line + "\n";
  }
  out += "\nverdict: " + verdict + "\n";
  return out;
}

}  // namespace

std::string format_validation(const Validation& v, const nlohmann::json* baseline) {
  return format(v, baseline, false);
}

std::string format_validation_markdown(const Validation& v, const nlohmann::json* baseline) {
  return format(v, baseline, true);
}

}  // namespace replisim::core
