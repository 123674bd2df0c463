// The values of a run (core/values): checkpoint shards and indexes (round trip, damage refused),
// the optimizers' update rules (TensorFlow's training_ops formulas) and the parameter store.
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "core/values/checkpoint.h"
#include "core/values/optimizer.h"
#include "core/values/parameter_store.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

CheckpointShard sample_shard() {
  CheckpointShard s;
  s.plan_hash = "0123456789abcdef";
  s.ps = 1;
  s.global_step = 42;
  s.tensors.push_back({"dense/kernel", 3, 0, 7, {1.5f, -2.25f, 0.0f}});
  s.tensors.push_back({"dense/kernel/Momentum", 3, 1, 7, {0.125f, 0.5f, 4.0f}});
  return s;
}

TEST(Checkpoint, AShardReadsBackAsWritten) {
  test::TempDir dir;
  const std::string path = dir.file("model.ckpt-0.ps1");
  write_checkpoint_shard(path, sample_shard());
  const CheckpointShard back = read_checkpoint_shard(path);
  EXPECT_EQ(back.plan_hash, "0123456789abcdef");
  EXPECT_EQ(back.ps, 1u);
  EXPECT_EQ(back.global_step, 42);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[1].name, "dense/kernel/Momentum");
  EXPECT_EQ(back.tensors[1].slot, 1u);
  EXPECT_EQ(back.tensors[0].values, (std::vector<float>{1.5f, -2.25f, 0.0f}));
  EXPECT_EQ(back.bytes(), test::read_file(path).size());
}

TEST(Checkpoint, ADamagedOrCutShardIsRefusedNamingTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("s.ps0");
  write_checkpoint_shard(path, sample_shard());
  std::string data = test::read_file(path);
  for (const std::string& bad :
       {data.substr(0, data.size() / 2), data.substr(0, 20) + char(data[20] ^ 1) + data.substr(21),
        std::string("RSCX") + data.substr(4), std::string()}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    try {
      read_checkpoint_shard(path);
      ADD_FAILURE() << "read a damaged shard of " << bad.size() << " bytes";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(Checkpoint, TheIndexNamesItsShardsAndACheckpointReadsWhole) {
  test::TempDir dir;
  write_checkpoint_shard(dir.file("final.ps1"), sample_shard());
  CheckpointIndex index{"final", "0123456789abcdef", 42, {"final.ps1"}, 0, 1.5, 1.75, {20, 22}};
  write_checkpoint_index(dir.path(), index);
  const Checkpoint c = read_checkpoint(dir.path(), "final");
  EXPECT_EQ(c.index.global_step, 42);
  // What a restart resumes from.
  EXPECT_EQ(c.index.start_s, 1.5);
  EXPECT_EQ(c.index.written_s, 1.75);
  EXPECT_EQ(c.index.client_steps, (std::vector<int64_t>{20, 22}));
  ASSERT_NE(c.find(3, 1), nullptr);
  EXPECT_EQ(c.find(3, 1)->values[2], 4.0f);
  EXPECT_EQ(c.find(4), nullptr);
  // A shard of another plan is not part of it.
  CheckpointShard other = sample_shard();
  other.plan_hash = "fedcba9876543210";
  write_checkpoint_shard(dir.file("final.ps1"), other);
  EXPECT_THROW(read_checkpoint(dir.path(), "final"), InputError);
  EXPECT_THROW(read_checkpoint(dir.path(), "missing"), InputError);
}

TEST(Optimizer, MomentumAndAdamFollowTensorFlowsUpdates) {
  float var = 1.0f, accum = 0.5f;
  const float grad = 0.25f;
  apply_momentum(&var, &accum, &grad, 1, 0.1f, 0.9f);
  EXPECT_FLOAT_EQ(accum, 0.5f * 0.9f + 0.25f);
  EXPECT_FLOAT_EQ(var, 1.0f - 0.1f * (0.5f * 0.9f + 0.25f));
  // Adam's first step from zero slots moves the variable by about lr (bias-corrected).
  float x = 1.0f, m = 0.0f, v = 0.0f;
  apply_adam(&x, &m, &v, &grad, 1, 0.001f, 0.9f, 0.999f, 1e-8f, 0.9f, 0.999f);
  EXPECT_NEAR(x, 1.0f - 0.001f, 1e-6);
  float y = 2.0f;
  apply_gradient_descent(&y, &grad, 1, 0.0625f);
  EXPECT_EQ(y, 2.0f - 0.015625f);
}

TEST(ParameterStore, ItHoldsItsShardAndSnapshotsValuesAndSlots) {
  const Plan plan = compile_plan(test::parse(test::two_ps_scenario({{"optimizer", "momentum"}})),
                                 "between_graph", {1});
  for (size_t ps = 0; ps < plan.ps_roles.size(); ++ps) {
    ParameterStore store(plan, int(ps));
    size_t held = 0, trained = 0;
    for (size_t v = 0; v < plan.variables.size(); ++v) {
      EXPECT_EQ(store.holds(int(v)), plan.variables[v].ps == int(ps));
      held += store.holds(int(v));
      trained += store.holds(int(v)) && plan.variables[v].name != "global_step";
    }
    EXPECT_GT(held, 0u);
    for (size_t v = 0; v < plan.variables.size(); ++v) {
      if (!store.holds(int(v)) || plan.variables[v].name == "global_step") continue;
      const size_t n = float_count(plan.variables[v].bytes);
      const std::vector<float> grad(n, 0.5f);
      store.apply(int(v), grad.data(), n);
      const auto value = store.read(int(v));
      ASSERT_EQ(value->size(), 4 * n);
      const float* f = reinterpret_cast<const float*>(value->data());
      EXPECT_FLOAT_EQ(f[0], -float(plan.optimizer.learning_rate) * 0.5f);
    }
    const CheckpointShard shard = store.snapshot("0123456789abcdef", 3);
    bool slot = false;
    for (const CheckpointTensor& t : shard.tensors) slot |= t.slot == 1;
    EXPECT_EQ(slot, trained > 0) << "momentum's accumulator is saved with the value";
  }
}

// A restart's parameter server loads the shard it saved: values, optimizer slots and applies
// (adam's beta powers too), bit for bit; a shard that does not fit the plan is refused.
TEST(ParameterStore, ARestoredShardIsTheSavedOne) {
  const Plan plan = compile_plan(test::parse(test::two_ps_scenario({{"optimizer", "adam"}})),
                                 "between_graph", {1});
  for (size_t ps = 0; ps < plan.ps_roles.size(); ++ps) {
    ParameterStore trained(plan, int(ps)), fresh(plan, int(ps));
    for (size_t v = 1; v < plan.variables.size(); ++v) {
      if (!trained.holds(int(v))) continue;
      const size_t n = float_count(plan.variables[v].bytes);
      std::vector<float> grad(n);
      for (size_t i = 0; i < n; ++i) grad[i] = 0.25f * float(i % 7) - 0.5f;
      trained.apply(int(v), grad.data(), n);
      trained.apply(int(v), grad.data(), n);
    }
    const CheckpointShard saved = trained.snapshot("0123456789abcdef", -1);
    fresh.restore(saved);
    const CheckpointShard again = fresh.snapshot("0123456789abcdef", -1);
    ASSERT_EQ(again.tensors.size(), saved.tensors.size());
    for (size_t t = 0; t < saved.tensors.size(); ++t) {
      EXPECT_EQ(again.tensors[t].name, saved.tensors[t].name);
      EXPECT_EQ(again.tensors[t].applies, saved.tensors[t].applies);
      EXPECT_EQ(again.tensors[t].values, saved.tensors[t].values) << saved.tensors[t].name;
    }
    if (saved.tensors.empty()) continue;
    CheckpointShard cut = saved;
    cut.tensors.front().values.pop_back();
    EXPECT_THROW(fresh.restore(cut), std::runtime_error);
  }
}

// A variable placed in a home of its own (a GPU's memory in real runs): it is stored there when
// placed, reads, snapshots and restores go through the home, an update made there is counted,
// an update on the host loads and stores it back; momentum's and Adam's variables are refused.
TEST(ParameterStore, APlacedVariableLivesInItsHome) {
  struct Home : ValueHome {
    std::map<int, std::vector<float>> values;
    void load(int v, float* out, size_t n) override { std::copy_n(values.at(v).begin(), n, out); }
    void store(int v, const float* in, size_t n) override { values[v].assign(in, in + n); }
  };
  const Plan plan = compile_plan(test::parse(test::two_ps_scenario({})), "between_graph", {1});
  const int v = 1;  // the first trained variable, and its PS's store
  ParameterStore store(plan, plan.variables[size_t(v)].ps);
  ASSERT_TRUE(store.holds(v));
  const size_t n = float_count(plan.variables[size_t(v)].bytes);
  Home home;
  EXPECT_FALSE(store.placed(v));
  store.place(v, &home);
  EXPECT_TRUE(store.placed(v));
  ASSERT_EQ(home.values.at(v), std::vector<float>(n, 0.0f));  // its value, stored when placed
  store.apply_placed(v, [&] { home.values[v][0] = 3.0f; });   // an update in the home
  EXPECT_EQ(reinterpret_cast<const float*>(store.read(v)->data())[0], 3.0f);
  const std::vector<float> grad(n, 2.0f);
  store.apply(v, grad.data(), n);  // on the host: loaded, updated, stored back
  const float lr = float(plan.optimizer.learning_rate);
  EXPECT_EQ(home.values.at(v)[0], 3.0f - 2.0f * lr);
  const CheckpointShard saved = store.snapshot("0123456789abcdef", -1);
  bool seen = false;
  for (const CheckpointTensor& t : saved.tensors) {
    if (t.variable != v) continue;
    seen = true;
    EXPECT_EQ(t.values[0], 3.0f - 2.0f * lr);
    EXPECT_EQ(t.applies, 2);  // apply_placed's and apply's
  }
  EXPECT_TRUE(seen);
  home.values[v].assign(n, 9.0f);
  store.restore(saved);  // stored back into the home
  EXPECT_EQ(home.values.at(v)[0], 3.0f - 2.0f * lr);
  EXPECT_THROW(store.apply_placed(0, [] {}), std::logic_error);  // global_step is not placed

  const Plan momentum = compile_plan(
      test::parse(test::two_ps_scenario({{"optimizer", "momentum"}})), "between_graph", {1});
  ParameterStore slots(momentum, momentum.variables[size_t(v)].ps);
  EXPECT_THROW(slots.place(v, &home), std::logic_error);
}

}  // namespace
}  // namespace replisim::core
