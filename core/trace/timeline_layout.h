// Where each event of a trace is drawn: one process (row group) per actor, lanes inside it
// (compute per device, send, recv, step, checkpoint, recovery), concurrent slices of one lane on
// numbered sub-lanes so that slices never overlap, instants (faults, dropped gradients, updates)
// and counters. Computed once here and drawn by every view: the Chrome trace exporter, next the
// GUI.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace replisim::core {

// The part of a run to lay out, in seconds of its clock: slices that overlap [from_s, until_s]
// (whole, not clipped), instants and counter samples inside it. The default is everything.
struct TimelineWindow {
  double from_s = 0;
  double until_s = std::numeric_limits<double>::infinity();
  bool whole() const { return from_s <= 0 && std::isinf(until_s); }
  bool overlaps(double start_s, double end_s) const {
    return end_s >= from_s && start_s <= until_s;
  }
};

// A row group: one actor (a role, or a device or link a fault hit).
struct TimelineProcess {
  uint32_t actor = kNoString;  // string index in the trace
};

// One lane of a process: `name` is its kind ("compute <device>", "send", "recv", "step",
// "checkpoint", "recovery") and `sub_lane` its number among that kind's concurrent lanes.
struct TimelineLane {
  int process = -1;
  std::string name;
  int sub_lane = 0;
  std::string label() const { return name + "." + std::to_string(sub_lane); }
};

// A span drawn on a lane. A transfer has two: its sending half on the sender's "send" lanes,
// then its receiving half on the receiver's "recv" lanes.
struct TimelineSlice {
  const TraceEvent* event = nullptr;  // into the trace (which must outlive the layout)
  int process = -1;
  int lane = -1;  // into TimelineLayout::lanes
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // >= start_ns
  bool receiver_side = false;
};

// A point in time on a process: a fault, a dropped gradient or an update.
struct TimelineInstant {
  const TraceEvent* event = nullptr;
  int process = -1;
};

struct TimelineLayout {
  // In the order they are first needed: the metadata's roles, then the actors of the slices, of
  // the instants and of the counters in that order. A view numbering them in this order numbers
  // them as the Chrome trace does.
  std::vector<TimelineProcess> processes;
  // processes[0, roles_and_slices) are roles or hold slices; the others only instants or
  // counters (a link or device a fault hit).
  size_t roles_and_slices = 0;
  // Lanes in display order: by process, then lane kind (alphabetical), then sub-lane.
  std::vector<TimelineLane> lanes;
  std::vector<TimelineSlice> slices;           // in trace order
  std::vector<TimelineInstant> instants;       // in trace order
  std::vector<const CounterSample*> counters;  // in trace order
  int counter_process = -1;     // where counters are drawn: the PS holding global_step (-1: none)
  int64_t max_message_id = -1;  // over the whole trace, window or not
};

// Times in whole nanoseconds (slices nest exactly at that resolution).
int64_t timeline_ns(double seconds);

// Lays out the events of `trace` inside `window`.
TimelineLayout layout_timeline(const Trace& trace, const TimelineWindow& window = {});

}  // namespace replisim::core
