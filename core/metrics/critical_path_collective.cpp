#include "core/metrics/critical_path_collective.h"

#include <algorithm>

namespace replisim::core::path_detail {
namespace {

constexpr double kSlackS = 1e-12;

}  // namespace

bool CollectiveIndex::add(const Trace& trace, const TraceEvent& e, size_t index, int graph) {
  if (e.kind == EventKind::kTransfer && e.producer == OpKind::kAllReduce) {
    chunks_[{e.step, e.op_index}].push_back(index);
    return true;
  }
  if (e.kind != EventKind::kCollective) return false;
  if (negotiate_label_ == kNoString) negotiate_label_ = trace.find(kNegotiateAllReduce);
  if (e.label != kNoString && e.label == negotiate_label_) {
    negotiations_[e.message_id].emplace_back(index, graph);
  }
  phases_[{graph, e.step}].push_back(index);
  return true;
}

std::optional<CollectiveFollow> CollectiveIndex::follow(const Trace& trace, int graph, int64_t step,
                                                        double end_s) const {
  const auto found = phases_.find({graph, step});
  if (found == phases_.end()) return std::nullopt;
  // Per collective of the step, the span of the rank's phases after its negotiation.
  std::map<int64_t, std::pair<double, double>> data;  // message_id -> (start, end)
  std::map<int64_t, int32_t> first_op;                // message_id -> its first tensor's op
  for (size_t i : found->second) {
    const TraceEvent& e = trace.events[i];
    if (e.label != kNoString && e.label == negotiate_label_) continue;
    auto [it, added] = data.emplace(e.message_id, std::make_pair(e.start_s, e.end_s));
    if (!added) {
      it->second.first = std::min(it->second.first, e.start_s);
      it->second.second = std::max(it->second.second, e.end_s);
    }
    first_op.emplace(e.message_id, e.op_index);
  }
  int64_t chosen = -1;
  for (const auto& [id, span] : data) {
    if (span.second > end_s + kSlackS) continue;
    if (chosen < 0 || span.second > data.at(chosen).second) chosen = id;
  }
  if (chosen < 0) return std::nullopt;
  CollectiveFollow f;
  f.data_start_s = data.at(chosen).first;
  f.data_end_s = data.at(chosen).second;
  // The collective's chunks: those of its first tensor in this step, inside its data phase.
  if (const auto chunks = chunks_.find({step, first_op.at(chosen)}); chunks != chunks_.end()) {
    double longest_s = -1;
    for (size_t i : chunks->second) {
      const TraceEvent& c = trace.events[i];
      if (c.start_s < f.data_start_s - kSlackS || c.end_s > f.data_end_s + kSlackS) continue;
      if (c.end_s - c.start_s > longest_s) {
        longest_s = c.end_s - c.start_s;
        f.slowest_chunk = int(i);
      }
    }
  }
  if (const auto n = negotiations_.find(chosen); n != negotiations_.end()) {
    for (const auto& [i, g] : n->second) {
      const TraceEvent& e = trace.events[i];
      if (e.step != step || e.start_s > f.data_start_s + kSlackS) continue;
      if (f.ready_graph < 0 || e.start_s > f.ready_s) {
        f.ready_graph = g;
        f.ready_op = e.op_index;
        f.ready_s = e.start_s;
      }
    }
  }
  return f;
}

}  // namespace replisim::core::path_detail
