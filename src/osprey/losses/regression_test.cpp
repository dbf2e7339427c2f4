// MeanSquaredError, MeanAbsoluteError and Huber against PyTorch 1.13 (float64; the numbers come
// from reference_values.py), with Keras's rank handling and dtypes.
#include "osprey/losses/regression.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::losses {
namespace {

using namespace osprey::testing;

Tensor y() { return f64({1.0, -2.0, 0.5, 3.0, 0.0, 1.5}, {3, 2}); }
Variable pred() { return Variable(f64({1.5, -0.5, 0.4, 3.2, -2.5, 1.5}, {3, 2}), true); }
const Tensor kWeights = f64({0.5, 2.0, 1.0}, {3});

struct Case {
  const char* name;
  std::function<std::unique_ptr<Loss>(const std::string& reduction)> make;
  double mean;
  std::vector<double> mean_grad;
  double weighted_sum;
  std::vector<double> weighted_grad;
};

std::vector<Case> cases() {
  return {
      {"mse",
       [](const std::string& r) {
         return std::make_unique<MeanSquaredError>(RegressionLossOptions{r});
       },
       1.46666666667,
       {0.166666666667, 0.5, -0.0333333333333, 0.0666666666667, -0.833333333333, 0},
       3.8,
       {0.25, 0.75, -0.2, 0.4, -2.5, 0}},
      {"mae",
       [](const std::string& r) {
         return std::make_unique<MeanAbsoluteError>(RegressionLossOptions{r});
       },
       0.8,
       {0.166666666667, 0.166666666667, -0.166666666667, 0.166666666667, -0.166666666667, 0},
       2.05,
       {0.25, 0.25, -1, 1, -0.5, 0}},
      {"huber delta 1",
       [](const std::string& r) {
         return std::make_unique<Huber>(HuberOptions{1.0, r});
       },
       0.525,
       {0.0833333333333, 0.166666666667, -0.0166666666667, 0.0333333333333, -0.166666666667, 0},
       1.30625,
       {0.125, 0.25, -0.1, 0.2, -0.5, 0}},
      {"huber delta 0.5",
       [](const std::string& r) {
         return std::make_unique<Huber>(HuberOptions{0.5, r});
       },
       0.316666666667,
       {0.0833333333333, 0.0833333333333, -0.0166666666667, 0.0333333333333, -0.0833333333333, 0},
       0.775,
       {0.125, 0.125, -0.1, 0.2, -0.25, 0}},
  };
}

TEST(RegressionLossTest, ValuesAndGradientsMatchPyTorch) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Variable p = pred();
    const Variable l = (*c.make("sum_over_batch_size"))(y(), p);
    EXPECT_NEAR(l.item(), c.mean, 1e-11);
    l.backward();
    expect_near_all(values(p.grad()), c.mean_grad, 1e-11);
    Variable q = pred();
    const Variable s = (*c.make("sum"))(y(), q, &kWeights);
    EXPECT_NEAR(s.item(), c.weighted_sum, 1e-11);
    s.backward();
    expect_near_all(values(q.grad()), c.weighted_grad, 1e-11);
  }
}

TEST(RegressionLossTest, GradientsPassFiniteDifferenceChecks) {
  const Tensor t = randn({3, 4}, 8);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto loss = c.make("sum_over_batch_size");
    // Away from the kinks of |e| (at 0) and of Huber (at +-delta): e = pred - t >= 0.1 in size.
    Variable p(osprey::add(t, away_from_zero({3, 4}, 9).value()), true);
    OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return (*loss)(t, v[0]); }, (Vars{p}));
  }
}

TEST(RegressionLossTest, ReductionNoneAveragesTheLastAxisPerSample) {
  const Variable l = MeanSquaredError({.reduction = "none"})(y(), pred());
  EXPECT_EQ(l.shape(), Shape{3});
  expect_near_all(values(l), {(0.25 + 2.25) / 2, (0.01 + 0.04) / 2, 6.25 / 2}, 1e-12);
}

// Keras's squeeze_or_expand_to_same_rank: y_true [N] against y_pred [N, 1] and the reverse.
TEST(RegressionLossTest, ColumnAndFlatTargetsAreTheSame) {
  const Tensor flat = f64({1.0, 2.0, 4.0}, {3});
  const Tensor column = flat.reshape({3, 1});
  const Variable p(f64({1.5, 2.0, 3.0}, {3, 1}));
  const double want = (0.25 + 0.0 + 1.0) / 3;
  EXPECT_NEAR(MeanSquaredError()(flat, p).item(), want, 1e-15);
  EXPECT_NEAR(MeanSquaredError()(column, p).item(), want, 1e-15);
  EXPECT_NEAR(MeanSquaredError()(column, Variable(p.value().reshape({3}))).item(), want, 1e-15);
  // A rank-1 y_pred holds one value per sample, so reduction "none" keeps [N].
  EXPECT_EQ(MeanSquaredError({.reduction = "none"})(flat, Variable(p.value().reshape({3}))).shape(),
            Shape{3});
}

TEST(RegressionLossTest, ZeroErrorHasZeroAbsoluteErrorGradient) {
  Variable p(f64({1.0, 2.0}, {1, 2}), true);
  const Variable l = MeanAbsoluteError()(f64({1.0, 3.0}, {1, 2}), p);
  l.backward();
  expect_near_all(values(p.grad()), {0.0, -0.5}, 0.0);
}

TEST(RegressionLossTest, LowPrecisionPredictionsGiveFloat32LossesAndGradientsOfTheirOwnDtype) {
  Variable p(from_vector<float>({1.5f, -0.5f}, {1, 2}).to(DType::bfloat16), true);
  const Variable l = MeanSquaredError()(from_vector<float>({1.0f, -2.0f}, {1, 2}), p);
  EXPECT_EQ(l.dtype(), DType::float32);
  EXPECT_NEAR(l.item(), (0.25 + 2.25) / 2, 1e-6);
  l.backward();
  EXPECT_EQ(p.grad().dtype(), DType::bfloat16);
  expect_near_all(values(p.grad()), {0.5, 1.5}, 1e-2);
}

TEST(RegressionLossTest, BadArgumentsNameTheLossAndWhatWasReceived) {
  try {
    MeanSquaredError()(zeros({4, 2}), Variable(ones({4, 3})));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "MeanSquaredError: y_true and y_pred must have the same shape. Received: "
                 "y_true.shape=[4, 2], "
                 "y_pred.shape=[4, 3]");
  }
  try {
    Huber({.delta = 0.0});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Huber: delta must be positive. Received: delta=0");
  }
}

}  // namespace
}  // namespace osprey::losses
