// What the real-run tests share: small scenarios, a run through the real backend that keeps the
// run's final variables, and the variables a run must leave, computed from the plan's gradient
// flow and the gradients gradient_fill.h defines (tests only).
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/strategy/strategy.h"
#include "core/values/checkpoint.h"
#include "core/values/gradient_fill.h"
#include "core/values/gradient_flow.h"
#include "core/values/parameter_store.h"
#include "real/backend/real_backend.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::real::testing {

using core::EventKind;
using core::OpKind;

// Two small layers (1000 and 3000 parameters: variables of 4 kB and 12 kB) of little compute.
inline nlohmann::json small_model() {
  return {{"layers",
           {{{"name", "a"},
             {"params", 1000},
             {"forward_flops_per_sample", "20 kFLOP"},
             {"activation_bytes_per_sample", "1 kB"}},
            {{"name", "b"},
             {"params", 3000},
             {"forward_flops_per_sample", "20 kFLOP"},
             {"activation_bytes_per_sample", "1 kB"}}}}};
}

// Two layers of 0.4 M parameters together and 40 MFLOP per sample: a step of a few milliseconds
// on a core (about 8 ms here), so that a run of a few hundred steps lasts past a fault's time.
inline nlohmann::json few_ms_model() {
  return {{"layers",
           {{{"name", "a"},
             {"params", 100000},
             {"forward_flops_per_sample", "20 MFLOP"},
             {"activation_bytes_per_sample", "1 kB"}},
            {{"name", "b"},
             {"params", 300000},
             {"forward_flops_per_sample", "20 MFLOP"},
             {"activation_bytes_per_sample", "1 kB"}}}}};
}

inline std::vector<nlohmann::json> cluster_of(int workers) {
  std::vector<nlohmann::json> machines = {test::machine("ps", "100 GFLOPS", {}, "10 Gbps")};
  for (int w = 0; w < workers; ++w) {
    machines.push_back(
        test::machine("w" + std::to_string(w), "100 GFLOPS", {"1 TFLOPS"}, "10 Gbps"));
  }
  return machines;
}

inline nlohmann::json scenario(int workers, nlohmann::json training) {
  nlohmann::json replicas = nlohmann::json::array();
  for (int w = 0; w < workers; ++w) replicas.push_back("w" + std::to_string(w) + "/gpu0");
  nlohmann::json t = {{"batch_per_replica", 4}, {"steps", 6},       {"warmup_steps", 1},
                      {"replicas", replicas},   {"ps", {"ps/cpu"}}, {"client", "ps"}};
  t.update(training);
  std::vector<nlohmann::json> machines = cluster_of(workers);
  return test::scenario_json(machines, small_model(), t, "lv08", "100 Gbps");
}

struct RealRun {
  core::Trace trace;
  core::Checkpoint final;
};

inline RealRun run_real(const core::Plan& plan,
                        const std::function<void(const std::string&)>& look = {}) {
  test::TempDir dir;
  RealBackend backend;
  core::RunOptions options;
  options.settings = {
      {"node_binary", REPLISIM_BINARY}, {"checkpoint_dir", dir.path()}, {"connect_timeout_s", 20}};
  RealRun run{core::run_to_trace(backend, plan, options), {}};
  run.final = core::read_checkpoint(dir.path(), "final");
  if (look) look(dir.path());
  return run;
}

// What the run must have left in variable v: each apply's update, evaluated over the plan's
// gradient flow with the gradients gradient_fill.h defines.
class Expected {
 public:
  explicit Expected(const core::Plan& plan) : plan_(plan), graphs_(core::step_graphs(plan)) {
    for (const core::ClientGraph* g : graphs_) flows_.push_back(core::gradient_flow(*g));
    for (const core::Variable& v : plan.variables)
      values_.emplace_back(core::float_count(v.bytes), 0.0f);
    updated_.assign(plan.variables.size(), false);
    for (const core::ClientGraph* g : graphs_) {
      for (const core::Op& op : g->ops) {
        if (op.kind == OpKind::kApply || op.kind == OpKind::kAccumulate) {
          updated_[size_t(op.variable)] = true;
        }
      }
    }
  }
  // Starts from a checkpoint's values instead of zero (what a restart restores).
  void start_from(const core::Checkpoint& checkpoint) {
    for (size_t v = 0; v < values_.size(); ++v) {
      if (!updated_[v]) continue;
      const core::CheckpointTensor* t = checkpoint.find(int(v));
      ASSERT_NE(t, nullptr) << plan_.variables[v].name;
      ASSERT_EQ(t->values.size(), values_[v].size());
      values_[v] = t->values;
    }
  }

  // A variable the optimizer updates (not global_step).
  bool updated(size_t v) const { return updated_[v]; }

  // The gradient of v that op k of graph c hands on at step s.
  std::vector<float> gradient(int c, int64_t s, int k, int v) const {
    const core::ClientGraph& g = *graphs_[size_t(c)];
    const core::Op& op = g.ops[size_t(k)];
    const size_t n = core::float_count(plan_.variables[size_t(v)].bytes);
    std::vector<float> out(n, 0.0f);
    if (op.kind == OpKind::kBackward) {
      core::fill_gradient(out.data(), n, c, s, v, k);
      return out;
    }
    int count = 0;
    for (int in : op.inputs) {
      if (!carries(c, in, v)) continue;
      const std::vector<float> x = gradient(c, s, in, v);
      for (size_t i = 0; i < n; ++i) out[i] += x[i];
      ++count;
    }
    if (op.kind == OpKind::kAggregate && count > 1) {
      for (float& x : out) x /= float(count);
    }
    return out;
  }

  bool carries(int c, int op, int v) const {
    const core::GradientFlow& f = flows_[size_t(c)];
    const auto& p = f.produces[size_t(op)];
    return f.variable[size_t(op)] == v || std::find(p.begin(), p.end(), v) != p.end();
  }

  // Gradient descent: var -= learning_rate * gradient (ApplyGradientDescent).
  void apply(int v, const std::vector<float>& grad) {
    const float lr = float(plan_.optimizer.learning_rate);
    for (size_t i = 0; i < grad.size(); ++i) values_[size_t(v)][i] -= lr * grad[i];
  }

  // Every apply of graph c's step s.
  void step(int c, int64_t s) {
    const core::ClientGraph& g = *graphs_[size_t(c)];
    for (size_t k = 0; k < g.ops.size(); ++k) {
      if (g.ops[k].kind == OpKind::kApply)
        apply(g.ops[k].variable, gradient(c, s, int(k), g.ops[k].variable));
    }
  }

  int accumulate_op(int c, int v) const {
    const core::ClientGraph& g = *graphs_[size_t(c)];
    for (size_t k = 0; k < g.ops.size(); ++k) {
      if (g.ops[k].kind == OpKind::kAccumulate && g.ops[k].variable == v) return int(k);
    }
    return -1;
  }

  void expect_equal(const core::Checkpoint& final) const {
    for (size_t v = 0; v < values_.size(); ++v) {
      if (!updated_[v]) continue;
      const core::CheckpointTensor* t = final.find(int(v));
      ASSERT_NE(t, nullptr) << plan_.variables[v].name;
      ASSERT_EQ(t->values.size(), values_[v].size()) << plan_.variables[v].name;
      size_t differ = 0;
      for (size_t i = 0; i < values_[v].size(); ++i) {
        differ += std::memcmp(&t->values[i], &values_[v][i], sizeof(float)) != 0;
      }
      EXPECT_EQ(differ, 0u) << plan_.variables[v].name << ": first " << t->values[0] << " where "
                            << values_[v][0] << " was due";
      EXPECT_NE(values_[v][0], 0.0f);  // the run changed it
    }
  }

  const core::Plan& plan_;
  std::vector<const core::ClientGraph*> graphs_;
  std::vector<core::GradientFlow> flows_;
  std::vector<std::vector<float>> values_;
  std::vector<bool> updated_;
};

inline int count(const core::Trace& t, core::EventKind kind, const std::string& client = "") {
  return int(test::events_of(t, kind, client).size());
}

}  // namespace replisim::real::testing
