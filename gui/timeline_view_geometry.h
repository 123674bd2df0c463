// TimelineView's mapping between time and x, content rows and screen y, for one paint or one
// mouse event (private to the view's sources).
#pragma once

#include <algorithm>
#include <cstdint>

#include "gui/timeline_view.h"

namespace replisim::gui {

struct TimelineView::Geometry {
  int width = 0;  // of the painted area, pixels
  int height = 0;
  double from_s = 0;  // the axis's visible range
  double until_s = 1;
  double offset_s = 0;  // the view's: trace time = axis time - offset
  int scroll_y = 0;     // content pixels scrolled off the top

  double canvas_width() const { return std::max(1, width - kLabelWidthPx); }
  double x_axis(double axis_s) const {
    return kLabelWidthPx + (axis_s - from_s) * canvas_width() / (until_s - from_s);
  }
  double x(double trace_s) const { return x_axis(trace_s + offset_s); }
  double x_ns(int64_t trace_ns) const { return x(double(trace_ns) * 1e-9); }
  double axis_time(double px) const {
    return from_s + (px - kLabelWidthPx) * (until_s - from_s) / canvas_width();
  }
  double trace_time(double px) const { return axis_time(px) - offset_s; }
  int screen_y(int content_y) const { return kRulerHeightPx + content_y - scroll_y; }
};

}  // namespace replisim::gui
