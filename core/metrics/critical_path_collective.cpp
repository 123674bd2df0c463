#include "core/metrics/critical_path_collective.h"

#include <algorithm>
#include <cmath>

namespace replisim::core::path_detail {
namespace {

constexpr double kSlackS = 1e-12;
// A collective that began within this of the previous one's end was queued behind it (the
// backends begin the next at the previous one's completion, in the same event).
constexpr double kQueuedSlackS = 1e-9;

}  // namespace

bool CollectiveIndex::add(const Trace& trace, const TraceEvent& e, size_t index, int graph) {
  if (e.kind == EventKind::kTransfer && e.producer == OpKind::kAllReduce) {
    chunks_[{e.step, e.op_index}].push_back(index);
    return true;
  }
  if (e.kind != EventKind::kCollective) return false;
  if (negotiate_label_ == kNoString) negotiate_label_ = trace.find(kNegotiateAllReduce);
  phases_[{graph, e.step}].push_back(index);
  return true;
}

std::optional<CollectiveFollow> CollectiveIndex::follow(const Trace& trace, int graph, int64_t step,
                                                        double end_s) const {
  const auto found = phases_.find({graph, step});
  if (found == phases_.end()) return std::nullopt;
  // Per collective of the step, the span of the rank's reduction phases (after its negotiation).
  struct Span {
    double start_s = 0, end_s = 0;
    int32_t first_op = -1;
    bool negotiated = false;
  };
  std::map<int64_t, Span> spans;  // by message_id
  for (size_t i : found->second) {
    const TraceEvent& e = trace.events[i];
    const bool negotiation = e.label != kNoString && e.label == negotiate_label_;
    auto [it, added] = spans.try_emplace(e.message_id);
    Span& span = it->second;
    span.first_op = e.op_index;
    if (negotiation) {
      span.negotiated = true;
      if (added) span.start_s = span.end_s = e.end_s;  // no reduction yet: its end
      continue;
    }
    if (added || span.end_s == span.start_s) {
      span.start_s = e.start_s;
      span.end_s = e.end_s;
    } else {
      span.start_s = std::min(span.start_s, e.start_s);
      span.end_s = std::max(span.end_s, e.end_s);
    }
  }
  int64_t chosen = -1;
  for (const auto& [id, span] : spans) {
    if (span.end_s > end_s + kSlackS) continue;
    if (chosen < 0 || span.end_s > spans.at(chosen).end_s) chosen = id;
  }
  if (chosen < 0) return std::nullopt;
  const Span& c = spans.at(chosen);
  CollectiveFollow f;
  f.data_start_s = c.start_s;
  f.data_end_s = c.end_s;
  f.first_op = c.first_op;
  f.negotiated = c.negotiated;
  // The rank's next collective of the step (the first to begin after this one) bounds the buffer;
  // the one that ended as this one began held it.
  double next_start_s = 0;
  for (const auto& [id, span] : spans) {
    if (id == chosen) continue;
    if (span.start_s > c.start_s && (f.next_first_op < 0 || span.start_s < next_start_s)) {
      f.next_first_op = span.first_op;
      next_start_s = span.start_s;
    }
    if (std::abs(span.end_s - c.start_s) <= kQueuedSlackS && span.end_s > span.start_s) {
      f.queued = true;
      f.queued_behind_end_s = span.end_s;
    }
  }
  // The collective's chunks: those of its first tensor in this step, inside its reduction.
  if (const auto chunks = chunks_.find({step, c.first_op}); chunks != chunks_.end()) {
    double longest_s = -1;
    for (size_t i : chunks->second) {
      const TraceEvent& e = trace.events[i];
      if (e.start_s < f.data_start_s - kSlackS || e.end_s > f.data_end_s + kSlackS) continue;
      if (e.end_s - e.start_s > longest_s) {
        longest_s = e.end_s - e.start_s;
        f.slowest_chunk = int(i);
      }
    }
  }
  return f;
}

}  // namespace replisim::core::path_detail
