#include "gui/time_axis.h"

#include <algorithm>
#include <cmath>

namespace replisim::gui {

void TimeAxis::set_range(double from_s, double until_s) {
  if (!std::isfinite(from_s) || !std::isfinite(until_s)) return;
  if (until_s - from_s < kMinDurationS) {
    const double middle = 0.5 * (from_s + until_s);
    from_s = middle - 0.5 * kMinDurationS;
    until_s = middle + 0.5 * kMinDurationS;
  }
  if (from_s == from_s_ && until_s == until_s_) return;
  from_s_ = from_s;
  until_s_ = until_s;
  emit range_changed();
}

void TimeAxis::zoom_at(double anchor_s, double factor) {
  set_range(anchor_s - (anchor_s - from_s_) * factor, anchor_s + (until_s_ - anchor_s) * factor);
}

void TimeAxis::set_selection(double from_s, double until_s) {
  if (until_s < from_s) std::swap(from_s, until_s);
  selection_from_s_ = from_s;
  selection_until_s_ = until_s;
  emit selection_changed();
}

RulerTicks ruler_ticks(double from_s, double until_s) {
  RulerTicks ticks;
  const double duration = std::max(until_s - from_s, 1e-12);
  // The smallest 1-2-5 step giving at most 14 intervals; consecutive steps differ by at most
  // 2.5x, so at least 14 / 2.5 > 5 ticks fall inside.
  double step = std::pow(10.0, std::floor(std::log10(duration / 14)));
  for (int guard = 0; duration / step > 14 && guard < 8; ++guard) {
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    step *= mantissa < 1.5 ? 2 : (mantissa < 3 ? 2.5 : 2);
  }
  ticks.step_s = step;
  // The largest unit in which the step is at least 0.1 (a 500 µs step reads "156.5 ms").
  struct Unit {
    double seconds;
    const char* name;
  };
  static const Unit kUnits[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}};
  const Unit* unit = &kUnits[3];
  for (const Unit& u : kUnits) {
    if (step / u.seconds >= 0.1 - 1e-9) {
      unit = &u;
      break;
    }
  }
  ticks.unit_s = unit->seconds;
  ticks.unit = QString::fromUtf8(unit->name);
  const double in_unit = step / ticks.unit_s;  // 0.1, 0.2, 0.5, 1, 2, 5, 10, ...
  const int decimals = in_unit >= 1 - 1e-9 ? 0 : int(std::ceil(-std::log10(in_unit) - 1e-9));
  for (double k = std::ceil(from_s / step); k * step <= until_s + 1e-12 * duration; k += 1) {
    const double t = k * step;
    ticks.times_s.push_back(t);
    ticks.labels.push_back(QString::number(t / ticks.unit_s, 'f', decimals) + " " + ticks.unit);
  }
  return ticks;
}

}  // namespace replisim::gui
