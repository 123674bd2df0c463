// The cluster picture (gui/topology_model.h, gui/topology_view.h): link utilisation and the
// tensors in flight at a time, against a two-transfer trace worked out by hand; the dots' routes;
// the main window feeding it the runs it shows and the animation's time.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <limits>

#include <gtest/gtest.h>

#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/timeline_view.h"
#include "gui/topology_model.h"
#include "gui/topology_view.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

// The tiny trace (a 1 MB gradient pc1/gpu0 -> pc2/cpu over [2, 2.5] s: 2 MB/s) and a 500 MB
// variable read back pc2/cpu -> pc1/gpu0 over [2.25, 3.25] s (500 MB/s). NICs 1.25 GB/s,
// switch 1 TB/s, pc1's PCIe 16 GB/s.
core::Trace two_transfers() {
  core::Trace trace = test::tiny_trace();
  core::TraceEvent read;
  read.kind = core::EventKind::kTransfer;
  read.op = core::OpKind::kSend;
  read.producer = core::OpKind::kReadVariable;
  read.actor = trace.intern("ps0");
  read.peer_actor = trace.intern("worker0");
  read.client = trace.intern("worker0");
  read.device = trace.intern("pc2/cpu");
  read.peer = trace.intern("pc1/gpu0");
  read.label = trace.intern("send/w");
  read.step = 0;
  read.start_s = 2.25;
  read.end_s = 3.25;
  read.bytes = 500e6;
  read.message_id = 1;
  trace.events.push_back(read);
  return trace;
}

TEST(TopologyModel, MachinesDevicesAndTheParameterServer) {
  const core::Trace trace = two_transfers();
  const TopologyModel model(trace);
  ASSERT_EQ(model.machines().size(), 2u);
  EXPECT_EQ(model.machines()[0].name, "pc1");
  ASSERT_EQ(model.machines()[0].devices.size(), 2u);  // the CPU, then gpu0
  EXPECT_EQ(model.machines()[0].devices[1].name, "pc1/gpu0");
  EXPECT_EQ(model.machines()[0].devices[1].roles, std::vector<std::string>{"worker0"});
  EXPECT_FALSE(model.machines()[0].devices[1].parameter_server);
  EXPECT_EQ(model.machines()[1].devices[0].roles, std::vector<std::string>{"ps0"});
  EXPECT_TRUE(model.machines()[1].devices[0].parameter_server);
  EXPECT_EQ(model.transfer_count(), 2u);
  EXPECT_DOUBLE_EQ(model.transfers_end_s(), 3.25);
}

// By hand at 2.4 s: pc1's NIC up carries the gradient (2 MB/s / 1.25 GB/s = 0.16%), down the
// variable (500 MB/s / 1.25 GB/s = 40%); the switch both (502 MB/s / 1 TB/s); pc1's PCIe up
// 2 MB/s / 16 GB/s, down 500 MB/s / 16 GB/s = 3.125%. The gradient is 80% of its way, the
// variable 15%. At 2.5 s the gradient has arrived; at 3.25 s nothing moves.
TEST(TopologyModel, UtilisationAndTensorsInFlightAtATime) {
  const core::Trace trace = two_transfers();
  const TopologyModel model(trace);
  const core::Platform& p = model.platform();
  auto channel = [&p](int link, core::LinkDirection d) { return size_t(p.channel_of({link, d})); };
  const TopologyState at = model.state_at(2.4);
  EXPECT_NEAR(at.channel_utilisation[channel(1, core::LinkDirection::kUp)], 0.0016, 1e-12);
  EXPECT_NEAR(at.channel_utilisation[channel(1, core::LinkDirection::kDown)], 0.4, 1e-12);
  EXPECT_NEAR(at.link_utilisation(p, 1), 0.4, 1e-12);
  EXPECT_NEAR(at.channel_utilisation[channel(2, core::LinkDirection::kUp)], 0.4, 1e-12);
  EXPECT_NEAR(at.channel_utilisation[channel(2, core::LinkDirection::kDown)], 0.0016, 1e-12);
  EXPECT_NEAR(at.link_utilisation(p, 0), 502e6 / 1e12, 1e-15);
  EXPECT_NEAR(at.channel_utilisation[channel(3, core::LinkDirection::kUp)], 2e6 / 16e9, 1e-15);
  EXPECT_NEAR(at.channel_utilisation[channel(3, core::LinkDirection::kDown)], 0.03125, 1e-12);
  ASSERT_EQ(at.in_flight.size(), 2u);
  EXPECT_NEAR(at.in_flight[0].progress, 0.8, 1e-12);
  EXPECT_EQ(at.in_flight[0].tensor, TensorRole::kGradient);
  EXPECT_EQ(p.devices[size_t(at.in_flight[0].src_device)].name, "pc1/gpu0");
  EXPECT_NEAR(at.in_flight[1].progress, 0.15, 1e-12);
  EXPECT_EQ(at.in_flight[1].tensor, TensorRole::kParameter);
  EXPECT_EQ(at.in_flight[1].route.size(), 4u);  // pc2 NIC up, switch, pc1 NIC down, PCIe down

  const TopologyState later = model.state_at(2.5);
  ASSERT_EQ(later.in_flight.size(), 1u);
  EXPECT_NEAR(later.in_flight[0].progress, 0.25, 1e-12);
  EXPECT_EQ(later.link_utilisation(p, 1), 0.4);
  EXPECT_EQ(later.channel_utilisation[channel(1, core::LinkDirection::kUp)], 0.0);
  EXPECT_TRUE(model.state_at(3.25).in_flight.empty());
  EXPECT_TRUE(model.state_at(1.0).in_flight.empty());
  EXPECT_EQ(model.state_at(1.0).link_utilisation(p, 1), 0.0);
}

TEST(TopologyView, PointAlongAPolylineByLength) {
  // 3 then 4 long: half of 7 is 0.5 into the second leg.
  const std::vector<QPointF> line = {{0, 0}, {3, 0}, {3, 4}};
  EXPECT_EQ(point_along(line, 0.5), QPointF(3, 0.5));
  EXPECT_EQ(point_along(line, 0), QPointF(0, 0));
  EXPECT_EQ(point_along(line, 1), QPointF(3, 4));
  EXPECT_EQ(point_along(line, 3.0 / 7), QPointF(3, 0));
}

// A tensor's route runs from its device's box, through the switch, to its peer's box; the view
// draws one dot per tensor in flight, on that route.
TEST(TopologyView, DotsFollowTheRoutesOfTheTensorsInFlight) {
  const auto model = std::make_shared<const TimelineModel>(two_transfers(), "two transfers");
  TopologyView view;
  view.set_models({model});
  const QRectF area(0, 0, 900, 500);
  const TopologyModel& topology = view.topology(0);
  const TopologyGeometry g = layout_topology(topology, view.panel_rect(0, area));
  const core::Platform& p = topology.platform();
  const int gpu = p.find_device("pc1/gpu0"), cpu = p.find_device("pc2/cpu");
  const std::vector<QPointF> route = g.route_points(p, gpu, cpu);
  EXPECT_EQ(route.front(), g.device_boxes[size_t(gpu)].center());
  EXPECT_EQ(route.back(), g.device_boxes[size_t(cpu)].center());
  EXPECT_NE(std::find(route.begin(), route.end(), g.switch_box.center()), route.end());
  EXPECT_TRUE(g.machine_boxes[0].right() < g.machine_boxes[1].left());
  view.set_time_s(2.4);
  std::vector<QPointF> dots = view.dot_positions(0, area);
  ASSERT_EQ(dots.size(), 2u);
  EXPECT_EQ(dots[0], point_along(route, 0.8));
  EXPECT_TRUE(g.machine_boxes[1].contains(dots[0]) || !g.machine_boxes[0].contains(dots[0]));
  view.set_time_s(2.6);
  EXPECT_EQ(view.dot_positions(0, area).size(), 1u);
  view.set_time_s(10);  // past the end: held at the run's end, nothing moves
  EXPECT_DOUBLE_EQ(view.time_s(), model->end_s());
  EXPECT_TRUE(view.dot_positions(0, area).empty());
  // It paints (offscreen) without a model's help: the picture is not blank.
  view.set_time_s(2.4);
  QImage image(900, 500, QImage::Format_ARGB32);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    view.paint(painter, area);
  }
  const QPoint dot = dots[0].toPoint();
  EXPECT_NE(image.pixelColor(dot), QColor(Qt::white));
}

// Racks (issue 41): pc1 in rack0, pc2 in rack1. Each rack's switch spans its machines, below the
// core; a tensor between them climbs through its rack's switch, the uplink and the core.
TEST(TopologyView, RacksStandBetweenTheCoreAndTheirMachines) {
  core::Trace trace = two_transfers();
  core::Platform& p = trace.meta.platform;
  p.links[size_t(p.switch_link)].name = "core";
  for (int r = 0; r < 2; ++r) {
    const std::string name = "rack" + std::to_string(r);
    core::PlatformRack rack{name, int(p.links.size()), int(p.links.size()) + 1};
    p.links.push_back({name + "/tor", 1e12, 0, false});
    p.links.push_back({name + "/uplink", 1e9, 0, true});
    p.racks.push_back(rack);
    p.machines[size_t(r)].rack = r;
  }
  const auto model = std::make_shared<const TimelineModel>(std::move(trace), "racks");
  TopologyView view;
  view.set_models({model});
  const QRectF area(0, 0, 900, 500);
  const TopologyModel& topology = view.topology(0);
  const TopologyGeometry g = layout_topology(topology, view.panel_rect(0, area));
  ASSERT_EQ(g.rack_boxes.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_LT(g.switch_box.bottom(), g.rack_boxes[r].top());
    EXPECT_LT(g.rack_boxes[r].bottom(), g.machine_boxes[r].top());
    EXPECT_DOUBLE_EQ(g.rack_boxes[r].left(), g.machine_boxes[r].left());
    EXPECT_DOUBLE_EQ(g.rack_boxes[r].right(), g.machine_boxes[r].right());
  }
  const core::Platform& platform = topology.platform();
  const std::vector<QPointF> route =
      g.route_points(platform, platform.find_device("pc1/gpu0"), platform.find_device("pc2/cpu"));
  const auto at = [&route](const QPointF& point) {
    return std::find(route.begin(), route.end(), point) - route.begin();
  };
  const auto rack0 = at(g.rack_boxes[0].center()), core = at(g.switch_box.center()),
             rack1 = at(g.rack_boxes[1].center());
  EXPECT_LT(rack0, core);
  EXPECT_LT(core, rack1);
  EXPECT_LT(rack1, ptrdiff_t(route.size()));
  QImage image(900, 500, QImage::Format_ARGB32);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    view.paint(painter, area);
  }
  EXPECT_NE(image.pixelColor(g.rack_boxes[1].topLeft().toPoint() + QPoint(20, 1)),
            QColor(Qt::white));
}

// Play moves the playhead on a timer (the tiny trace's median transfer, 1 s, crosses in half a
// second at normal speed: 2 s of run per second) and stops at the run's end.
TEST(TopologyView, PlayMovesThePlayheadAndStopsAtTheEnd) {
  TopologyView view;
  view.set_models({std::make_shared<const TimelineModel>(two_transfers(), "two transfers")});
  EXPECT_DOUBLE_EQ(view.speed_s_per_s(), 2.0);
  view.play();
  ASSERT_TRUE(view.playing());
  QElapsedTimer clock;
  clock.start();
  while (clock.elapsed() < 300) QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  EXPECT_GT(view.time_s(), 0.0);
  view.set_time_s(view.end_s() - 1e-3);
  clock.restart();
  while (view.playing() && clock.elapsed() < 2000) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  EXPECT_FALSE(view.playing());
  EXPECT_DOUBLE_EQ(view.time_s(), view.end_s());
}

// The window gives the cluster picture the runs it shows (both strategies: two panels) and the
// classroom animation's time through the timelines' reveal.
TEST(TopologyView, FollowsTheWindowsRunsAndTheAnimation) {
  MainWindow window;
  window.show_models({test::tiny_model(), test::tiny_model()});
  ASSERT_NE(window.topology(), nullptr);
  EXPECT_EQ(window.topology()->run_count(), 2u);
  window.compare()->view_a()->set_reveal_until_s(2.4);
  EXPECT_DOUBLE_EQ(window.topology()->time_s(), 2.4);
  window.compare()->view_a()->set_reveal_until_s(std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(window.topology()->time_s(), 2.4);  // the end of the animation keeps it
  window.show_topology(true);
  EXPECT_TRUE(window.topology()->isVisibleTo(&window));
}

}  // namespace
}  // namespace replisim::gui
