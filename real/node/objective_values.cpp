// The training objective in a real run's processes (objective_values.h).
#include "real/node/objective_values.h"

#include <algorithm>
#include <cstring>

#include "core/base/error.h"
#include "core/values/gradient_fill.h"

namespace replisim::real::detail {

using core::float_count;
using core::Op;
using core::OpKind;

namespace {

bool on_ps(const core::Plan& plan, const Op& op) {
  return op.role >= 0 && plan.roles[size_t(op.role)].kind == core::RoleKind::kParameterServer;
}

}  // namespace

ObjectiveLayout::ObjectiveLayout(const core::Plan& plan, size_t parameters)
    : slices_(core::proportional_slices(plan.variables, parameters)),
      key_(plan.variables.size(), -1),
      members_(plan.variables.size()),
      offset_(plan.variables.size(), 0),
      tensor_floats_(plan.variables.size(), 0),
      parameters_(parameters) {
  // The simulator's rule (core::slice_members); a variable no slice op stands for is its own.
  std::vector<std::vector<int>> members = core::slice_members(plan);
  for (size_t w = 1; w < plan.variables.size(); ++w) {
    const bool owned = std::any_of(members.begin(), members.end(), [w](const auto& m) {
      return std::find(m.begin(), m.end(), int(w)) != m.end();
    });
    if (!owned) members[w].push_back(int(w));
  }
  for (size_t key = 1; key < members.size(); ++key) {
    for (int w : members[key]) {
      key_[size_t(w)] = int(key);
      offset_[size_t(w)] = tensor_floats_[key];
      tensor_floats_[key] += float_count(plan.variables[size_t(w)].bytes);
    }
  }
  members_ = std::move(members);
}

bool ObjectiveValues::computed(const core::Plan& plan) {
  return core::objective_computed_by_real_run(plan);
}

bool ObjectiveValues::evaluated(const core::Plan& plan) {
  return core::objective_evaluated_by_real_run(plan);
}

void ObjectiveValues::check(const core::Plan& plan, const std::string& file) {
  if (!computed(plan)) return;
  const size_t parameters = core::objective_model_of(plan.objective).parameter_count();
  const std::vector<core::ValueSlice> slices =
      core::proportional_slices(plan.variables, parameters);
  size_t floats = 0;
  for (size_t v = 1; v < plan.variables.size(); ++v) floats += float_count(plan.variables[v].bytes);
  for (size_t v = 1; v < plan.variables.size(); ++v) {
    if (slices[v].size <= float_count(plan.variables[v].bytes)) continue;
    throw core::InputError(
        file, "/training/objective/model",
        "the proxy's " + std::to_string(parameters) + " parameters do not fit in the model's " +
            std::to_string(floats) + " float32 values: variable " + plan.variables[v].name +
            " holds " + std::to_string(float_count(plan.variables[v].bytes)) +
            " where its share is " + std::to_string(slices[v].size) +
            "; a real run carries the proxy's values in the variables' buffers: give the model "
            "more parameters or the proxy fewer");
  }
}

ObjectiveValues::ObjectiveValues(const core::Plan& plan, const std::vector<int>& graphs)
    : plan_(plan),
      setup_(std::make_unique<core::ObjectiveSetup>(plan.objective,
                                                    std::max<int>(1, int(plan.clients.size())))),
      layout_(plan, setup_->model().parameter_count()),
      workers_(plan.clients.size()) {
  const std::vector<float> initial = setup_->initial_values();
  for (int c : graphs) {
    Worker& w = workers_[size_t(c)];
    w.sub_batches = core::objective_sub_batches(plan, plan.clients[size_t(c)]);
    w.snapshot = initial;
    w.batches.emplace(setup_->batches(c, plan.objective.batch * w.sub_batches));
  }
}

void ObjectiveValues::initialise(core::ParameterStore& store) const {
  const std::vector<float> initial = setup_->initial_values();
  for (size_t v = 1; v < plan_.variables.size(); ++v) {
    const core::ValueSlice& s = layout_.slice(int(v));
    if (s.size > 0) store.write_front(int(v), initial.data() + s.offset, s.size);
  }
}

std::shared_ptr<core::Bytes> ObjectiveValues::read_tensor(const core::ParameterStore& store,
                                                          int key) const {
  auto out = std::make_shared<core::Bytes>(4 * layout_.tensor_floats(key));
  for (int m : layout_.members(key)) {
    const std::shared_ptr<core::Bytes> value = store.read(m);
    const size_t at = 4 * layout_.offset_in_tensor(m);
    std::memcpy(out->data() + at, value->data(), std::min(value->size(), out->size() - at));
  }
  return out;
}

double ObjectiveValues::learning_rate(int64_t global_step, int64_t global_step_read) const {
  const int64_t staleness =
      global_step_read >= 0 ? std::max<int64_t>(global_step - global_step_read, 0) : 0;
  return setup_->learning_rate(global_step, staleness);
}

void ObjectiveValues::apply(core::ParameterStore& store, int key, const float* gradient, size_t n,
                            float rate) const {
  for (int m : layout_.members(key)) {
    const size_t at = layout_.offset_in_tensor(m);
    if (at >= n) break;
    const size_t floats = std::min(float_count(plan_.variables[size_t(m)].bytes), n - at);
    store.apply_objective(m, gradient + at, floats, layout_.slice(m).size, rate);
  }
}

core::ValueEvaluation ObjectiveValues::evaluate(const core::ParameterStore& store,
                                                int64_t global_step) const {
  std::vector<float> values(layout_.parameters(), 0.0f);
  for (size_t v = 1; v < plan_.variables.size(); ++v) {
    const core::ValueSlice& s = layout_.slice(int(v));
    if (s.size > 0) store.read_front(int(v), values.data() + s.offset, s.size);
  }
  return setup_->evaluate(values, global_step);
}

// The values this step's reads brought: each recv of a PS read's tensor, or a PS read run here
// or handed here directly by another task of this machine (StepRunner::handed_value), its key's
// members' first floats.
void ObjectiveValues::take_reads(const Part& p, Worker& w) const {
  const std::vector<Op>& ops = p.graph->ops;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!p.out[k] || (!p.mine[k] && ops[k].kind != OpKind::kReadVariable)) continue;
    int key = -1;
    if (ops[k].kind == OpKind::kRecv && ops[k].peer >= 0) {
      const Op& send = ops[size_t(ops[k].peer)];
      if (send.inputs.empty()) continue;
      const Op& source = ops[size_t(send.inputs.front())];
      if (source.kind == OpKind::kReadVariable && on_ps(plan_, source)) key = source.variable;
    } else if (ops[k].kind == OpKind::kReadVariable && on_ps(plan_, ops[k])) {
      key = ops[k].variable;
    }
    if (key <= 0 || size_t(key) >= plan_.variables.size()) continue;
    const float* data = reinterpret_cast<const float*>(p.out[k]->data());
    const size_t floats = p.out[k]->size() / 4;
    for (int m : layout_.members(key)) {
      const size_t at = layout_.offset_in_tensor(m);
      if (at >= floats) break;
      const core::ValueSlice& s = layout_.slice(m);
      std::copy_n(data + at, std::min(s.size, floats - at), w.snapshot.begin() + long(s.offset));
    }
  }
}

void ObjectiveValues::keep_reads(const Part& p) {
  if (size_t(p.index) >= workers_.size()) return;
  Worker& w = workers_[size_t(p.index)];
  if (w.batches && !replica_) take_reads(p, w);
}

std::shared_ptr<const std::vector<float>> ObjectiveValues::step_gradient(const Part& p) {
  Worker& w = workers_[size_t(p.index)];
  if (w.gradient_step != p.step || !w.gradient) {
    if (replica_) {
      for (size_t v = 1; v < plan_.variables.size(); ++v) {
        const core::ValueSlice& s = layout_.slice(int(v));
        if (s.size > 0) replica_->read_front(int(v), w.snapshot.data() + s.offset, s.size);
      }
    } else {
      take_reads(p, w);
    }
    w.gradient = std::make_shared<const std::vector<float>>(
        setup_->model().loss_and_gradient(w.snapshot, w.batches->next(), w.sub_batches).gradient);
    w.gradient_step = p.step;
  }
  return w.gradient;
}

void ObjectiveValues::fill_tensor(float* out, const std::vector<float>& gradient, int key, int g,
                                  int64_t step, int op) const {
  for (int m : layout_.members(key)) {
    const size_t at = layout_.offset_in_tensor(m);
    const size_t floats = float_count(plan_.variables[size_t(m)].bytes);
    core::fill_gradient(out + at, floats, g, step, m, op);
    const core::ValueSlice& s = layout_.slice(m);
    std::copy_n(gradient.begin() + long(s.offset), std::min(s.size, floats), out + at);
  }
}

}  // namespace replisim::real::detail
