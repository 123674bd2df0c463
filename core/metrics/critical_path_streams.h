// What the critical path says of a tensor that waited for its connection (critical_path.cpp): the
// transfers of each stream (sending role and device to receiving role and device), indexed once
// per trace, to tell a send queued behind earlier tensors of its stream. Definitions:
// docs/metrics.md#bound-by.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace.h"

namespace replisim::core::path_detail {

// The bound a network share gives the time a tensor waited for its stream, busy with earlier
// tensors of the same sender to the same receiver (a connection carries one tensor at a time:
// TF's gRPC channel between two tasks, sim/sim_network.h); followed by what bounded those
// tensors when the trace says (queued_bound_name).
inline constexpr const char* kQueuedOnStream = "queued behind earlier tensors on the same stream";

// A tensor's wait for its stream.
struct StreamQueue {
  double seconds = 0;            // from when its send was ready to when it took the stream
  uint32_t held_by = kNoString;  // the bound of the earlier tensors that held it longest
};

// kQueuedOnStream, with " (their bound: <held_by>)" when held_by is known.
std::string queued_bound_name(const Trace& trace, uint32_t held_by);

class StreamIndex {
 public:
  // Records event `index` when it is a tensor's transfer between roles (not an all-reduce's
  // chunk, which critical_path_collective.h follows). Call for every event, then sort().
  void add(const TraceEvent& e, size_t index);
  void sort();
  // Of transfer event `index` of `trace`, whose send was ready at `ready_s`: its wait when an
  // earlier transfer of its stream ended as it started (it waited for that one and those before
  // it: the stream was busy from ready_s on); seconds 0 when it started at once or nothing of its
  // stream held it.
  StreamQueue queue_of(const Trace& trace, size_t index, double ready_s) const;

 private:
  using Stream = std::array<uint32_t, 4>;  // actor, device, peer_actor, peer
  static Stream stream_of(const TraceEvent& e) { return {e.actor, e.device, e.peer_actor, e.peer}; }
  std::map<Stream, std::vector<std::pair<double, size_t>>> ends_;  // per stream: (end, event)
};

}  // namespace replisim::core::path_detail
