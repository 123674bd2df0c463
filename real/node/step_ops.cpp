#include "real/node/device_values.h"
#include "real/node/objective_values.h"
#include "real/node/step_runner.h"
#include "real/node/tensor_transfers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/values/gradient_fill.h"

namespace replisim::real::detail {

using core::Bytes;
using core::fill_gradient;
using core::float_count;
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

// Runs `work` on `device`'s engine, then, on the network thread, records the op's compute (when
// it has flop) and completes it — unless the job stopped or the step moved on meanwhile. A
// backward op fills its gradients with core::fill_gradient's pattern; with a training objective,
// a worker's first backward op of a step computes the proxy's gradient (on this thread) and
// every backward op puts it in the first floats of its gradients (ObjectiveValues::fill_tensor).
size_t StepRunner::gradient_floats(int v) const {
  if (v < 0) return 0;
  return objective_ ? objective_->layout().tensor_floats(v)
                    : float_count(plan_.variables[size_t(v)].bytes);
}

std::pair<size_t, BufferPtr> StepRunner::handed_value(const Part& p, int op) const {
  const Op& o = p.graph->ops[size_t(op)];
  if (objective_ && o.kind == OpKind::kReadVariable && o.role >= 0 &&
      plan_.roles[size_t(o.role)].kind == core::RoleKind::kParameterServer) {
    return {objective_->layout().tensor_floats(o.variable), p.out[size_t(op)]};
  }
  const int v = p.gradient_variable[size_t(op)];
  return {gradient_floats(v), v >= 0 ? value_for(p, op, v) : nullptr};
}

bool StepRunner::computes_objective(const core::Plan& plan, const Part& p) {
  if (p.owner) return true;
  if (clients_are_workers(plan)) return false;
  // An in-graph tower's process (objective_values.h).
  for (size_t k = 0; k < p.graph->ops.size(); ++k) {
    if (p.mine[k] && p.graph->ops[k].kind == OpKind::kBackward) return true;
  }
  return false;
}

void StepRunner::compute(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int64_t step = p.step;
  const double flop = op.compute_flop;
  const std::vector<SampleGemm>* gemms = op.gemms >= 0 ? &sample_gemms_[size_t(op.gemms)] : nullptr;
  const int threads = setup_.threads;
  std::shared_ptr<const std::vector<float>> proxy;
  if (objective_ && op.kind == OpKind::kBackward && g < int(plan_.clients.size()) &&
      computes_objective(plan_, p)) {
    proxy = objective_->step_gradient(p);
  }
  std::vector<std::pair<int, size_t>> fills;  // (variable, floats) of a backward op
  for (int v : p.gradients_of[size_t(op_index)]) {
    fills.emplace_back(v, proxy ? objective_->layout().tensor_floats(v)
                                : float_count(plan_.variables[size_t(v)].bytes));
  }
  const uint64_t attempt = p.attempt;
  ++work_pending_;
  DeviceEngine* device = &engine(op.device);
  const ObjectiveValues* objective = objective_;
  // A device with a memory of its own makes the gradients there (DeviceValues::make_gradient).
  DeviceValues* values = values_ && values_->memory(op.device) ? values_.get() : nullptr;
  device->submit([this, device, g, op_index, step, attempt, flop, gemms, threads, fills, proxy,
                  objective, values] {
    const double start_s = now_s();
    const ComputeResult result = device->execute(flop, gemms, threads);
    const double done = result.flop;
    // A GPU's op lasts what its CUDA events measured, from when it was handed to the stream
    // (idle then: the device runs one op at a time).
    const double end_s = result.device_s >= 0 ? start_s + result.device_s : now_s();
    std::vector<std::pair<int, BufferPtr>> gradients;
    for (const auto& [v, n] : fills) {
      std::shared_ptr<Bytes> buffer;
      if (proxy || !values) {
        buffer = std::make_shared<Bytes>(4 * n);
        float* out = reinterpret_cast<float*>(buffer->data());
        if (proxy) {
          objective->fill_tensor(out, *proxy, v, g, step, op_index);
        } else {
          fill_gradient(out, n, g, step, v, op_index);
        }
      }
      if (values) {
        gradients.emplace_back(v, values->make_gradient(g, op_index, v, step, buffer.get()));
      } else {
        gradients.emplace_back(v, std::move(buffer));
      }
    }
    host_.post(
        [this, g, op_index, step, attempt, start_s, end_s, done, gradients = std::move(gradients)] {
          work_ended();
          Part& part = parts_[size_t(g)];
          if (host_.stopping() || !part.active || part.step != step || part.attempt != attempt)
            return;
          host_.recorder().compute(g, op_index, step, start_s, end_s, done);
          part.gradients[size_t(op_index)] = gradients;
          loop_->complete(g, op_index);
        });
  });
}

void StepRunner::send(int g, int op) {
  transfers_->send(g, op);
}

void StepRunner::run_for_step(DeviceEngine& engine, int g, int64_t step, std::function<void()> work,
                              std::function<void()> done) {
  ++work_pending_;
  const uint64_t attempt = parts_[size_t(g)].attempt;
  engine.submit([this, g, step, attempt, work = std::move(work), done = std::move(done)]() mutable {
    work();
    host_.post([this, g, step, attempt, done = std::move(done)] {
      work_ended();
      const Part& part = parts_[size_t(g)];
      if (host_.stopping() || !part.active || part.step != step || part.attempt != attempt) return;
      done();
    });
  });
}

}  // namespace replisim::real::detail
