// Gathering the run's trace over the transport, for nodes a cluster's launcher started (srun,
// mpirun, ssh; `replisim run` reads its nodes' files instead): at the end every node sends its
// part to the coordinator, which merges them into the run's trace (the report and
// --run-trace-out). A node a fault kills sends its part first. Each node keeps its own part file
// as well, so that `report --merge` can rebuild the run when the coordinator itself died.
// One part of a task's runtime (internal to real/node/): it owns the parts in flight and the
// merged trace, and the frames kTracePart and kTracePartKept (FrameRouter).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/trace/trace.h"
#include "real/cluster.h"
#include "real/node/frame_router.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

class TraceGather {
 public:
  // What it needs of its node. Calls come from the node's thread.
  class Host {
   public:
    virtual ~Host() = default;
    // Queues a frame to `peer` whose payload is `size` bytes at `data`, kept alive by `keep`
    // until written (Mesh::send).
    virtual void send(uint32_t peer, const FrameHeader& header, const uint8_t* data, size_t size,
                      std::shared_ptr<const void> keep) = 0;
    // Runs `work` on the node's thread after delay_s, also while the node stops (never after
    // the node is gone).
    virtual void timer(double delay_s, std::function<void()> work) = 0;
    // Whether `task` is alive as far as this node knows (a fault of the plan killed none).
    virtual bool live(uint32_t task) const = 0;
    // The coordinator could not gather the run's trace: `why`, one line.
    virtual void gather_failed(const std::string& why) = 0;
  };

  // `spec`, `host` outlive it; `part_file` is this node's own part (its --trace-out), written
  // and closed before send_part or gather is called.
  TraceGather(Host& host, const ClusterSpec& spec, uint32_t self, uint32_t coordinator,
              std::string part_file);
  // Registers the frames it owns.
  void own_frames(FrameRouter& router);

  // A node that is not the coordinator: its part to the coordinator, in frames of at most a
  // chunk; `then` runs once the coordinator has it, or kPartKeptWithinS later.
  void send_part(std::function<void()> then);
  // The coordinator's end: once every live task's part is in (or kGatherWithinS passed), the
  // run's trace (run_trace(), or Host::gather_failed); then `close`.
  void gather(std::function<void()> close);
  const std::optional<core::Trace>& run_trace() const { return run_trace_; }

  static constexpr double kPartKeptWithinS = 10;  // a part's receipt, at most
  static constexpr double kGatherWithinS = 30;    // every live task's part, at most
  static constexpr size_t kMaxPartChunks = 4096;  // parts of at most 4 GiB

 private:
  void on_trace_part(uint32_t peer, const FrameHeader& header, const uint8_t* payload);
  void on_part_kept(uint32_t peer);
  void maybe_merge(bool deadline);

  Host& host_;
  const ClusterSpec& spec_;
  uint32_t self_;
  uint32_t coordinator_;
  std::string part_file_;
  bool gathering_ = false;  // coordinator: stopped, waiting for the parts
  std::function<void()> gather_close_;
  std::function<void()> after_part_kept_;
  // A part arriving: its bytes so far, the chunk due next and the count its first announced.
  struct Incoming {
    std::string bytes;
    uint32_t next = 0;
    uint32_t chunks = 0;
  };
  std::map<uint32_t, std::string> parts_in_;  // coordinator: per task, the whole parts
  std::map<uint32_t, Incoming> part_chunks_;  // coordinator: per task, a part arriving
  std::optional<core::Trace> run_trace_;
};

}  // namespace replisim::real::detail
