#include "osprey/autograd/ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/autograd/ops/attention_torch_values.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;
using namespace osprey::autograd::torch_values;

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

// PyTorch's values (attention_torch_values.h) come from inputs made by the same formula as
// attention_torch_references.py's wave().
Tensor wave(const Shape& s, int tag, double scale = 1.0) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37 * static_cast<double>(i) + 0.11 * tag) * scale;
  return f64(v, s);
}

// out, dq, dk, dv of sum(attention(wave(q), wave(k), wave(v)) * wave(out)) in dtype.
std::array<std::vector<double>, 4> against_torch(const Shape& qs, const Shape& ks, const Shape& vs,
                                                 const AttentionOptions& o, DType dtype) {
  Variable q(wave(qs, 1).to(dtype), true), k(wave(ks, 2).to(dtype), true),
      v(wave(vs, 3).to(dtype), true);
  const Variable y = scaled_dot_product_attention(q, k, v, o);
  sum(mul(y, Variable(wave(y.shape(), 4).to(dtype)))).backward();
  return {values(y), values(q.grad()), values(k.grad()), values(v.grad())};
}

// |got - want| <= tol * max|want| for every element.
void expect_close_to(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const char* what) {
  double m = 0.0;
  for (double w : want) m = std::max(m, std::abs(w));
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * m) << what << " " << i;
}

void expect_matches_torch(const Shape& qs, const Shape& ks, const Shape& vs,
                          const AttentionOptions& o,
                          const std::array<const std::vector<double>*, 4>& want) {
  // float64 runs the reference kernel, float32 the tiled one.
  for (auto [dtype, tol] : {std::pair{DType::float64, 1e-12}, std::pair{DType::float32, 1e-5}}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const auto got = against_torch(qs, ks, vs, o, dtype);
    const char* names[4] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i) expect_close_to(got[i], *want[i], tol, names[i]);
  }
}

TEST(AttentionTest, ValuesAndGradientsMatchPyTorch) {
  expect_matches_torch({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, {},
                       {&kPlainOut, &kPlainDq, &kPlainDk, &kPlainDv});
}

TEST(AttentionTest, CausalGroupedPaddedAndBiasedMatchPyTorch) {
  const Tensor kp = bools({1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1}, {2, 6});
  expect_matches_torch(
      {2, 4, 4, 3}, {2, 2, 6, 3}, {2, 2, 6, 2},
      {.causal = true, .mask = wave({4, 6}, 5, 0.5), .key_padding_mask = kp, .scale = 0.6},
      {&kMaskedOut, &kMaskedDq, &kMaskedDk, &kMaskedDv});
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

// float64 runs the reference kernel, float32 the tiled one; both draw the same decisions.
TEST(AttentionTest, DropoutIsFixedBySeedAndUnbiased) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Variable q(randn({1, 2, 8, 4}, 1).to(dt)), k(randn({1, 2, 16, 4}, 2).to(dt)),
        v(randn({1, 2, 16, 4}, 3).to(dt));
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
}

// Layers hold [batch, time, heads, depth] and hand the op a permuted view.
TEST(AttentionTest, PermutedFloat32InputsGiveTheContiguousResult) {
  const auto bthd = [](uint64_t seed) { return randn({2, 70, 3, 8}, seed).to(DType::float32); };
  const Tensor qt = bthd(1), kt = bthd(2), vt = bthd(3), w = bthd(4).permute({0, 2, 1, 3});
  const auto run = [&](bool permuted) {
    Variable q(permuted ? qt.permute({0, 2, 1, 3}) : qt.permute({0, 2, 1, 3}).contiguous(), true);
    Variable k(permuted ? kt.permute({0, 2, 1, 3}) : kt.permute({0, 2, 1, 3}).contiguous(), true);
    Variable v(permuted ? vt.permute({0, 2, 1, 3}) : vt.permute({0, 2, 1, 3}).contiguous(), true);
    const Variable y = scaled_dot_product_attention(q, k, v, {.causal = true});
    sum(mul(y, Variable(w))).backward();
    return std::vector<std::vector<double>>{values(y), values(q.grad()), values(k.grad()),
                                            values(v.grad())};
  };
  EXPECT_EQ(run(true), run(false));
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
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v, {.mask = ones({4, 4}, {DType::int32})});
      },
      "scaled_dot_product_attention: mask must be bool (true = attend) or floating point (added "
      "to the scores). Received: mask of dtype int32");
  expect_message([&] { scaled_dot_product_attention(q3, k, v, {.dropout = 1.0}); },
                 "scaled_dot_product_attention: dropout must be in [0, 1). Received: dropout=1");
}

}  // namespace
}  // namespace osprey::autograd
