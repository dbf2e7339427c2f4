// int8 ops against the seeds' formula computed in float64, on both kernel tables.
#include "osprey/tensor/ops_quant.h"

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
  Quantized out{Tensor::empty(x.shape(), {DType::int8}),
                Tensor::empty({x.size(0)}, {DType::float32})};
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
  // Widths on both sides of the fast kernel's 16-float maximum and 32-byte store blocks.
  for (int64_t k : {1, 15, 16, 17, 31, 32, 33, 130}) {
    const Tensor x = test_input(64, k, 11);
    const Quantized a = quantize_with(reference_backend(), x), b = quantize_with(cpu_backend(), x);
    EXPECT_EQ(a.q.to_vector<int8_t>(), b.q.to_vector<int8_t>()) << "k " << k;
    EXPECT_EQ(a.scale.to_vector<float>(), b.scale.to_vector<float>()) << "k " << k;
    const std::vector<int8_t> q = a.q.to_vector<int8_t>();
    for (int64_t i = 0; i < 64 && k > 1; ++i) {
      int amax = 0;
      for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::abs(int{q[i * k + j]}));
      EXPECT_EQ(amax, 127) << "row " << i << ", k " << k;
    }
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
      for (int64_t t = 0; t < k; ++t)
        acc += static_cast<double>(aq[i * k + t]) * static_cast<double>(bqv[t * n + j]);
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
    // The fast kernel's rows in 64-row chunks (1 MiB of int32 sums at 4096 columns) that the
    // threads claim, with a short last one.
    expect_matmul_matches_f64(*be, 200, 40, 4096, true);
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
  EXPECT_EQ(linear_int8(x, wq, nullptr, Activation::relu).to_vector<float>(),
            relu(plain).to_vector<float>());
  const auto t = linear_int8(x, wq, nullptr, Activation::tanh).to_vector<float>();
  const auto want = tanh(plain).to_vector<float>();
  for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], want[i], 1e-6);
}

TEST(LinearInt8Test, KeepsLeadingAxesOfX) {
  const Tensor x = random_normal({2, 3, 16}, {.seed = 41});
  const QuantizedRows wq = quantize_columns_int8(random_normal({16, 4}, {.seed = 42}));
  const Tensor y = linear_int8(x, wq);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(y.reshape({6, 4}).to_vector<float>(),
            linear_int8(x.reshape({6, 16}), wq).to_vector<float>());
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

// conv2d_int8: the backends' kernel against the formula in float64 on the very int8 values and
// scales it was given (x quantized per sample, w per output channel), the integer sums computed
// here naively. Same bound as the matmul: the sums are exact in float32 (|acc| <= 127^2 * 45 taps),
// and the two reciprocals, their product, the multiply and the bias add each round once, so
// |y - y64| <= 4e-7 * (|acc / (sx sw)| + |bias|).
constexpr int kToNchw[] = {0, 3, 1, 2};
constexpr int kToNhwc[] = {0, 2, 3, 1};

// c = 5 gives 45 taps (the fast kernel's unfolded matmul), c = 8 gives 72 (its direct convolution).
void expect_conv_matches_f64(const Backend& be, bool channels_last, int64_t stride, bool with_bias,
                             Activation act, int64_t c = 5) {
  const int64_t n = 3, h = 9, w = 8, kh = 3, kw = 3, o = 7;
  const Tensor x = test_input(n, h * w * c, 51);  // sample n scaled by 10^(n - 2)
  const Tensor wf = random_normal({kh, kw, c, o}, {.seed = 52, .stddev = 0.1});
  const Quantized xq = quantize_with(be, x);
  const QuantizedRows wq = quantize_columns_int8(wf.reshape({-1, o}));
  const Tensor wq4 = wq.values.reshape({kh, kw, c, o});
  const Tensor bias = random_normal({o}, {.seed = 53});
  const Conv2dParams p{.stride_h = stride,
                       .stride_w = stride,
                       .pad_top = 1,
                       .pad_bottom = 1,
                       .pad_left = 0,
                       .pad_right = 1,
                       .channels_last = channels_last};
  const int64_t ho = (h + 2 - kh) / stride + 1, wo = (w + 1 - kw) / stride + 1;
  // x's values as [n, h, w, c]; for NCHW the same values are laid out [n, c, h, w].
  const Tensor x_nhwc = xq.q.reshape({n, h, w, c});
  const Tensor x_in = channels_last ? x_nhwc : x_nhwc.permute(kToNchw).contiguous();
  Tensor y =
      Tensor::empty(channels_last ? Shape{n, ho, wo, o} : Shape{n, o, ho, wo}, {DType::float32});
  be.conv2d_int8(x_in, xq.scale, wq4, wq.scales, with_bias ? &bias : nullptr, y, p, act, nullptr);
  const Tensor y_nhwc = channels_last ? y : y.permute(kToNhwc).contiguous();
  const auto xv = x_nhwc.to_vector<int8_t>(), wv = wq4.to_vector<int8_t>();
  const auto sx = xq.scale.to_vector<float>(), sw = wq.scales.to_vector<float>();
  const auto bv = bias.to_vector<float>(), yv = y_nhwc.to_vector<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < ho; ++i) {
      for (int64_t j = 0; j < wo; ++j) {
        for (int64_t oc = 0; oc < o; ++oc) {
          double acc = 0.0;
          for (int64_t di = 0; di < kh; ++di) {
            for (int64_t dj = 0; dj < kw; ++dj) {
              const int64_t r = i * stride + di - 1, q = j * stride + dj;
              if (r < 0 || r >= h || q >= w) continue;
              for (int64_t ci = 0; ci < c; ++ci) {
                acc += static_cast<double>(xv[((b * h + r) * w + q) * c + ci]) *
                       static_cast<double>(wv[((di * kw + dj) * c + ci) * o + oc]);
              }
            }
          }
          const double prod = acc / (double{sx[b]} * double{sw[oc]});
          const double bias_o = with_bias ? double{bv[oc]} : 0.0;
          double want = prod + bias_o;
          if (act == Activation::relu) want = std::max(want, 0.0);
          const double tol = 4e-7 * (std::fabs(prod) + std::fabs(bias_o)) + 1e-30;
          ASSERT_NEAR(yv[((b * ho + i) * wo + j) * o + oc], want, tol)
              << be.name << (channels_last ? " NHWC" : " NCHW") << " c " << c << " at " << b << ","
              << i << "," << j << "," << oc;
        }
      }
    }
  }
}

TEST(Conv2dInt8Test, MatchesTheDequantizedFormulaInFloat64OnBothBackendsAndLayouts) {
  for (const Backend* be : kBackends) {
    expect_conv_matches_f64(*be, true, 1, true, Activation::none);
    expect_conv_matches_f64(*be, true, 2, false, Activation::relu);
    expect_conv_matches_f64(*be, false, 1, true, Activation::relu);
    expect_conv_matches_f64(*be, true, 1, true, Activation::relu, 8);
    expect_conv_matches_f64(*be, true, 2, false, Activation::none, 8);
  }
}

// Against the float convolution: each output is a K-term sum like a matmul's, so with half a
// quantization step ex = 0.5 / x_scale[n] and ew = 0.5 / w_scale[o], |y - conv(x, w)| <=
// sum over taps (|x| ew + ex |w| + ex ew); checked here through the largest case, K = 45 taps.
TEST(Conv2dInt8Test, StaysWithinTheQuantizationBoundOfTheFloatConvolution) {
  const Tensor x = random_normal({2, 6, 6, 5}, {.seed = 61});
  const Tensor w = random_normal({3, 3, 5, 4}, {.seed = 62, .stddev = 0.2});
  const Tensor bias = random_normal({4}, {.seed = 63});
  const QuantizedRows wq = quantize_columns_int8(w.reshape({-1, 4}));
  const Conv2dOptions o{.padding = "same"};
  const Tensor y = conv2d_int8(x, {wq.values.reshape({3, 3, 5, 4}), wq.scales}, &bias, o);
  const Tensor yf = conv2d(x, w, &bias, resolve_conv2d(x.shape(), w.shape(), o));
  ASSERT_EQ(y.shape(), yf.shape());
  const auto xv = x.to_vector<float>(), wv = w.to_vector<float>(), yv = y.to_vector<float>(),
             fv = yf.to_vector<float>();
  double wmax_all = 0.0, xsum_max = 0.0;
  for (float v : wv) wmax_all = std::max(wmax_all, std::fabs(double{v}));
  for (int64_t b = 0; b < 2; ++b) {
    double xmax = 0.0;
    for (int64_t t = 0; t < 180; ++t) xmax = std::max(xmax, std::fabs(double{xv[b * 180 + t]}));
    xsum_max = std::max(xsum_max, xmax);
  }
  const double ex = 0.5 * (xsum_max + 1e-7) / 127.0, ew = 0.5 * (wmax_all + 1e-7) / 127.0;
  const double bound = 45.0 * (xsum_max * ew + ex * wmax_all + ex * ew) * (1.0 + 1e-5) + 1e-5;
  for (size_t i = 0; i < yv.size(); ++i) ASSERT_NEAR(yv[i], fv[i], bound) << "at " << i;
}

// The fast kernel convolves the samples a chunk at a time, the threads claiming chunks (a
// chunk's int32 sums fit in cache: 1 MiB, three samples of [25, 25, 128] here), and dequantizes,
// or pools then dequantizes, each chunk. Both must match the reference, at a batch that splits into
// chunks with a short last one: the same exact sums through the same float32 formula, which the
// compiler may contract to a fused multiply-add (one rounding less) and whose tanh is oneDNN's
// (a few ulps), so within 1e-6 (1 + |y|). And on each backend a fused pool must equal pooling
// the unfused output bit for bit: the maximum commutes exactly with the positive scales, the
// bias, relu and tanh, and with float32 rounding.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-6 * (1.0 + std::fabs(want[i]))) << what << " at " << i;
  }
}

TEST(Conv2dInt8Test, TheUnfoldedKernelHandlesPaddingStridesAndDilationLikeTheReference) {
  // One channel and 3x3 (the Fashion-MNIST CNN's first layer) and 2 channels 2x3, padded on every
  // side (taps in the padding are the quantized 0), strided and dilated.
  struct Case {
    int64_t c, kh, kw;
    Conv2dParams p;
  };
  const std::vector<Case> cases = {
      {1, 3, 3, {}},
      {1, 3, 3, {.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1}},
      {2,
       2,
       3,
       {.stride_h = 2,
        .stride_w = 1,
        .pad_top = 0,
        .pad_bottom = 1,
        .pad_left = 2,
        .pad_right = 0}},
      {1,
       3,
       2,
       {.pad_top = 2,
        .pad_bottom = 2,
        .pad_left = 2,
        .pad_right = 2,
        .dilation_h = 2,
        .dilation_w = 2}},
  };
  uint64_t seed = 90;
  for (const Case& k : cases) {
    const int64_t n = 5, h = 11, w = 10, o = 6;
    const Tensor x = test_input(n, h * w * k.c, seed++);
    const Quantized xq = quantize_with(reference_backend(), x);
    const Tensor x4 = xq.q.reshape({n, h, w, k.c});
    const QuantizedRows wq = quantize_columns_int8(
        random_normal({k.kh * k.kw * k.c, o}, {.seed = seed++, .stddev = 0.2}));
    const Tensor w4 = wq.values.reshape({k.kh, k.kw, k.c, o});
    const Tensor bias = random_normal({o}, {.seed = seed++});
    const Shape ys = conv2d_output_shape({n, h, w, k.c}, w4.shape(), k.p);
    std::vector<std::vector<float>> got;
    for (const Backend* be : kBackends) {
      Tensor y = Tensor::empty(ys, {DType::float32});
      be->conv2d_int8(x4, xq.scale, w4, wq.scales, &bias, y, k.p, Activation::relu, nullptr);
      got.push_back(y.to_vector<float>());
    }
    expect_close(got[1], got[0], "unfolded");
  }
}

TEST(Conv2dInt8Test, ChunkedAndFusedPoolKernelsEqualTheReferenceAndPoolingTheUnfusedOutput) {
  const int64_t n = 8, h = 27, w = 27, c = 2, o = 128;
  const Tensor x = test_input(n, h * w * c, 71);
  const Quantized xq = quantize_with(reference_backend(), x);
  const Tensor x4 = xq.q.reshape({n, h, w, c});
  const QuantizedRows wq =
      quantize_columns_int8(random_normal({3 * 3 * c, o}, {.seed = 72, .stddev = 0.2}));
  const Tensor w4 = wq.values.reshape({3, 3, c, o});
  const Tensor bias = random_normal({o}, {.seed = 73});
  const Conv2dParams p{};  // valid, stride 1: [8, 25, 25, 128]
  struct Case {
    Activation act;
    Pool2dOptions pool;
  };
  const std::vector<Case> cases = {
      {Activation::relu, {}},                   // 2x2 -> [8, 12, 12, 128], last row dropped
      {Activation::relu, {.padding = "same"}},  // 2x2 -> [8, 13, 13, 128], padded last row
      {Activation::none, {.pool_size = {3, 3}, .strides = {2, 2}}},  // overlapping windows
      {Activation::tanh, {.pool_size = {3, 3}, .padding = "same"}},  // padded windows
  };
  for (const Case& k : cases) {
    const Pool2dParams pp = resolve_pool2d({n, 25, 25, o}, k.pool, "test");
    std::vector<std::vector<float>> unfused, fused;
    for (const Backend* be : kBackends) {
      Tensor y = Tensor::empty({n, 25, 25, o}, {DType::float32});
      be->conv2d_int8(x4, xq.scale, w4, wq.scales, &bias, y, p, k.act, nullptr);
      Tensor yp = Tensor::empty(pool2d_output_shape(y.shape(), pp), {DType::float32});
      be->conv2d_int8(x4, xq.scale, w4, wq.scales, &bias, yp, p, k.act, &pp);
      EXPECT_EQ(yp.to_vector<float>(), max_pool2d(y, pp).to_vector<float>()) << be->name;
      unfused.push_back(y.to_vector<float>());
      fused.push_back(yp.to_vector<float>());
    }
    expect_close(unfused[1], unfused[0], "cpu vs reference, unfused");
    expect_close(fused[1], fused[0], "cpu vs reference, fused pool");
  }
}

template <class F>
void expect_value_error(F&& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Conv2dInt8Test, AFusedPoolAfterGeluOrInAnotherDataFormatIsAValueError) {
  const QuantizedRows wq = quantize_columns_int8(random_normal({27, 4}, {.seed = 1}));
  const QuantizedRows w{wq.values.reshape({3, 3, 3, 4}), wq.scales};
  const Tensor x = random_normal({1, 6, 6, 3}, {.seed = 2});
  const Pool2dOptions pool{};
  expect_value_error([&] { conv2d_int8(x, w, nullptr, {}, Activation::gelu_erf, &pool); },
                     "conv2d_int8: a fused max pool needs a non-decreasing activation (none, "
                     "relu, sigmoid or tanh). Received: gelu_erf");
  const Pool2dOptions nchw{.data_format = "NCHW"};
  expect_value_error([&] { conv2d_int8(x, w, nullptr, {}, Activation::relu, &nchw); },
                     "conv2d_int8: the fused max pool must have the convolution's data format "
                     "NHWC. Received: NCHW");
}

TEST(Conv2dInt8Test, AFloatKernelOrWrongScalesAreValueErrorsNamingTheOp) {
  const QuantizedRows wq = quantize_columns_int8(random_normal({27, 4}, {.seed = 1}));
  const Tensor x = zeros({1, 5, 5, 3});
  try {
    conv2d_int8(x, {wq.values.reshape({3, 3, 3, 4}).to(DType::float32), wq.scales}, nullptr, {});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_int8: the kernel must be a 4-D int8 tensor"),
              std::string::npos)
        << e.what();
  }
  try {
    conv2d_int8(x, {wq.values.reshape({3, 3, 3, 4}), zeros({3})}, nullptr, {});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(
        std::string(e.what()).find("conv2d_int8: the kernel scales must be float32 of shape [4]"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey
