// Combiners against hand computations: the weighted average and its metrics, Caruana's greedy
// selection worked out round by round, Nelder-Mead and random search on constructed members
// whose best weights are known, and the errors for bad inputs.
#include "osprey/ensemble/combiners.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "osprey/core/error.h"
#include "osprey/tensor/factory.h"

namespace osprey::ensemble {
namespace {

// Expects fn() to throw E with exactly this message.
template <class E, class F>
void expect_message(F&& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

Tensor probs(const std::vector<float>& values, int64_t rows, int64_t classes) {
  return from_vector<float>(values, {rows, classes});
}

Tensor labels(const std::vector<int64_t>& ids) { return from_vector<int64_t>(ids); }

// Two-class rows whose true class (labels[i]) has probability p_true[i].
Tensor two_class(const std::vector<double>& p_true, const std::vector<int64_t>& y) {
  std::vector<float> v;
  for (size_t i = 0; i < p_true.size(); ++i) {
    const auto t = static_cast<float>(p_true[i]);
    v.push_back(y[i] == 0 ? t : 1.0f - t);
    v.push_back(y[i] == 0 ? 1.0f - t : t);
  }
  return probs(v, static_cast<int64_t>(p_true.size()), 2);
}

double sum_of(const std::vector<double>& w) { return std::accumulate(w.begin(), w.end(), 0.0); }

TEST(CombinersTest, WeightedAverageLogLossAndAccuracyMatchAHandComputation) {
  const std::vector<Tensor> p = {probs({0.8f, 0.2f, 0.3f, 0.7f}, 2, 2),
                                 probs({0.4f, 0.6f, 0.5f, 0.5f}, 2, 2)};
  const Tensor y = labels({0, 0});
  const std::vector<double> w = {3.0, 1.0};  // normalized to 0.75, 0.25
  // row 0: 0.75 * [0.8, 0.2] + 0.25 * [0.4, 0.6] = [0.7, 0.3]
  // row 1: 0.75 * [0.3, 0.7] + 0.25 * [0.5, 0.5] = [0.35, 0.65]
  const Tensor avg = weighted_average(p, w);
  EXPECT_EQ(avg.dtype(), DType::float32);
  EXPECT_EQ(avg.shape(), Shape({2, 2}));
  const std::vector<float> got = avg.to_vector<float>();
  const std::vector<float> want = {0.7f, 0.3f, 0.35f, 0.65f};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-7) << k;
  EXPECT_NEAR(ensemble_log_loss(p, w, y), -(std::log(0.7) + std::log(0.35)) / 2.0, 1e-7);
  EXPECT_DOUBLE_EQ(ensemble_accuracy(p, w, y), 0.5);  // row 1 predicts class 1
  EXPECT_NEAR(log_loss(avg, y), -(std::log(0.7) + std::log(0.35)) / 2.0, 1e-7);
  EXPECT_DOUBLE_EQ(accuracy(avg, y), 0.5);
}

TEST(CombinersTest, LogLossClipsAZeroProbabilityAt1e7) {
  const std::vector<Tensor> p = {probs({0.0f, 1.0f, 0.5f, 0.5f}, 2, 2)};
  EXPECT_NEAR(ensemble_log_loss(p, {1.0}, labels({0, 0})), (-std::log(1e-7) - std::log(0.5)) / 2,
              1e-9);
}

TEST(CombinersTest, LabelsAsInt32Int64IntegerFloatsOrOneHotRowsGiveTheSameNumbers) {
  const std::vector<Tensor> p = {
      probs({0.6f, 0.3f, 0.1f, 0.2f, 0.2f, 0.6f, 0.1f, 0.7f, 0.2f}, 3, 3)};
  const double want = -(std::log(0.6f) + std::log(0.6f) + std::log(0.2f)) / 3.0;
  const std::vector<Tensor> ys = {from_vector<int32_t>({0, 2, 2}), from_vector<int64_t>({0, 2, 2}),
                                  from_vector<float>({0, 2, 2}),
                                  from_vector<int64_t>({0, 2, 2}, {3, 1}),
                                  from_vector<float>({1, 0, 0, 0, 0, 1, 0, 0, 1}, {3, 3})};
  for (const Tensor& y : ys) {
    EXPECT_NEAR(ensemble_log_loss(p, {1.0}, y), want, 1e-7) << y.describe();
    EXPECT_NEAR(ensemble_accuracy(p, {1.0}, y), 2.0 / 3.0, 1e-12) << y.describe();
  }
}

TEST(CombinersTest, AverageWeightsAreOneOverTheMemberCount) {
  EXPECT_EQ(average_weights(4), std::vector<double>(4, 0.25));
  expect_message<ValueError>([] { average_weights(0); },
                             "average_weights: needs at least one member. Received: 0");
}

// True-class probabilities (labels 0, 1, 0, 1):
//   A = [0.9, 0.9, 0.9, 0.1], B = [0.5, 0.5, 0.5, 0.9], C = [0.4, 0.4, 0.4, 0.4].
// Round 1, single members: A 0.6547, B 0.5462, C 0.9163 -> B.
// Round 2, avg(B, X): +A = [0.7, 0.7, 0.7, 0.5] 0.4408, +B 0.5462, +C 0.7066 -> A.
// Round 3, (A + B + X) / 3: +A = [2.3, 2.3, 2.3, 1.1] / 3 -> 0.4501, +B = 1.9 / 3 -> 0.4568,
//   +C 0.5737 -> A.  Counts A 2, B 1, C 0.
TEST(CombinersTest, GreedySelectionOnLogLossMatchesAHandComputation) {
  const std::vector<int64_t> y = {0, 1, 0, 1};
  const std::vector<Tensor> p = {two_class({0.9, 0.9, 0.9, 0.1}, y),
                                 two_class({0.5, 0.5, 0.5, 0.9}, y),
                                 two_class({0.4, 0.4, 0.4, 0.4}, y)};
  const std::vector<double> w = greedy_selection_weights(p, labels(y), {.rounds = 3});
  EXPECT_EQ(w, (std::vector<double>{2.0 / 3.0, 1.0 / 3.0, 0.0}));
  EXPECT_EQ(greedy_selection_weights(p, labels(y), {.rounds = 1}),
            (std::vector<double>{0.0, 1.0, 0.0}));  // round 1 alone: B
  EXPECT_EQ(fit_weights("greedy", p, labels(y), {.greedy = {.rounds = 3}}), w);
}

// Class-0 probabilities (all labels 0), dyadic so every sum is exact:
//   A = [0.875, 0.875, 0.25, 0.25], B = [0.25, 0.25, 0.875, 0.875],
//   C = [0.625, 0.375, 0.625, 0.375]. A row is right when its class-0 sum s over k members
//   has s >= k / 2 (a tie goes to the first class, 0).
// Round 1: all 0.5 -> A (lowest index). Round 2, A + X: +A 0.5, +B [1.125]*4 1.0, +C 0.5 -> B.
// Round 3, A + B + X vs 1.5: +A 0.5, +B 0.5, +C = [1.75, 1.5, 1.75, 1.5] 1.0 (ties) -> C.
// Round 4, A + B + C + X = [1.75, 1.5, 1.75, 1.5] + X vs 2: +A = [2.625, 2.375, 2, 1.75] 0.75,
//   +B = [2, 1.75, 2.625, 2.375] 0.75, +C = [2.375, 1.875, 2.375, 1.875] 0.5 -> A (tie with B).
TEST(CombinersTest, GreedySelectionOnAccuracyBreaksTiesByLowestIndex) {
  const std::vector<int64_t> y = {0, 0, 0, 0};
  const std::vector<Tensor> p = {two_class({0.875, 0.875, 0.25, 0.25}, y),
                                 two_class({0.25, 0.25, 0.875, 0.875}, y),
                                 two_class({0.625, 0.375, 0.625, 0.375}, y)};
  EXPECT_EQ(greedy_selection_weights(p, labels(y), {.rounds = 4, .metric = "accuracy"}),
            (std::vector<double>{0.5, 0.25, 0.25}));
  EXPECT_EQ(greedy_selection_weights(p, labels(y), {.rounds = 1, .metric = "accuracy"}),
            (std::vector<double>{1.0, 0.0, 0.0}));
}

// Three members on 300 rows of 3 classes: a good one (true class 0.9), a confidently wrong one
// (true class 0.05, 0.9 on another class) and Dirichlet(1) noise.
std::vector<Tensor> good_bad_random(Tensor& y) {
  constexpr int64_t kRows = 300, kClasses = 3;
  std::mt19937 gen(7);
  std::exponential_distribution<double> expo(1.0);
  std::vector<int64_t> ids(kRows);
  std::vector<float> good, bad, noise;
  for (int64_t i = 0; i < kRows; ++i) {
    const int64_t t = static_cast<int64_t>(gen() % kClasses);
    ids[static_cast<size_t>(i)] = t;
    double e[kClasses], sum = 0.0;
    for (double& v : e) sum += v = expo(gen);
    for (int64_t c = 0; c < kClasses; ++c) {
      good.push_back(c == t ? 0.9f : 0.05f);
      bad.push_back(c == t ? 0.05f : (c == (t + 1) % kClasses ? 0.9f : 0.05f));
      noise.push_back(static_cast<float>(e[c] / sum));
    }
  }
  y = from_vector<int64_t>(ids);
  return {probs(good, kRows, kClasses), probs(bad, kRows, kClasses), probs(noise, kRows, kClasses)};
}

void expect_no_worse_than_average_or_any_member(const std::vector<Tensor>& p, const Tensor& y,
                                                const std::vector<double>& w) {
  const double loss = ensemble_log_loss(p, w, y);
  EXPECT_LE(loss, ensemble_log_loss(p, average_weights(p.size()), y) + 1e-9);
  for (size_t m = 0; m < p.size(); ++m) {
    std::vector<double> single(p.size(), 0.0);
    single[m] = 1.0;
    EXPECT_LE(loss, ensemble_log_loss(p, single, y) + 1e-9) << "member " << m;
  }
}

TEST(CombinersTest, NelderMeadGivesTheGoodMemberMostWeightAndTheConfidentlyWrongOneNone) {
  Tensor y;
  const std::vector<Tensor> p = good_bad_random(y);
  const std::vector<double> w = nelder_mead_weights(p, y);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_GT(w[0], 0.8);
  EXPECT_LT(w[1], 0.05);
  for (double v : w) EXPECT_GE(v, 0.0);
  EXPECT_NEAR(sum_of(w), 1.0, 1e-12);
  expect_no_worse_than_average_or_any_member(p, y, w);
  EXPECT_EQ(fit_weights("nelder_mead", p, y), w);
}

// A is right (0.9) on the first half and unsure (0.2) on the second, B the mirror image, C
// always wrong (0.05). By symmetry and concavity of log, the best mix is (0.5, 0.5, 0): every
// row then gets 0.55, a log loss of -log(0.55) = 0.5978, far below the plain average (0.9589)
// and A or B alone (0.8574).
std::vector<Tensor> complementary(Tensor& y) {
  std::vector<int64_t> ids(40);
  std::vector<double> a(40), b(40), c(40, 0.05);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int64_t>(i % 2);
    a[i] = i < 20 ? 0.9 : 0.2;
    b[i] = i < 20 ? 0.2 : 0.9;
  }
  y = labels(ids);
  return {two_class(a, ids), two_class(b, ids), two_class(c, ids)};
}

TEST(CombinersTest, NelderMeadFindsAnInteriorOptimumKnownBySymmetry) {
  Tensor y;
  const std::vector<Tensor> p = complementary(y);
  const std::vector<double> w = nelder_mead_weights(p, y);
  EXPECT_NEAR(w[0], 0.5, 1e-3);
  EXPECT_NEAR(w[1], 0.5, 1e-3);
  EXPECT_LT(w[2], 1e-3);
  EXPECT_NEAR(ensemble_log_loss(p, w, y), -std::log(0.55), 1e-6);
  expect_no_worse_than_average_or_any_member(p, y, w);
}

TEST(CombinersTest, RandomSearchFindsGoodWeightsAndIsReproducibleBySeed) {
  Tensor y;
  const std::vector<Tensor> p = good_bad_random(y);
  const std::vector<double> w = random_search_weights(p, y, {.trials = 500, .seed = 3});
  EXPECT_GT(w[0], 0.8);
  EXPECT_LT(w[1], 0.05);
  EXPECT_NEAR(sum_of(w), 1.0, 1e-12);
  expect_no_worse_than_average_or_any_member(p, y, w);

  Tensor y2;
  const std::vector<Tensor> p2 = complementary(y2);
  const std::vector<double> w2 = random_search_weights(p2, y2, {.trials = 1000, .seed = 3});
  EXPECT_NEAR(w2[0], 0.5, 0.1);
  EXPECT_NEAR(w2[1], 0.5, 0.1);
  EXPECT_LT(w2[2], 0.05);
  EXPECT_LT(ensemble_log_loss(p2, w2, y2), -std::log(0.55) + 0.02);
  expect_no_worse_than_average_or_any_member(p2, y2, w2);
  EXPECT_EQ(random_search_weights(p2, y2, {.trials = 1000, .seed = 3}), w2);
  EXPECT_NE(random_search_weights(p2, y2, {.trials = 1000, .seed = 4}), w2);
  // One trial: the plain average, the first candidate.
  EXPECT_EQ(random_search_weights(p2, y2, {.trials = 1}), average_weights(3));
}

TEST(CombinersTest, OneMemberGetsAllTheWeightFromEveryCombiner) {
  const std::vector<Tensor> p = {probs({0.7f, 0.3f, 0.4f, 0.6f}, 2, 2)};
  for (const std::string& name : combiner_names())
    EXPECT_EQ(fit_weights(name, p, labels({0, 1})), std::vector<double>{1.0}) << name;
}

TEST(CombinersTest, MismatchedShapesNameTheMemberAndBothShapes) {
  const std::vector<Tensor> p = {probs(std::vector<float>(12, 0.25f), 4, 3),
                                 probs(std::vector<float>(12, 0.25f), 4, 3),
                                 probs(std::vector<float>(8, 0.5f), 4, 2)};
  expect_message<ValueError>(
      [&] {
        nelder_mead_weights(p, labels({0, 1, 2, 0}));
      },
      "nelder_mead_weights: every member's predictions must have the shape of member 0's. "
      "Received: member 2 has shape [4, 2], member 0 has shape [4, 3]");
  expect_message<ValueError>(
      [&] {
        weighted_average({p[0], probs({1.0f}, 1, 1)}, {1.0, 1.0});
      },
      "weighted_average: every member's predictions must have the shape of member 0's. "
      "Received: member 1 has shape [1, 1], member 0 has shape [4, 3]");
  expect_message<ValueError>(
      [&] {
        fit_weights("greedy", {from_vector<float>({0.5f, 0.5f})}, labels({0, 1}));
      },
      "greedy_selection_weights: member 0's predictions must be [N, C] class probabilities. "
      "Received: shape [2]");
  expect_message<ValueError>([&] { fit_weights("average", {}, labels({0})); },
                             "fit_weights: needs the predictions of at least one member. "
                             "Received: 0 members");
}

TEST(CombinersTest, BadLabelsAreRefusedWithTheRowAndTheValidRange) {
  const std::vector<Tensor> p = {probs(std::vector<float>(12, 0.25f), 4, 3)};
  expect_message<ValueError>(
      [&] {
        ensemble_log_loss(p, {1.0}, labels({0, 1, 3, 0}));
      },
      "ensemble_log_loss: labels must be class ids in [0, 3). Received: "
      "y[2] = 3");
  expect_message<ValueError>(
      [&] {
        ensemble_accuracy(p, {1.0}, from_vector<float>({0, 1.5f, 2, 0}));
      },
      "ensemble_accuracy: labels must be class ids in [0, 3). Received: y[1] = 1.5");
  expect_message<ValueError>(
      [&] {
        ensemble_log_loss(p, {1.0}, labels({0, 1, 2}));
      },
      "ensemble_log_loss: y must hold one label per prediction row: [4] "
      "class ids or [4, 3] one-hot rows. Received: y of shape [3]");
  expect_message<ValueError>(
      [&] {
        ensemble_log_loss(p, {1.0},
                          from_vector<float>({1, 0, 0, 0, 1, 0, 0.5f, 0.5f, 0, 0, 0, 1}, {4, 3}));
      },
      "ensemble_log_loss: one-hot labels must have a single 1 and zeros elsewhere in each row. "
      "Received: row 2 = [0.5, 0.5, 0]");
}

TEST(CombinersTest, UnknownCombinerListsTheChoices) {
  const std::vector<Tensor> p = {probs({0.5f, 0.5f}, 1, 2)};
  expect_message<ValueError>([&] { fit_weights("median", p, labels({0})); },
                             "fit_weights: unknown combiner 'median'. Expected one of: average, "
                             "nelder_mead, random_search, greedy");
  expect_message<ValueError>(
      [&] { greedy_selection_weights(p, labels({0}), {.metric = "auc"}); },
      "greedy_selection_weights: metric must be one of log_loss, accuracy. Received: "
      "metric='auc'");
}

TEST(CombinersTest, BadWeightsAreRefused) {
  const std::vector<Tensor> p = {probs({0.5f, 0.5f}, 1, 2), probs({0.5f, 0.5f}, 1, 2)};
  expect_message<ValueError>([&] { weighted_average(p, {1.0}); },
                             "weighted_average: needs one weight per member (2). Received: 1 "
                             "weights");
  expect_message<ValueError>(
      [&] {
        weighted_average(p, {1.0, -0.5});
      },
      "weighted_average: weights must be finite and >= 0. Received: "
      "weights[1] = -0.5");
  expect_message<ValueError>(
      [&] {
        weighted_average(p, {0.0, 0.0});
      },
      "weighted_average: weights must not all be 0. Received: [0, 0]");
}

}  // namespace
}  // namespace osprey::ensemble
