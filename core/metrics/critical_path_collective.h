// What the critical path follows through an all-reduce (critical_path.cpp): a rank's phases of
// each collective (kCollective events), every rank's negotiation spans and the collective's chunk
// transfers, indexed once per trace. Definitions: docs/metrics.md#bound-by.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace.h"

namespace replisim::core::path_detail {

// Horovod's timeline name of the phase in which a rank has reported a tensor ready and waits for
// every other rank to report it (horovod/common/timeline.cc).
inline constexpr const char* kNegotiateAllReduce = "NEGOTIATE_ALLREDUCE";

// How one rank's all-reduce that ended before a time went, for the walk back from an op that
// waited on it.
struct CollectiveFollow {
  double data_start_s = 0;  // the rank's first phase after the negotiation (NCCL_ALLREDUCE, ...)
  double data_end_s = 0;    // its last phase's end
  int slowest_chunk = -1;   // the event index of the collective's longest chunk; -1: none
  // The buffer's tensors: the kAllReduce ops of the rank's graph from first_op up to (not
  // including) next_first_op, the first op of the rank's next collective of the step (-1: to the
  // graph's end). Horovod packs ready tensors in readiness order, which is the graph's order of
  // the kAllReduce ops (backward's), so a buffer is a run of consecutive ones.
  int first_op = -1;
  int next_first_op = -1;
  // Whether the rank's reduction began as its collective before it ended (queued behind it:
  // a rank runs its collectives one at a time), and that one's end.
  bool queued = false;
  double queued_behind_end_s = 0;
  bool negotiated = false;  // the rank has a negotiation span of it
};

class CollectiveIndex {
 public:
  // Records event `index` of graph `graph` (its client's step graph): a kCollective event, or a
  // chunk (kTransfer of producer kAllReduce). Returns false for any other event.
  bool add(const Trace& trace, const TraceEvent& e, size_t index, int graph);
  bool empty() const { return phases_.empty(); }
  // The collective of graph `graph`'s step `step` whose reduction ended last at or before
  // `end_s` (an op of the graph waited on it), or nullopt when it has none.
  std::optional<CollectiveFollow> follow(const Trace& trace, int graph, int64_t step,
                                         double end_s) const;

 private:
  using Key = std::pair<int, int64_t>;         // (graph, step)
  std::map<Key, std::vector<size_t>> phases_;  // a rank's kCollective events of a step
  // Chunks by (step, the collective's first tensor op): their event indices.
  std::map<std::pair<int64_t, int32_t>, std::vector<size_t>> chunks_;
  uint32_t negotiate_label_ = kNoString;
};

}  // namespace replisim::core::path_detail
