// The tensors of the step protocol (internal to real/node/): a send op's tensor to its recv's
// task (copied between the two devices' memories when both ends are here, else chunked over one
// of the peer's connections, crossing PCIe first when it leaves a GPU), an op's output to the
// other tasks whose ops take it directly (the gradient, or a notice), and the tensors and notices
// arriving (assembled chunk by chunk in place, checked against the plan, kept when they come
// before their step). One part of a task's step parts (StepRunner): it owns the tensors arriving
// and the frames kTensor and kControl (FrameRouter).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "real/node/frame_router.h"
#include "real/node/part.h"
#include "real/node/step_runner.h"

namespace replisim::real::detail {

class TensorTransfers {
 public:
  // `host`, `runner` and `plan` outlive it.
  TensorTransfers(StepRunner::Host& host, StepRunner& runner, const core::Plan& plan,
                  uint32_t self);
  void own_frames(FrameRouter& router);

  // Send op `op` of graph g: its tensor leaves (the op completes when its last byte was written,
  // or when the copy is in place).
  void send(int g, int op);
  // Op `op` of this task done: every other task with an op that takes its output directly hears
  // of it, with the output when it is a gradient of the size the plan gives it.
  void notify_remote(Part& p, int op);
  // A tensor or notice for the step in progress (also one kept from before the step began).
  void arrive(Part& p, const Early& arrival);
  // Where the bytes of a tensor frame's chunk go (Mesh::Handler::tensor_destination).
  uint8_t* tensor_destination(uint32_t peer, const FrameHeader& header);
  // The tensors a dead peer was sending are dropped.
  void drop_from(uint32_t peer);

 private:
  void send_tensor(int g, int op, BufferPtr value, size_t bytes, double start_s);
  // `bytes` of `value` to `to` in chunks over one connection (in order; tensors take the peer's
  // connections in turn, platform.transport.connections_per_peer); `written` after the last.
  void send_chunks(uint32_t to, const Part& p, int op, BufferPtr value, size_t bytes, double time_s,
                   std::function<void()> written);
  void tensor_in_place(Part& p, int send_op, BufferPtr data, double start_s);
  void on_tensor(uint32_t peer, const FrameHeader& header);
  void on_control(uint32_t peer, const FrameHeader& header);
  void deliver(Part& p, int64_t step, Early arrival, const char* what);
  BufferPtr zeros(size_t bytes);

  StepRunner::Host& host_;
  StepRunner& runner_;
  const core::Plan& plan_;
  uint32_t self_;
  std::shared_ptr<core::Bytes> zeros_;
  // Tensors arriving: (peer, graph, step, send op) -> buffer.
  std::map<std::tuple<uint32_t, int, int64_t, int>, Incoming> incoming_;
  int64_t next_message_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the mesh's callbacks
};

}  // namespace replisim::real::detail
