#include "osprey/autograd/ops/loss.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(LossTest, SparseCrossEntropyGradients) {
  const Tensor labels = from_vector<int64_t>({2, 0, 1}, {3});
  for (const char* reduction : {"mean", "sum", "none"}) {
    for (double smoothing : {0.0, 0.2}) {
      SCOPED_TRACE(std::string(reduction) + " smoothing " + std::to_string(smoothing));
      const CrossEntropyOptions o{.reduction = reduction, .label_smoothing = smoothing};
      OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return cross_entropy(v[0], labels, o); },
                              (Vars{input({3, 4}, 1, true)}));
    }
  }
}

TEST(LossTest, DenseCrossEntropyGradientsWithLeadingAxes) {
  const Tensor probs = osprey::softmax(randn({2, 3, 4}, 5), -1);
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return cross_entropy(v[0], probs, {.label_smoothing = 0.1}); },
      (Vars{input({2, 3, 4}, 6, true)}));
  const Tensor ids = from_vector<int32_t>({0, 3, 2, 1, 1, 0}, {2, 3});
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return cross_entropy(v[0], ids, {.reduction = "none"}); },
      (Vars{input({2, 3, 4}, 7)}));
}

// Values from PyTorch 1.13 (torch.nn.functional.cross_entropy, float64).
TEST(LossTest, MatchesPyTorch) {
  const Tensor logits = f64({2.0, 1.0, 0.1, 0.5, 2.5, -1.0}, {2, 3});
  const Tensor ids = from_vector<int64_t>({0, 2}, {2});
  Variable x(logits, true);
  const Variable l = cross_entropy(x, ids, {.label_smoothing = 0.1});
  EXPECT_EQ(l.shape(), Shape{});
  EXPECT_NEAR(l.item(), 2.0001041117, 1e-9);
  l.backward();
  expect_near_all(values(x.grad()),
                  {-0.137166097224, 0.104549818686, 0.032616278538, 0.0413906006704, 0.412321738638,
                   -0.453712339308},
                  1e-11);
  expect_near_all(values(cross_entropy(Variable(logits), ids, {.reduction = "none"})),
                  {0.417030016278, 3.65317820712}, 1e-10);
  Variable x2(logits, true);
  const Tensor dense = f64({0.2, 0.7, 0.1, 0.0, 0.5, 0.5}, {2, 3});
  const Variable l2 = cross_entropy(x2, dense, {.reduction = "sum"});
  EXPECT_NEAR(l2.item(), 3.2102082234, 1e-9);
  l2.backward();
  expect_near_all(values(x2.grad()),
                  {0.459001138886, -0.457567029295, -0.00143410959068, 0.116114534674,
                   0.357976810608, -0.474091345283},
                  1e-11);
}

TEST(LossTest, Float32LogitsGiveFloat32Losses) {
  Variable x(from_vector<float>({1, 2, 3, 4}, {2, 2}), true);
  const Variable l = cross_entropy(x, from_vector<int64_t>({1, 0}, {2}, Device::cpu(0)));
  EXPECT_EQ(l.dtype(), DType::float32);
  l.backward();
  EXPECT_EQ(x.grad().dtype(), DType::float32);
}

TEST(LossTest, BadLabelsAndOptionsAreErrors) {
  const Variable x = input({2, 3}, 1);
  expect_error<ValueError>(
      [&] {
        cross_entropy(x, from_vector<int64_t>({0, 1, 2}, {3}));
      },
      {"cross_entropy", "shape [2]", "[2, 3]", "[3]"});
  expect_error<ValueError>([&] { cross_entropy(x, from_vector<int64_t>({0, 3}, {2})); }, {"3"});
  expect_error<ValueError>(
      [&] {
        cross_entropy(x, zeros({2, 4}, {DType::float64}));
      },
      {"cross_entropy", "[2, 3]", "[2, 4]"});
  expect_error<ValueError>(
      [&] {
        cross_entropy(x, from_vector<int64_t>({0, 1}, {2}), {.reduction = "avg"});
      },
      {"cross_entropy", "reduction", "'avg'"});
}

TEST(LossTest, Bfloat16LogitsGiveTheFloat32LossOfTheSameValues) {
  const Tensor ids = from_vector<int64_t>({2, 0, 1}, {3});
  Variable x(randn({3, 5}, 8).to(DType::bfloat16), true);
  const Variable l = cross_entropy(x, ids);
  EXPECT_EQ(l.dtype(), DType::float32);
  EXPECT_EQ(l.item(), cross_entropy(Variable(x.value().to(DType::float32)), ids).item());
  l.backward();
  EXPECT_EQ(x.grad().dtype(), DType::bfloat16);
}

}  // namespace
}  // namespace osprey::autograd
