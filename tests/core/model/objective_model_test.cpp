// The objective's model (core/model/objective_model.h): its layout, gradients against finite
// differences, the sync-equivalence arithmetic, SGD on the synthetic set and on Fashion-MNIST,
// the learning-rate schedule and staleness-aware scaling.
#include "core/model/objective_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "core/base/random.h"

namespace replisim::core {
namespace {

// The mean cross-entropy of `batch` at `params` (in double), computed apart from the model's code:
// the reference of the gradient check. `widths` as the model's (features, hidden..., classes).
double reference_loss_in_double(const std::vector<int>& widths, const std::vector<double>& params,
                                const BatchView& batch) {
  double total = 0;
  for (size_t i = 0; i < batch.samples; ++i) {
    std::vector<double> a(batch.x + i * size_t(batch.features),
                          batch.x + (i + 1) * size_t(batch.features));
    size_t offset = 0;
    for (size_t l = 1; l < widths.size(); ++l) {
      const int in = widths[l - 1];
      const int out = widths[l];
      std::vector<double> z(size_t(out), 0.0);
      for (int o = 0; o < out; ++o) {
        for (int k = 0; k < in; ++k)
          z[size_t(o)] += a[size_t(k)] * params[offset + size_t(k * out + o)];
        z[size_t(o)] += params[offset + size_t(in * out + o)];
        if (l + 1 < widths.size()) z[size_t(o)] = std::max(z[size_t(o)], 0.0);
      }
      offset += size_t(in * out + out);
      a = z;
    }
    double top = a[0];
    for (double v : a) top = std::max(top, v);
    double sum = 0;
    for (double v : a) sum += std::exp(v - top);
    total += std::log(sum) + top - a[size_t(batch.labels[i])];
  }
  return total / double(batch.samples);
}

// Checks every coordinate of the model's gradient against central differences of the double
// reference (step 1e-4): within 1e-3 absolute plus 1e-3 relative. float's own rounding of a
// gradient summed over 8 samples is about 1e-6 relative, a central difference's truncation error
// about h^2 = 1e-8; the bound leaves room for a ReLU kink crossed by a step, while a wrong factor
// or a transposed kernel is off by far more.
void expect_gradient_matches_finite_differences(const ObjectiveModel& model,
                                                const std::vector<int>& widths) {
  const TrainTestSets sets = make_teacher_student_set({8, 1, widths.front(), widths.back(), 21});
  const BatchView batch = whole(sets.train);
  std::vector<float> params = model.initial_parameters(5);
  // Biases away from 0, so that they matter.
  for (size_t v = 1; v < model.variables().size(); v += 2) {
    const ObjectiveVariable& bias = model.variables()[v];
    for (size_t i = 0; i < bias.size; ++i) params[bias.offset + i] = 0.1f * float(i % 3) - 0.05f;
  }
  const LossAndGradient analytic = model.loss_and_gradient(params, batch);
  std::vector<double> point(params.begin(), params.end());
  EXPECT_NEAR(analytic.loss, reference_loss_in_double(widths, point, batch), 1e-5);
  const double h = 1e-4;
  for (size_t i = 0; i < point.size(); ++i) {
    const double saved = point[i];
    point[i] = saved + h;
    const double up = reference_loss_in_double(widths, point, batch);
    point[i] = saved - h;
    const double down = reference_loss_in_double(widths, point, batch);
    point[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic.gradient[i], numeric, 1e-3 + 1e-3 * std::fabs(numeric))
        << model.name() << " parameter " << i;
  }
}

TEST(ObjectiveModelLayout, VariablesTileTheVectorAndCountAsDocumented) {
  const ObjectiveModel softmax = ObjectiveModel::softmax_regression(784, 10);
  EXPECT_EQ(softmax.name(), "softmax");
  EXPECT_EQ(softmax.parameter_count(), 7850u);
  ASSERT_EQ(softmax.variables().size(), 2u);
  EXPECT_EQ(softmax.variables()[0].name, "logits/kernel");
  EXPECT_EQ(softmax.variables()[1].name, "logits/bias");
  // Forward: 2 x 784 x 10 + 10 (bias) + 5 x 10 (loss); backward: 10 + 2 x 784 x 10 + 10.
  EXPECT_EQ(softmax.forward_flop_per_sample(), 15740);
  EXPECT_EQ(softmax.backward_flop_per_sample(), 15700);

  const ObjectiveModel mlp = ObjectiveModel::mlp(6, {5, 4}, 3);
  EXPECT_EQ(mlp.name(), "mlp(5,4)");
  std::vector<std::string> names;
  size_t next = 0;
  for (const ObjectiveVariable& v : mlp.variables()) {
    names.push_back(v.name);
    EXPECT_EQ(v.offset, next);
    EXPECT_EQ(v.size, size_t(v.rows) * size_t(v.columns));
    next += v.size;
  }
  EXPECT_EQ(next, mlp.parameter_count());
  EXPECT_EQ(mlp.parameter_count(), size_t(6 * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3));
  EXPECT_EQ(names, (std::vector<std::string>{"hidden0/kernel", "hidden0/bias", "hidden1/kernel",
                                             "hidden1/bias", "logits/kernel", "logits/bias"}));
  // Forward: (60 + 5 + 5) + (40 + 4 + 4) + (24 + 3) + 15; backward: 3 + (60 + 5) + (40 + 4 + 40
  // + 5) + (24 + 3 + 24 + 4).
  EXPECT_EQ(mlp.forward_flop_per_sample(), 160);
  EXPECT_EQ(mlp.backward_flop_per_sample(), 212);
}

TEST(ObjectiveModelInit, TheSameSeedGivesTheSameParametersWithinGlorotsBound) {
  const ObjectiveModel mlp = ObjectiveModel::mlp(20, {10}, 4);
  const std::vector<float> a = mlp.initial_parameters(3);
  EXPECT_EQ(a, mlp.initial_parameters(3));
  EXPECT_NE(a, mlp.initial_parameters(4));
  const ObjectiveVariable& kernel = mlp.variables()[0];
  const float bound = float(std::sqrt(6.0 / 30.0));
  for (size_t i = 0; i < kernel.size; ++i) EXPECT_LE(std::fabs(a[kernel.offset + i]), bound);
  const ObjectiveVariable& bias = mlp.variables()[1];
  for (size_t i = 0; i < bias.size; ++i) EXPECT_EQ(a[bias.offset + i], 0.0f);
}

TEST(ObjectiveModelGradient, SoftmaxMatchesCentralDifferences) {
  expect_gradient_matches_finite_differences(ObjectiveModel::softmax_regression(7, 4), {7, 4});
}

TEST(ObjectiveModelGradient, MlpMatchesCentralDifferences) {
  expect_gradient_matches_finite_differences(ObjectiveModel::mlp(6, {5, 4}, 3), {6, 5, 4, 3});
}

TEST(ObjectiveModelGradient, RepeatsBitwise) {
  const ObjectiveModel mlp = ObjectiveModel::mlp(30, {16}, 5);
  const TrainTestSets sets = make_teacher_student_set({256, 1, 30, 5, 2});
  const std::vector<float> params = mlp.initial_parameters(1);
  const LossAndGradient a = mlp.loss_and_gradient(params, whole(sets.train));
  const LossAndGradient b = mlp.loss_and_gradient(params, whole(sets.train));
  EXPECT_EQ(std::memcmp(a.gradient.data(), b.gradient.data(), a.gradient.size() * sizeof(float)),
            0);
  EXPECT_EQ(a.loss, b.loss);
}

// Sync training's arithmetic: N workers' gradients of b samples each, averaged, are bitwise the
// gradient of the N x b batch computed as N sub-batches; and equal to within float rounding to the
// gradient of the whole batch taken as one.
TEST(ObjectiveModelSync, AveragedSubBatchGradientsEqualTheBigBatchsBitwise) {
  for (const ObjectiveModel& model :
       {ObjectiveModel::softmax_regression(40, 6), ObjectiveModel::mlp(40, {24, 12}, 6)}) {
    const int workers = 4;
    const size_t per_worker = 32;
    const TrainTestSets sets = make_teacher_student_set({int(workers * per_worker), 1, 40, 6, 9});
    const std::vector<float> params = model.initial_parameters(2);
    std::vector<LossAndGradient> parts;
    for (int w = 0; w < workers; ++w) {
      // Each worker's batch in a buffer of its own, as it would be in its own process.
      DataSet own;
      own.features = 40;
      own.classes = 6;
      const BatchView rows_of_w = rows(sets.train, size_t(w) * per_worker, per_worker);
      own.x.assign(rows_of_w.x, rows_of_w.x + per_worker * 40);
      own.labels.assign(rows_of_w.labels, rows_of_w.labels + per_worker);
      parts.push_back(model.loss_and_gradient(params, whole(own)));
    }
    std::vector<const float*> pointers;
    for (const LossAndGradient& p : parts) pointers.push_back(p.gradient.data());
    std::vector<float> averaged(model.parameter_count());
    average_gradients(pointers, averaged.size(), averaged.data());

    const LossAndGradient big = model.loss_and_gradient(params, whole(sets.train), workers);
    EXPECT_EQ(std::memcmp(big.gradient.data(), averaged.data(), averaged.size() * sizeof(float)), 0)
        << model.name();
    // The whole batch as one (another summation order): equal up to float rounding.
    const LossAndGradient one = model.loss_and_gradient(params, whole(sets.train));
    for (size_t i = 0; i < averaged.size(); ++i) {
      ASSERT_NEAR(one.gradient[i], averaged[i], 1e-5 + 1e-4 * std::fabs(averaged[i]))
          << model.name() << " parameter " << i;
    }
    EXPECT_NEAR(one.loss, big.loss, 1e-6);
  }
}

TEST(ObjectiveModelSgd, SoftmaxRegressionLearnsTheTeacher) {
  const TrainTestSets sets = make_teacher_student_set({4000, 2000, 20, 4, 17});
  const ObjectiveModel model = ObjectiveModel::softmax_regression(20, 4);
  std::vector<float> params = model.initial_parameters(1);
  const ObjectiveEvaluation before = model.evaluate(params, whole(sets.test));
  BatchIterator batches(sets.train, shard_indices(sets.train.samples(), 1, 0, 1), 32, 1);
  for (int step = 0; step < 1000; ++step) {
    sgd_apply(params, model.loss_and_gradient(params, batches.next()).gradient, 0.5);
  }
  const ObjectiveEvaluation after = model.evaluate(params, whole(sets.test));
  std::printf("synthetic teacher-student, softmax: test accuracy %.4f -> %.4f, loss %.4f -> %.4f\n",
              before.accuracy, after.accuracy, before.loss, after.loss);
  EXPECT_LT(after.loss, 0.6 * before.loss);
  EXPECT_GT(after.accuracy, 0.7);  // chance: 0.25
}

// The published figure: Fashion-MNIST's benchmark table (zalandoresearch/fashion-mnist, README,
// "Benchmark": scikit-learn's LogisticRegression at 0.842 test accuracy). Sequential SGD, batch
// 64, 5 epochs, learning rate 0.5 halved after each epoch (step decay every 937 steps): plain
// softmax regression on pixels in [0, 1]. A sweep on 2026-12-06 (base rates 0.05 to 0.5,
// constant or decayed x0.5 / x0.7 per epoch) gave 0.8433 for this setting (5 x 937 steps), the
// best of them, and this test's 4,687 steps 0.8426; constant rates ended between 0.73 and 0.835,
// their last epochs oscillating. The guard is 82%.
TEST(ObjectiveModelFashionMnist, SequentialSoftmaxRegressionReachesThePublishedAccuracy) {
  struct stat info {};
  if (stat((std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz").c_str(), &info) != 0) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir
                 << " (scripts/setup installs Debian's dataset-fashion-mnist)";
  }
  const auto start = std::chrono::steady_clock::now();
  const TrainTestSets sets = load_fashion_mnist();
  ASSERT_EQ(sets.train.samples(), 60000u);
  ASSERT_EQ(sets.test.samples(), 10000u);
  const auto loaded = std::chrono::steady_clock::now();
  const ObjectiveModel model = ObjectiveModel::softmax_regression(784, 10);
  std::vector<float> params = model.initial_parameters(1);
  const int batch = 64;
  const int epochs = 5;
  LearningRateSchedule schedule;
  schedule.kind = LearningRateSchedule::Kind::kStepDecay;
  schedule.decay_steps = 60000 / batch;
  schedule.decay_rate = 0.5;
  BatchIterator batches(sets.train, shard_indices(sets.train.samples(), 1, 0, 1), batch, 1);
  const int steps = epochs * 60000 / batch;
  for (int step = 0; step < steps; ++step) {
    sgd_apply(params, model.loss_and_gradient(params, batches.next()).gradient,
              schedule.at(0.5, step));
  }
  const ObjectiveEvaluation result = model.evaluate(params, whole(sets.test));
  const auto end = std::chrono::steady_clock::now();
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf(
      "Fashion-MNIST softmax regression, %d steps of batch %d (lr 0.5, %s): test accuracy %.4f, "
      "loss %.4f; load %.2f s, train and evaluate %.2f s\n",
      steps, batch, schedule.describe().c_str(), result.accuracy, result.loss,
      seconds(start, loaded), seconds(loaded, end));
  EXPECT_GE(result.accuracy, 0.82);
}

// A subset keeps the first samples of each set: the same rows as the full set's.
TEST(ObjectiveModelFashionMnist, ASubsetIsTheFirstSamplesOfEachSet) {
  struct stat info {};
  if (stat((std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz").c_str(), &info) != 0) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir
                 << " (scripts/setup installs Debian's dataset-fashion-mnist)";
  }
  const TrainTestSets subset = load_fashion_mnist(kFashionMnistDir, 300);
  ASSERT_EQ(subset.train.samples(), 300u);
  ASSERT_EQ(subset.test.samples(), 300u);
  const DataSet test = read_idx_images_and_labels(
      std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz",
      std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz", kFashionMnistClasses);
  ASSERT_EQ(test.samples(), 10000u);
  EXPECT_TRUE(std::equal(subset.test.x.begin(), subset.test.x.end(), test.x.begin()));
  EXPECT_TRUE(
      std::equal(subset.test.labels.begin(), subset.test.labels.end(), test.labels.begin()));
  EXPECT_EQ(*std::max_element(test.x.begin(), test.x.end()), 1.0f);  // 255 / 255
  EXPECT_EQ(*std::min_element(test.x.begin(), test.x.end()), 0.0f);
}

TEST(ObjectiveModelSchedule, StepDecayFollowsTfsStaircaseAndStalenessDivides) {
  const LearningRateSchedule constant;
  EXPECT_EQ(constant.at(0.1, 123456), 0.1);
  LearningRateSchedule step;
  step.kind = LearningRateSchedule::Kind::kStepDecay;
  step.decay_steps = 1000;
  step.decay_rate = 0.5;
  EXPECT_EQ(step.at(0.1, 0), 0.1);
  EXPECT_EQ(step.at(0.1, 999), 0.1);
  EXPECT_EQ(step.at(0.1, 1000), 0.05);
  EXPECT_EQ(step.at(0.1, 2500), 0.025);
  EXPECT_EQ(step.describe(), "step decay x0.5 every 1000 steps");
  EXPECT_EQ(staleness_aware_learning_rate(0.4, 0), 0.4);
  EXPECT_EQ(staleness_aware_learning_rate(0.4, 1), 0.4);
  EXPECT_EQ(staleness_aware_learning_rate(0.4, 4), 0.1);
}

TEST(ObjectiveModelSgd, ApplyAndAverageDoWhatTheySay) {
  std::vector<float> params{1.0f, -2.0f, 0.5f};
  sgd_apply(params, {0.5f, 1.0f, -4.0f}, 0.25);
  EXPECT_EQ(params, (std::vector<float>{0.875f, -2.25f, 1.5f}));
  const std::vector<float> a{1, 2, 3}, b{3, 2, 1}, c{2, 5, 8};
  std::vector<float> out(3);
  average_gradients({a.data(), b.data(), c.data()}, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4}));
}

}  // namespace
}  // namespace replisim::core
