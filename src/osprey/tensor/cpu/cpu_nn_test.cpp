// The fast CPU backend's oneDNN kernels (matmul, convolution, pooling, batch/layer norm,
// softmax) and fused loops (cross-entropy, gather) against the reference kernels, on several
// shapes and layouts.
#include <gtest/gtest.h>

#include <algorithm>

#include "osprey/tensor/cpu/cpu_test_util.h"
#include "osprey/tensor/cpu/dnnl_info.h"
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/ops.h"

namespace osprey::cpu::testing {
namespace {

// ---- matmul ----------------------------------------------------------------------------------

void check_matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulParams& p,
                  const Shape& out_shape, double tol, const std::string& what) {
  const DType d = a.dtype();
  Tensor want = Tensor::empty(out_shape, {d}), got = Tensor::empty(out_shape, {d});
  if (p.accumulate) {
    const Tensor init = randn(out_shape, 999, 1.0, 0.0, d);
    ref().copy(init, want);
    ref().copy(init, got);
  }
  ref().matmul(a, b, bias, want, p);
  fast().matmul(a, b, bias, got, p);
  EXPECT_TRUE(all_close(got, want, tol, tol)) << what;
}

TEST(CpuMatmulTest, MatchesReferenceForShapesTransposesBiasActivationsAndAccumulate) {
  struct Mnk {
    int64_t m, n, k;
  };
  uint64_t seed = 1;
  for (const Mnk& s : {Mnk{128, 512, 784}, Mnk{128, 10, 256}, Mnk{1, 7, 3}, Mnk{33, 65, 17}}) {
    const Tensor a = randn({s.m, s.k}, seed++), b = randn({s.k, s.n}, seed++);
    const Tensor at = randn({s.k, s.m}, seed++).transpose(0, 1),
                 bt = randn({s.n, s.k}, seed++).transpose(0, 1);
    const Tensor bias = randn({s.n}, seed++);
    const double tol = 2e-5 * std::sqrt(static_cast<double>(s.k));
    for (const auto& [x, y] :
         {std::pair{a, b}, std::pair{at, b}, std::pair{a, bt}, std::pair{at, bt}}) {
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu_tanh,
                             Activation::gelu_erf, Activation::sigmoid, Activation::tanh}) {
        for (bool acc : {false, true}) {
          for (const Tensor* bp : {static_cast<const Tensor*>(nullptr), &bias}) {
            check_matmul(x, y, bp, {.accumulate = acc, .activation = act}, {s.m, s.n}, tol,
                         "mnk " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                             std::to_string(s.k) + " act " + std::to_string(static_cast<int>(act)) +
                             " acc " + std::to_string(acc));
          }
        }
      }
    }
  }
}

TEST(CpuMatmulTest, BatchedWithBroadcastAndStridedOperands) {
  const Tensor a = randn({4, 3, 20, 30}, 1), b = randn({4, 3, 30, 25}, 2);
  check_matmul(a, b, nullptr, {}, {4, 3, 20, 25}, 1e-4, "4-D batched");
  const Tensor w = randn({30, 25}, 3);
  check_matmul(a, w.unsqueeze(0).unsqueeze(0).expand({4, 3, 30, 25}), nullptr, {}, {4, 3, 20, 25},
               1e-4, "weight broadcast over the batch");
  const Tensor a1 = randn({20, 30}, 4);
  check_matmul(a1.unsqueeze(0).expand({6, 20, 30}), randn({6, 30, 25}, 5), nullptr, {}, {6, 20, 25},
               1e-4, "lhs broadcast");
  const Tensor at = randn({5, 30, 20}, 6).transpose(1, 2),
               bt = randn({5, 25, 30}, 7).transpose(1, 2);
  const Tensor bias = randn({25}, 8);
  check_matmul(at, bt, &bias, {.activation = Activation::relu}, {5, 20, 25}, 1e-4,
               "batched transposes");
  const Tensor sliced = randn({8, 40, 60}, 9).slice(2, 5, 35);
  check_matmul(sliced, randn({8, 30, 25}, 10), nullptr, {}, {8, 40, 25}, 1e-4, "row-padded lhs");
  const Tensor odd = randn({30, 40}, 11).slice(1, 0, 40, 2).slice(0, 0, 20);  // no unit stride
  check_matmul(odd, randn({20, 25}, 12), nullptr, {}, {20, 25}, 1e-4, "no unit stride");
  const Tensor bias_bcast = randn({1}, 13).expand({25});
  check_matmul(randn({20, 30}, 14), randn({30, 25}, 15), &bias_bcast, {}, {20, 25}, 1e-4,
               "broadcast bias");
}

TEST(CpuMatmulTest, Bfloat16AndFloat64) {
  {  // native, or float32 kernels on bfloat16 storage: the reference's result either way
    const Tensor a = randn({64, 96}, 1, 1.0, 0.0, DType::bfloat16),
                 b = randn({96, 48}, 2, 1.0, 0.0, DType::bfloat16);
    const Tensor bias = randn({48}, 3, 1.0, 0.0, DType::bfloat16);
    check_matmul(a, b, &bias, {.activation = Activation::relu}, {64, 48}, 2e-2, "bf16");
  }
  const Tensor a = randn({31, 47}, 4, 1.0, 0.0, DType::float64),
               b = randn({47, 13}, 5, 1.0, 0.0, DType::float64);
  check_matmul(a, b, nullptr, {}, {31, 13}, 1e-12, "f64 goes to the reference");
}

// ---- convolution -----------------------------------------------------------------------------

struct ConvCase {
  int64_t n, h, w, c, o, kh, kw;
  Conv2dParams p;
};

Shape data_shape(int64_t n, int64_t h, int64_t w, int64_t c, bool cl) {
  return cl ? Shape{n, h, w, c} : Shape{n, c, h, w};
}

TEST(CpuConvTest, ForwardAndBothBackwardsMatchReference) {
  std::vector<ConvCase> cases;
  for (bool cl : {true, false}) {
    cases.push_back(
        {4,
         12,
         12,
         1,
         8,
         3,
         3,
         {.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .channels_last = cl}});
    cases.push_back({2, 9, 11, 16, 32, 3, 3, {.channels_last = cl}});
    cases.push_back({2,
                     13,
                     10,
                     8,
                     12,
                     3,
                     2,
                     {.stride_h = 2,
                      .stride_w = 1,
                      .pad_top = 0,
                      .pad_bottom = 2,
                      .pad_left = 1,
                      .pad_right = 0,
                      .channels_last = cl}});
    cases.push_back({2,
                     15,
                     15,
                     6,
                     9,
                     3,
                     3,
                     {.pad_top = 2,
                      .pad_bottom = 2,
                      .pad_left = 2,
                      .pad_right = 2,
                      .dilation_h = 2,
                      .dilation_w = 2,
                      .channels_last = cl}});
    cases.push_back({3,
                     10,
                     10,
                     12,
                     18,
                     3,
                     3,
                     {.pad_top = 1,
                      .pad_bottom = 1,
                      .pad_left = 1,
                      .pad_right = 1,
                      .groups = 3,
                      .channels_last = cl}});
    cases.push_back({2,
                     8,
                     8,
                     16,
                     16,
                     3,
                     3,
                     {.pad_top = 1,
                      .pad_bottom = 1,
                      .pad_left = 1,
                      .pad_right = 1,
                      .groups = 16,
                      .channels_last = cl}});
    cases.push_back({2, 7, 7, 10, 20, 1, 1, {.stride_h = 2, .stride_w = 2, .channels_last = cl}});
  }
  uint64_t seed = 50;
  for (const ConvCase& c : cases) {
    const std::string what = "conv n" + std::to_string(c.n) + " hw" + std::to_string(c.h) + "x" +
                             std::to_string(c.w) + " c" + std::to_string(c.c) + " o" +
                             std::to_string(c.o) + " g" + std::to_string(c.p.groups) +
                             (c.p.channels_last ? " NHWC" : " NCHW");
    const Tensor x = randn(data_shape(c.n, c.h, c.w, c.c, c.p.channels_last), seed++);
    const Tensor w = randn({c.kh, c.kw, c.c / c.p.groups, c.o}, seed++, 0.3);
    const Tensor bias = randn({c.o}, seed++);
    const Shape ys = conv2d_output_shape(x.shape(), w.shape(), c.p);
    const double tol = 1e-5 * std::sqrt(static_cast<double>(c.kh * c.kw * c.c));
    for (const Tensor* bp : {static_cast<const Tensor*>(nullptr), &bias}) {
      Tensor want = Tensor::empty(ys), got = Tensor::empty(ys);
      ref().conv2d_forward(x, w, bp, want, c.p);
      fast().conv2d_forward(x, w, bp, got, c.p);
      EXPECT_TRUE(all_close(got, want, tol, tol)) << what << " forward";
    }
    // The fused activations (a oneDNN post-op) against the reference's separate pass.
    for (const Activation a : {Activation::relu, Activation::sigmoid, Activation::tanh}) {
      Conv2dParams pa = c.p;
      pa.activation = a;
      Tensor want = Tensor::empty(ys), got = Tensor::empty(ys);
      ref().conv2d_forward(x, w, &bias, want, pa);
      fast().conv2d_forward(x, w, &bias, got, pa);
      EXPECT_TRUE(all_close(got, want, tol, tol))
          << what << " forward, activation " << static_cast<int>(a);
    }
    const Tensor dy = randn(ys, seed++);
    Tensor dx_w = Tensor::empty(x.shape()), dx_g = Tensor::empty(x.shape());
    ref().conv2d_backward_data(dy, w, dx_w, c.p);
    fast().conv2d_backward_data(dy, w, dx_g, c.p);
    EXPECT_TRUE(all_close(dx_g, dx_w, tol, tol)) << what << " backward data";
    const double wtol =
        1e-5 * std::sqrt(static_cast<double>(ys.numel()) / static_cast<double>(c.o));
    for (bool with_bias : {false, true}) {
      Tensor dw_w = Tensor::empty(w.shape()), dw_g = Tensor::empty(w.shape());
      Tensor db_w = Tensor::empty({c.o}), db_g = Tensor::empty({c.o});
      ref().conv2d_backward_weights(dy, x, dw_w, with_bias ? &db_w : nullptr, c.p);
      fast().conv2d_backward_weights(dy, x, dw_g, with_bias ? &db_g : nullptr, c.p);
      EXPECT_TRUE(all_close(dw_g, dw_w, wtol, wtol)) << what << " backward weights";
      if (with_bias) {
        EXPECT_TRUE(all_close(db_g, db_w, wtol, wtol)) << what << " backward bias";
      }
    }
  }
}

TEST(CpuConvTest, NonContiguousInputsAreHandled) {
  const Conv2dParams p{.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  const Tensor x = randn({2, 3, 10, 10}, 1).permute({0, 2, 3, 1});  // NCHW memory seen as NHWC
  const Tensor w = randn({3, 3, 3, 5}, 2);
  const Shape ys = conv2d_output_shape(x.shape(), w.shape(), p);
  Tensor want = Tensor::empty(ys), got = Tensor::empty(ys);
  ref().conv2d_forward(x, w, nullptr, want, p);
  fast().conv2d_forward(x, w, nullptr, got, p);
  EXPECT_TRUE(all_close(got, want, 1e-4, 1e-4));
}

// On oneDNN's bf16 kernels with AVX512_BF16; without, on its float32 kernels over bfloat16 storage
// (dnnl_util.h's half_via_float32): the reference's results either way.
TEST(CpuConvTest, Bfloat16ConvolutionAndSoftmaxMatchTheReferenceNativeOrEmulated) {
  const Conv2dParams p{.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  const Tensor x = randn({2, 8, 8, 16}, 1, 1.0, 0.0, DType::bfloat16),
               w = randn({3, 3, 16, 8}, 2, 0.2, 0.0, DType::bfloat16);
  const Shape ys = conv2d_output_shape(x.shape(), w.shape(), p);
  Tensor want = Tensor::empty(ys, {DType::bfloat16}), got = Tensor::empty(ys, {DType::bfloat16});
  ref().conv2d_forward(x, w, nullptr, want, p);
  fast().conv2d_forward(x, w, nullptr, got, p);
  EXPECT_TRUE(all_close(got, want, 2e-2, 2e-2));
  const Tensor s = randn({16, 40}, 3, 2.0, 0.0, DType::bfloat16);
  Tensor sw = empty_as(s), sg = empty_as(s);
  ref().softmax_forward(s, 1, false, sw);
  fast().softmax_forward(s, 1, false, sg);
  EXPECT_TRUE(all_close(sg, sw, 2e-2, 1e-3));
}

// ---- pooling ---------------------------------------------------------------------------------

TEST(CpuPoolTest, MaxAndAveragePoolingForwardAndBackwardMatchReference) {
  struct PoolCase {
    Shape x;
    Pool2dParams p;
  };
  std::vector<PoolCase> cases;
  for (bool cl : {true, false}) {
    cases.push_back({data_shape(4, 12, 12, 8, cl), {.channels_last = cl}});
    cases.push_back({data_shape(2, 11, 9, 5, cl),
                     {.kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_top = 1,
                      .pad_bottom = 1,
                      .pad_left = 1,
                      .pad_right = 1,
                      .channels_last = cl}});
    cases.push_back({data_shape(3, 7, 8, 16, cl),
                     {.kernel_h = 2,
                      .kernel_w = 3,
                      .stride_h = 1,
                      .stride_w = 2,
                      .pad_top = 0,
                      .pad_bottom = 1,
                      .pad_left = 1,
                      .pad_right = 0,
                      .channels_last = cl}});
  }
  uint64_t seed = 70;
  for (const PoolCase& c : cases) {
    const Tensor x = randn(c.x, seed++);
    const Shape ys = pool2d_output_shape(c.x, c.p);
    const Tensor dy = randn(ys, seed++);
    // Max: forward with a workspace, backward from it.
    Tensor yw = Tensor::empty(ys), yg = Tensor::empty(ys), ws_w, ws_g;
    ref().max_pool2d_forward(x, yw, &ws_w, c.p);
    fast().max_pool2d_forward(x, yg, &ws_g, c.p);
    EXPECT_TRUE(all_close(yg, yw, 0, 0)) << "max forward " << c.x.to_string();
    Tensor dxw = Tensor::empty(c.x), dxg = Tensor::empty(c.x);
    ref().max_pool2d_backward(dy, x, ws_w, dxw, c.p);
    fast().max_pool2d_backward(dy, x, ws_g, dxg, c.p);
    EXPECT_TRUE(all_close(dxg, dxw, 1e-6, 1e-6)) << "max backward " << c.x.to_string();
    // Without a workspace (inference forward; backward recomputes).
    Tensor yi = Tensor::empty(ys);
    fast().max_pool2d_forward(x, yi, nullptr, c.p);
    EXPECT_TRUE(all_close(yi, yw, 0, 0));
    fast().max_pool2d_backward(dy, x, Tensor(), dxg, c.p);
    EXPECT_TRUE(all_close(dxg, dxw, 1e-6, 1e-6)) << "max backward without workspace";
    // Average.
    ref().avg_pool2d_forward(x, yw, c.p);
    fast().avg_pool2d_forward(x, yg, c.p);
    EXPECT_TRUE(all_close(yg, yw, 1e-6, 1e-6)) << "avg forward " << c.x.to_string();
    ref().avg_pool2d_backward(dy, dxw, c.p);
    fast().avg_pool2d_backward(dy, dxg, c.p);
    EXPECT_TRUE(all_close(dxg, dxw, 1e-6, 1e-6)) << "avg backward " << c.x.to_string();
  }
}

// ---- normalization ---------------------------------------------------------------------------

TEST(CpuNormTest, BatchNormTrainingInferenceAndBackwardMatchReference) {
  struct BnCase {
    Shape x;
    int axis;
  };
  uint64_t seed = 90;
  for (const BnCase& c : {BnCase{{8, 6, 6, 16}, 3}, BnCase{{8, 16, 6, 6}, 1}, BnCase{{64, 10}, 1},
                          BnCase{{4, 5, 7}, -1}}) {
    const int axis = c.axis < 0 ? c.axis + c.x.ndim() : c.axis;
    const int64_t ch = c.x[axis];
    const Tensor x = randn(c.x, seed++, 2.0, 0.5);
    const Tensor gamma = randn({ch}, seed++, 0.5, 1.0), beta = randn({ch}, seed++);
    const Tensor dy = randn(c.x, seed++);
    for (bool affine : {false, true}) {
      const Tensor* g = affine ? &gamma : nullptr;
      const Tensor* b = affine ? &beta : nullptr;
      Tensor yw = Tensor::empty(c.x), yg = Tensor::empty(c.x);
      Tensor mw = Tensor::empty({ch}), mg = Tensor::empty({ch}), iw = Tensor::empty({ch}),
             ig = Tensor::empty({ch});
      ref().batch_norm_forward(x, g, b, mw, iw, true, 1e-3, c.axis, yw);
      fast().batch_norm_forward(x, g, b, mg, ig, true, 1e-3, c.axis, yg);
      EXPECT_TRUE(all_close(yg, yw, 1e-4, 1e-4)) << "training forward " << c.x.to_string();
      EXPECT_TRUE(all_close(mg, mw, 1e-5, 1e-5));
      EXPECT_TRUE(all_close(ig, iw, 1e-5, 1e-5));
      // Inference from the statistics just computed.
      ref().batch_norm_forward(x, g, b, mw, iw, false, 1e-3, c.axis, yw);
      fast().batch_norm_forward(x, g, b, mw, iw, false, 1e-3, c.axis, yg);
      EXPECT_TRUE(all_close(yg, yw, 1e-5, 1e-5)) << "inference " << c.x.to_string();
      for (bool grads : {false, true}) {
        Tensor dxw = Tensor::empty(c.x), dxg = Tensor::empty(c.x);
        Tensor dgw = Tensor::empty({ch}), dgg = Tensor::empty({ch}), dbw = Tensor::empty({ch}),
               dbg = Tensor::empty({ch});
        ref().batch_norm_backward(dy, x, g, mw, iw, c.axis, dxw, grads ? &dgw : nullptr,
                                  grads ? &dbw : nullptr);
        fast().batch_norm_backward(dy, x, g, mw, iw, c.axis, dxg, grads ? &dgg : nullptr,
                                   grads ? &dbg : nullptr);
        EXPECT_TRUE(all_close(dxg, dxw, 1e-4, 1e-4)) << "backward " << c.x.to_string();
        if (grads) {
          EXPECT_TRUE(all_close(dgg, dgw, 1e-4, 1e-4));
          EXPECT_TRUE(all_close(dbg, dbw, 1e-4, 1e-4));
        }
      }
    }
  }
}

TEST(CpuNormTest, LayerNormForwardAndBackwardMatchReference) {
  uint64_t seed = 120;
  for (const auto& [shape, norm] :
       {std::pair{Shape{32, 64}, int64_t{64}}, std::pair{Shape{4, 9, 30}, int64_t{30}},
        std::pair{Shape{6, 5, 8}, int64_t{40}}}) {
    const int64_t rows = shape.numel() / norm;
    const Tensor x = randn(shape, seed++, 3.0, 1.0), dy = randn(shape, seed++);
    const Tensor gamma = randn({norm}, seed++, 0.5, 1.0), beta = randn({norm}, seed++);
    for (bool affine : {false, true}) {
      const Tensor* g = affine ? &gamma : nullptr;
      const Tensor* b = affine ? &beta : nullptr;
      Tensor yw = Tensor::empty(shape), yg = Tensor::empty(shape);
      Tensor mw = Tensor::empty({rows}), mg = Tensor::empty({rows}), rw = Tensor::empty({rows}),
             rg = Tensor::empty({rows});
      ref().layer_norm_forward(x, g, b, norm, 1e-5, yw, mw, rw);
      fast().layer_norm_forward(x, g, b, norm, 1e-5, yg, mg, rg);
      EXPECT_TRUE(all_close(yg, yw, 1e-4, 1e-4)) << shape.to_string();
      EXPECT_TRUE(all_close(mg, mw, 1e-5, 1e-5));
      EXPECT_TRUE(all_close(rg, rw, 1e-5, 1e-5));
      for (bool grads : {false, true}) {
        Tensor dxw = Tensor::empty(shape), dxg = Tensor::empty(shape);
        Tensor dgw = Tensor::empty({norm}), dgg = Tensor::empty({norm}),
               dbw = Tensor::empty({norm}), dbg = Tensor::empty({norm});
        ref().layer_norm_backward(dy, x, g, mw, rw, norm, dxw, grads ? &dgw : nullptr,
                                  grads ? &dbw : nullptr);
        fast().layer_norm_backward(dy, x, g, mw, rw, norm, dxg, grads ? &dgg : nullptr,
                                   grads ? &dbg : nullptr);
        EXPECT_TRUE(all_close(dxg, dxw, 1e-4, 1e-4)) << "backward " << shape.to_string();
        if (grads) {
          EXPECT_TRUE(all_close(dgg, dgw, 1e-4, 1e-4));
          EXPECT_TRUE(all_close(dbg, dbw, 1e-4, 1e-4));
        }
      }
    }
  }
}

// ---- softmax, cross-entropy, gather ----------------------------------------------------------

TEST(CpuSoftmaxTest, SoftmaxAndLogSoftmaxAlongAnyAxisMatchReference) {
  uint64_t seed = 140;
  for (const auto& [shape, axis] : {std::pair{Shape{128, 10}, 1}, std::pair{Shape{7, 33, 5}, 1},
                                    std::pair{Shape{7, 33, 5}, 0}, std::pair{Shape{3, 1000}, -1}}) {
    const Tensor x = randn(shape, seed++, 4.0), dy = randn(shape, seed++);
    const int a = axis < 0 ? axis + shape.ndim() : axis;
    for (bool log : {false, true}) {
      Tensor yw = Tensor::empty(shape), yg = Tensor::empty(shape);
      ref().softmax_forward(x, a, log, yw);
      fast().softmax_forward(x, a, log, yg);
      // log-softmax near 0 is x - lse of two numbers near 12: float rounding alone is ~1e-6.
      EXPECT_TRUE(all_close(yg, yw, 1e-5, log ? 1e-5 : 1e-6))
          << shape.to_string() << " axis " << a << " log " << log;
      Tensor dw = Tensor::empty(shape), dg = Tensor::empty(shape);
      ref().softmax_backward(dy, yw, a, log, dw);
      fast().softmax_backward(dy, yw, a, log, dg);
      EXPECT_TRUE(all_close(dg, dw, 1e-5, 1e-6)) << "backward";
    }
  }
  const Tensor xt = randn({20, 30}, 150).transpose(0, 1);
  Tensor yw = Tensor::empty({30, 20}), yg = Tensor::empty({30, 20});
  ref().softmax_forward(xt, 1, false, yw);
  fast().softmax_forward(xt, 1, false, yg);
  EXPECT_TRUE(all_close(yg, yw, 1e-5, 1e-6)) << "transposed input";
}

TEST(CpuCrossEntropyTest, FusedLossAndGradientMatchReference) {
  uint64_t seed = 160;
  for (const auto& [n, c] : {std::pair<int64_t, int64_t>{128, 10}, {37, 1000}, {5, 3}}) {
    const Tensor logits = randn({n, c}, seed++, 3.0);
    Tensor idx64 = Tensor::empty({n}, {DType::int64});
    ref().random(RandomKind::uniform, seed++, 0, static_cast<double>(c), idx64);
    Tensor idx32 = Tensor::empty({n}, {DType::int32});
    ref().copy(idx64, idx32);
    Tensor dist = Tensor::empty({n, c});
    ref().softmax_forward(randn({n, c}, seed++), 1, false, dist);
    const Tensor dloss = randn({n}, seed++);
    for (const Tensor& labels : {idx64, idx32, dist}) {
      for (double ls : {0.0, 0.1}) {
        Tensor lw = Tensor::empty({n}), lg = Tensor::empty({n}), pw = Tensor::empty({n, c}),
               pg = Tensor::empty({n, c});
        ref().cross_entropy_forward(logits, labels, ls, lw, pw);
        fast().cross_entropy_forward(logits, labels, ls, lg, pg);
        EXPECT_TRUE(all_close(lg, lw, 1e-5, 1e-5))
            << n << "x" << c << " " << dtype_name(labels.dtype()) << " ls " << ls;
        EXPECT_TRUE(all_close(pg, pw, 1e-5, 1e-7));
        Tensor dw = Tensor::empty({n, c}), dg = Tensor::empty({n, c});
        ref().cross_entropy_backward(pw, labels, ls, dloss, dw);
        fast().cross_entropy_backward(pw, labels, ls, dloss, dg);
        EXPECT_TRUE(all_close(dg, dw, 1e-6, 1e-7)) << "backward";
      }
    }
  }
  Tensor bad = from_vector<int64_t>({1, 10, 2});
  Tensor l = Tensor::empty({3}), p = Tensor::empty({3, 10});
  EXPECT_THROW(fast().cross_entropy_forward(randn({3, 10}, 1), bad, 0.0, l, p), ValueError);
}

TEST(CpuGatherTest, GatherAndScatterAddRowsMatchReferenceAndCheckIndices) {
  const Tensor table = randn({50, 24}, 1);
  Tensor idx = Tensor::empty({3, 7}, {DType::int64});
  ref().random(RandomKind::uniform, 2, 0, 50, idx);
  Tensor want = Tensor::empty({21, 24}), got = Tensor::empty({21, 24});
  ref().gather_rows(table, idx, want);
  fast().gather_rows(table, idx, got);
  EXPECT_TRUE(bitwise_equal(got, want));
  Tensor bad = from_vector<int32_t>({3, 50});
  Tensor out = Tensor::empty({2, 24});
  EXPECT_THROW(fast().gather_rows(table, bad, out), ValueError);
  // The adjoint, with repeated indices (21 draws from 50 rows, and a forced repeat).
  idx.set({0, 1}, idx.at({0, 0}));
  const Tensor grad = randn({21, 24}, 3);
  Tensor tw = randn({50, 24}, 4), tg = Tensor::empty({50, 24});
  ref().copy(tw, tg);
  ref().scatter_add_rows(grad, idx, tw);
  fast().scatter_add_rows(grad, idx, tg);
  EXPECT_TRUE(all_close(tg, tw, 1e-6, 1e-6));
  EXPECT_THROW(fast().scatter_add_rows(grad.slice(0, 0, 2), bad, tg), ValueError);
}

TEST(CpuInt8Test, TheInt8MatmulRunsAJitKernelNotOneDnnsReference) {
  const std::string impl = int8_matmul_impl(256, 784, 512);
  RecordProperty("impl", impl);
  ASSERT_FALSE(impl.empty()) << "oneDNN has no int8 -> s32 matmul here";
  // With VNNI an s8 x s8 kernel; without, u8 x s8 (int8_src_type): a JIT kernel either way.
  EXPECT_NE(impl.rfind("ref", 0), 0u) << impl;
}

// Without VNNI, oneDNN's s8 x s8 kernels saturate (int8_chunks.h): the int32 sums must be exact
// for every input, negative activations and -128 included, whatever ISA runs them.
TEST(CpuInt8Test, Int8MatmulSumsAreExactForExtremeValuesOnEveryIsa) {
  const int64_t m = 37, k = 300, n = 19;
  Tensor a = Tensor::empty({m, k}, {DType::int8}), b = Tensor::empty({k, n}, {DType::int8});
  int8_t* ap = a.data<int8_t>();
  int8_t* bp = b.data<int8_t>();
  // Rows of all 127, all -128, alternating signs, and a mix; columns of -128 and 127: the worst
  // pairs for 16-bit lanes.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const int8_t v = i % 4 == 0   ? 127
                       : i % 4 == 1 ? -128
                       : i % 4 == 2 ? static_cast<int8_t>(j % 2 == 0 ? 127 : -127)
                                    : static_cast<int8_t>((i * 31 + j * 17) % 255 - 127);
      ap[i * k + j] = v;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t c = 0; c < n; ++c) {
      bp[j * n + c] = c % 3 == 0   ? static_cast<int8_t>(-128)
                      : c % 3 == 1 ? static_cast<int8_t>(127)
                                   : static_cast<int8_t>((j * 7 + c * 13) % 255 - 127);
    }
  }
  const Tensor ones_m = ones({m}), ones_n = ones({n});
  Tensor got = Tensor::empty({m, n});
  cpu::matmul_int8(a, ones_m, b, ones_n, nullptr, got, Activation::none);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      int64_t want = 0;
      for (int64_t j = 0; j < k; ++j) want += int64_t{ap[i * k + j]} * bp[j * n + c];
      ASSERT_EQ(got.at({i, c}), static_cast<double>(want)) << "row " << i << " column " << c;
    }
  }
}

// Mixed precision's 16-bit paths: float16 matmul through float32, bfloat16 relu backward,
// arithmetic and sums. Each is compared with the float32 computation on the same rounded
// inputs, so the only differences are the final roundings to 16 bits.
double max_abs_diff(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double m = 0.0;
  for (size_t i = 0; i < g.size(); ++i) m = std::max(m, std::abs(g[i] - w[i]));
  return m;
}

TEST(CpuMixedPrecisionTest, Float16MatmulComputesInFloat32AndStoresFloat16) {
  const Tensor a = randn({33, 70}, 1, 1.0, 0.0, DType::float16),
               b = randn({70, 20}, 2, 1.0, 0.0, DType::float16);
  const Tensor bias = randn({20}, 3, 1.0, 0.0, DType::float16);
  Tensor got = Tensor::empty({33, 20}, {DType::float16});
  cpu::matmul(a.transpose(0, 1).contiguous().transpose(0, 1), b, &bias, got,
              {.activation = Activation::relu});
  Tensor want = Tensor::empty({33, 20}, {DType::float32});
  reference::matmul(a.to(DType::float32), b.to(DType::float32), nullptr, want, {});
  want = osprey::relu(osprey::add(want, bias.to(DType::float32)));
  EXPECT_EQ(got.dtype(), DType::float16);
  EXPECT_LT(max_abs_diff(got, want), 2e-2);  // one float16 rounding of values up to ~30
}

TEST(CpuMixedPrecisionTest, OnlyTensorsAllOfOne16BitTypeTakeTheFloat32Path) {
  const Tensor h = Tensor::empty({2}, {DType::float16}), b = Tensor::empty({2}, {DType::bfloat16});
  const Tensor f = Tensor::empty({2}, {DType::float32});
  EXPECT_TRUE(half_via_float32({&h, nullptr, &h}));
  EXPECT_EQ(half_via_float32({&b, &b}), !native_bf16());
  EXPECT_FALSE(half_via_float32({&f, &f}));
  EXPECT_FALSE(half_via_float32({&f, &h}));  // mixed: not one 16-bit type
  EXPECT_FALSE(half_via_float32({&h, &b}));
  EXPECT_FALSE(half_via_float32({nullptr}));
}

// bfloat16 matmul with both operands transposed (the backward's x^T dy and dy w^T), natively on
// AVX512_BF16, or else through float32 kernels,
// where a transposed view converts as the tensor it views (matmul.cpp): one bfloat16 rounding of
// the float32 result either way.
TEST(CpuMixedPrecisionTest, Bfloat16MatmulOfTransposedOperandsIsTheFloat32ProductRounded) {
  const Tensor a = randn({70, 33}, 1, 1.0, 0.0, DType::bfloat16),
               b = randn({20, 70}, 2, 1.0, 0.0, DType::bfloat16);
  Tensor got = Tensor::empty({33, 20}, {DType::bfloat16});
  cpu::matmul(a.transpose(0, 1), b.transpose(0, 1), nullptr, got, {});
  Tensor want = Tensor::empty({33, 20}, {DType::float32});
  reference::matmul(a.to(DType::float32).transpose(0, 1), b.to(DType::float32).transpose(0, 1),
                    nullptr, want, {});
  EXPECT_EQ(got.dtype(), DType::bfloat16);
  EXPECT_LT(max_abs_diff(got, want), 0.25);  // one bfloat16 rounding (2^-8) of values up to ~30
}

TEST(CpuMixedPrecisionTest, Float16ConvolutionAndPoolingComputeInFloat32AndStoreFloat16) {
  const auto h = DType::float16, f = DType::float32;
  const Conv2dParams p{.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  const Tensor x = randn({2, 9, 9, 8}, 1, 1.0, 0.0, h), w = randn({3, 3, 8, 6}, 2, 0.2, 0.0, h);
  const Tensor bias = randn({6}, 3, 1.0, 0.0, h);
  const Shape ys = conv2d_output_shape(x.shape(), w.shape(), p);
  const Tensor dy = randn(ys, 4, 1.0, 0.0, h);
  // The reference in float32 on the same (float16) values; the fast result is stored in float16,
  // one rounding of values up to ~5: within 2^-11 relative.
  const Tensor x32 = x.to(f), w32 = w.to(f), b32 = bias.to(f), dy32 = dy.to(f);
  Tensor got = Tensor::empty(ys, {h}), want = Tensor::empty(ys, {f});
  fast().conv2d_forward(x, w, &bias, got, p);
  ref().conv2d_forward(x32, w32, &b32, want, p);
  EXPECT_EQ(got.dtype(), h);
  EXPECT_TRUE(all_close(got, want, 1e-3, 1e-3)) << "forward";
  Tensor dx = Tensor::empty(x.shape(), {h}), dx32 = Tensor::empty(x.shape(), {f});
  fast().conv2d_backward_data(dy, w, dx, p);
  ref().conv2d_backward_data(dy32, w32, dx32, p);
  EXPECT_TRUE(all_close(dx, dx32, 1e-3, 1e-3)) << "backward data";
  Tensor dw = Tensor::empty(w.shape(), {h}), db = Tensor::empty({6}, {h});
  Tensor dw32 = Tensor::empty(w.shape(), {f}), db32 = Tensor::empty({6}, {f});
  fast().conv2d_backward_weights(dy, x, dw, &db, p);
  ref().conv2d_backward_weights(dy32, x32, dw32, &db32, p);
  EXPECT_TRUE(all_close(dw, dw32, 1e-3, 1e-2)) << "backward weights";  // sums of 162 products
  EXPECT_TRUE(all_close(db, db32, 1e-3, 1e-2)) << "backward bias";
  const Pool2dParams q{.kernel_h = 3,
                       .kernel_w = 3,
                       .stride_h = 2,
                       .stride_w = 2,
                       .pad_top = 1,
                       .pad_bottom = 1,
                       .pad_left = 1,
                       .pad_right = 1};
  const Shape ps = pool2d_output_shape(x.shape(), q);
  const Tensor pdy = randn(ps, 5, 1.0, 0.0, h), pdy32 = pdy.to(f);
  Tensor py = Tensor::empty(ps, {h}), py32 = Tensor::empty(ps, {f}), ws, ws32;
  fast().max_pool2d_forward(x, py, &ws, q);
  ref().max_pool2d_forward(x32, py32, &ws32, q);
  EXPECT_TRUE(all_close(py, py32, 0, 0)) << "max forward";  // a maximum is exact
  Tensor pdx = Tensor::empty(x.shape(), {h}), pdx32 = Tensor::empty(x.shape(), {f});
  fast().max_pool2d_backward(pdy, x, ws, pdx, q);
  ref().max_pool2d_backward(pdy32, x32, ws32, pdx32, q);
  EXPECT_TRUE(all_close(pdx, pdx32, 1e-3, 1e-3)) << "max backward";
  fast().avg_pool2d_forward(x, py, q);
  ref().avg_pool2d_forward(x32, py32, q);
  EXPECT_TRUE(all_close(py, py32, 1e-3, 1e-3)) << "average forward";
  fast().avg_pool2d_backward(pdy, pdx, q);
  ref().avg_pool2d_backward(pdy32, pdx32, q);
  EXPECT_TRUE(all_close(pdx, pdx32, 1e-3, 1e-3)) << "average backward";
}

TEST(CpuMixedPrecisionTest, Bfloat16ReluBackwardArithmeticAndSumsMatchFloat32) {
  const Tensor dy = randn({64, 50}, 4, 1.0, 0.0, DType::bfloat16),
               x = randn({64, 50}, 5, 1.0, 0.0, DType::bfloat16);
  Tensor got = Tensor::empty({64, 50}, {DType::bfloat16});
  cpu::binary(BinaryOp::relu_backward, dy, x, got);
  Tensor want = Tensor::empty({64, 50}, {DType::float32});
  reference::binary(BinaryOp::relu_backward, dy.to(DType::float32), x.to(DType::float32), want);
  EXPECT_EQ(max_abs_diff(got, want), 0.0);  // a selection: exact
  cpu::unary(UnaryOp::relu, x, got, {});
  EXPECT_EQ(max_abs_diff(got, osprey::relu(x.to(DType::float32))), 0.0);
  Tensor h = Tensor::empty({64, 50}, {DType::float16});
  cpu::unary(UnaryOp::square, x.to(DType::float16), h, {});
  EXPECT_LT(max_abs_diff(h, osprey::square(x.to(DType::float32))), 2e-2);
  cpu::binary(BinaryOp::tanh_backward, dy, x, got);
  reference::binary(BinaryOp::tanh_backward, dy.to(DType::float32), x.to(DType::float32), want);
  // One bfloat16 rounding of the float32 result: at most half an ulp, 2^-8 of the largest value.
  EXPECT_LE(max_abs_diff(got, want), std::ldexp(osprey::max(osprey::abs(want)).item(), -8));
  Tensor s = Tensor::empty({1, 50}, {DType::bfloat16}),
         s32 = Tensor::empty({1, 50}, {DType::float32});
  cpu::reduce(ReduceOp::sum, dy, s);
  reference::reduce(ReduceOp::sum, dy.to(DType::float32), s32);
  EXPECT_LT(max_abs_diff(s, s32), 0.1);  // sums up to ~20, one bfloat16 rounding (2^-8 relative)
}

}  // namespace
}  // namespace osprey::cpu::testing
