// The trace every backend writes: events (compute, transfer, step, update, ...) with interned
// strings and the kind of plan op each records, counters, and typed metadata and outcome
// (trace_meta.h). Metrics, reports and exporters read only this, so predicted and measured runs
// are compared by the same code. Backends emit it through a TraceSink (trace_sink.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/plan/kinds.h"
#include "core/trace/trace_meta.h"

namespace replisim::core {

enum class EventKind : uint8_t {
  kCompute = 0,     // an op occupying a device: [start_s, end_s], flop
  kTransfer = 1,    // a tensor from (actor, device) to (peer_actor, peer): bytes, message_id
  kStep = 2,        // one step of a client graph: actor = the client / worker
  kUpdate = 3,      // global_step incremented after a client's step applied its gradients
  kDropped = 4,     // synchronous training: a stale gradient slice dropped by its accumulator
                    // (instant, on the PS; step = the worker's local step, global_step_read = the
                    // worker's local_step, global_step_after = the accumulator's global step)
  kFault = 5,       // a fault happened (instant): actor = the role it hit (or the device for a
                    // slowdown), label = what happened; a slowdown spans [start_s, end_s]
  kCheckpoint = 6,  // the chief writing a checkpoint (label "checkpoint") or summaries
                    // ("summaries"): [start_s, end_s], bytes, global_step_after = the global
                    // step saved
  kRecovery = 7,    // a job failure and its restart: start_s = the death, end_s = training
                    // resumes (the chief restored the checkpoint); actor = the role that died;
                    // global_step_read = the checkpoint's global step, global_step_after = the
                    // global step when the failure was detected
  kCollective = 8,  // (version 5) a rank's part of one all-reduce (core/runtime/collectives.h):
                    // [start_s, end_s] on its device, label = Horovod's timeline name of the
                    // phase ("NEGOTIATE_ALLREDUCE", "NCCL_ALLREDUCE", ...), op kAllReduce and
                    // op_index = the first tensor's op, bytes = the fused buffer, message_id = the
                    // collective's number in the run. Its chunks are kTransfer events of op
                    // kAllReduce between the ranks' devices.
};
const char* event_kind_name(EventKind kind);

inline constexpr uint32_t kNoString = 0xFFFFFFFFu;

// TraceEvent::flags.
inline constexpr uint8_t kEventOpenEnded = 1;  // kFault: a window without an end (it lasts to
                                               // the end of the run; end_s lies past it)
inline constexpr uint8_t kEventSummaries = 2;  // kCheckpoint: the chief writing summaries
// kFault: a death no fault of the plan caused (a real run's task killed from outside: kill -9,
// the OOM killer), as the run observed it.
inline constexpr uint8_t kEventUnplanned = 4;
inline constexpr uint8_t kKnownEventFlags = kEventOpenEnded | kEventSummaries | kEventUnplanned;

// One event. String fields are indices into Trace::strings (kNoString when absent).
// `client` names the client graph (role) whose step the event belongs to; `step` is that
// client's local step (the global step in in-graph), or the batch index for an input op.
// `op` is the kind of the plan op it records (compute: the op; transfer: its send; update: the
// global step increment; dropped: the accumulate; none for steps, faults, checkpoints and
// recoveries). `producer`, for a transfer, is the kind of the op whose output the tensor is
// (kReadVariable: a variable's value, kBackward or kAggregate: a gradient, kTokenDequeue: a
// synchronous-training token, ...).
struct TraceEvent {
  EventKind kind = EventKind::kCompute;
  std::optional<OpKind> op;
  std::optional<OpKind> producer;
  uint8_t flags = 0;                // kEvent* bits
  uint32_t actor = kNoString;       // role that owns the op ("worker0", "ps1", "client")
  uint32_t device = kNoString;      // "pc1/gpu0"
  uint32_t label = kNoString;       // op name ("forward/conv1")
  uint32_t client = kNoString;      // owning client graph's role name
  uint32_t peer_actor = kNoString;  // transfers: receiving role
  uint32_t peer = kNoString;        // transfers: receiving device
  int64_t step = -1;
  double start_s = 0;
  double end_s = 0;
  double bytes = 0;
  double flop = 0;
  int64_t message_id = -1;
  int64_t global_step_read = -1;   // updates: global_step the worker read at the start of its step
  int64_t global_step_after = -1;  // updates: global_step after this increment
  int32_t samples = 0;             // updates: samples whose gradients were applied
  // The op it records in its client's step graph (TraceMeta::graphs, found by `client`):
  // compute, update and dropped events their op, transfers their send, a serialisation its send
  // and a deserialisation its recv; -1: none, or a trace of format version 3 or older.
  int32_t op_index = -1;
  // Transfers: what bounded the tensor's rate, when the backend knows it ("ps0 RPC ceiling
  // 200 MB/s", "pc1/nic up", "the 150 MB/s stream ceiling", "latency and per-message
  // overhead"); kNoString: not known (real runs).
  uint32_t bound = kNoString;
};

// A sampled counter (global_step, queue depths): value from time_s on.
struct CounterSample {
  uint32_t name = kNoString;
  double time_s = 0;
  double value = 0;
};

class Trace {
 public:
  TraceMeta meta;      // written before the events (trace_meta_from_plan in backend.h)
  RunOutcome outcome;  // written after them
  std::vector<TraceEvent> events;
  std::vector<CounterSample> counters;

  // Index of `text` in the string table, adding it when new. Not thread-safe.
  uint32_t intern(const std::string& text);
  const std::string& str(uint32_t index) const;
  // Index of `text` in the string table, or kNoString when it is not there.
  uint32_t find(const std::string& text) const;
  const std::vector<std::string>& strings() const { return strings_; }
  // The plan's notes, then the run's (what reports print under the table).
  std::vector<std::string> notes() const;

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> index_;
};

// Lane of an event in timeline views: "compute", "send"/"recv" (transfers), "step", "update".
const char* lane_name(EventKind kind);

// The native (binary, versioned) trace file: core/trace_format.h.

}  // namespace replisim::core
