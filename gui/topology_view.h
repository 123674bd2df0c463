// The cluster picture beside the timeline: for each run shown (in-graph and between-graph side
// by side), its machines as boxes holding their CPU and GPUs (the roles on each, PS marked), the
// NIC, switch and PCIe links drawn with width by bandwidth and colour by utilisation at the
// playhead, and the tensors in flight then as dots moving along their route — as ns-3's NetAnim
// shows packets on a topology. Play moves the playhead at a speed that shows a median transfer
// for about half a second; the classroom's animation drives it too (set_time_s).
#pragma once

#include <QPointF>
#include <QRectF>
#include <QWidget>
#include <memory>
#include <vector>

#include "gui/topology_model.h"
#include "gui/trace_loading.h"

class QComboBox;
class QLabel;
class QPainter;
class QPushButton;
class QSlider;
class QTimer;

namespace replisim::gui {

// Where one run's cluster is drawn inside its panel, in pixels.
struct TopologyGeometry {
  QRectF panel;
  QRectF switch_box;                  // the switch; with racks, the core switch
  std::vector<QRectF> rack_boxes;     // per Platform::racks: its top-of-rack switch
  std::vector<QRectF> machine_boxes;  // per TopologyModel::machines()
  std::vector<QRectF> device_boxes;   // per Platform::devices (empty rect: not drawn)
  // A transfer's route as a polyline: the source device, its host CPU when it is a GPU, the
  // machine's NIC, the switch (with racks: its top-of-rack switch, and between racks its uplink,
  // the core and the other rack's uplink and switch), and back down on the destination's side.
  std::vector<QPointF> route_points(const core::Platform& platform, int src, int dst) const;
};

// Lays `model`'s cluster out in `panel`: the switch on top, the machines in a row below it; with
// racks, the core on top, a band of top-of-rack switches, each over its machines, then the row.
TopologyGeometry layout_topology(const TopologyModel& model, const QRectF& panel);

// The point `fraction` (0..1) of the way along `polyline`, by length.
QPointF point_along(const std::vector<QPointF>& polyline, double fraction);

// A link's colour at `utilisation` (0: grey, 0.5: orange, 1 and more: red).
QColor utilisation_color(double utilisation);

// Paints run `model` (called `name` in its title) at `time_s` into `panel`: title, network,
// machines with their devices and PCIe links, tensors in flight, legend (topology_paint.cpp).
void paint_topology_run(QPainter& painter, const TopologyModel& model, const QString& name,
                        double time_s, const QRectF& panel);

class TopologyView : public QWidget {
  Q_OBJECT

 public:
  explicit TopologyView(QWidget* parent = nullptr);
  ~TopologyView() override;

  // The runs to draw (one, or two: the first above or left of the second); an empty list clears.
  void set_models(const ModelList& models);
  size_t run_count() const { return runs_.size(); }
  const TopologyModel& topology(size_t run) const { return *runs_[run].topology; }

  // The playhead, seconds of the runs' clocks (each run's own, from its start).
  void set_time_s(double time_s);
  double time_s() const { return time_s_; }
  // The latest end of the runs shown.
  double end_s() const { return end_s_; }

  void play();
  void stop();
  bool playing() const;
  // Seconds of run per second of playback.
  double speed_s_per_s() const;

  // Paints every run's panel into `area` (the canvas's painting, and what tests read back).
  void paint(QPainter& painter, const QRectF& area) const;
  // Where the dots of run `run`'s tensors in flight are drawn in `area` now (by start time).
  std::vector<QPointF> dot_positions(size_t run, const QRectF& area) const;
  // The panel of run `run` in `area`.
  QRectF panel_rect(size_t run, const QRectF& area) const;
  QWidget* canvas() const { return canvas_; }

 signals:
  void time_changed(double time_s);

 private:
  struct Run {
    std::shared_ptr<const TimelineModel> timeline;  // owns the trace
    std::unique_ptr<TopologyModel> topology;
  };
  void tick();
  void update_controls();

  std::vector<Run> runs_;
  double time_s_ = 0;
  double end_s_ = 0;
  double base_speed_s_per_s_ = 0.01;
  double last_tick_s_ = -1;

  QWidget* canvas_;
  QPushButton* play_;
  QSlider* slider_;
  QComboBox* speed_;
  QLabel* clock_;
  QTimer* timer_;
};

}  // namespace replisim::gui
