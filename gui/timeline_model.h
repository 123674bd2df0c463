// The data a timeline view draws, derived once from one run of a trace: the shared timeline
// layout (core/trace/timeline_layout.h) indexed per lane for fast range queries, counter tracks
// (global_step and every counter the trace carries), link utilisation tracks derived from the
// transfers, statistics of a time range and search by op name. No Qt widget type; read-only
// after construction, so one model can be shared by several views and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/metrics.h"
#include "core/trace/timeline_layout.h"
#include "core/trace/trace.h"
#include "gui/categories.h"

namespace replisim::gui {

// One lane of the layout with its slices sorted by start. Slices of one lane never overlap
// (the layout puts concurrent ones on sub-lanes), so the ends are sorted too.
struct LaneSlices {
  int process = -1;
  std::string label;               // "compute pc1/gpu0", "send.1", ...
  std::vector<int64_t> start_ns;   // per slice, ascending
  std::vector<int64_t> end_ns;     // per slice, ascending
  std::vector<uint32_t> slice;     // index into TimelineLayout::slices
  std::vector<Category> category;  // per slice
  // Indices [first, last) of the slices that overlap [from_ns, until_ns].
  std::pair<size_t, size_t> overlapping(int64_t from_ns, int64_t until_ns) const;
};

// A value that holds from each sample's time until the next: global_step and the trace's counters.
struct CounterTrack {
  std::string name;
  std::vector<double> time_s;  // ascending
  std::vector<double> value;
  double max_value = 0;
  // The value at `time_s` (the last sample at or before it; 0 before the first).
  double value_at(double time_s) const;
};

// A link direction's use over time from the transfers that cross it (the platform's routes):
// bytes moved by each time, piecewise linear (each transfer at its mean rate).
struct LinkTrack {
  std::string name;  // the platform's channel name ("pc1/nic/up")
  double bandwidth_bytes_per_s = 0;
  double total_bytes = 0;
  std::vector<double> time_s;       // breakpoints, ascending
  std::vector<double> bytes_moved;  // cumulative bytes at each breakpoint
  // Mean utilisation over [from_s, until_s] (bytes moved / (bandwidth x duration)), in [0, ...].
  double utilisation(double from_s, double until_s) const;
};

// The stretches a computing role (a worker, tower or in-graph client) spends inside its client's
// steps with none of its own compute or transfers running, and what held each: the network, its
// peers, the client, a parameter server or a token — core::wait_stretches, the stretches the
// report's wait breakdown counts. Sorted, disjoint.
struct WaitLane {
  int process = -1;
  std::vector<int64_t> start_ns;
  std::vector<int64_t> end_ns;
  std::vector<core::WaitCause> cause;
  // Indices [first, last) of the stretches that overlap [from_ns, until_ns].
  std::pair<size_t, size_t> overlapping(int64_t from_ns, int64_t until_ns) const;
};

// Count, time inside the range, mean and max duration of the events of one category and actor
// that overlap a range (and of the actor's waits). Transfers count once, at their sender.
struct RangeStatistic {
  Category category = Category::kOtherOp;
  std::string actor;
  int64_t count = 0;
  double total_s = 0;  // the events' time inside the range (clipped to it)
  double mean_s = 0;   // mean of their whole durations
  double max_s = 0;    // longest whole duration
};

// The time-to-target marker's label: "target accuracy 0.75 at 1.73 s, global step 36" (or
// "target loss 0.5 ..."); `objective` must have reached its target.
std::string objective_marker_text(const core::ObjectiveMetrics& objective);

class TimelineModel {
 public:
  // Takes the run; `source` names it in errors and titles (a path, "in_graph of x.rstrace").
  // Lays it out (layout_timeline): linear in the events plus a sort per lane.
  TimelineModel(core::Trace trace, std::string source);
  TimelineModel(const TimelineModel&) = delete;
  TimelineModel& operator=(const TimelineModel&) = delete;

  const core::Trace& trace() const { return *trace_; }
  const core::TimelineLayout& layout() const { return layout_; }
  const std::string& source() const { return source_; }
  // "<scenario> · <strategy>" (or the source when the trace has no metadata).
  std::string title() const;

  // The extent of the run in seconds: from 0 (or its first event) to its last end.
  double begin_s() const { return begin_s_; }
  double end_s() const { return end_s_; }

  const std::vector<LaneSlices>& lanes() const { return lanes_; }
  // Lanes of process `process` in display order (indices into lanes()).
  const std::vector<int>& lanes_of(int process) const { return process_lanes_[size_t(process)]; }
  int process_count() const { return int(layout_.processes.size()); }
  std::string process_name(int process) const;

  const std::vector<CounterTrack>& counters() const { return counters_; }
  // training.objective's figures from the trace's loss and accuracy counters (core's
  // objective_metrics, over the whole run); nullopt when the trace names no objective target.
  const std::optional<core::ObjectiveMetrics>& objective() const { return objective_; }
  // The busiest link directions (highest bytes / bandwidth first), at most kLinkTracks.
  const std::vector<LinkTrack>& links() const { return links_; }
  static constexpr int kLinkTracks = 4;

  // The wait lane of `process` (nullptr: a parameter server, a sync runner, a role without steps).
  const WaitLane* waits_of(int process) const;

  // For a transfer's sending slice: its receiving slice (and the reverse); -1 when none.
  int partner_slice(int slice) const;

  // Statistics of [from_s, until_s], sorted by category then actor.
  std::vector<RangeStatistic> range_statistics(double from_s, double until_s) const;

  // The first slice after `after` (in time order; -1: from the start, wrapping round) whose op
  // label contains `text` (case-insensitive); -1 when none does. Receiving halves are skipped.
  int find_slice(const std::string& text, int after) const;

  // compute_metrics of the whole run, or the one-line reason it has none (a trace without a
  // measurement window). Computed once, on first use (TraceLoader does it on its thread); the
  // first call must not race another.
  const core::RunMetrics* metrics() const;
  const std::string& metrics_error() const;

 private:
  void index_lanes();
  void build_counters();
  void build_links();
  void build_waits();

  std::unique_ptr<core::Trace> trace_;  // stable address: the layout points into it
  std::string source_;
  core::TimelineLayout layout_;
  std::vector<LaneSlices> lanes_;
  std::vector<std::vector<int>> process_lanes_;
  std::vector<CounterTrack> counters_;
  std::optional<core::ObjectiveMetrics> objective_;
  std::vector<LinkTrack> links_;
  std::vector<WaitLane> waits_;
  std::vector<int> wait_of_process_;  // process -> index into waits_ (-1: none)
  double begin_s_ = 0;
  double end_s_ = 0;
  mutable bool metrics_done_ = false;
  mutable std::optional<core::RunMetrics> metrics_;
  mutable std::string metrics_error_;
};

}  // namespace replisim::gui
