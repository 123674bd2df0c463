// The visible time range and the selected range of one or more timeline views (the compare view
// shares one between its two traces, which is what keeps their zoom and pan in step), and the
// ruler's ticks. Times are seconds on the axis; a view maps them to its trace's clock by its
// offset (trace time = axis time - offset).
#pragma once

#include <QObject>
#include <QString>
#include <vector>

namespace replisim::gui {

class TimeAxis : public QObject {
  Q_OBJECT

 public:
  explicit TimeAxis(QObject* parent = nullptr) : QObject(parent) {}

  double from_s() const { return from_s_; }
  double until_s() const { return until_s_; }
  double duration_s() const { return until_s_ - from_s_; }
  // Shows [from_s, until_s]; a range shorter than kMinDurationS is widened about its middle.
  void set_range(double from_s, double until_s);
  // Multiplies the visible duration by `factor` (< 1 zooms in) keeping `anchor_s` at the same
  // place on screen.
  void zoom_at(double anchor_s, double factor);
  void pan_by(double delta_s) { set_range(from_s_ + delta_s, until_s_ + delta_s); }

  // The selected range (axis seconds); has_selection() is false until one is made.
  bool has_selection() const { return selection_until_s_ > selection_from_s_; }
  double selection_from_s() const { return selection_from_s_; }
  double selection_until_s() const { return selection_until_s_; }
  void set_selection(double from_s, double until_s);
  void clear_selection() { set_selection(0, 0); }

  static constexpr double kMinDurationS = 1e-8;

 signals:
  void range_changed();
  void selection_changed();

 private:
  double from_s_ = 0;
  double until_s_ = 1;
  double selection_from_s_ = 0;
  double selection_until_s_ = 0;
};

// The labelled ticks of a ruler over [from_s, until_s]: a step of 1, 2 or 5 x 10^k seconds chosen
// so that 5 to 15 ticks fall inside, and the unit their labels are written in: the largest of s,
// ms, µs and ns in which the step is at least 0.1 (labels then have at most one decimal).
struct RulerTicks {
  double step_s = 1;
  double unit_s = 1;  // 1, 1e-3, 1e-6 or 1e-9
  QString unit;       // "s", "ms", "µs", "ns"
  std::vector<double> times_s;
  std::vector<QString> labels;  // "120 ms"
};
RulerTicks ruler_ticks(double from_s, double until_s);

}  // namespace replisim::gui
