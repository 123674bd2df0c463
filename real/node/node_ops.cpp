// The ops a task runs: compute (SGEMMs of the op's flop on its device's engine), tensors sent
// (chunked over one of the peer's connections, or copied when both ends are here), variables read
// and updated on a parameter server, gradients summed, and the sync queues' accumulators.
#include <algorithm>
#include <cstring>

#include "real/node/runtime.h"
#include "real/state/gradient_fill.h"

namespace replisim::real::detail {

using core::Op;
using core::OpKind;

namespace {

// A float view of a tensor buffer: its first min(n, size / 4) values.
size_t floats_in(const BufferPtr& b, size_t n) {
  return b ? std::min(n, b->size() / 4) : 0;
}

const float* floats_of(const BufferPtr& b) {
  return reinterpret_cast<const float*>(b->data());
}

}  // namespace

DeviceEngine& Node::engine(int device) {
  auto found = engines_.find(device);
  if (found == engines_.end()) {
    const core::PlatformDevice& d = plan_.platform.devices[size_t(device)];
    found = engines_.emplace(device, std::make_unique<DeviceEngine>(d.name, std::max(1, d.cores)))
                .first;
  }
  return *found->second;
}

BufferPtr Node::zeros(size_t bytes) {
  if (!zeros_ || zeros_->size() < bytes) zeros_ = std::make_shared<Bytes>(bytes);
  return zeros_;
}

BufferPtr Node::value_for(const Part& p, int producer, int variable) const {
  if (producer < 0) return nullptr;
  if (p.graph->ops[size_t(producer)].kind == OpKind::kBackward) {
    for (const auto& [v, buffer] : p.gradients[size_t(producer)]) {
      if (v == variable || variable < 0) return buffer;
    }
  }
  return p.out[size_t(producer)];
}

// Runs `work` on `device`'s engine, then, on the network thread, records the op's compute (when
// it has flop) and completes it — unless the job stopped or the step moved on meanwhile.
void Node::run_compute(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int64_t step = p.step;
  const double flop = op.compute_flop;
  const int threads = options_.threads;
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
    post([this, g, op_index, step, start_s, end_s, done, gradients = std::move(gradients)] {
      --work_pending_;
      Part& part = parts_[size_t(g)];
      if (stopping_ || !part.active || part.step != step) return;
      recorder_->compute(g, op_index, step, start_s, end_s, done);
      part.gradients[size_t(op_index)] = gradients;
      complete(g, op_index);
    });
  });
}

void Node::run_send(int g, int op_index) {
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
      post([this, g, op_index, step, start_s, value, bytes] {
        --work_pending_;
        Part& part = parts_[size_t(g)];
        if (stopping_ || !part.active || part.step != step) return;
        send_tensor(g, op_index, value, bytes, start_s);
      });
    });
    return;
  }
  send_tensor(g, op_index, std::move(value), bytes, start_s);
}

// A tensor in host memory to its recv's task: copied when both ends are here, else in frames.
void Node::send_tensor(int g, int op_index, BufferPtr value, size_t bytes, double start_s) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int64_t step = p.step;
  const uint32_t to = p.task_of_op[size_t(op.peer)];
  if (to == self_) {  // both ends here: a copy between the two devices' memories
    ++work_pending_;
    copier_->submit([this, g, op_index, step, start_s, value, bytes] {
      auto copy = std::make_shared<Bytes>(value->begin(), value->begin() + long(bytes));
      post([this, g, op_index, step, start_s, copy = std::move(copy)]() mutable {
        --work_pending_;
        Part& part = parts_[size_t(g)];
        if (stopping_ || !part.active || part.step != step) return;
        arrive_tensor(part, op_index, std::move(copy), start_s);
      });
    });
    return;
  }
  // Every chunk of a tensor goes over one connection (in order); tensors take the peer's
  // connections in turn (platform.transport.connections_per_peer).
  const int slot = mesh_->next_slot(to);
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
        if (stopping_ || !part.active || part.step != step) return;
        complete(g, op_index);
      };
    }
    ++sent_to_[to];
    mesh_->send(to, h, value->data() + offset, length, value, std::move(written), slot);
  }
}

void Node::run_read(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  if (!store_ || !store_->holds(op.variable)) {
    // A worker's read of the copy it pulled (a multi-tower worker's "local/" variable): the
    // value its input brought.
    BufferPtr copy;
    for (int in : op.inputs) {
      if ((copy = value_for(p, in, -1))) break;
    }
    if (!copy && op.inputs.empty()) {
      throw std::logic_error("read of variable " + std::to_string(op.variable) +
                             " on a task that does not hold it");
    }
    p.out[size_t(op_index)] = std::move(copy);
    complete(g, op_index);
    return;
  }
  const int64_t step = p.step;
  const int v = op.variable;
  ++work_pending_;
  copier_->submit([this, g, op_index, step, v] {
    BufferPtr value = store_->read(v);
    post([this, g, op_index, step, value = std::move(value)] {
      --work_pending_;
      Part& part = parts_[size_t(g)];
      if (stopping_ || !part.active || part.step != step) return;
      part.out[size_t(op_index)] = value;
      complete(g, op_index);
    });
  });
}

// The mean of the inputs' gradients, summed in input order (TF's AddN, then the division
// in-graph replication applies to average the towers).
void Node::run_aggregate(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int v = p.gradient_variable[size_t(op_index)];
  const size_t n = v >= 0 ? float_count(plan_.variables[size_t(v)].bytes) : 0;
  std::vector<BufferPtr> inputs;
  for (int in : op.inputs) {
    if (BufferPtr b = value_for(p, in, v)) inputs.push_back(std::move(b));
  }
  const int64_t step = p.step;
  const double flop = op.compute_flop;
  ++work_pending_;
  engine(op.device).submit([this, g, op_index, step, flop, n, inputs = std::move(inputs)] {
    const double start_s = now_s();
    auto sum = std::make_shared<Bytes>(4 * n);
    float* out = reinterpret_cast<float*>(sum->data());
    for (const BufferPtr& b : inputs) {
      const float* in = floats_of(b);
      const size_t m = floats_in(b, n);
      for (size_t i = 0; i < m; ++i) out[i] += in[i];
    }
    if (inputs.size() > 1) {
      const float count = float(inputs.size());
      for (size_t i = 0; i < n; ++i) out[i] /= count;
    }
    const double end_s = now_s();
    post([this, g, op_index, step, flop, start_s, end_s, sum = std::move(sum)] {
      --work_pending_;
      Part& part = parts_[size_t(g)];
      if (stopping_ || !part.active || part.step != step) return;
      if (flop > 0) recorder_->compute(g, op_index, step, start_s, end_s, flop);
      part.out[size_t(op_index)] = sum;
      complete(g, op_index);
    });
  });
}

// The optimizer's update of one variable with the gradient its input carries.
void Node::run_apply(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  if (!store_ || !store_->holds(op.variable)) {
    throw std::logic_error("apply of variable " + std::to_string(op.variable) +
                           " on a task that does not hold it");
  }
  BufferPtr gradient;
  for (int in : op.inputs) {
    if ((gradient = value_for(p, in, op.variable))) break;
  }
  const size_t n = float_count(plan_.variables[size_t(op.variable)].bytes);
  if (!gradient) gradient = zeros(4 * n);
  const int64_t step = p.step;
  const double flop = op.compute_flop;
  const int v = op.variable;
  ++work_pending_;
  engine(op.device).submit([this, g, op_index, step, flop, v, n, gradient] {
    const double start_s = now_s();
    store_->apply(v, floats_of(gradient), floats_in(gradient, n));
    const double end_s = now_s();
    post([this, g, op_index, step, flop, start_s, end_s] {
      --work_pending_;
      Part& part = parts_[size_t(g)];
      if (stopping_ || !part.active || part.step != step) return;
      if (flop > 0) recorder_->compute(g, op_index, step, start_s, end_s, flop);
      complete(g, op_index);
    });
  });
}

// A worker's gradient into its variable's accumulator (ConditionalAccumulator.apply_grad): summed
// when it is fresh, dropped (and traced so) when its local_step is older than the accumulator's.
void Node::run_accumulate(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  if (!sync_) throw std::logic_error("an accumulate on a task without the sync queues");
  const int v = op.variable;
  const double start_s = now_s();
  if (sync_->fresh(g, op_index)) {
    BufferPtr gradient;
    for (int in : op.inputs) {
      if ((gradient = value_for(p, in, v))) break;
    }
    const size_t n = float_count(plan_.variables[size_t(v)].bytes);
    std::vector<float>& sum = accumulator_[size_t(v)];
    if (sum.size() != n) sum.assign(n, 0.0f);
    const size_t m = floats_in(gradient, n);
    const float* in = m > 0 ? floats_of(gradient) : nullptr;
    for (size_t i = 0; i < m; ++i) sum[i] += in[i];
    ++accumulated_[size_t(v)];
  }
  // The accumulate ran on the parameter server's device, as the simulation's (whose metrics
  // count the gradients that reached it by these events).
  if (op.compute_flop > 0) {
    recorder_->compute(g, op_index, p.step, start_s, now_s(), op.compute_flop);
  }
  // Counts it and may complete a waiting take (sync_complete) at once.
  sync_->accumulate(g, op_index, p.step, now_s());
  complete(g, op_index);
}

void Node::sync_complete(int c, int op_index) {
  Part& p = parts_[size_t(c)];
  if (graph_dead_[size_t(c)]) return;
  const Op& op = p.graph->ops[size_t(op_index)];
  if (op.kind == OpKind::kTakeGradient) {
    // take_grad: the mean of the gradients accumulated since the last take; the accumulator
    // starts again from zero.
    const int v = op.variable;
    const size_t n = float_count(plan_.variables[size_t(v)].bytes);
    auto mean = std::make_shared<Bytes>(4 * n);
    float* out = reinterpret_cast<float*>(mean->data());
    std::vector<float>& sum = accumulator_[size_t(v)];
    const float count = float(std::max(1, accumulated_[size_t(v)]));
    for (size_t i = 0; i < std::min(n, sum.size()); ++i) out[i] = sum[i] / count;
    std::fill(sum.begin(), sum.end(), 0.0f);
    accumulated_[size_t(v)] = 0;
    p.out[size_t(op_index)] = std::move(mean);
  } else if (op.kind == OpKind::kTokenDequeue) {
    const int64_t token = tokens_[size_t(c)];
    auto out = std::make_shared<Bytes>(8);
    for (int i = 0; i < 8; ++i) (*out)[size_t(i)] = uint8_t(uint64_t(token) >> (8 * i));
    p.out[size_t(op_index)] = std::move(out);
  }
  complete(c, op_index);
}

// local_step = the token the worker's dequeue took (its next step's local step).
void Node::run_local_step(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  BufferPtr token;
  for (int in : op.inputs) {
    if ((token = value_for(p, in, -1))) break;
  }
  if (!token || token->size() < 8) {
    throw FrameError("the sync token for " + op.name + " did not arrive with its 8 bytes");
  }
  loop_->client(g).next_local_step = unpack_i64(token->data(), token->size(), 0);
  complete(g, op_index);
}

void Node::run_global_step_increment(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  if (!store_ || !store_->holds_global_step()) {
    throw std::logic_error("global_step incremented on a task that does not hold it");
  }
  const double at_s = now_s();
  ++store_->global_step;
  // An async worker's or the in-graph client's step reached global_step's PS (what a checkpoint
  // records for a restart); the chief's sync op is no client.
  if (g < int(graph_steps_.size())) ++graph_steps_[size_t(g)];
  last_update_s_ = at_s;
  global_step_seen_ = std::max(global_step_seen_, store_->global_step);
  recorder_->update(g, op_index, p.step, at_s, p.global_step_read, store_->global_step);
  steady_stop_->update(at_s, recorder_->samples_per_step(g), store_->global_step);
  complete(g, op_index);
}

// An op of this task done: every other task with an op that takes its output directly hears of
// it, with the output when it is a gradient of the size the plan gives it.
void Node::notify_remote(Part& p, int op_index) {
  const std::vector<uint32_t>& to = p.notify[size_t(op_index)];
  if (to.empty()) return;
  const int v = p.gradient_variable[size_t(op_index)];
  BufferPtr value = v >= 0 ? value_for(p, op_index, v) : nullptr;
  const size_t bytes = v >= 0 ? 4 * float_count(plan_.variables[size_t(v)].bytes) : 0;
  const bool with_data = value && value->size() == bytes && bytes > 0;
  for (uint32_t t : to) {
    if (!with_data) {
      send_frame(t, FrameType::kControl, p.step, (uint64_t(p.index) << 32) | uint64_t(op_index));
      continue;
    }
    const int slot = mesh_->next_slot(t);
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
      ++sent_to_[t];
      mesh_->send(t, h, value->data() + offset,
                  std::min<size_t>(kDefaultChunkBytes, bytes - offset), value, {}, slot);
    }
  }
}

int64_t Node::global_step() const {
  return store_ && store_->holds_global_step() ? store_->global_step : global_step_seen_;
}

}  // namespace replisim::real::detail
