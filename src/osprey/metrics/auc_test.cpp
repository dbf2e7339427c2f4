// AUC against a trapezoid worked by hand on the thresholded confusion counts, and against the
// exact AUC (the Mann-Whitney statistic, computed here pair by pair without any library).
#include "osprey/metrics/auc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

// P(score of a positive > score of a negative), ties 1/2, each pair weighted by w_pos * w_neg.
double exact_auc(const std::vector<double>& p, const std::vector<double>& y,
                 const std::vector<double>& w) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t j = 0; j < p.size(); ++j) {
      if (y[i] != 1.0 || y[j] != 0.0) continue;
      const double pair = w[i] * w[j];
      den += pair;
      num += pair * (p[i] > p[j] ? 1.0 : p[i] == p[j] ? 0.5 : 0.0);
    }
  }
  return num / den;
}

const std::vector<double> kPreds = {0.1, 0.4, 0.6, 0.9};
const std::vector<double> kLabels = {0, 1, 0, 1};

TEST(AUCTest, ThreeThresholdsGiveTheTrapezoidWorkedByHand) {
  // Thresholds {-1e-7, 0.5, 1 + 1e-7}: TP = FP = {2, 1, 0}, so TPR = FPR = {1, 0.5, 0}.
  // Area = (1 - 0.5) * (1 + 0.5) / 2 + (0.5 - 0) * (0.5 + 0) / 2 = 0.5.
  AUC auc({.num_thresholds = 3});
  auc.update_state(from_vector<double>(kLabels), from_vector<double>(kPreds));
  EXPECT_EQ(auc.thresholds(), (std::vector<double>{-1e-7, 0.5, 1 + 1e-7}));
  EXPECT_EQ(auc.true_positives(), (std::vector<double>{2, 1, 0}));
  EXPECT_EQ(auc.false_positives(), (std::vector<double>{2, 1, 0}));
  EXPECT_EQ(auc.true_negatives(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(auc.false_negatives(), (std::vector<double>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(auc.result(), 0.5);
  AUC minoring({.num_thresholds = 3, .summation_method = "minoring"});
  AUC majoring({.num_thresholds = 3, .summation_method = "majoring"});
  minoring.update_state(from_vector<double>(kLabels), from_vector<double>(kPreds));
  majoring.update_state(from_vector<double>(kLabels), from_vector<double>(kPreds));
  EXPECT_DOUBLE_EQ(minoring.result(), 0.5 * 0.5 + 0.5 * 0.0);
  EXPECT_DOUBLE_EQ(majoring.result(), 0.5 * 1.0 + 0.5 * 0.5);
}

TEST(AUCTest, TwoHundredThresholdsSeparateTheseScoresAndGiveTheExactArea) {
  AUC auc;
  auc.update_state(from_vector<double>(kLabels), from_vector<double>(kPreds));
  EXPECT_DOUBLE_EQ(exact_auc(kPreds, kLabels, {1, 1, 1, 1}), 0.75);
  EXPECT_NEAR(auc.result(), 0.75, 1e-12);
}

TEST(AUCTest, PerfectInvertedAndConstantScores) {
  const Tensor y = from_vector<float>({0, 0, 1, 1});
  AUC perfect, inverted, constant;
  perfect.update_state(y, from_vector<float>({0.1f, 0.2f, 0.8f, 0.9f}));
  inverted.update_state(y, from_vector<float>({0.9f, 0.8f, 0.2f, 0.1f}));
  constant.update_state(y, from_vector<float>({0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_NEAR(perfect.result(), 1.0, 1e-12);
  EXPECT_NEAR(inverted.result(), 0.0, 1e-12);
  EXPECT_NEAR(constant.result(), 0.5, 1e-12);
}

// Scores at bucket centres (at most one distinct value per bucket, many ties): the thresholded
// area equals the exact weighted Mann-Whitney statistic, ties counted 1/2.
TEST(AUCTest, MatchesTheExactAreaWhenEachBucketHoldsOneScoreWithWeightsAndBatches) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> bucket(0, 198), coin(0, 1);
  std::uniform_real_distribution<double> weight(0.5, 2.0);
  std::vector<double> p, y, w;
  for (int i = 0; i < 300; ++i) {
    p.push_back((bucket(rng) + 0.5) / 199.0);
    y.push_back(coin(rng));
    w.push_back(weight(rng));
  }
  AUC auc;
  for (size_t b = 0; b < 300; b += 100) {  // three batches of [100, 1]
    const std::vector<double> pb(p.begin() + b, p.begin() + b + 100),
        yb(y.begin() + b, y.begin() + b + 100), wb(w.begin() + b, w.begin() + b + 100);
    const Tensor wt = from_vector<double>(wb);
    auc.update_state(from_vector<double>(yb, {100, 1}), from_vector<double>(pb, {100, 1}), &wt);
  }
  EXPECT_NEAR(auc.result(), exact_auc(p, y, w), 1e-12);
}

// Arbitrary scores: Keras's estimate is within about one bucket of the exact area.
TEST(AUCTest, ApproximatesTheExactAreaOnArbitraryScores) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> p, y;
  for (int i = 0; i < 1000; ++i) {
    y.push_back(i % 3 == 0 ? 1.0 : 0.0);
    p.push_back(1.0 / (1.0 + std::exp(-(noise(rng) + 1.2 * y.back()))));
  }
  AUC auc;
  auc.update_state(from_vector<double>(y), from_vector<double>(p));
  EXPECT_NEAR(auc.result(), exact_auc(p, y, std::vector<double>(p.size(), 1.0)), 2e-3);
  // from_logits applies the sigmoid itself.
  std::vector<double> logits;
  for (double v : p) logits.push_back(std::log(v / (1.0 - v)));
  AUC from_logits({.from_logits = true});
  from_logits.update_state(from_vector<double>(y), from_vector<double>(logits));
  EXPECT_NEAR(from_logits.result(), auc.result(), 1e-9);
}

TEST(AUCTest, ResetStateForgetsEverything) {
  AUC auc;
  auc.update_state(from_vector<double>(kLabels), from_vector<double>(kPreds));
  auc.reset_state();
  EXPECT_EQ(auc.result(), 0.0);
  auc.update_state(from_vector<double>({0, 1}), from_vector<double>({0.2, 0.7}));
  EXPECT_NEAR(auc.result(), 1.0, 1e-12);
}

TEST(AUCTest, BadOptionsAndShapesAreRejected) {
  try {
    AUC({.curve = "PR"});
    ADD_FAILURE() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(), "AUC: curve 'PR' is not implemented. Expected: 'ROC'");
  }
  try {
    AUC({.summation_method = "careful"});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "AUC: invalid summation_method. Expected one of: interpolation, minoring, "
                 "majoring. Received: "
                 "summation_method='careful'");
  }
  AUC auc;
  try {
    auc.update_state(zeros({3}), zeros({4}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(
        e.what(),
        "AUC: y_true and y_pred must have the same number of elements. Received: y_true.shape=[3], "
        "y_pred.shape=[4]");
  }
}

}  // namespace
}  // namespace osprey::metrics
