// Mean and the weighted accumulation every mean metric shares: weighting by batch size, sample
// weights per sample or per value, double accumulation, reset, and bad weights.
#include "osprey/metrics/mean.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

TEST(MeanTest, BatchesAreWeightedByTheirSize) {
  Mean loss("loss");
  loss.update_state(0.9, 128);
  loss.update_state(0.6, 64);
  EXPECT_DOUBLE_EQ(loss.result(), (0.9 * 128 + 0.6 * 64) / 192);
  EXPECT_EQ(loss.name(), "loss");
}

TEST(MeanTest, TensorValuesTakeOneWeightPerSampleOrPerValue) {
  Mean m;
  const Tensor w = from_vector<double>({1, 0, 1, 2});
  m.update_state(from_vector<float>({1, 2, 3, 4}), &w);
  EXPECT_DOUBLE_EQ(m.result(), (1 + 3 + 8) / 4.0);
  // Per-value weights: the weighted mean of the elements.
  Mean e;
  const Tensor wv = from_vector<double>({1, 0, 1, 1}, {2, 2});
  e.update_state(from_vector<double>({1, 2, 3, 4}, {2, 2}), &wv);
  EXPECT_DOUBLE_EQ(e.result(), (1 + 3 + 4) / 3.0);
  // Unweighted [N, D] values: each sample is the mean of its D values; samples count once each.
  Mean r;
  r.update_state(from_vector<double>({1, 3, 10, 20}, {2, 2}));
  r.update_state(from_vector<double>({5}));
  EXPECT_DOUBLE_EQ(r.result(), (2 + 15 + 5) / 3.0);
}

TEST(MeanTest, AccumulatesInDoubleWhateverTheInputDtype) {
  Mean m;
  // 2^24 + 1 + 1 is not representable in float32; in double the mean is exact.
  m.update_state(from_vector<float>({16777216.0f, 1.0f, 1.0f}));
  EXPECT_DOUBLE_EQ(m.result(), 16777218.0 / 3);
  Mean i;
  i.update_state(from_vector<int64_t>({(int64_t{1} << 40) + 1, 1}));
  EXPECT_DOUBLE_EQ(i.result(), static_cast<double>((int64_t{1} << 39) + 1));
}

TEST(MeanTest, ResultIsZeroBeforeAnyUpdateAndAfterReset) {
  Mean m;
  EXPECT_EQ(m.result(), 0.0);
  m.update_state(3.0);
  EXPECT_EQ(m.result(), 3.0);
  m.reset_state();
  EXPECT_EQ(m.result(), 0.0);
  EXPECT_EQ(m.state().count(), 0.0);
}

TEST(MeanTest, TheMetricSignatureAveragesYPred) {
  Mean m;
  m.update_state(zeros({3}), from_vector<float>({1, 2, 6}));
  EXPECT_DOUBLE_EQ(m.result(), 3.0);
}

TEST(MeanTest, WeightsThatDoNotBroadcastAreRejected) {
  Mean m;
  const Tensor w = from_vector<double>({1, 2, 3});
  try {
    m.update_state(from_vector<double>({1, 2, 3, 4}, {2, 2}), &w);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "Mean: sample_weight of shape [3] does not broadcast to the values of shape [2, "
                 "2]. Expected: a "
                 "scalar, one weight per sample [2], or one per value [2, 2]");
  }
}

}  // namespace
}  // namespace osprey::metrics
