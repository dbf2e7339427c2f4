// Categorical cross-entropies against PyTorch 1.13 (float64; reference_values.py prints the
// numbers), the softmax fast path, label formats and error messages.
#include "osprey/losses/crossentropy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/testing/test_helpers.h"

namespace osprey::losses {
namespace {

using namespace osprey::testing;

template <class F>
std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}

const std::vector<double> kLogits = {2.0, 1.0, 0.1, -0.5, 0.5, 2.5, -1.0, 0.3, -1.2, 0.4, 3.0, 0.0};
const std::vector<double> kProbs = {0.2, 0.5, 0.1, 0.3, 0.05, 0.6, 0.25, 0.1, 0.3, 0.3, 0.2, 0.4};
const std::vector<double> kSoft = {0.7, 0.1, 0.1, 0.1, 0.0, 1.0, 0.0, 0.0, 0.25, 0.25, 0.0, 0.5};
Tensor labels() { return from_vector<int64_t>({0, 1, 3}); }
Variable leaf(const std::vector<double>& v) { return Variable(f64(v, {3, 4}), true); }

TEST(SparseCategoricalCrossentropyTest, FromLogitsMatchesPyTorch) {
  Variable x = leaf(kLogits);
  const Variable l = SparseCategoricalCrossentropy({.from_logits = true})(labels(), x);
  EXPECT_EQ(l.shape(), Shape{});
  EXPECT_NEAR(l.item(), 1.28130170997, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.124939182644, 0.0766639236989, 0.0311692253727, 0.0171060335726, 0.0353447425,
                   -0.0721690481988, 0.00788647805442, 0.0289378276444, 0.00438830454909,
                   0.0217354147198, 0.292639929869, -0.318763649138},
                  1e-11);
}

TEST(SparseCategoricalCrossentropyTest, SampleWeightsAndReductionsMatchPyTorch) {
  Variable x = leaf(kLogits);
  const Tensor w = f64({0.5, 2.0, 1.0}, {3});
  const Variable l = SparseCategoricalCrossentropy({.from_logits = true})(labels(), x, &w);
  EXPECT_NEAR(l.item(), 1.28434753056, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.0624695913221, 0.0383319618495, 0.0155846126863, 0.00855301678628,
                   0.070689485, -0.144338096398, 0.0157729561088, 0.0578756552887, 0.00438830454909,
                   0.0217354147198, 0.292639929869, -0.318763649138},
                  1e-11);
  const Variable none = SparseCategoricalCrossentropy({.from_logits = true, .reduction = "none"})(
      labels(), leaf(kLogits));
  EXPECT_EQ(none.shape(), Shape{3});
  expect_near_all(values(none), {0.469711748539, 0.243993336049, 3.13020004532}, 1e-10);
  const Variable sum = SparseCategoricalCrossentropy({.from_logits = true, .reduction = "sum"})(
      labels(), leaf(kLogits));
  EXPECT_NEAR(sum.item(), 0.469711748539 + 0.243993336049 + 3.13020004532, 1e-10);
}

TEST(SparseCategoricalCrossentropyTest,
     IgnoreClassAveragesOverTheOtherLabelsLikePyTorchIgnoreIndex) {
  Variable x = leaf(kLogits);
  const SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -1});
  const Variable l = loss(from_vector<int64_t>({0, -1, 3}), x);
  EXPECT_NEAR(l.item(), 1.79995589693, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.187408773966, 0.114995885548, 0.046753838059, 0.0256590503588, 0, 0, 0, 0,
                   0.00658245682363, 0.0326031220796, 0.438959894803, -0.478145473707},
                  1e-11);
  expect_near_all(values(loss.call(from_vector<int64_t>({0, -1, 3}), leaf(kLogits))),
                  {0.469711748539, 0.0, 3.13020004532}, 1e-10);
  EXPECT_EQ(loss(from_vector<int64_t>({-1, -1, -1}), leaf(kLogits)).item(),
            0.0);  // nothing to average
}

// Keras divides the probabilities by their row sum, then clips to [1e-7, 1 - 1e-7].
TEST(SparseCategoricalCrossentropyTest, FromProbabilitiesNormalizesRowsAsKeras) {
  Variable p = leaf(kProbs);
  const Variable l = SparseCategoricalCrossentropy()(labels(), p);
  EXPECT_NEAR(l.item(), 1.10472866822, 1e-10);
  l.backward();
  expect_near_all(values(p.grad()),
                  {-1.36363636364, 0.30303030303, 0.30303030303, 0.30303030303, 0.333333333333,
                   -0.222222222222, 0.333333333333, 0.333333333333, 0.277777777778, 0.277777777778,
                   0.277777777778, -0.555555555556},
                  1e-10);
}

TEST(SparseCategoricalCrossentropyTest, LabelsMayBeInt32ColumnsOrFloatsHoldingIntegers) {
  const SparseCategoricalCrossentropy loss({.from_logits = true});
  const double want = loss(labels(), leaf(kLogits)).item();
  EXPECT_DOUBLE_EQ(loss(from_vector<int32_t>({0, 1, 3}, {3, 1}), leaf(kLogits)).item(), want);
  EXPECT_DOUBLE_EQ(loss(from_vector<float>({0, 1, 3}), leaf(kLogits)).item(), want);
  EXPECT_DOUBLE_EQ(loss(from_vector<uint8_t>({0, 1, 3}, {3, 1}), leaf(kLogits)).item(), want);
  EXPECT_EQ(message_of([&] {
              loss(from_vector<float>({0, 1.5, 3}), leaf(kLogits));
            }),
            "SparseCategoricalCrossentropy: float labels must hold integer class indices. "
            "Received: 1.5 at sample 1");
  EXPECT_EQ(message_of([&] {
              loss(from_vector<int64_t>({0, 4, 3}), leaf(kLogits));
            }),
            "SparseCategoricalCrossentropy: label 4 of sample 1 is out of range for 4 classes");
  EXPECT_EQ(message_of([&] {
              loss(from_vector<int64_t>({0, 1}), leaf(kLogits));
            }),
            "SparseCategoricalCrossentropy: y_true must hold one class index per sample, of shape "
            "[3] or [3, 1] "
            "to match y_pred [3, 4]. Received: y_true.shape=[2]");
}

TEST(SparseCategoricalCrossentropyTest, GradientsPassFiniteDifferenceChecks) {
  const Tensor ids = from_vector<int64_t>({2, 0, 1, 2}, {2, 2});
  for (bool logits : {true, false}) {
    SCOPED_TRACE(logits ? "from logits" : "from probabilities");
    const SparseCategoricalCrossentropy loss({.from_logits = logits, .ignore_class = 1});
    const Tensor w = f64({1.0, 0.5, 2.0, 1.5}, {2, 2});
    Variable in =
        logits ? input({2, 2, 3}, 3, true)
               : Variable(
                     random_uniform({2, 2, 3},
                                    {.seed = 4, .dtype = DType::float64, .low = 0.2, .high = 1.0}),
                     true);
    OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return loss(ids, v[0], &w); }, (Vars{in}));
  }
}

TEST(CategoricalCrossentropyTest, FromLogitsWithLabelSmoothingMatchesPyTorch) {
  Variable x = leaf(kLogits);
  const Variable l =
      CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1})(f64(kSoft, {3, 4}), x);
  EXPECT_NEAR(l.item(), 1.5941350433, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.00993918264414, 0.0383305903656, -0.00716410796068, -0.0212272997608,
                   0.0270114091666, -0.0471690481988, -0.000446855278909, 0.020604494311,
                   -0.0789450287842, -0.0615979186136, 0.284306596536, -0.143763649138},
                  1e-11);
}

TEST(CategoricalCrossentropyTest, FromProbabilitiesWithLabelSmoothingMatchesKeras) {
  Variable p = leaf(kProbs);
  const Variable l = CategoricalCrossentropy({.label_smoothing = 0.1})(f64(kSoft, {3, 4}), p);
  EXPECT_NEAR(l.item(), 1.17728969866, 1e-10);
  l.backward();
  expect_near_all(values(p.grad()),
                  {-0.788636363636, 0.226363636364, -0.080303030303, 0.175252525253, 0.166666666667,
                   -0.180555555556, 0.3, 0.25, 0.0, 0.0, 0.236111111111, -0.118055555556},
                  1e-10);
}

// Rows that do not sum to 1 leave the fused kernel (whose gradient p - t assumes they do).
TEST(CategoricalCrossentropyTest, MultiHotTargetsGetTheExactGradient) {
  Variable x = leaf(kLogits);
  const Tensor multi = f64({1, 1, 0, 0, 0, 0.5, 0, 0, 0, 0, 1, 1}, {3, 4});
  const Variable l = CategoricalCrossentropy({.from_logits = true})(multi, x);
  EXPECT_NEAR(l.item(), 1.77394008525, 1e-10);
  l.backward();
  expect_near_all(values(x.grad()),
                  {0.083454968045, -0.180005485935, 0.0623384507453, 0.0342120671451, 0.01767237125,
                   -0.0360845240994, 0.00394323902721, 0.0144689138222, 0.00877660909818,
                   0.0434708294395, 0.251946526405, -0.304193964942},
                  1e-11);
}

TEST(CategoricalCrossentropyTest, FromLogitsAndFromProbabilitiesAgree) {
  const Tensor probs = osprey::softmax(f64(kLogits, {3, 4}), -1);
  const Tensor soft = f64(kSoft, {3, 4});
  for (double s : {0.0, 0.2}) {
    const double a =
        CategoricalCrossentropy({.from_logits = true, .label_smoothing = s})(soft, leaf(kLogits))
            .item();
    const double b = CategoricalCrossentropy({.label_smoothing = s})(soft, Variable(probs)).item();
    EXPECT_NEAR(a, b, 1e-12) << "smoothing " << s;
  }
  const double a =
      SparseCategoricalCrossentropy({.from_logits = true})(labels(), leaf(kLogits)).item();
  EXPECT_NEAR(SparseCategoricalCrossentropy()(labels(), Variable(probs)).item(), a, 1e-12);
}

TEST(CategoricalCrossentropyTest, ShapeMismatchNamesTheLossAndBothShapes) {
  EXPECT_EQ(message_of([] {
              CategoricalCrossentropy()(zeros({3, 5}), Variable(ones({3, 4})));
            }),
            "CategoricalCrossentropy: y_true and y_pred must have the same shape. Received: "
            "y_true.shape=[3, 5], "
            "y_pred.shape=[3, 4]");
  EXPECT_EQ(
      message_of([] { CategoricalCrossentropy({.label_smoothing = 1.5}); }),
      "CategoricalCrossentropy: label_smoothing must be in [0, 1]. Received: label_smoothing=1.5");
}

// The plain path on a softmax computed by hand (exp / sum): same value and gradient as the
// fast path on autograd::softmax, within rounding, for moderate logits.
Variable softmax_by_hand(const Variable& x) {
  return autograd::exp(x) / autograd::sum(autograd::exp(x), {-1}, true);
}

TEST(SoftmaxFastPathTest, GivesThePlainPathsValueAndGradientOnModerateLogits) {
  const Tensor soft = f64(kSoft, {3, 4});
  for (int sparse = 0; sparse < 2; ++sparse) {
    SCOPED_TRACE(sparse ? "sparse" : "categorical");
    auto run = [&](const Variable& p) {
      return sparse ? SparseCategoricalCrossentropy()(labels(), p)
                    : CategoricalCrossentropy({.label_smoothing = 0.1})(soft, p);
    };
    Variable x1 = leaf(kLogits), x2 = leaf(kLogits);
    const Variable fast = run(autograd::softmax(x1));
    const Variable plain = run(softmax_by_hand(x2));
    EXPECT_NEAR(fast.item(), plain.item(), 1e-12);
    fast.backward();
    plain.backward();
    expect_near_all(values(x1.grad()), values(x2.grad()), 1e-12);
  }
  // Which path ran shows in the per-sample node: the fused kernel records "cross_entropy".
  EXPECT_STREQ(SparseCategoricalCrossentropy()
                   .call(labels(), autograd::softmax(leaf(kLogits)))
                   .grad_fn()
                   ->op(),
               "cross_entropy");
  EXPECT_STREQ(SparseCategoricalCrossentropy()
                   .call(labels(), softmax_by_hand(leaf(kLogits)))
                   .grad_fn()
                   ->op(),
               "sparse_categorical_crossentropy");
}

TEST(SoftmaxFastPathTest, StaysFiniteAndExactOnExtremeLogitsWhereThePlainPathSaturates) {
  const std::vector<float> big = {1000, 0, -1000, 0, 1000, 0};
  const Tensor ids = from_vector<int64_t>({1, 1});
  Variable x1(from_vector<float>(big, {2, 3}), true), x2(from_vector<float>(big, {2, 3}));
  const Variable fast = SparseCategoricalCrossentropy()(ids, autograd::softmax(x1));
  // Sample 0: lse = 1000, loss = 1000 - 0; sample 1: loss = log(1 + 2 e^-1000) = 0.
  EXPECT_NEAR(fast.item(), 500.0, 1e-3);
  fast.backward();
  expect_near_all(values(x1.grad()), {0.5, -0.5, 0.0, 0.0, 0.0, 0.0}, 1e-6);
  // The plain path on the same (stably computed) probabilities clips p = 0 to 1e-7: the loss
  // saturates at -log(1e-7) / 2 and the clipped entry passes no gradient.
  Variable probs(osprey::softmax(x2.value(), -1), true);
  const Variable plain = SparseCategoricalCrossentropy()(ids, probs);
  EXPECT_NEAR(plain.item(), -std::log(static_cast<double>(1e-7f)) / 2, 1e-4);
  plain.backward();
  EXPECT_EQ(probs.grad().at({0, 1}), 0.0);
  const Variable cat =
      CategoricalCrossentropy()(from_vector<float>({0, 1, 0, 0, 1, 0}, {2, 3}),
                                autograd::softmax(Variable(from_vector<float>(big, {2, 3}), true)));
  EXPECT_NEAR(cat.item(), 500.0, 1e-3);
  EXPECT_TRUE(std::isfinite(cat.item()));
}

TEST(SoftmaxFastPathTest, IsNotTakenForASoftmaxOverAnotherAxisNorWithoutAGraph) {
  const Variable over_rows = autograd::softmax(leaf(kLogits), 0);  // columns sum to 1, rows do not
  const Variable l = SparseCategoricalCrossentropy().call(labels(), over_rows);
  EXPECT_STREQ(l.grad_fn()->op(), "sparse_categorical_crossentropy");
  expect_near_all(
      values(l),
      values(SparseCategoricalCrossentropy().call(labels(), Variable(over_rows.value()))), 1e-15);
  autograd::NoGradGuard no_grad;
  const Variable p = autograd::softmax(leaf(kLogits));
  EXPECT_NEAR(SparseCategoricalCrossentropy()(labels(), p).item(), 1.28130170997, 1e-10);
}

}  // namespace
}  // namespace osprey::losses
