// What a task does with the step protocol's RUN and DONE frames its peers send, after checking that
// the frame makes sense for the plan and for the step in progress (a peer that breaks the protocol
// fails the job, named).
#include <algorithm>
#include <cmath>

#include "real/node/payload.h"
#include "real/node/step_runner.h"
#include "real/node/tensor_transfers.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

void StepRunner::own_frames(FrameRouter& router) {
  router.own(channel::kRun, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (!host_.stopping()) on_run(peer, h, payload);
  });
  router.own(channel::kDone, [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
    if (!host_.stopping()) on_done(peer, h, payload);
  });
  transfers_->own_frames(router);
}

void StepRunner::on_run(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  Part& p = part_of_frame(parts_, peer, h, true);
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
  Part& p = part_of_frame(parts_, peer, h, false);
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

}  // namespace replisim::real::detail
