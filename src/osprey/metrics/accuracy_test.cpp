// The accuracy metrics on small cases worked by hand: label formats, argmax ties, thresholds,
// sample weights, accumulation across batches, reset, and shape errors.
#include "osprey/metrics/accuracy.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

Tensor probs() {
  return from_vector<float>(
      {0.1f, 0.8f, 0.1f, 0.5f, 0.3f, 0.2f, 0.2f, 0.2f, 0.6f, 0.3f, 0.3f, 0.4f}, {4, 3});
}

TEST(SparseCategoricalAccuracyTest, CountsArgmaxHitsForEveryLabelFormat) {
  // argmax per row: 1, 0, 2, 2 against labels 1, 1, 2, 0: hits 1, 0, 1, 0.
  for (const Tensor& labels :
       {from_vector<int64_t>({1, 1, 2, 0}), from_vector<int32_t>({1, 1, 2, 0}, {4, 1}),
        from_vector<float>({1, 1, 2, 0}), from_vector<uint8_t>({1, 1, 2, 0})}) {
    SparseCategoricalAccuracy acc;
    acc.update_state(labels, probs());
    EXPECT_DOUBLE_EQ(acc.result(), 0.5) << labels.describe();
  }
}

TEST(SparseCategoricalAccuracyTest, TiesGoToTheFirstIndexAsArgmax) {
  SparseCategoricalAccuracy first, second;
  const Tensor p = from_vector<double>({0.4, 0.4, 0.2}, {1, 3});
  first.update_state(from_vector<int64_t>({0}), p);
  second.update_state(from_vector<int64_t>({1}), p);
  EXPECT_EQ(first.result(), 1.0);
  EXPECT_EQ(second.result(), 0.0);
}

TEST(SparseCategoricalAccuracyTest, AccumulatesAcrossBatchesWeightedByBatchSizeAndSampleWeights) {
  SparseCategoricalAccuracy acc;
  acc.update_state(from_vector<int64_t>({1, 1, 2, 0}), probs());  // 2 of 4
  acc.update_state(from_vector<int64_t>({0, 1}),
                   from_vector<float>({0.9f, 0.1f, 0.2f, 0.8f}, {2, 2}));  // 2 of 2
  EXPECT_DOUBLE_EQ(acc.result(), 4.0 / 6.0);
  acc.reset_state();
  EXPECT_EQ(acc.result(), 0.0);
  const Tensor w = from_vector<float>({1, 0, 2, 1});
  acc.update_state(from_vector<int64_t>({1, 1, 2, 0}), probs(), &w);
  EXPECT_DOUBLE_EQ(acc.result(), (1.0 + 2.0) / 4.0);
}

TEST(SparseCategoricalAccuracyTest, LabelShapeMismatchNamesBothShapes) {
  SparseCategoricalAccuracy acc;
  try {
    acc.update_state(from_vector<int64_t>({1, 1, 2}), probs());
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "SparseCategoricalAccuracy: y_true must hold one class index per sample, of shape "
                 "[4] or [4, 1] "
                 "to match y_pred [4, 3]. Received: y_true.shape=[3]");
  }
}

TEST(CategoricalAccuracyTest, ComparesTheArgmaxOfBothSides) {
  CategoricalAccuracy acc;
  acc.update_state(from_vector<float>({0, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0}, {4, 3}), probs());
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  try {
    acc.update_state(zeros({4, 2}), probs());
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "CategoricalAccuracy: y_true and y_pred must have the same shape. Received: "
                 "y_true.shape=[4, 2], "
                 "y_pred.shape=[4, 3]");
  }
}

TEST(BinaryAccuracyTest, ThresholdsStrictlyAndAveragesEachSamplesValues) {
  // pred > 0.5: 0, 0, 1, 1 against 0, 1, 1, 0.
  BinaryAccuracy acc;
  acc.update_state(from_vector<float>({0, 1, 1, 0}),
                   from_vector<float>({0.2f, 0.5f, 0.7f, 0.9f}, {4, 1}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  BinaryAccuracy high(0.8);
  high.update_state(from_vector<float>({0, 1, 1, 0}, {4, 1}),
                    from_vector<float>({0.2f, 0.5f, 0.7f, 0.9f}));
  EXPECT_DOUBLE_EQ(high.result(), 0.25);
  // Two labels per sample, one weight per sample: sample 0 scores 1/2, sample 1 scores 1.
  BinaryAccuracy multi;
  const Tensor w = from_vector<double>({1, 3});
  multi.update_state(from_vector<float>({1, 0, 1, 1}, {2, 2}),
                     from_vector<float>({0.9f, 0.9f, 0.6f, 0.7f}, {2, 2}), &w);
  EXPECT_DOUBLE_EQ(multi.result(), (0.5 + 3.0) / 4.0);
  EXPECT_EQ(BinaryAccuracy(0.3).get_config()["threshold"], 0.3);
}

TEST(AccuracyTest, CountsExactMatches) {
  Accuracy acc;
  acc.update_state(from_vector<int64_t>({1, 2, 3, 4}), from_vector<int64_t>({1, 2, 0, 4}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  acc.update_state(from_vector<float>({1.5f}), from_vector<double>({1.5}));
  EXPECT_DOUBLE_EQ(acc.result(), 4.0 / 5.0);
  try {
    acc.update_state(zeros({3}), zeros({4}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "Accuracy: y_true and y_pred must have the same shape. Received: "
                 "y_true.shape=[3], y_pred.shape=[4]");
  }
}

}  // namespace
}  // namespace osprey::metrics
