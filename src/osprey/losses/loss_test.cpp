// The Loss base: Keras's reductions, sample-weight broadcasting and the errors for bad arguments,
// checked on MeanSquaredError, whose per-sample losses are easy to write down.
#include "osprey/losses/loss.h"

#include <gtest/gtest.h>

#include "osprey/losses/regression.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::losses {
namespace {

using namespace osprey::testing;

// Per-sample squared errors 1, 4, 9, 16.
Tensor y() { return f64({0.0, 0.0, 0.0, 0.0}, {4, 1}); }
Variable pred() { return Variable(f64({1.0, 2.0, 3.0, 4.0}, {4, 1}), true); }
double mse(const std::string& reduction, const Tensor* w = nullptr) {
  return MeanSquaredError({.reduction = reduction})(y(), pred(), w).item();
}

TEST(LossTest, ReductionsFollowKeras) {
  const Tensor w = f64({1.0, 0.0, 0.5, 2.0}, {4});
  EXPECT_DOUBLE_EQ(mse("sum_over_batch_size"), 30.0 / 4);
  EXPECT_DOUBLE_EQ(mse("mean"), 30.0 / 4);
  EXPECT_DOUBLE_EQ(mse("sum"), 30.0);
  // Weighted: sum_over_batch_size still divides by the number of losses, not by sum(w).
  EXPECT_DOUBLE_EQ(mse("sum_over_batch_size", &w), (1 + 4.5 + 32) / 4.0);
  EXPECT_DOUBLE_EQ(mse("sum", &w), 1 + 4.5 + 32);
  EXPECT_DOUBLE_EQ(mse("mean_with_sample_weight", &w), (1 + 4.5 + 32) / 3.5);
  const Variable none = MeanSquaredError({.reduction = "none"})(y(), pred(), &w);
  EXPECT_EQ(none.shape(), Shape{4});
  expect_near_all(values(none), {1.0, 0.0, 4.5, 32.0}, 0.0);
}

TEST(LossTest, WeightedGradientsScaleEachSample) {
  const Tensor w = f64({1.0, 0.0, 0.5, 2.0}, {4});
  Variable p = pred();
  MeanSquaredError()(y(), p, &w).backward();
  // d/dp (w * p^2) / 4 = w * 2p / 4.
  expect_near_all(values(p.grad()), {0.5, 0.0, 0.75, 4.0}, 1e-15);
}

TEST(LossTest, SampleWeightsBroadcastFromAScalarAColumnOrALeadingShape) {
  EXPECT_DOUBLE_EQ(mse("sum", std::make_unique<Tensor>(full({}, 2.0, {DType::float64})).get()),
                   60.0);
  const Tensor column = f64({1.0, 1.0, 0.0, 0.0}, {4, 1});
  EXPECT_DOUBLE_EQ(mse("sum", &column), 5.0);
  // Losses [2, 3] (y [2, 3, 1]) with one weight per sample [2].
  const Tensor w = f64({1.0, 10.0}, {2});
  const Variable l = MeanSquaredError({.reduction = "sum"})(
      zeros({2, 3, 1}, {DType::float64}), Variable(ones({2, 3, 1}, {DType::float64})), &w);
  EXPECT_DOUBLE_EQ(l.item(), 3.0 + 30.0);
  const Tensor float32_weights = from_vector<float>({1, 1, 1, 1});
  EXPECT_EQ(MeanSquaredError()(y(), pred(), &float32_weights).dtype(),
            DType::float64);  // cast to the loss's
}

TEST(LossTest, EmptyBatchReducesToZero) {
  const Variable p(zeros({0, 3}));
  EXPECT_EQ(MeanSquaredError()(zeros({0, 3}), p).item(), 0.0);
  EXPECT_EQ(MeanSquaredError({.reduction = "sum"})(zeros({0, 3}), p).item(), 0.0);
}

TEST(LossTest, BadReductionsAndWeightsAreRejectedWithKerasStyleMessages) {
  try {
    MeanSquaredError({.reduction = "avg"});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "MeanSquaredError: invalid value for argument `reduction`. Expected one of: "
                 "sum_over_batch_size, "
                 "mean, sum, none, mean_with_sample_weight. Received: reduction='avg'");
  }
  const Tensor w = f64({1.0, 2.0, 3.0}, {3});
  try {
    mse("sum", &w);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "MeanSquaredError: sample_weight of shape [3] does not broadcast to the "
                 "per-sample losses of "
                 "shape [4]. Expected: a scalar, shape [4], or a leading part of it");
  }
  try {
    MeanSquaredError()(y(), Variable(from_vector<int32_t>({1, 2, 3, 4}, {4, 1})));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(
        e.what(),
        "MeanSquaredError: y_pred must be a floating-point tensor. Received: int32[4, 1] on cpu:0");
  }
}

TEST(LossTest, ResultIsFloat32ForFloat32Predictions) {
  const Variable l = MeanSquaredError()(from_vector<int32_t>({1, 2}, {2, 1}),
                                        Variable(from_vector<float>({1, 1}, {2, 1})));
  EXPECT_EQ(l.dtype(), DType::float32);
  EXPECT_FLOAT_EQ(static_cast<float>(l.item()), 0.5f);
}

}  // namespace
}  // namespace osprey::losses
