#include "real/node/variable_ops.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "real/node/device_values.h"
#include "real/node/objective_values.h"
#include "real/node/payload.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

using core::Bytes;
using core::float_count;
using core::Op;
using core::OpKind;
using core::ParameterStore;

namespace {

// A float view of a tensor buffer: its first min(n, size / 4) values.
size_t floats_in(const BufferPtr& b, size_t n) {
  return b ? std::min(n, b->size() / 4) : 0;
}

const float* floats_of(const BufferPtr& b) {
  return reinterpret_cast<const float*>(b->data());
}

}  // namespace

VariableOps::VariableOps(Host& host, const core::Plan& plan, core::ClientLoop& loop,
                         std::vector<Part>& parts, int ps_shard, bool replica)
    : host_(host),
      plan_(plan),
      loop_(loop),
      parts_(parts),
      ps_shard_(ps_shard),
      replica_(replica),
      accumulator_(plan.variables.size()),
      accumulated_(plan.variables.size(), 0),
      tokens_(parts.size(), 0),
      client_steps_(plan.clients.size(), 0) {
  if (ps_shard_ >= 0 || replica) store_ = std::make_unique<ParameterStore>(plan_, ps_shard_);
}

void VariableOps::set_objective(ObjectiveValues* objective, bool evaluates) {
  objective_ = objective;
  evaluates_ = evaluates && store_ && store_->holds_global_step();
  if (replica_) {  // an all-reduce rank: only the chief's task, which counts the global steps
    evaluates_ = evaluates_ && std::any_of(parts_.begin(), parts_.end(), [](const Part& p) {
                   return p.owner && p.graph->global_step_op >= 0;
                 });
  }
  if (!objective_ || !store_) return;
  objective_->initialise(*store_);
}

size_t VariableOps::gradient_floats(int v) const {
  if (v < 0) return 0;
  return objective_ ? objective_->layout().tensor_floats(v)
                    : float_count(plan_.variables[size_t(v)].bytes);
}

int VariableOps::place_on_devices(DeviceValues* values) {
  if (values == nullptr || !store_ || objective_ != nullptr) return 0;
  const int placed = values->place_variables(*store_);
  if (placed > 0) device_values_ = values;
  return placed;
}

void VariableOps::open_sync_queues(core::TraceRecorder& recorder) {
  if ((store_ && plan_.sync == "sync") || plan_.sync == core::kDistributedReplicated) {
    sync_.emplace(plan_, recorder, static_cast<core::SyncHost&>(*this));
    sync_->reset();
  }
}

int64_t VariableOps::global_step_here() const {
  return store_ && store_->holds_global_step() ? store_->global_step : -1;
}

int64_t VariableOps::global_step() const {
  const int64_t here = global_step_here();
  return here >= 0 ? here : host_.global_step_seen();
}

// The ops that touch the parameter server's values run here, whatever their FLOP.
bool VariableOps::values(int g, int op) {
  switch (parts_[size_t(g)].graph->ops[size_t(op)].kind) {
    case OpKind::kReadVariable:
      read(g, op);
      return true;
    case OpKind::kAggregate:
      aggregate(g, op);
      return true;
    case OpKind::kApply:
      apply(g, op);
      return true;
    case OpKind::kAccumulate:
      accumulate(g, op);
      return true;
    case OpKind::kLocalStep:
      local_step_from_token(g, op);
      return true;
    case OpKind::kGlobalStepIncrement:
      increment_global_step(g, op);
      return true;
    default:
      return false;
  }
}

void VariableOps::sync(int g, int op) {
  if (!sync_) throw std::logic_error("a sync queue op on a task without the sync queues");
  const OpKind kind = parts_[size_t(g)].graph->ops[size_t(op)].kind;
  // A synchronous worker's step ends with its token: the step reached global_step's PS.
  if (kind == OpKind::kTokenDequeue && g < int(client_steps_.size())) ++client_steps_[size_t(g)];
  sync_->dispatch(g, op, kind);
}

void VariableOps::read(int g, int op_index) {
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
    loop_.complete(g, op_index);
    return;
  }
  if (store_->placed(op.variable) && !device_values_->host_takes(g, op_index)) {
    // On its device, for ops there: nothing moves (a send that takes it elsewhere reads it from
    // the device, through this read's host copy).
    p.out[size_t(op_index)] = nullptr;
    loop_.complete(g, op_index);
    return;
  }
  auto value = std::make_shared<BufferPtr>();
  host_.run_for_step(
      host_.copier(), g, p.step,
      [store = store_.get(), v = op.variable, value, objective = objective_] {
        *value = objective ? objective->read_tensor(*store, v) : store->read(v);
      },
      [this, g, op_index, value] {
        parts_[size_t(g)].out[size_t(op_index)] = *value;
        loop_.complete(g, op_index);
      });
}

// The mean of the inputs' gradients, summed in input order (TF's AddN, then the division
// in-graph replication applies to average the towers).
void VariableOps::aggregate(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  const int v = p.gradient_variable[size_t(op_index)];
  const size_t n = gradient_floats(v);
  std::vector<BufferPtr> inputs;
  for (int in : op.inputs) {
    if (BufferPtr b = value_for(p, in, v)) inputs.push_back(std::move(b));
  }
  struct Sum {
    std::shared_ptr<Bytes> sum;
    double start_s = 0, end_s = 0;
  };
  auto result = std::make_shared<Sum>();
  const int64_t step = p.step;
  host_.run_for_step(
      host_.engine(op.device), g, step,
      [this, n, inputs = std::move(inputs), result] {
        result->start_s = host_.now_s();
        result->sum = std::make_shared<Bytes>(4 * n);
        float* out = reinterpret_cast<float*>(result->sum->data());
        for (const BufferPtr& b : inputs) {
          const float* in = floats_of(b);
          const size_t m = floats_in(b, n);
          for (size_t i = 0; i < m; ++i) out[i] += in[i];
        }
        if (inputs.size() > 1) {
          const float count = float(inputs.size());
          for (size_t i = 0; i < n; ++i) out[i] /= count;
        }
        result->end_s = host_.now_s();
      },
      [this, g, op_index, step, flop = op.compute_flop, result] {
        if (flop > 0) {
          host_.recorder().compute(g, op_index, step, result->start_s, result->end_s, flop);
        }
        parts_[size_t(g)].out[size_t(op_index)] = result->sum;
        loop_.complete(g, op_index);
      });
}

// The optimizer's update of one variable with the gradient its input carries.
void VariableOps::apply(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  if (!store_ || !store_->holds(op.variable)) {
    throw std::logic_error("apply of variable " + std::to_string(op.variable) +
                           " on a task that does not hold it");
  }
  BufferPtr gradient;
  int from = op.inputs.empty() ? -1 : op.inputs.front();  // the op that handed the gradient
  for (int in : op.inputs) {
    if ((gradient = value_for(p, in, op.variable))) {
      from = in;
      break;
    }
  }
  const size_t n = gradient_floats(op.variable);
  if (!gradient) gradient = std::make_shared<Bytes>(4 * n);
  auto times = std::make_shared<std::pair<double, double>>();
  const int64_t step = p.step;
  // The objective's rate: the schedule's at global_step now, staleness-aware from the global
  // step this task saw the worker's step begin with (Part::global_step_read; -1 on a PS without
  // global_step, which knows neither: staleness 0 and global_step as it last heard of it). The
  // chief's sync op and an all-reduce rank apply an average of fresh gradients: staleness 0, as
  // the simulator's value engine has it.
  const bool own_gradient = !replica_ && g < int(plan_.clients.size());
  float rate =
      objective_
          ? float(objective_->learning_rate(global_step(), own_gradient ? p.global_step_read : -1))
          : 0.0f;
  DeviceValues* placed = store_->placed(op.variable) ? device_values_ : nullptr;
  if (placed != nullptr)
    rate = float(plan_.optimizer.learning_rate);  // its SGD rate, on the device
  host_.run_for_step(
      host_.engine(op.device), g, step,
      [this, store = store_.get(), v = op.variable, n, gradient, times, rate, placed, g, from,
       objective = objective_] {
        times->first = host_.now_s();
        if (placed != nullptr) {
          placed->apply_variable(*store, v, g, from, gradient.get(), n, rate);
        } else if (objective) {
          objective->apply(*store, v, floats_of(gradient), floats_in(gradient, n), rate);
        } else {
          store->apply(v, floats_of(gradient), floats_in(gradient, n));
        }
        times->second = host_.now_s();
      },
      [this, g, op_index, step, flop = op.compute_flop, times] {
        if (flop > 0) {
          host_.recorder().compute(g, op_index, step, times->first, times->second, flop);
        }
        loop_.complete(g, op_index);
      });
}

// A worker's gradient into its variable's accumulator (ConditionalAccumulator.apply_grad): summed
// when it is fresh, dropped (and traced so) when its local_step is older than the accumulator's.
void VariableOps::accumulate(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  if (!sync_) throw std::logic_error("an accumulate on a task without the sync queues");
  const int v = op.variable;
  const double start_s = host_.now_s();
  if (sync_->fresh(g, op_index)) {
    BufferPtr gradient;
    for (int in : op.inputs) {
      if ((gradient = value_for(p, in, v))) break;
    }
    const size_t n = gradient_floats(v);
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
    host_.recorder().compute(g, op_index, p.step, start_s, host_.now_s(), op.compute_flop);
  }
  // Counts it and may complete a waiting take (sync_complete) at once.
  sync_->accumulate(g, op_index, p.step, host_.now_s());
  loop_.complete(g, op_index);
}

void VariableOps::sync_complete(int c, int op_index) {
  Part& p = parts_[size_t(c)];
  if (host_.client_dead(c)) return;
  const Op& op = p.graph->ops[size_t(op_index)];
  if (op.kind == OpKind::kTakeGradient) {
    // take_grad: the mean of the gradients accumulated since the last take; the accumulator
    // starts again from zero.
    const int v = op.variable;
    const size_t n = gradient_floats(v);
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
  loop_.complete(c, op_index);
}

// local_step = the token the worker's dequeue took (its next step's local step).
void VariableOps::local_step_from_token(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  const Op& op = p.graph->ops[size_t(op_index)];
  BufferPtr token;
  for (int in : op.inputs) {
    if ((token = value_for(p, in, -1))) break;
  }
  if (!token || token->size() < 8) {
    throw FrameError("the sync token for " + op.name + " did not arrive with its 8 bytes");
  }
  loop_.client(g).next_local_step = unpack_i64(token->data(), token->size(), 0);
  loop_.complete(g, op_index);
}

void VariableOps::increment_global_step(int g, int op_index) {
  Part& p = parts_[size_t(g)];
  if (!store_ || !store_->holds_global_step()) {
    throw std::logic_error("global_step incremented on a task that does not hold it");
  }
  const double at_s = host_.now_s();
  ++store_->global_step;
  // An async worker's or the in-graph client's step reached global_step's PS (what a checkpoint
  // records for a restart); the chief's sync op is no client.
  if (replica_) {
    // An all-reduce rank: every rank's step ends with the same reduced gradients, so each client
    // has made as many steps as this copy's global_step (what a restart resumes them from).
    std::fill(client_steps_.begin(), client_steps_.end(), store_->global_step);
  } else if (g < int(client_steps_.size())) {
    ++client_steps_[size_t(g)];
  }
  last_update_s_ = at_s;
  host_.saw_global_step(store_->global_step);
  // Every all-reduce rank increments its own copy; the chief's (its graph's global_step_op)
  // counts the job's global steps, as the simulator records them.
  if (!replica_ || op_index == p.graph->global_step_op) {
    int samples = host_.update_samples(g);
    // Synchronous: the gradients this task's takes averaged, when it holds an accumulator.
    if (sync_ && sync_->enabled()) samples = sync_->take_update_samples().value_or(samples);
    host_.recorder().update(g, op_index, p.step, at_s, p.global_step_read, store_->global_step,
                            samples);
    host_.update_made(g, at_s, store_->global_step, samples);
    if (evaluates_ && store_->global_step % plan_.objective.evaluate_every_steps == 0) {
      host_.evaluation_due(store_->global_step, at_s);
    }
  }
  loop_.complete(g, op_index);
}

void VariableOps::restored(int64_t global_step, const std::vector<int64_t>& client_steps) {
  store_->global_step = global_step;
  for (size_t c = 0; c < client_steps_.size() && c < client_steps.size(); ++c) {
    client_steps_[c] = client_steps[c];
  }
  last_update_s_ = host_.now_s();
  host_.recorder().global_step(host_.now_s(), global_step);
  if (sync_) sync_->reset();  // a new session's empty accumulators and initial tokens
}

std::optional<core::StallRecord> VariableOps::stall(const std::string& finished,
                                                    const std::vector<bool>& dead,
                                                    int64_t last_global_step) const {
  // distributed_replicated: any task whose barriers hold a worker says so.
  if (!sync_ || !((sync_->barriers() && sync_->any_waiting()) ||
                  (sync_->enabled() && store_->holds_global_step() &&
                   store_->global_step < last_global_step))) {
    return std::nullopt;
  }
  std::vector<bool> done(parts_.size());
  for (size_t g = 0; g < parts_.size(); ++g) done[g] = finished[g] == '1' || dead[g];
  return sync_->stall(done, dead, last_update_s_, host_.now_s());
}

nlohmann::json VariableOps::global_step_status() const {
  if (global_step_here() < 0) return nullptr;
  return {{"value", store_->global_step}, {"updated_s", last_update_s_}};
}

}  // namespace replisim::real::detail
