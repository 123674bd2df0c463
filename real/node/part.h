// One step graph as a task's runtime holds it (internal to real/node/): the ops of it this task
// runs, who runs the rest, and the step in progress here. Every part of the runtime reads it; the
// step parts (StepRunner, TensorTransfers, VariableOps) change it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/runtime/step_state.h"
#include "core/values/parameter_store.h"  // core::Bytes
#include "real/node/channels.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

using BufferPtr = std::shared_ptr<const core::Bytes>;

// Something for a step that came before the step began here.
struct Early {
  bool tensor = true;  // a tensor (op: its send) or a notice (op: the op done elsewhere)
  int op = -1;
  BufferPtr data;
  double start_s = 0;
  // A tensor already in its recv's device memory (a peer copy: DeviceValues::peer_copy); `data`
  // is then the host copy ops on the host take, or null.
  bool on_device = false;
};

// One step graph and the ops of it this task runs.
struct Part {
  Part(const core::ClientGraph& g, int index, const std::vector<bool>& mine)
      : graph(&g), index(index), mine(mine), steps(g, mine) {}
  const core::ClientGraph* graph;
  int index;
  std::vector<bool> mine;
  core::StepState steps;
  uint32_t owner_task = 0;
  bool owner = false;                         // this task runs the graph's client
  std::vector<uint32_t> participants;         // owner: the other tasks with ops in it
  std::vector<std::vector<uint32_t>> notify;  // per op: tasks whose ops take it directly
  std::vector<uint32_t> task_of_op;
  std::vector<int> gradient_variable;          // per op: the variable whose gradient its output is
  std::vector<std::vector<int>> gradients_of;  // per backward op: the variables it feeds
  // The step in progress here.
  int64_t step = -1;
  bool active = false;
  // Elastic all-reduce rollbacks of this graph's client so far: work begun before one (a
  // compute, a timer) is dropped when it ends, even where the step number comes round again.
  uint64_t attempt = 0;
  int64_t local_step = 0;         // from the client's RUN (sync: the token it holds)
  int64_t global_step_read = -1;  // where global_step lives: its value when the step began here
  std::vector<BufferPtr> out;     // per op: its output this step
  std::vector<std::vector<std::pair<int, BufferPtr>>> gradients;  // per backward op
  std::vector<char> tensor_in;                                    // per recv: its tensor is here
  std::map<int64_t, std::vector<Early>> early;
  // The owner's step in progress (its loop is Node::loop_'s client of this index).
  size_t done_parts = 0;
  bool local_done = false;
  int64_t read_seen = -1;  // global_step read, as the step's DONEs say
};

// The value op `producer` of the step in progress gave `variable` (a backward op's gradient of it,
// or its output; `variable` < 0: its first gradient, or its output); null for no producer.
inline BufferPtr value_for(const Part& p, int producer, int variable) {
  if (producer < 0) return nullptr;
  if (p.graph->ops[size_t(producer)].kind == core::OpKind::kBackward) {
    for (const auto& [v, buffer] : p.gradients[size_t(producer)]) {
      if (v == variable || variable < 0) return buffer;
    }
  }
  return p.out[size_t(producer)];
}

// The part a frame from `peer` names: its tensor field's graph (a tensor's or notice's high 32
// bits). `from_owner`: only the graph's client may send it. Throws FrameError naming what is
// wrong (a graph out of range, a sender that is not the client).
Part& part_of_frame(std::vector<Part>& parts, uint32_t peer, const FrameHeader& header,
                    bool from_owner);
const Part& part_of_frame(const std::vector<Part>& parts, uint32_t peer, const FrameHeader& header,
                          bool from_owner);

// A tensor arriving in chunks from one peer.
struct Incoming {
  std::shared_ptr<core::Bytes> buffer;
  size_t filled = 0;
  double start_s = 0;  // when its first chunk's header arrived here (run clock)
};

}  // namespace replisim::real::detail
