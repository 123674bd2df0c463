#include "real/node/tensor_transfers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "real/node/device_values.h"

namespace replisim::real::detail {

using core::Bytes;
using core::float_count;
using core::Op;
using core::OpKind;

namespace {

// The bytes a tensor from (graph, op) has: a send's, or the gradient an op hands over directly.
size_t expected_bytes(const StepRunner& runner, const Part& p, int op) {
  const Op& o = p.graph->ops[size_t(op)];
  if (o.kind == OpKind::kSend) return size_t(std::llround(o.bytes));
  return 4 * runner.handed_value(p, op).first;
}

// Checks that `peer` may send this task (graph, op)'s tensor: a send whose recv runs here, or
// an op whose output an op here takes directly.
int checked_op(const Part& p, uint32_t peer, uint32_t self, uint64_t tensor) {
  const uint64_t op = tensor & 0xFFFFFFFFu;
  const core::ClientGraph& g = *p.graph;
  if (op >= g.ops.size()) {
    throw FrameError("a tensor of op " + std::to_string(op) + " of " +
                     std::to_string(g.ops.size()));
  }
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

}  // namespace

TensorTransfers::TensorTransfers(StepRunner::Host& host, StepRunner& runner, const core::Plan& plan,
                                 uint32_t self)
    : host_(host), runner_(runner), plan_(plan), self_(self) {}

void TensorTransfers::own_frames(FrameRouter& router) {
  router.own(
      FrameType::kTensor,
      [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
        if (!host_.stopping()) on_tensor(peer, h);
      },
      /*chunked=*/true);
  router.own(channel::kControl, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (!host_.stopping()) on_control(peer, h);
  });
}

BufferPtr TensorTransfers::zeros(size_t bytes) {
  if (!zeros_ || zeros_->size() < bytes) zeros_ = std::make_shared<Bytes>(bytes);
  return zeros_;
}

void TensorTransfers::send(int g, int op_index) {
  Part& p = runner_.parts()[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const size_t bytes = size_t(std::llround(op.bytes));
  const double start_s = host_.now_s();
  DeviceValues* values = runner_.device_values();
  if (values != nullptr && values->sends_from_device(g, op_index)) {
    if (p.task_of_op[size_t(op.peer)] == self_ && values->receives_on_device(g, op.peer)) {
      // Between two devices of this task with memories of their own: a peer copy, on the
      // target's upload stream.
      auto copy = std::make_shared<BufferPtr>();
      runner_.run_for_step(
          values->uploads(p.graph->ops[size_t(op.peer)].device), g, p.step,
          [values, g, op_index, copy] { *copy = values->peer_copy(g, op_index); },
          [this, g, op_index, start_s, copy] {
            arrive(runner_.parts()[size_t(g)], {true, op_index, *copy, start_s, true});
          });
      return;
    }
    // The tensor leaves its device: downloaded into host memory (on the device's download
    // stream, beside its compute), then sent.
    auto value = std::make_shared<BufferPtr>();
    runner_.run_for_step(
        values->downloads(op.device), g, p.step,
        [values, g, op_index, bytes, value] { *value = values->download_sent(g, op_index, bytes); },
        [this, g, op_index, start_s, value, bytes] {
          send_tensor(g, op_index, *value, bytes, start_s);
        });
    return;
  }
  BufferPtr value =
      value_for(p, op.inputs.empty() ? -1 : op.inputs[0], p.gradient_variable[size_t(op_index)]);
  if (!value) {
    value = zeros(bytes);
  } else if (value->size() < bytes) {  // a tensor smaller than the plan's edge: padded
    auto padded = std::make_shared<Bytes>(bytes);
    std::memcpy(padded->data(), value->data(), value->size());
    value = std::move(padded);
  }
  send_tensor(g, op_index, std::move(value), bytes, start_s);
}

// A tensor in host memory to its recv's task: copied when both ends are here, else in frames.
void TensorTransfers::send_tensor(int g, int op_index, BufferPtr value, size_t bytes,
                                  double start_s) {
  const Part& p = runner_.parts()[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const uint32_t to = p.task_of_op[size_t(op.peer)];
  if (to == self_) {  // both ends here: a copy between the two devices' memories
    auto copy = std::make_shared<BufferPtr>();
    runner_.run_for_step(
        runner_.copier(), g, p.step,
        [copy, value, bytes] {
          *copy = std::make_shared<Bytes>(value->begin(), value->begin() + long(bytes));
        },
        [this, g, op_index, start_s, copy] {
          arrive(runner_.parts()[size_t(g)], {true, op_index, *copy, start_s});
        });
    return;
  }
  const int64_t step = p.step;
  send_chunks(to, p, op_index, std::move(value), bytes, start_s,
              [this, g, op_index, step, alive = std::weak_ptr<bool>(alive_)] {
                if (alive.expired()) return;
                const Part& part = runner_.parts()[size_t(g)];
                if (host_.stopping() || !part.active || part.step != step) return;
                runner_.loop().complete(g, op_index);
              });
}

void TensorTransfers::send_chunks(uint32_t to, const Part& p, int op_index, BufferPtr value,
                                  size_t bytes, double time_s, std::function<void()> written) {
  const int slot = host_.next_slot(to);
  const size_t chunks = std::max<size_t>(1, (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
  for (size_t i = 0; i < chunks; ++i) {
    FrameHeader h;
    h.type = FrameType::kTensor;
    h.step = p.step;
    h.tensor = (uint64_t(p.index) << 32) | uint64_t(op_index);
    h.chunk = uint32_t(i);
    h.chunks = uint32_t(chunks);
    h.time_s = time_s;
    const size_t offset = i * kDefaultChunkBytes;
    const size_t length = std::min<size_t>(kDefaultChunkBytes, bytes - std::min(bytes, offset));
    host_.send_chunk(to, h, value->data() + offset, length, value,
                     i + 1 == chunks ? written : std::function<void()>(), slot);
  }
}

void TensorTransfers::notify_remote(Part& p, int op_index) {
  const std::vector<uint32_t>& to = p.notify[size_t(op_index)];
  if (to.empty()) return;
  const auto [floats, value] = runner_.handed_value(p, op_index);
  const size_t bytes = 4 * floats;
  const bool with_data = value && value->size() == bytes && bytes > 0;
  for (uint32_t t : to) {
    if (!with_data) {
      host_.send_frame(t, channel::kControl, p.step, (uint64_t(p.index) << 32) | uint64_t(op_index),
                       {});
      continue;
    }
    send_chunks(t, p, op_index, value, bytes, host_.now_s(), {});
  }
}

void TensorTransfers::arrive(Part& p, const Early& arrival) {
  if (!arrival.tensor) {  // a notice, with the producer's output when it carries one
    if (arrival.data) p.out[size_t(arrival.op)] = arrival.data;
    runner_.loop().complete(p.index, arrival.op);
    return;
  }
  const int send_op = arrival.op;
  const int recv = p.graph->ops[size_t(send_op)].peer;
  DeviceValues* values = runner_.device_values();
  if (!arrival.on_device && values != nullptr && values->receives_on_device(p.index, recv)) {
    // The tensor reaches a device with a memory of its own from another device: uploaded there,
    // on the device's upload stream (the transfer ends when it is there).
    const int g = p.index;
    runner_.run_for_step(
        values->uploads(p.graph->ops[size_t(recv)].device), g, p.step,
        [values, g, recv, data = arrival.data] {
          if (data) values->upload_received(g, recv, *data);
        },
        [this, g, send_op, data = arrival.data, start_s = arrival.start_s] {
          tensor_in_place(runner_.parts()[size_t(g)], send_op, data, start_s);
        });
    return;
  }
  tensor_in_place(p, send_op, arrival.data, arrival.start_s);
}

void TensorTransfers::tensor_in_place(Part& p, int send_op, BufferPtr data, double start_s) {
  const int recv = p.graph->ops[size_t(send_op)].peer;
  p.out[size_t(recv)] = std::move(data);
  p.tensor_in[size_t(recv)] = 1;
  host_.recorder().transfer(p.index, send_op, p.step, start_s, std::max(start_s, host_.now_s()),
                            (int64_t(self_) << 40) | next_message_++, "");  // bound: not known
  runner_.loop().complete(p.index, send_op);
}

uint8_t* TensorTransfers::tensor_destination(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(runner_.parts(), peer, h, false);
  const int op = checked_op(p, peer, self_, h.tensor);
  Incoming& in = incoming_[{peer, p.index, h.step, op}];
  if (h.chunk == 0) {
    in.buffer = std::make_shared<Bytes>(expected_bytes(runner_, p, op));
    in.filled = 0;
    // The transfer's start: when its first bytes reach this task (the sender queued it at
    // h.time_s, maybe behind other tensors on the connection and in its socket's buffer), as a
    // simulated transfer starts when its bytes start to move.
    in.start_s = std::max(h.time_s, host_.now_s());
  }
  if (!in.buffer) throw FrameError("a tensor chunk without its first");
  if (in.filled + h.length > in.buffer->size()) {
    throw FrameError("tensor " + p.graph->ops[size_t(op)].name + " longer than its " +
                     std::to_string(in.buffer->size()) + " bytes");
  }
  return in.buffer->data() + in.filled;
}

void TensorTransfers::on_tensor(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(runner_.parts(), peer, h, false);
  const int op = checked_op(p, peer, self_, h.tensor);
  const auto key = std::make_tuple(peer, p.index, h.step, op);
  if (h.length == 0 && h.chunk == 0) {
    incoming_[key] = {std::make_shared<Bytes>(expected_bytes(runner_, p, op)), 0, h.time_s};
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
  deliver(p, h.step,
          {p.graph->ops[size_t(op)].kind == OpKind::kSend, op, std::move(in.buffer), in.start_s},
          "tensor");
}

void TensorTransfers::on_control(uint32_t peer, const FrameHeader& h) {
  Part& p = part_of_frame(runner_.parts(), peer, h, false);
  const int op = checked_op(p, peer, self_, h.tensor);
  deliver(p, h.step, {false, op, nullptr, h.time_s}, "notice");
}

// For the step in progress: it arrives; for one of the next two: kept until that step begins.
void TensorTransfers::deliver(Part& p, int64_t step, Early arrival, const char* what) {
  if (p.active && step == p.step) {
    arrive(p, arrival);
  } else if (step > p.step && step <= p.step + 2) {
    p.early[step].push_back(std::move(arrival));
  } else {
    throw FrameError(std::string("a ") + what + " for step " + std::to_string(step) + " of graph " +
                     std::to_string(p.index) + ", which is not in progress here");
  }
}

void TensorTransfers::drop_from(uint32_t peer) {
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    it = std::get<0>(it->first) == peer ? incoming_.erase(it) : std::next(it);
  }
}

}  // namespace replisim::real::detail
