// int8 ops against the seeds' formula computed in float64, on both kernel tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/tensor/backend.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey {
namespace {

// Rows with very different magnitudes (per-row scales matter) and a few exact zeros.
Tensor test_input(int64_t m, int64_t k, uint64_t seed) {
  std::vector<float> v = random_normal({m, k}, {.seed = seed}).to_vector<float>();
  for (int64_t i = 0; i < m; ++i) {
    const float mag = std::pow(10.0f, static_cast<float>(i % 5) - 2.0f);
    for (int64_t j = 0; j < k; ++j) v[i * k + j] *= mag;
    v[i * k + (i % k)] = 0.0f;
  }
  return from_vector<float>(v, {m, k});
}

struct Quantized {
  Tensor q, scale;
};
Quantized quantize_with(const Backend& be, const Tensor& x) {
  Quantized out{Tensor::empty(x.shape(), {DType::int8}), Tensor::empty({x.size(0)}, {DType::float32})};
  be.quantize_rows_int8(x, out.q, out.scale);
  return out;
}

const std::vector<const Backend*> kBackends = {&reference_backend(), &cpu_backend()};

TEST(QuantizeRowsInt8Test, ScalesAndValuesFollowTheSeedsFormulaInFloat64) {
  const int64_t m = 23, k = 301;
  const Tensor x = test_input(m, k, 7);
  const std::vector<float> xv = x.to_vector<float>();
  for (const Backend* be : kBackends) {
    const Quantized r = quantize_with(*be, x);
    const std::vector<float> s = r.scale.to_vector<float>();
    const std::vector<int8_t> q = r.q.to_vector<int8_t>();
    for (int64_t i = 0; i < m; ++i) {
      double amax = 0.0;
      for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(double{xv[i * k + j]}));
      const double s64 = 127.0 / (amax + 1e-7);
      // float32 arithmetic: the scale is within 2 ulps (2^-22 relative) of the f64 formula.
      EXPECT_NEAR(s[i], s64, s64 * 2.4e-7) << be->name << " row " << i;
      for (int64_t j = 0; j < k; ++j) {
        const double v = double{xv[i * k + j]} * s64;
        const double want = std::clamp(std::nearbyint(v), -127.0, 127.0);
        const double frac = std::fabs(v - std::trunc(v));
        // Away from a rounding tie (which float32 cannot resolve like float64) the values agree
        // exactly; at a tie they differ by at most one step.
        const double tol = std::fabs(frac - 0.5) > 1e-4 ? 0.0 : 1.0;
        ASSERT_LE(std::fabs(q[i * k + j] - want), tol) << be->name << " at " << i << "," << j;
      }
    }
  }
}

TEST(QuantizeRowsInt8Test, CpuMatchesReferenceExactlyAndTheRowMaxMapsTo127) {
  const Tensor x = test_input(64, 130, 11);
  const Quantized a = quantize_with(reference_backend(), x), b = quantize_with(cpu_backend(), x);
  EXPECT_EQ(a.q.to_vector<int8_t>(), b.q.to_vector<int8_t>());
  EXPECT_EQ(a.scale.to_vector<float>(), b.scale.to_vector<float>());
  const std::vector<int8_t> q = a.q.to_vector<int8_t>();
  for (int64_t i = 0; i < 64; ++i) {
    int amax = 0;
    for (int64_t j = 0; j < 130; ++j) amax = std::max(amax, std::abs(int{q[i * 130 + j]}));
    EXPECT_EQ(amax, 127) << "row " << i;
  }
}

TEST(QuantizeRowsInt8Test, AnAllZeroRowGivesZerosAndTheEpsilonScale) {
  const QuantizedRows r = quantize_rows_int8(zeros({2, 5}));
  EXPECT_EQ(r.values.to_vector<int8_t>(), std::vector<int8_t>(10, 0));
  EXPECT_FLOAT_EQ(r.scales.to_vector<float>()[0], 127.0f / 1e-7f);
}

// acc = sum_k a_q b_q exactly (int32); the f64 oracle applies the formula to the same int8 values
// and scales. Bound: acc is exact in float32 (|acc| <= 127^2 K < 2^24 for K <= 1040); the
// reciprocals, their product, the multiply and the bias add each round once: relative 2^-24 each,
// so |y - y64| <= 4e-7 * (|acc / (sa sb)| + |bias|).
void expect_matmul_matches_f64(const Backend& be, int64_t m, int64_t k, int64_t n, bool with_bias) {
  const Quantized a = quantize_with(be, test_input(m, k, 3));
  const Quantized b = quantize_with(be, random_normal({n, k}, {.seed = 5, .stddev = 0.05}));
  const Tensor bq = b.q.transpose(0, 1).contiguous();  // [K, N], per-column scales b.scale
  const Tensor bias = random_normal({n}, {.seed = 9});
  Tensor out = Tensor::empty({m, n}, {DType::float32});
  be.matmul_int8(a.q, a.scale, bq, b.scale, with_bias ? &bias : nullptr, out, Activation::none);
  const auto aq = a.q.to_vector<int8_t>(), bqv = bq.to_vector<int8_t>();
  const auto sa = a.scale.to_vector<float>(), sb = b.scale.to_vector<float>();
  const auto bv = bias.to_vector<float>(), y = out.to_vector<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t t = 0; t < k; ++t) acc += static_cast<double>(aq[i * k + t]) * static_cast<double>(bqv[t * n + j]);
      const double prod = acc / (double{sa[i]} * double{sb[j]});
      const double bias_j = with_bias ? double{bv[j]} : 0.0;
      const double tol = 4e-7 * (std::fabs(prod) + std::fabs(bias_j)) + 1e-30;
      ASSERT_NEAR(y[i * n + j], prod + bias_j, tol) << be.name << " at " << i << "," << j;
    }
  }
}

TEST(MatmulInt8Test, MatchesTheDequantizedFormulaInFloat64OnBothBackends) {
  for (const Backend* be : kBackends) {
    expect_matmul_matches_f64(*be, 19, 301, 47, true);
    expect_matmul_matches_f64(*be, 64, 784, 128, false);
    expect_matmul_matches_f64(*be, 1, 16, 1, true);
  }
}

// Against the float product x @ w itself: with ex = 0.5 / x_scale and ew = 0.5 / w_scale (half a
// quantization step), |y - x @ w| <= sum_k (|x_k| ew + ex |w_k| + ex ew), plus float rounding.
TEST(LinearInt8Test, StaysWithinTheQuantizationBoundOfTheFloat64Product) {
  const int64_t m = 33, k = 200, n = 29;
  const Tensor x = test_input(m, k, 21);
  const Tensor w = random_normal({k, n}, {.seed = 22, .stddev = 0.1});
  const Tensor bias = random_normal({n}, {.seed = 23});
  const QuantizedRows wq = quantize_columns_int8(w);
  const Tensor y = linear_int8(x, wq, &bias);
  ASSERT_EQ(y.shape(), (Shape{m, n}));
  ASSERT_EQ(y.dtype(), DType::float32);
  const auto xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = bias.to_vector<float>();
  const auto yv = y.to_vector<float>();
  double worst = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    double xmax = 0.0;
    for (int64_t t = 0; t < k; ++t) xmax = std::max(xmax, std::fabs(double{xv[i * k + t]}));
    const double ex = 0.5 * (xmax + 1e-7) / 127.0;
    for (int64_t j = 0; j < n; ++j) {
      double wmax = 0.0;
      for (int64_t t = 0; t < k; ++t) wmax = std::max(wmax, std::fabs(double{wv[t * n + j]}));
      const double ew = 0.5 * (wmax + 1e-7) / 127.0;
      double exact = bv[j], bound = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        exact += double{xv[i * k + t]} * double{wv[t * n + j]};
        bound += std::fabs(xv[i * k + t]) * ew + ex * std::fabs(wv[t * n + j]) + ex * ew;
      }
      bound = bound * (1.0 + 1e-5) + 1e-6 * std::fabs(exact);
      ASSERT_NEAR(yv[i * n + j], exact, bound) << "at " << i << "," << j;
      worst = std::max(worst, std::fabs(yv[i * n + j] - exact) / bound);
    }
  }
  EXPECT_LT(worst, 1.0);
}

TEST(LinearInt8Test, FusedActivationsEqualTheActivationOfTheLinearOutput) {
  const Tensor x = test_input(8, 40, 31);
  const QuantizedRows wq = quantize_columns_int8(random_normal({40, 12}, {.seed = 32}));
  const Tensor plain = linear_int8(x, wq);
  EXPECT_EQ(linear_int8(x, wq, nullptr, Activation::relu).to_vector<float>(), relu(plain).to_vector<float>());
  const auto t = linear_int8(x, wq, nullptr, Activation::tanh).to_vector<float>();
  const auto want = tanh(plain).to_vector<float>();
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], want[i], 1e-6);
}

TEST(LinearInt8Test, KeepsLeadingAxesOfX) {
  const Tensor x = random_normal({2, 3, 16}, {.seed = 41});
  const QuantizedRows wq = quantize_columns_int8(random_normal({16, 4}, {.seed = 42}));
  const Tensor y = linear_int8(x, wq);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(y.reshape({6, 4}).to_vector<float>(), linear_int8(x.reshape({6, 16}), wq).to_vector<float>());
}

TEST(LinearInt8Test, MismatchedShapesAndDtypesAreValueErrors) {
  const QuantizedRows wq = quantize_columns_int8(random_normal({16, 4}, {.seed = 1}));
  EXPECT_THROW(linear_int8(zeros({3, 15}), wq), ValueError);
  EXPECT_THROW(linear_int8(zeros({3, 16}), {wq.values.to(DType::float32), wq.scales}), ValueError);
  EXPECT_THROW(linear_int8(zeros({3, 16}), {wq.values, zeros({5})}), ValueError);
  const Tensor bad_bias = zeros({5});
  EXPECT_THROW(linear_int8(zeros({3, 16}), wq, &bad_bias), ValueError);
  EXPECT_THROW(quantize_rows_int8(zeros({2, 3, 4})), ValueError);
  try {
    linear_int8(zeros({3, 15}), wq);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("16 features"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace osprey
