// BinaryCrossentropy against PyTorch 1.13 (float64; reference_values.py), and against Keras by
// hand where the two differ: Keras clips probabilities to [1e-7, 1 - 1e-7], PyTorch clamps the
// log at -100.
#include "osprey/losses/binary_crossentropy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/testing/test_helpers.h"

namespace osprey::losses {
namespace {

using namespace osprey::testing;

const std::vector<double> kLogits = {0.3, -1.2, 2.0, 0.1, -0.7, 4.0};
const std::vector<double> kProbs = {0.6, 0.2, 0.9, 0.55, 0.1, 0.75};
Tensor targets() { return f64({1.0, 0.0, 1.0, 1.0, 0.0, 0.3}, {3, 2}); }
Variable leaf(const std::vector<double>& v) { return Variable(f64(v, {3, 2}), true); }

TEST(BinaryCrossentropyTest, FromLogitsMatchesPyTorch) {
  Variable x = leaf(kLogits);
  const Variable l = BinaryCrossentropy({.from_logits = true})(targets(), x);
  EXPECT_NEAR(l.item(), 0.801716393288, 1e-11);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.0709262471981, 0.0385792027502, -0.0198671536704, -0.0791701354202,
                   0.055302037972, 0.113668965006},
                  1e-12);
}

TEST(BinaryCrossentropyTest, LabelSmoothingMovesTargetsTowardOneHalf) {
  Variable x = leaf(kLogits);
  const Variable l = BinaryCrossentropy(
      {.from_logits = true, .label_smoothing = 0.2, .reduction = "sum"})(targets(), x);
  EXPECT_NEAR(l.item(), 2.54014917986, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.162778741594, 0.0657376082505, -0.00960146101106, -0.187510406261,
                   0.115906113916, 0.321006895019},
                  1e-11);
}

TEST(BinaryCrossentropyTest, FromProbabilitiesMatchesPyTorchInsideTheClip) {
  Variable p = leaf(kProbs);
  const Variable l = BinaryCrossentropy()(targets(), p);
  EXPECT_NEAR(l.item(), 0.433206313612, 1e-11);
  l.backward();
  expect_near_all(
      values(p.grad()),
      {-0.277777777778, 0.208333333333, -0.185185185185, -0.30303030303, 0.185185185185, 0.4},
      1e-11);
  const Variable none = BinaryCrossentropy({.reduction = "none"})(targets(), leaf(kProbs));
  EXPECT_EQ(none.shape(), Shape{3});
  expect_near_all(values(none), {0.36698458754, 0.351598758207, 0.581035595089}, 1e-11);
}

// p = 1 for a 0 target and p = 0 for a 1 target: Keras clips p, PyTorch would give 100.
TEST(BinaryCrossentropyTest, SaturatedProbabilitiesAreClippedAsKeras) {
  const Tensor z = from_vector<float>({0.0f, 1.0f}, {1, 2});
  Variable p(from_vector<float>({1.0f, 0.0f}, {1, 2}), true);
  const Variable l = BinaryCrossentropy()(z, p);
  // In float32, 1 - 1e-7 rounds to 1 - 2^-23 * 2 = 0.99999988, so 1 - p_clipped = 1.1920929e-7;
  // the lower bound is 1e-7 itself.
  const double upper = -std::log(1.0 - static_cast<double>(1.0f - 1e-7f));
  const double lower = -std::log(static_cast<double>(1e-7f));
  EXPECT_NEAR(l.item(), (upper + lower) / 2, 1e-5);
  EXPECT_NEAR(upper, 15.9423847, 1e-6);
  l.backward();
  expect_near_all(values(p.grad()), {0.0, 0.0}, 0.0);  // clipped: no gradient, as tf.clip_by_value
  const Variable l64 =
      BinaryCrossentropy()(f64({0.0, 1.0}, {1, 2}), Variable(f64({1.0, 0.0}, {1, 2})));
  EXPECT_NEAR(l64.item(), -std::log(1e-7), 1e-7);  // float64 clips at 1e-7 exactly
}

TEST(BinaryCrossentropyTest, FromLogitsAndFromProbabilitiesAgree) {
  const Tensor probs = osprey::sigmoid(f64(kLogits, {3, 2}));
  for (double s : {0.0, 0.1}) {
    const double a =
        BinaryCrossentropy({.from_logits = true, .label_smoothing = s})(targets(), leaf(kLogits))
            .item();
    const double b = BinaryCrossentropy({.label_smoothing = s})(targets(), Variable(probs)).item();
    EXPECT_NEAR(a, b, 1e-12) << "smoothing " << s;
  }
}

TEST(BinaryCrossentropyTest, FromLogitsIsStableForHugeLogits) {
  Variable x(from_vector<float>({1e4f, -1e4f, 80.0f, -80.0f}, {2, 2}), true);
  const Variable l = BinaryCrossentropy({.from_logits = true, .reduction = "sum"})(
      from_vector<float>({0, 1, 1, 0}, {2, 2}), x);
  EXPECT_NEAR(l.item(), (1e4 + 1e4) / 2 + 2 * std::log1p(std::exp(-80.0)) / 2, 1e-2);
  l.backward();
  expect_near_all(values(x.grad()), {0.5, -0.5, 0.0, 0.0}, 1e-7);
}

// autograd::sigmoid's node hands its input to the stable logits form.
TEST(BinaryCrossentropyTest, SigmoidFastPathMatchesThePlainPathAndStaysFinite) {
  Variable x1 = leaf(kLogits), x2 = leaf(kLogits);
  const Variable fast = BinaryCrossentropy()(targets(), autograd::sigmoid(x1));
  const Variable by_hand =
      BinaryCrossentropy()(targets(), autograd::pow(1.0 + autograd::exp(-x2), -1.0));
  EXPECT_NEAR(fast.item(), by_hand.item(), 1e-12);
  fast.backward();
  by_hand.backward();
  expect_near_all(values(x1.grad()), values(x2.grad()), 1e-12);
  Variable big(from_vector<float>({100.0f, -100.0f}, {1, 2}), true);
  const Variable l =
      BinaryCrossentropy()(from_vector<float>({0, 1}, {1, 2}), autograd::sigmoid(big));
  EXPECT_NEAR(l.item(), 100.0, 1e-4);  // the plain path would stop at -log(1.19e-7) = 15.9
  l.backward();
  expect_near_all(values(big.grad()), {0.5, -0.5}, 1e-7);
}

TEST(BinaryCrossentropyTest, GradientsPassFiniteDifferenceChecks) {
  const Tensor z = targets();
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return BinaryCrossentropy({.from_logits = true})(z, v[0]); },
      (Vars{input({3, 2}, 5, true)}));
  const Variable p(
      random_uniform({3, 2}, {.seed = 6, .dtype = DType::float64, .low = 0.1, .high = 0.9}), true);
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return BinaryCrossentropy({.label_smoothing = 0.1})(z, v[0]); },
      (Vars{p}));
}

TEST(BinaryCrossentropyTest, ShapeMismatchNamesTheLossAndBothShapes) {
  try {
    BinaryCrossentropy()(zeros({4, 2}), Variable(ones({4, 3})));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "BinaryCrossentropy: y_true and y_pred must have the same shape. Received: "
                 "y_true.shape=[4, 2], "
                 "y_pred.shape=[4, 3]");
  }
}

}  // namespace
}  // namespace osprey::losses
