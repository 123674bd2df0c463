// The value engine (value_engine.h): the meaning of each op kind at its completion.
#include "core/values/value_engine.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/base/error.h"

namespace replisim::core {

std::vector<ValueSlice> proportional_slices(const std::vector<Variable>& variables,
                                            size_t parameters) {
  std::vector<ValueSlice> slices(variables.size());
  double total = 0;
  for (size_t v = 1; v < variables.size(); ++v) total += variables[v].bytes;
  if (!(total > 0)) return slices;
  double before = 0;
  size_t begin = 0;
  for (size_t v = 1; v < variables.size(); ++v) {
    before += variables[v].bytes;
    const size_t end =
        v + 1 == variables.size()
            ? parameters
            : std::min(parameters, size_t(std::floor(double(parameters) * (before / total))));
    slices[v] = {begin, std::max(end, begin) - begin};
    begin = std::max(end, begin);
  }
  return slices;
}

std::vector<std::vector<int>> slice_members(const Plan& plan) {
  std::vector<bool> named(plan.variables.size(), false);
  for (const ClientGraph* graph : step_graphs(plan)) {
    for (const Op& op : graph->ops) {
      if (op.variable > 0 && size_t(op.variable) < named.size()) named[size_t(op.variable)] = true;
    }
  }
  std::vector<std::vector<int>> members(plan.variables.size());
  std::map<int, int> last_named_of_ps;  // ps -> the named variable nearest below
  for (size_t w = 1; w < plan.variables.size(); ++w) {
    const int ps = plan.variables[w].ps;
    if (named[w]) last_named_of_ps[ps] = int(w);
    const auto found = last_named_of_ps.find(ps);
    if (found != last_named_of_ps.end()) members[size_t(found->second)].push_back(int(w));
  }
  return members;
}

ValueEngine::ValueEngine(const Plan& plan)
    : plan_(plan),
      setup_(plan.objective, std::max<int>(1, int(plan.clients.size()))),
      all_reduce_(plan.sync == kAllReduceSync) {
  const PlanObjective& o = plan.objective;
  REPLISIM_ASSERT(o.enabled, "a value engine for a plan without an objective");
  values_ = setup_.initial_values();
  slices_ = proportional_slices(plan.variables, setup_.model().parameter_count());
  members_ = slice_members(plan);
  accumulators_.resize(plan.variables.size());
  applied_step_.assign(plan.variables.size(), -1);
  const std::vector<const ClientGraph*> graphs = step_graphs(plan);
  if (all_reduce_ && !graphs.empty()) {
    for (const Op& op : graphs.front()->ops) applies_per_step_ += op.kind == OpKind::kApply;
    committed_ = values_;
  }
  graphs_.resize(graphs.size());
  for (size_t c = 0; c < graphs.size(); ++c) {
    Graph& g = graphs_[c];
    g.graph = graphs[c];
    const std::vector<Op>& ops = g.graph->ops;
    g.takes_values.assign(ops.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kind != OpKind::kReadVariable) continue;
      g.takes_values[k] = std::none_of(ops[k].inputs.begin(), ops[k].inputs.end(), [&](int in) {
        return ops[size_t(in)].kind == OpKind::kReadVariable;
      });
    }
    if (c >= plan.clients.size()) continue;  // the chief's sync op reads no data
    g.snapshot = values_;
    g.sub_batches = objective_sub_batches(plan, *g.graph);
    g.samples = o.batch * g.sub_batches;
    g.batches.emplace(setup_.batches(int(c), g.samples));
  }
}

void ValueEngine::op_completed(int c, int op_index, const OpMoment& at) {
  Graph& g = graphs_[size_t(c)];
  const Op& op = g.graph->ops[size_t(op_index)];
  switch (op.kind) {
    case OpKind::kReadVariable:
      if (g.takes_values[size_t(op_index)]) read(g, c, op, at);
      return;
    case OpKind::kBackward:
      if (g.gradient_step != at.step) backward(g, at);  // the step's first backward op
      return;
    case OpKind::kApply:
      if (all_reduce_) {
        all_reduce_apply(c, op, at);
      } else {
        apply(c, op, at);
      }
      return;
    case OpKind::kAccumulate:
      if (at.fresh) accumulate(g, c, op);
      return;
    case OpKind::kTakeGradient:
      take(op);
      return;
    case OpKind::kGlobalStepIncrement:
      if (record_applies_) {
        increments_.push_back(
            {c, at.step, g.read_step == at.step ? g.read_global_step : -1, at.global_step});
      }
      return;
    default:
      return;
  }
}

void ValueEngine::read(Graph& g, int /*c*/, const Op& op, const OpMoment& at) {
  for (int v : members_[size_t(op.variable)]) {
    const ValueSlice& s = slices_[size_t(v)];
    std::copy_n(values_.begin() + long(s.offset), s.size, g.snapshot.begin() + long(s.offset));
  }
  if (g.read_step != at.step) {
    g.read_step = at.step;
    g.read_global_step = at.global_step;
  }
}

void ValueEngine::backward(Graph& g, const OpMoment& at) {
  // All-reduce ranks hold the values themselves (each slice applied once per step, below).
  const std::vector<float>& at_values = all_reduce_ ? values_ : g.snapshot;
  g.gradient =
      setup_.model().loss_and_gradient(at_values, g.batches->next(), g.sub_batches).gradient;
  g.gradient_step = at.step;
  ++g.gradients;
}

void ValueEngine::apply(int c, const Op& op, const OpMoment& at) {
  const Graph& g = graphs_[size_t(c)];
  if (g.batches) {  // a worker's own gradient (async, distributed_replicated, in-graph)
    REPLISIM_ASSERT(g.gradient_step == at.step, "an apply before its step's backward pass");
    const int64_t staleness = std::max<int64_t>(at.global_step - at.global_step_read, 0);
    const double rate = setup_.learning_rate(at.global_step, staleness);
    subtract(op.variable, g.gradient, /*packed=*/false, rate);
    record(c, op, at, staleness, rate);
    return;
  }
  // The chief's sync op: the average its take made. Sync gradients are never stale.
  const Accumulator& a = accumulators_[size_t(op.variable)];
  const double rate = setup_.learning_rate(at.global_step, 0);
  if (!a.taken.empty()) subtract(op.variable, a.taken, /*packed=*/true, rate);
  record(c, op, at, 0, rate, a.taken_from);
}

void ValueEngine::accumulate(Graph& g, int c, const Op& op) {
  Accumulator& a = accumulators_[size_t(op.variable)];
  a.kept.push_back(pack(op.variable, g.gradient));
  a.from.push_back(c);
}

void ValueEngine::take(const Op& op) {
  Accumulator& a = accumulators_[size_t(op.variable)];
  a.taken.clear();
  a.taken_from = std::move(a.from);
  a.from.clear();
  if (!a.kept.empty()) {
    std::vector<const float*> parts;
    for (const std::vector<float>& kept : a.kept) parts.push_back(kept.data());
    a.taken.resize(a.kept.front().size());
    if (!a.taken.empty()) average_gradients(parts, a.taken.size(), a.taken.data());
  }
  a.kept.clear();
}

void ValueEngine::all_reduce_apply(int c, const Op& op, const OpMoment& at) {
  if (reduced_step_ != at.step) {  // the step's first apply: no rank has gone past the step
    std::vector<const float*> parts;
    for (const Graph& g : graphs_) {
      if (g.live && g.gradient_step == at.step) parts.push_back(g.gradient.data());
    }
    REPLISIM_ASSERT(!parts.empty(), "an all-reduce apply with no rank's gradient");
    reduced_.resize(values_.size());
    average_gradients(parts, reduced_.size(), reduced_.data());
    reduced_step_ = at.step;
    applies_in_step_ = 0;
  }
  if (applied_step_[size_t(op.variable)] >= at.step) return;  // another rank applied it
  applied_step_[size_t(op.variable)] = at.step;
  const double rate = setup_.learning_rate(at.global_step, 0);
  subtract(op.variable, reduced_, /*packed=*/false, rate);
  record(c, op, at, 0, rate);
  if (++applies_in_step_ == applies_per_step_ && plan_.collective.elastic) {
    committed_ = values_;  // the step's commit (rank 0 commits after each step)
    committed_step_ = at.step;
  }
}

void ValueEngine::subtract(int v, const std::vector<float>& gradient, bool packed, double rate) {
  const float scaled = float(rate);  // as sgd_apply: params[i] -= float(lr) * g[i]
  size_t k = 0;
  for (int w : members_[size_t(v)]) {
    const ValueSlice& s = slices_[size_t(w)];
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      values_[i] -= scaled * gradient[packed ? k++ : i];
    }
  }
}

std::vector<float> ValueEngine::pack(int v, const std::vector<float>& whole) const {
  std::vector<float> out;
  for (int w : members_[size_t(v)]) {
    const ValueSlice& s = slices_[size_t(w)];
    out.insert(out.end(), whole.begin() + long(s.offset), whole.begin() + long(s.offset + s.size));
  }
  return out;
}

void ValueEngine::record(int c, const Op& op, const OpMoment& at, int64_t staleness, double rate,
                         std::vector<int> from) {
  if (record_applies_) {
    applied_.push_back({c, at.step, op.variable, staleness, rate, std::move(from)});
  }
}

std::optional<ValueEvaluation> ValueEngine::updated(int64_t global_step) {
  if (global_step % plan_.objective.evaluate_every_steps != 0) return std::nullopt;
  return evaluate_now(global_step);
}

void ValueEngine::rank_gone(int c) {
  graphs_[size_t(c)].live = false;
}

void ValueEngine::checkpoint(int64_t global_step) {
  if (checkpoints_.size() == kKeptCheckpoints) checkpoints_.erase(checkpoints_.begin());
  checkpoints_.emplace_back(global_step, values_);
}

void ValueEngine::restore(int64_t global_step) {
  const auto found = std::find_if(checkpoints_.rbegin(), checkpoints_.rend(),
                                  [global_step](const auto& c) { return c.first == global_step; });
  if (found != checkpoints_.rend()) {
    values_ = found->second;
  } else if (global_step == 0) {
    values_ = setup_.initial_values();
  } else {
    throw InternalError("a restart restored global step " + std::to_string(global_step) +
                        ", which the value engine never saw checkpointed");
  }
  for (size_t c = 0; c < graphs_.size(); ++c) {
    Graph& g = graphs_[c];
    g.gradient_step = -1;
    g.read_step = -1;
    g.live = true;  // the launcher brought every task back
    if (g.batches) g.batches.emplace(setup_.batches(int(c), g.samples));
  }
  for (Accumulator& a : accumulators_) a = Accumulator{};
  std::fill(applied_step_.begin(), applied_step_.end(), int64_t(-1));
  reduced_step_ = -1;
  committed_ = values_;
  committed_step_ = global_step - 1;
}

void ValueEngine::roll_back(int64_t steps_done) {
  REPLISIM_ASSERT(committed_step_ == steps_done - 1,
                  "an elastic rollback to a step the values did not commit");
  values_ = committed_;
  reduced_step_ = -1;
  for (int64_t& step : applied_step_) step = std::min(step, steps_done - 1);
  for (Graph& g : graphs_) g.gradient_step = -1;
}

ValueEvaluation ValueEngine::evaluate_now(int64_t global_step) const {
  return setup_.evaluate(values_, global_step);
}

}  // namespace replisim::core
