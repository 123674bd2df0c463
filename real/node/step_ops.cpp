#include "real/node/step_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "real/state/gradient_fill.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

DeviceEngine& StepRunner::engine(int device) {
  auto found = engines_.find(device);
  if (found == engines_.end()) {
    const core::PlatformDevice& d = plan_.platform.devices[size_t(device)];
    found = engines_.emplace(device, std::make_unique<DeviceEngine>(d.name, std::max(1, d.cores)))
                .first;
  }
  return *found->second;
}

BufferPtr StepRunner::zeros(size_t bytes) {
  if (!zeros_ || zeros_->size() < bytes) zeros_ = std::make_shared<Bytes>(bytes);
  return zeros_;
}

// Runs `work` on `device`'s engine, then, on the network thread, records the op's compute (when
// it has flop) and completes it — unless the job stopped or the step moved on meanwhile.
void StepRunner::compute(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int64_t step = p.step;
  const double flop = op.compute_flop;
  const int threads = setup_.threads;
  std::vector<std::pair<int, size_t>> fills;  // (variable, floats) of a backward op
  for (int v : p.gradients_of[size_t(op_index)]) {
    fills.emplace_back(v, float_count(plan_.variables[size_t(v)].bytes));
  }
  ++work_pending_;
  DeviceEngine* device = &engine(op.device);
  device->submit([this, device, g, op_index, step, flop, threads, fills] {
    const double start_s = now_s();
    const double done = device->execute(flop, threads);
    const double end_s = now_s();
    std::vector<std::pair<int, BufferPtr>> gradients;
    for (const auto& [v, n] : fills) {
      auto buffer = std::make_shared<Bytes>(4 * n);
      fill_gradient(reinterpret_cast<float*>(buffer->data()), n, g, step, v, op_index);
      gradients.emplace_back(v, std::move(buffer));
    }
    host_.post([this, g, op_index, step, start_s, end_s, done, gradients = std::move(gradients)] {
      --work_pending_;
      Part& part = parts_[size_t(g)];
      if (host_.stopping() || !part.active || part.step != step) return;
      host_.recorder().compute(g, op_index, step, start_s, end_s, done);
      part.gradients[size_t(op_index)] = gradients;
      loop_->complete(g, op_index);
    });
  });
}

void StepRunner::send(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const size_t bytes = size_t(std::llround(op.bytes));
  BufferPtr value =
      value_for(p, op.inputs.empty() ? -1 : op.inputs[0], p.gradient_variable[size_t(op_index)]);
  if (!value) {
    value = zeros(bytes);
  } else if (value->size() < bytes) {  // a tensor smaller than the plan's edge: padded
    auto padded = std::make_shared<Bytes>(bytes);
    std::memcpy(padded->data(), value->data(), value->size());
    value = std::move(padded);
  }
  const int64_t step = p.step;
  const double start_s = now_s();
  DeviceEngine& source = engine(op.device);
  if (source.gpu() != nullptr && p.graph->ops[size_t(op.peer)].device != op.device) {
    // The tensor leaves the GPU: its bytes cross PCIe into host memory first (on the device's
    // stream, after the ops queued before it).
    ++work_pending_;
    source.submit([this, g, op_index, step, start_s, value, bytes, gpu = source.gpu()] {
      gpu->to_host(bytes);
      host_.post([this, g, op_index, step, start_s, value, bytes] {
        --work_pending_;
        Part& part = parts_[size_t(g)];
        if (host_.stopping() || !part.active || part.step != step) return;
        send_tensor(g, op_index, value, bytes, start_s);
      });
    });
    return;
  }
  send_tensor(g, op_index, std::move(value), bytes, start_s);
}

// A tensor in host memory to its recv's task: copied when both ends are here, else in frames.
void StepRunner::send_tensor(int g, int op_index, BufferPtr value, size_t bytes, double start_s) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int64_t step = p.step;
  const uint32_t to = p.task_of_op[size_t(op.peer)];
  if (to == setup_.self) {  // both ends here: a copy between the two devices' memories
    ++work_pending_;
    copier_->submit([this, g, op_index, step, start_s, value, bytes] {
      auto copy = std::make_shared<Bytes>(value->begin(), value->begin() + long(bytes));
      host_.post([this, g, op_index, step, start_s, copy = std::move(copy)]() mutable {
        --work_pending_;
        Part& part = parts_[size_t(g)];
        if (host_.stopping() || !part.active || part.step != step) return;
        arrive_tensor(part, op_index, std::move(copy), start_s);
      });
    });
    return;
  }
  // Every chunk of a tensor goes over one connection (in order); tensors take the peer's
  // connections in turn (platform.transport.connections_per_peer).
  const int slot = host_.next_slot(to);
  const size_t chunks = std::max<size_t>(1, (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
  for (size_t i = 0; i < chunks; ++i) {
    FrameHeader h;
    h.type = FrameType::kTensor;
    h.step = step;
    h.tensor = (uint64_t(g) << 32) | uint64_t(op_index);
    h.chunk = uint32_t(i);
    h.chunks = uint32_t(chunks);
    h.time_s = start_s;
    const size_t offset = i * kDefaultChunkBytes;
    const size_t length = std::min<size_t>(kDefaultChunkBytes, bytes - std::min(bytes, offset));
    std::function<void()> written;
    if (i + 1 == chunks) {
      written = [this, g, op_index, step, alive = std::weak_ptr<bool>(alive_)] {
        if (alive.expired()) return;
        Part& part = parts_[size_t(g)];
        if (host_.stopping() || !part.active || part.step != step) return;
        loop_->complete(g, op_index);
      };
    }
    host_.send_chunk(to, h, value->data() + offset, length, value, std::move(written), slot);
  }
}

// An op of this task done: every other task with an op that takes its output directly hears of
// it, with the output when it is a gradient of the size the plan gives it.
void StepRunner::notify_remote(Part& p, int op_index) {
  const std::vector<uint32_t>& to = p.notify[size_t(op_index)];
  if (to.empty()) return;
  const int v = p.gradient_variable[size_t(op_index)];
  BufferPtr value = v >= 0 ? value_for(p, op_index, v) : nullptr;
  const size_t bytes = v >= 0 ? 4 * float_count(plan_.variables[size_t(v)].bytes) : 0;
  const bool with_data = value && value->size() == bytes && bytes > 0;
  for (uint32_t t : to) {
    if (!with_data) {
      host_.send_frame(t, FrameType::kControl, p.step,
                       (uint64_t(p.index) << 32) | uint64_t(op_index), {});
      continue;
    }
    const int slot = host_.next_slot(t);
    const size_t chunks = (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes;
    for (size_t i = 0; i < chunks; ++i) {
      FrameHeader h;
      h.type = FrameType::kTensor;
      h.step = p.step;
      h.tensor = (uint64_t(p.index) << 32) | uint64_t(op_index);
      h.chunk = uint32_t(i);
      h.chunks = uint32_t(chunks);
      h.time_s = now_s();
      const size_t offset = i * kDefaultChunkBytes;
      host_.send_chunk(t, h, value->data() + offset,
                       std::min<size_t>(kDefaultChunkBytes, bytes - offset), value, {}, slot);
    }
  }
}

void StepRunner::run_for_step(DeviceEngine& engine, int g, int64_t step,
                              std::function<void()> work, std::function<void()> done) {
  ++work_pending_;
  engine.submit([this, g, step, work = std::move(work), done = std::move(done)]() mutable {
    work();
    host_.post([this, g, step, done = std::move(done)] {
      --work_pending_;
      const Part& part = parts_[size_t(g)];
      if (host_.stopping() || !part.active || part.step != step) return;
      done();
    });
  });
}

}  // namespace replisim::real::detail
