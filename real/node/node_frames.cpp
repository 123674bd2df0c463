// What a task does with each frame its peers send, after checking that the frame makes sense for
// the plan and for the step in progress (a peer that breaks the protocol fails the job, named).
#include <cmath>

#include "real/node/runtime.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

void Node::send_frame(uint32_t peer, FrameType type, int64_t step, uint64_t tensor,
                      const std::string& payload, double time_s) {
  FrameHeader h;
  h.type = type;
  h.step = step;
  h.tensor = tensor;
  h.time_s = time_s;
  quiescence_->sent(peer, type);
  mesh_->send(peer, h, payload);
}

void Node::on_connected() {
  if (coordinator()) {
    job_->coordinator_ready();
    return;
  }
  clock_sync_.estimate();
}

void Node::on_failure(const std::string& why) {
  fail(why);
}

void Node::on_refused(const std::string& line) {
  std::fprintf(stderr, "replisim node %s: %s\n", spec_.tasks[self_].name().c_str(), line.c_str());
}

void Node::on_frame(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  quiescence_->received(peer, h.type);
  const bool from_coordinator = peer == uint32_t(map_.coordinator_task);
  auto require = [&h](bool ok, const char* why) { channel::require(h, ok, why); };
  // The parts that own their frames (the trace's parts travel at the end, while the nodes stop).
  if (router_.route(peer, h, payload)) return;
  require(h.type != channel::kTracePart && h.type != channel::kTracePartKept,
          "to a task that gathers no trace");
  if (stopping_) return;
  switch (h.type) {
    case FrameType::kStop: {
      // While the job is down every task stops at its own detection time; a peer that stops
      // for a job failure says which (this task may not talk to the task that died).
      if (job_fault_ >= 0) return;
      if (h.length > 0) {
        const int64_t fault = unpack_i64(payload, h.length, 0);
        require(job_->started() && fault >= 0 && size_t(fault) < plan_.faults.size() &&
                    plan_.faults[size_t(fault)].kind == core::PlanFaultKind::kJob,
                "naming no job fault of the plan");
        job_down(int(fault));
        return;
      }
      if (from_coordinator || job_->started()) stop();
      return;
    }
    case FrameType::kError: {
      // A peer's words, on one line of printable text.
      std::string why(reinterpret_cast<const char*>(payload), h.length);
      for (char& c : why) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
      }
      fail("stopped because " + why);
      return;
    }
    default:
      throw FrameError(std::string("a ") + channel::name(h.type) + " frame after the handshake");
  }
}

uint8_t* Node::tensor_destination(uint32_t peer, const FrameHeader& header) {
  return steps_->transfers().tensor_destination(peer, header);
}

}  // namespace replisim::real::detail
