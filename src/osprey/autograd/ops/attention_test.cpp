#include "osprey/autograd/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

// A bool tensor from 0/1 values.
Tensor bools(const std::vector<double>& v, const Shape& s) { return f64(v, s).to(DType::boolean); }

void expect_message(const std::function<void()>& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected ValueError: " << message;
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(AttentionTest, GradientsMatchFiniteDifferences) {
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2]); },
      (Vars{input({2, 2, 3, 4}, 1), input({2, 2, 5, 4}, 2), input({2, 2, 5, 3}, 3)}));
}

TEST(AttentionTest, GradientsWithCausalMaskGroupedHeadsAndStridedInputs) {
  const Tensor mask = bools({1, 1, 0, 1, 1, 1, 1, 0, 1, 1}, {2, 1, 1, 5});
  const Tensor bias = randn({4, 5}, 9);
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) {
        return scaled_dot_product_attention(
            v[0], v[1], v[2],
            {.causal = true, .key_padding_mask = mask.reshape({2, 5}), .scale = 0.7});
      },
      (Vars{input({2, 4, 4, 3}, 4, true), input({2, 2, 5, 3}, 5, true), input({2, 2, 5, 2}, 6)}));
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2], {.mask = bias}); },
      (Vars{input({1, 3, 4, 2}, 7), input({1, 1, 5, 2}, 8), input({1, 1, 5, 2}, 10)}));
}

TEST(AttentionTest, GradientsWithDropoutAndAFixedSeed) {
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return scaled_dot_product_attention(v[0], v[1], v[2], {.dropout = 0.3, .seed = 11});
      },
      (Vars{input({1, 2, 4, 3}, 12), input({1, 2, 6, 3}, 13), input({1, 2, 6, 3}, 14)}));
}

// A query row that may attend to no key gives output 0 and gradients 0, not NaN; the other rows
// are unaffected.
TEST(AttentionTest, FullyMaskedRowsGiveZeroOutputAndZeroGradient) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Variable q(randn({1, 1, 3, 4}, 1).to(dt), true);
    Variable k(randn({1, 1, 3, 4}, 2).to(dt), true);
    Variable v(randn({1, 1, 3, 4}, 3).to(dt), true);
    // Row 1 masked out entirely; row 0 sees keys 0 and 2.
    const Tensor mask = bools({1, 0, 1, 0, 0, 0, 1, 1, 1}, {3, 3});
    const Variable y = scaled_dot_product_attention(q, k, v, {.mask = mask});
    sum(mul(y, Variable(randn({1, 1, 3, 4}, 4).to(dt)))).backward();
    const std::vector<double> out = values(y), dq = values(q.grad());
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(out[4 + c], 0.0);
      EXPECT_EQ(dq[4 + c], 0.0);
      EXPECT_TRUE(std::isfinite(out[c]) && std::isfinite(out[8 + c]));
    }
    for (double g : values(k.grad())) EXPECT_TRUE(std::isfinite(g));
    for (double g : values(v.grad())) EXPECT_TRUE(std::isfinite(g));
    // A float mask of -inf acts the same.
    const Tensor additive = where(mask, zeros({3, 3}), full({3, 3}, -INFINITY));
    expect_near_all(values(scaled_dot_product_attention(q, k, v, {.mask = additive})), out, 0.0);
  }
}

TEST(AttentionTest, CausalIsTopLeftAlignedWhenTqDiffersFromTk) {
  // Query i attends keys 0..i (PyTorch 2's is_causal), so with Tq = 2 < Tk = 4 the first query
  // sees key 0 only: its output is v[0].
  const Variable q(randn({1, 1, 2, 3}, 1)), k(randn({1, 1, 4, 3}, 2)), v(randn({1, 1, 4, 3}, 3));
  const std::vector<double> y = values(scaled_dot_product_attention(q, k, v, {.causal = true}));
  const std::vector<double> v0 = values(v.value().narrow(2, 0, 1));
  expect_near_all({y[0], y[1], y[2]}, v0, 1e-15);
  const Tensor tril = bools({1, 0, 0, 0, 1, 1, 0, 0}, {2, 4});
  expect_near_all(y, values(scaled_dot_product_attention(q, k, v, {.mask = tril})), 1e-15);
}

TEST(AttentionTest, WeightsAreTheSoftmaxOfTheScaledScores) {
  const Variable q(randn({1, 2, 3, 4}, 1)), k(randn({1, 1, 5, 4}, 2)), v(randn({1, 1, 5, 2}, 3));
  const auto [y, w] = scaled_dot_product_attention_with_weights(q, k, v, {.scale = 0.5});
  const Tensor scores = osprey::mul(osprey::matmul(q.value(), k.value().transpose(2, 3)), 0.5);
  expect_near_all(values(w), values(osprey::softmax(scores, -1)), 1e-14);
  expect_near_all(values(y), values(osprey::matmul(w, v.value())), 1e-14);
}

TEST(AttentionTest, DropoutIsFixedBySeedAndUnbiased) {
  const Variable q(randn({1, 2, 8, 4}, 1)), k(randn({1, 2, 16, 4}, 2)), v(randn({1, 2, 16, 4}, 3));
  const std::vector<double> plain = values(scaled_dot_product_attention(q, k, v));
  const std::vector<double> a =
      values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 5}));
  EXPECT_EQ(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 5})), a);
  EXPECT_NE(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 6})), a);
  EXPECT_EQ(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.0, .seed = 5})), plain);
  // The mean over many seeds approaches the output without dropout (each weight is kept with
  // probability 0.75 and scaled by 1 / 0.75).
  std::vector<double> mean(plain.size(), 0.0);
  const int n = 400;
  for (int s = 0; s < n; ++s) {
    const std::vector<double> y = values(scaled_dot_product_attention(
        q, k, v, {.dropout = 0.25, .seed = static_cast<uint64_t>(100 + s)}));
    for (size_t i = 0; i < y.size(); ++i) mean[i] += y[i] / n;
  }
  expect_near_all(mean, plain, 0.08);
}

TEST(AttentionTest, BadInputNamesTheOpAndTheShapes) {
  const Variable q(randn({1, 3, 4, 8}, 1)), k(randn({1, 2, 4, 8}, 2)), v(randn({1, 2, 4, 8}, 3));
  expect_message([&] { scaled_dot_product_attention(q, k, v); },
                 "scaled_dot_product_attention: the query heads must be a multiple of the "
                 "key/value heads. Received: query [1, 3, 4, 8] with 3 heads, key [1, 2, 4, 8] "
                 "with 2 heads");
  const Variable q2(randn({1, 2, 4, 6}, 1));
  expect_message([&] { scaled_dot_product_attention(q2, k, v); },
                 "scaled_dot_product_attention: query and key must have the same depth (last "
                 "axis). Received: query [1, 2, 4, 6], key [1, 2, 4, 8]");
  const Variable q3(randn({1, 2, 4, 8}, 1));
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v, {.mask = ones({3, 4})});
      },
      "scaled_dot_product_attention: mask must broadcast to [batch, heads, Tq, Tk] = "
      "[1, 2, 4, 4]. Received: mask of shape [3, 4]");
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v,
                                     {.key_padding_mask = ones({1, 5}, {DType::boolean})});
      },
      "scaled_dot_product_attention: key_padding_mask must be bool [batch, Tk] = [1, 4] (true = "
      "a real key). Received: bool[1, 5] on cpu:0");
  expect_message(
      [&] { scaled_dot_product_attention(q3, Variable(k.value().to(DType::float32)), v); },
      "scaled_dot_product_attention: query, key and value must have one dtype. Received: query "
      "float64, key float32, value float64");
  expect_message(
      [&] {
        scaled_dot_product_attention(Variable(randn({2, 4, 8}, 1)), k, v);
      },
      "scaled_dot_product_attention: query must be 4-D [batch, heads, time, depth]. "
      "Received: query of shape [2, 4, 8]");
  expect_message([&] { scaled_dot_product_attention(q3, k, v, {.dropout = 1.0}); },
                 "scaled_dot_product_attention: dropout must be in [0, 1). Received: dropout=1");
}

}  // namespace
}  // namespace osprey::autograd
