// MeanAbsoluteError and MeanSquaredError metrics by hand: per-sample means over the last axis,
// rank alignment, weights and accumulation.
#include "osprey/metrics/regression.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

TEST(RegressionMetricTest, AveragesTheLastAxisThenTheSamples) {
  const Tensor y = from_vector<float>({1, -2, 0.5f, 3}, {2, 2});
  const Tensor p = from_vector<float>({1.5f, -0.5f, 0.5f, 2}, {2, 2});
  MeanAbsoluteError mae;
  MeanSquaredError mse;
  mae.update_state(y, p);
  mse.update_state(y, p);
  EXPECT_DOUBLE_EQ(mae.result(), ((0.5 + 1.5) / 2 + (0.0 + 1.0) / 2) / 2);
  EXPECT_DOUBLE_EQ(mse.result(), ((0.25 + 2.25) / 2 + (0.0 + 1.0) / 2) / 2);
  EXPECT_EQ(mae.name(), "mean_absolute_error");
}

TEST(RegressionMetricTest, FlatTargetsAreOneValuePerSampleAndBatchesWeighByTheirSize) {
  MeanAbsoluteError mae;
  mae.update_state(from_vector<double>({1, 2, 3}),
                   from_vector<double>({2, 2, 2}, {3, 1}));              // errors 1, 0, 1
  mae.update_state(from_vector<double>({0}), from_vector<double>({4}));  // error 4
  EXPECT_DOUBLE_EQ(mae.result(), (1 + 0 + 1 + 4) / 4.0);
  MeanSquaredError mse;
  const Tensor w = from_vector<double>({0, 1, 1});
  mse.update_state(from_vector<double>({1, 2, 3}), from_vector<double>({2, 2, 5}), &w);
  EXPECT_DOUBLE_EQ(mse.result(), 4.0 / 2.0);
}

TEST(RegressionMetricTest, ShapeMismatchNamesTheMetricAndBothShapes) {
  MeanSquaredError mse;
  try {
    mse.update_state(zeros({2, 3}), zeros({2, 2}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "MeanSquaredError: y_true and y_pred must have the same shape. Received: "
                 "y_true.shape=[2, 3], "
                 "y_pred.shape=[2, 2]");
  }
}

}  // namespace
}  // namespace osprey::metrics
