// training.objective's curves, predicted against measured (validation.h ObjectiveComparison).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/metrics/validation.h"
#include "core/metrics/validation_detail.h"

namespace replisim::core {
namespace {

using validation_detail::compare;

// The accuracy of `curve` at `time_s`: its last evaluation at or before it (the first before any).
double accuracy_at(const std::vector<ObjectivePoint>& curve, double time_s) {
  double accuracy = curve.front().accuracy;
  for (const ObjectivePoint& p : curve) {
    if (p.time_s > time_s) break;
    accuracy = p.accuracy;
  }
  return accuracy;
}

// Per run: `get` of its objective's figures, only for the runs that reached the target.
template <class Get>
std::vector<double> of_reached(const std::vector<ObjectiveMetrics>& runs, Get get) {
  std::vector<double> out;
  for (const ObjectiveMetrics& m : runs) {
    if (m.reached()) out.push_back(get(m));
  }
  return out;
}

std::string target_text(const ObjectiveMetrics& m) {
  char text[64];
  std::snprintf(text, sizeof text, "test %s %s %.4f", m.target.c_str(),
                m.target == "accuracy" ? ">=" : "<=", m.target_value);
  return text;
}

}  // namespace

std::optional<ObjectiveComparison> compare_objective(const std::vector<const Trace*>& predicted,
                                                     const std::vector<const Trace*>& measured) {
  std::vector<ObjectiveMetrics> pm, mm;
  for (const Trace* t : predicted) {
    if (std::optional<ObjectiveMetrics> m = objective_metrics(*t)) pm.push_back(*m);
  }
  if (pm.empty() || pm.size() != predicted.size()) return std::nullopt;
  for (const Trace* t : measured) mm.push_back(objective_metrics(*t).value_or(ObjectiveMetrics{}));
  ObjectiveComparison o;
  o.target = target_text(pm.front());
  const auto reached = [](const std::vector<ObjectiveMetrics>& runs) {
    return int(std::count_if(runs.begin(), runs.end(),
                             [](const ObjectiveMetrics& m) { return m.reached(); }));
  };
  o.measured_evaluated = int(std::count_if(
      mm.begin(), mm.end(), [](const ObjectiveMetrics& m) { return m.evaluations > 0; }));
  o.predicted_reached = reached(pm);
  o.measured_reached = reached(mm);
  const auto ttt = [](const ObjectiveMetrics& m) { return m.time_to_target_s; };
  const auto steps = [](const ObjectiveMetrics& m) { return double(m.global_steps_to_target); };
  const std::vector<double> p_ttt = of_reached(pm, ttt), m_ttt = of_reached(mm, ttt);
  // Neither side reached the target: they agree, and there is no time to compare.
  o.time_to_target_within = o.predicted_reached == 0 && o.measured_reached == 0;
  if (!p_ttt.empty() && !m_ttt.empty()) {
    o.time_to_target_s = compare("time to target (s)", p_ttt, m_ttt);
    o.global_steps_to_target =
        compare("global steps to target", of_reached(pm, steps), of_reached(mm, steps));
    const Compared& c = o.time_to_target_s;
    o.time_to_target_within = o.measured_reached == int(mm.size()) &&
                              o.predicted_reached == int(pm.size()) &&
                              (std::fabs(c.relative_error()) <= kTimeToTargetTolerance ||
                               (c.predicted >= c.measured_min && c.predicted <= c.measured_max));
  }
  std::vector<double> p_final, m_final;
  for (const ObjectiveMetrics& m : pm) p_final.push_back(m.final_accuracy);
  for (const ObjectiveMetrics& m : mm) m_final.push_back(m.final_accuracy);
  o.final_accuracy = compare("final accuracy", p_final, m_final);

  // The curves' distances: against the first predicted seed (the plan the real runs ran).
  const std::vector<ObjectivePoint> p_curve = objective_curve(*predicted.front());
  std::map<int64_t, double> p_by_step;  // the first evaluation of each global step
  for (const ObjectivePoint& p : p_curve) p_by_step.emplace(p.global_step, p.accuracy);
  double sum_step = 0, sum_time = 0;
  for (const Trace* t : measured) {
    for (const ObjectivePoint& m : objective_curve(*t)) {
      const auto found = p_by_step.find(m.global_step);
      if (found != p_by_step.end()) {
        const double d = std::fabs(m.accuracy - found->second);
        ++o.joined_by_global_step;
        sum_step += d;
        o.max_distance_by_global_step = std::max(o.max_distance_by_global_step, d);
      }
      if (!p_curve.empty()) {
        const double d = std::fabs(m.accuracy - accuracy_at(p_curve, m.time_s));
        ++o.joined_by_time;
        sum_time += d;
        o.max_distance_by_time = std::max(o.max_distance_by_time, d);
      }
    }
  }
  if (o.joined_by_global_step > 0) {
    o.mean_distance_by_global_step = sum_step / double(o.joined_by_global_step);
  }
  if (o.joined_by_time > 0) o.mean_distance_by_time = sum_time / double(o.joined_by_time);
  o.curves_within =
      o.joined_by_global_step > 0 && o.max_distance_by_global_step <= kCurveTolerancePoints;
  return o;
}

}  // namespace replisim::core
