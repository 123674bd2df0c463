// What a task does with the frames of the step protocol its peers send (RUN, DONE, tensors,
// notices), after checking that the frame makes sense for the plan and for the step in progress
// (a peer that breaks the protocol fails the job, named).
#include <algorithm>
#include <cmath>

#include "real/node/payload.h"
#include "real/node/step_runner.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

void StepRunner::own_frames(FrameRouter& router) {
  router.own(FrameType::kRun, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (!host_.stopping()) on_run(peer, h, payload);
  });
  router.own(FrameType::kDone,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (!host_.stopping()) on_done(peer, h, payload);
             });
  router.own(FrameType::kTensor, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (!host_.stopping()) on_tensor(peer, h);
  });
  router.own(FrameType::kControl, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (!host_.stopping()) on_control(peer, h);
  });
}

Part& StepRunner::part_of_frame(uint32_t peer, const FrameHeader& h, bool from_owner) {
  const uint64_t g =
      h.type == FrameType::kTensor || h.type == FrameType::kControl ? h.tensor >> 32 : h.tensor;
  if (g >= parts_.size())
    throw FrameError("a frame for graph " + std::to_string(g) + " of " +
                     std::to_string(parts_.size()));
  Part& p = parts_[size_t(g)];
  if (from_owner && peer != p.owner_task) {
    throw FrameError(std::string(frame_type_name(h.type)) + " for graph " + std::to_string(g) +
                     " from a task that is not its client");
  }
  return p;
}

void StepRunner::on_run(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  Part& p = part_of_frame(peer, h, true);
  if (p.owner || p.steps.op_count() == 0) {
    throw FrameError("run for graph " + std::to_string(p.index) + ", which has no ops here");
  }
  if (p.active || h.step <= p.step) {
    throw FrameError("run of step " + std::to_string(h.step) + " of graph " +
                     std::to_string(p.index) + " while step " + std::to_string(p.step) +
                     (p.active ? " runs" : " was the last"));
  }
  begin_part(p, h.step, unpack_i64(payload, h.length, 0));
}

void StepRunner::on_done(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  Part& p = part_of_frame(peer, h, false);
  if (!p.owner || !p.active || h.step != p.step ||
      std::find(p.participants.begin(), p.participants.end(), peer) == p.participants.end() ||
      p.done_parts >= p.participants.size()) {
    throw FrameError("done for step " + std::to_string(h.step) + " of graph " +
                     std::to_string(p.index) + ", which is not waiting for it");
  }
  const int64_t read = unpack_i64(payload, h.length, 0);
  const int64_t now = unpack_i64(payload, h.length, 1);
  if (read >= 0) p.read_seen = read;
  if (now >= 0) host_.saw_global_step(now);
  ++p.done_parts;
  maybe_finish_step(p);
}

// The bytes a tensor from (graph, op) has: a send's, or the gradient an op hands over directly.
static size_t expected_bytes(const core::Plan& plan, const Part& p, int op) {
  const Op& o = p.graph->ops[size_t(op)];
  if (o.kind == OpKind::kSend) return size_t(std::llround(o.bytes));
  const int v = p.gradient_variable[size_t(op)];
  return v >= 0 ? 4 * float_count(plan.variables[size_t(v)].bytes) : 0;
}

// Checks that `peer` may send this task (graph, op)'s tensor: a send whose recv runs here, or
// an op whose output an op here takes directly.
static int checked_op(const Part& p, uint32_t peer, uint32_t self, uint64_t tensor) {
  const uint64_t op = tensor & 0xFFFFFFFFu;
  const core::ClientGraph& g = *p.graph;
  if (op >= g.ops.size())
    throw FrameError("a tensor of op " + std::to_string(op) + " of " +
                     std::to_string(g.ops.size()));
  const Op& o = g.ops[size_t(op)];
  const bool ours = o.kind == OpKind::kSend
                        ? p.task_of_op[size_t(o.peer)] == self
                        : std::find(p.notify[size_t(op)].begin(), p.notify[size_t(op)].end(),
                                    self) != p.notify[size_t(op)].end();
  if (p.task_of_op[size_t(op)] != peer || !ours) {
    throw FrameError("a tensor of op " + o.name + ", which this task does not take from it");
  }
  return int(op);
}

uint8_t* StepRunner::tensor_destination(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(peer, h, false);
  const int op = checked_op(p, peer, setup_.self, h.tensor);
  Incoming& in = incoming_[{peer, p.index, h.step, op}];
  if (h.chunk == 0) {
    in.buffer = std::make_shared<Bytes>(expected_bytes(plan_, p, op));
    in.filled = 0;
    // The transfer's start: when its first bytes reach this task (the sender queued it at
    // h.time_s, maybe behind other tensors on the connection and in its socket's buffer), as a
    // simulated transfer starts when its bytes start to move.
    in.start_s = std::max(h.time_s, now_s());
  }
  if (!in.buffer) throw FrameError("a tensor chunk without its first");
  if (in.filled + h.length > in.buffer->size()) {
    throw FrameError("tensor " + p.graph->ops[size_t(op)].name + " longer than its " +
                     std::to_string(in.buffer->size()) + " bytes");
  }
  return in.buffer->data() + in.filled;
}

void StepRunner::on_tensor(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(peer, h, false);
  const int op = checked_op(p, peer, setup_.self, h.tensor);
  const auto key = std::make_tuple(peer, p.index, h.step, op);
  if (h.length == 0 && h.chunk == 0) {
    incoming_[key] = {std::make_shared<Bytes>(expected_bytes(plan_, p, op)), 0, h.time_s};
  }
  auto found = incoming_.find(key);
  if (found == incoming_.end()) throw FrameError("a tensor chunk without its first");
  found->second.filled += h.length;
  if (h.chunk + 1 < h.chunks) return;
  Incoming in = std::move(found->second);
  incoming_.erase(found);
  if (in.filled != in.buffer->size()) {
    throw FrameError("tensor " + p.graph->ops[size_t(op)].name + " of " +
                     std::to_string(in.filled) + " bytes where the plan says " +
                     std::to_string(in.buffer->size()));
  }
  const bool send = p.graph->ops[size_t(op)].kind == OpKind::kSend;
  if (p.active && h.step == p.step) {
    if (send) {
      arrive_tensor(p, op, std::move(in.buffer), in.start_s);
    } else {
      arrive_control(p, op, std::move(in.buffer));
    }
  } else if (h.step > p.step && h.step <= p.step + 2) {
    p.early[h.step].push_back({send, op, std::move(in.buffer), in.start_s});
  } else {
    throw FrameError("a tensor for step " + std::to_string(h.step) + " of graph " +
                     std::to_string(p.index) + ", which is not in progress here");
  }
}

void StepRunner::on_control(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(peer, h, false);
  const int op = checked_op(p, peer, setup_.self, h.tensor);
  if (p.active && h.step == p.step) {
    arrive_control(p, op, nullptr);
  } else if (h.step > p.step && h.step <= p.step + 2) {
    p.early[h.step].push_back({false, op, nullptr, h.time_s});
  } else {
    throw FrameError("a notice for step " + std::to_string(h.step) + " of graph " +
                     std::to_string(p.index) + ", which is not in progress here");
  }
}

}  // namespace replisim::real::detail
