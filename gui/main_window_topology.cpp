// The main window's cluster picture (topology_view.h): a dock under the timelines, toggled by the
// "Topology" action (Ctrl+T), fed the runs the window shows and following the classroom's
// animation (each timeline's reveal time).
#include <QDockWidget>
#include <QToolBar>
#include <cmath>

#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/timeline_view.h"
#include "gui/topology_view.h"

namespace replisim::gui {

void MainWindow::build_topology() {
  topology_ = new TopologyView(this);
  topology_dock_ = new QDockWidget("Topology", this);
  topology_dock_->setObjectName("Topology");
  topology_dock_->setWidget(topology_);
  topology_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                              QDockWidget::DockWidgetClosable);
  // Under the timelines only: the left column (the classroom's texts, the scenario panel) keeps
  // the window's whole height, so that a 1280 x 720 projector still shows its captions.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  addDockWidget(Qt::BottomDockWidgetArea, topology_dock_);
  topology_dock_->hide();
  QToolBar* bar = addToolBar("Cluster");
  bar->setMovable(false);
  topology_action_ = bar->addAction("Topology");
  topology_action_->setShortcut(QKeySequence("Ctrl+T"));
  topology_action_->setCheckable(true);
  topology_action_->setToolTip(
      "The cluster: machines, GPUs, PS and links, tensors moving at the playhead (Ctrl+T)");
  connect(topology_action_, &QAction::toggled, this, &MainWindow::show_topology);
  connect(topology_dock_, &QDockWidget::visibilityChanged, topology_action_, &QAction::setChecked);
  // The classroom's animation reveals the timelines up to a time: the playhead follows it.
  for (TimelineView* view : {timeline_, compare_->view_a(), compare_->view_b()}) {
    connect(view, &TimelineView::reveal_changed, topology_, [this](double trace_s) {
      if (std::isfinite(trace_s)) topology_->set_time_s(trace_s);
    });
  }
}

void MainWindow::show_topology(bool on) {
  topology_dock_->setVisible(on);
  if (on) resizeDocks({topology_dock_}, {std::max(300, height() * 2 / 5)}, Qt::Vertical);
}

}  // namespace replisim::gui
