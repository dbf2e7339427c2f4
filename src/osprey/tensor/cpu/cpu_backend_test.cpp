// The fast CPU backend's elementwise, copy, fill and reduction kernels against the reference
// kernels, on contiguous, transposed and broadcast inputs; plus determinism across thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "osprey/core/cpu_isa.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/cpu_test_util.h"
#include "osprey/tensor/cpu/dnnl_info.h"

namespace osprey::cpu::testing {
namespace {

struct UnaryCase {
  UnaryOp op;
  double lo, hi;  // input range
  double rtol;
  UnaryParams params{};
};

std::vector<UnaryCase> unary_cases() {
  return {
      {UnaryOp::neg, -3, 3, 0},
      {UnaryOp::exp, -20, 20, 2e-6},
      {UnaryOp::log, 1e-3, 50, 2e-7},
      {UnaryOp::log, 1e-40, 1e38, 2e-7},
      {UnaryOp::sqrt, 0, 50, 2e-6},
      {UnaryOp::rsqrt, 0.01, 50, 2e-6},
      {UnaryOp::abs, -3, 3, 0},
      {UnaryOp::sign, -3, 3, 0},
      {UnaryOp::square, -3, 3, 1e-7},
      {UnaryOp::reciprocal, 0.1, 3, 1e-7},
      {UnaryOp::relu, -3, 3, 0},
      {UnaryOp::sigmoid, -12, 12, 2e-6},
      {UnaryOp::tanh, -6, 6, 5e-6},
      {UnaryOp::gelu_tanh, -6, 6, 5e-6},
      {UnaryOp::gelu_erf, -6, 6, 5e-6},
      {UnaryOp::add_scalar, -3, 3, 0, {.alpha = 0.3}},
      {UnaryOp::mul_scalar, -3, 3, 0, {.alpha = -1.7}},
      {UnaryOp::pow_scalar, -3, 3, 1e-6, {.alpha = 3}},
      {UnaryOp::pow_scalar, 0.1, 3, 1e-6, {.alpha = 1.7}},
      {UnaryOp::pow_scalar, 0.1, 3, 2e-6, {.alpha = 0.5}},
      {UnaryOp::rsub_scalar, -3, 3, 0, {.alpha = 2.1}},
      {UnaryOp::clamp, -3, 3, 0, {.alpha = -1, .beta = 0.5}},
  };
}

TEST(CpuElementwiseTest, UnaryOpsMatchReferenceOnContiguousTransposedAndBroadcastInputs) {
  uint64_t seed = 1;
  for (const UnaryCase& c : unary_cases()) {
    for (DType d : {DType::float32, DType::float64}) {
      const Tensor base = randu({37, 301}, seed++, c.lo, c.hi, d);
      const Tensor inputs[] = {base, base.transpose(0, 1), base.slice(1, 0, 1).expand({37, 301}),
                               randu({1 << 17}, seed++, c.lo, c.hi, d)};
      for (const Tensor& x : inputs) {
        Tensor want = empty_as(x, d), got = empty_as(x, d);
        ref().unary(c.op, x, want, c.params);
        fast().unary(c.op, x, got, c.params);
        EXPECT_TRUE(all_close(got, want, c.rtol, c.rtol * 1e-1))
            << "op " << static_cast<int>(c.op) << " on " << x.describe() << " strides "
            << x.strides().to_string();
      }
    }
  }
}

TEST(CpuElementwiseTest, NanStaysNanWhereTheReferenceKeepsIt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x =
      from_vector<float>({-1.f, static_cast<float>(nan), 2.f, -0.f, 0.f, 5.f, -7.f, 1.f, 0.5f});
  for (UnaryOp op : {UnaryOp::relu, UnaryOp::sign, UnaryOp::clamp, UnaryOp::abs}) {
    Tensor want = empty_as(x), got = empty_as(x);
    ref().unary(op, x, want, {.alpha = -0.5, .beta = 0.5});
    fast().unary(op, x, got, {.alpha = -0.5, .beta = 0.5});
    EXPECT_TRUE(all_close(got, want, 0, 0)) << "op " << static_cast<int>(op);
  }
  // log's special values and denormals.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor lx = from_vector<float>({0.f, -1.f, inf, static_cast<float>(nan), 1e-40f, 1.17549435e-38f,
                                  1.f, 3e38f, -0.f, 0.7071f, 1e-45f});
  Tensor lw = empty_as(lx), lg = empty_as(lx);
  ref().unary(UnaryOp::log, lx, lw, {});
  fast().unary(UnaryOp::log, lx, lg, {});
  EXPECT_TRUE(all_close(lg, lw, 2e-7, 0));
  Tensor y =
      from_vector<float>({0.f, 1.f, static_cast<float>(nan), -0.f, 0.f, 6.f, -8.f, 1.f, 0.25f});
  for (BinaryOp op : {BinaryOp::maximum, BinaryOp::minimum, BinaryOp::add}) {
    Tensor want = empty_as(x), got = empty_as(x);
    ref().binary(op, x, y, want);
    fast().binary(op, x, y, got);
    EXPECT_TRUE(all_close(got, want, 0, 0)) << "op " << static_cast<int>(op);
  }
}

TEST(CpuElementwiseTest, BinaryOpsMatchReferenceWithBroadcasts) {
  const BinaryOp ops[] = {BinaryOp::add,
                          BinaryOp::sub,
                          BinaryOp::mul,
                          BinaryOp::div,
                          BinaryOp::pow,
                          BinaryOp::maximum,
                          BinaryOp::minimum,
                          BinaryOp::relu_backward,
                          BinaryOp::sigmoid_backward,
                          BinaryOp::tanh_backward,
                          BinaryOp::gelu_tanh_backward,
                          BinaryOp::gelu_erf_backward};
  uint64_t seed = 100;
  for (DType d : {DType::float32, DType::float64}) {
    const Tensor a = randu({64, 130}, seed++, 0.2, 2.0, d);
    const Tensor row = randu({130}, seed++, 0.2, 2.0, d).unsqueeze(0).expand({64, 130});
    const Tensor col = randu({64, 1}, seed++, 0.2, 2.0, d).expand({64, 130});
    const Tensor scalar = randu({1, 1}, seed++, 0.2, 2.0, d).expand({64, 130});
    const Tensor at = randu({130, 64}, seed++, 0.2, 2.0, d).transpose(0, 1);
    const Tensor b = randu({64, 130}, seed++, -2.0, 2.0, d);
    const std::pair<Tensor, Tensor> pairs[] = {
        {a, b}, {a, row}, {row, a}, {a, col}, {col, b}, {a, scalar}, {scalar, b}, {at, b}, {a, at}};
    for (BinaryOp op : ops) {
      for (const auto& [x, y] : pairs) {
        Tensor want = empty_as(a, d), got = empty_as(a, d);
        ref().binary(op, x, y, want);
        fast().binary(op, x, y, got);
        const double tol =
            (op == BinaryOp::pow || op >= BinaryOp::gelu_tanh_backward) ? 5e-6 : 2e-7;
        EXPECT_TRUE(all_close(got, want, tol, tol * 0.1))
            << "op " << static_cast<int>(op) << " " << dtype_name(d) << " strides "
            << x.strides().to_string() << " x " << y.strides().to_string();
      }
    }
  }
}

TEST(CpuElementwiseTest, ComparisonsGiveTheReferenceBooleans) {
  const Tensor a = randn({50, 40}, 7), b = randn({50, 40}, 8);
  const Tensor row = a.slice(0, 3, 4).expand({50, 40});
  for (BinaryOp op :
       {BinaryOp::eq, BinaryOp::ne, BinaryOp::lt, BinaryOp::le, BinaryOp::gt, BinaryOp::ge}) {
    for (const Tensor& y : {b, row}) {
      Tensor want = empty_as(a, DType::boolean), got = empty_as(a, DType::boolean);
      ref().binary(op, a, y, want);
      fast().binary(op, a, y, got);
      EXPECT_TRUE(bitwise_equal(got, want)) << "op " << static_cast<int>(op);
    }
  }
}

TEST(CpuElementwiseTest, IntegerAndHalfDtypesFallBackToTheReference) {
  Tensor a = from_vector<int32_t>({2147483647, -5, 7}), b = from_vector<int32_t>({1, 3, -9});
  Tensor want = empty_as(a), got = empty_as(a);
  ref().binary(BinaryOp::add, a, b, want);
  fast().binary(BinaryOp::add, a, b, got);
  EXPECT_TRUE(bitwise_equal(got, want));
  const Tensor h = randn({300}, 3, 1.0, 0.0, DType::bfloat16);
  Tensor hw = empty_as(h), hg = empty_as(h);
  ref().unary(UnaryOp::square, h, hw, {});
  fast().unary(UnaryOp::square, h, hg, {});
  EXPECT_TRUE(bitwise_equal(hg, hw));
}

TEST(CpuCopyTest, CopiesAndCastsMatchTheReferenceBitwise) {
  const Tensor x = randn({33, 65, 17}, 11);
  const Tensor views[] = {x,
                          x.transpose(0, 2),
                          x.permute({1, 0, 2}),
                          x.slice(1, 3, 60, 2),
                          x.slice(2, 0, 1).expand({33, 65, 17}),
                          x.select(1, 4).unsqueeze(1).expand({33, 65, 17})};
  for (const Tensor& v : views) {
    for (DType d :
         {DType::float32, DType::bfloat16, DType::float16, DType::float64, DType::int32}) {
      Tensor want = empty_as(v, d), got = empty_as(v, d);
      ref().copy(v, want);
      fast().copy(v, got);
      EXPECT_TRUE(bitwise_equal(got, want))
          << "to " << dtype_name(d) << " from strides " << v.strides().to_string();
    }
  }
  // From half types and into a strided destination.
  for (DType d : {DType::bfloat16, DType::float16}) {
    const Tensor h = randn({40, 70}, 12, 1.0, 0.0, d);
    Tensor want = Tensor::empty({70, 40}), got = Tensor::empty({70, 40});
    ref().copy(h.transpose(0, 1), want);
    fast().copy(h.transpose(0, 1), got);
    EXPECT_TRUE(bitwise_equal(got, want)) << dtype_name(d);
    Tensor dst_w = Tensor::empty({70, 40}), dst_g = Tensor::empty({70, 40});
    Tensor tw = dst_w.transpose(0, 1), tg = dst_g.transpose(0, 1);
    ref().copy(h, tw);
    fast().copy(h, tg);
    EXPECT_TRUE(bitwise_equal(dst_g, dst_w)) << dtype_name(d);
  }
  // Same-dtype copies of types oneDNN lacks.
  Tensor ints = Tensor::empty({20, 30}, {DType::int64});
  ref().random(RandomKind::uniform, 5, 0, 1000, ints);
  Tensor want = Tensor::empty({30, 20}, {DType::int64}),
         got = Tensor::empty({30, 20}, {DType::int64});
  ref().copy(ints.transpose(0, 1), want);
  fast().copy(ints.transpose(0, 1), got);
  EXPECT_TRUE(bitwise_equal(got, want));
}

TEST(CpuCopyTest, FillMatchesTheReferenceForEveryDtype) {
  for (DType d : {DType::float32, DType::float64, DType::bfloat16, DType::int8, DType::uint8,
                  DType::int32, DType::int64, DType::boolean}) {
    for (double v : {1.75, -300.5, std::numeric_limits<double>::quiet_NaN(), 1e30}) {
      Tensor want = Tensor::empty({9, 70}, {d}), got = Tensor::empty({9, 70}, {d});
      ref().fill(want, v);
      fast().fill(got, v);
      EXPECT_TRUE(bitwise_equal(got, want)) << dtype_name(d) << " " << v;
      Tensor sw = want.slice(1, 0, 70, 3), sg = got.slice(1, 0, 70, 3);
      ref().fill(sw, 2.0);
      fast().fill(sg, 2.0);
      EXPECT_TRUE(bitwise_equal(got, want)) << dtype_name(d);
    }
  }
}

// out's shape for x reduced over axes (keepdims).
Shape reduced(const Shape& s, std::initializer_list<int> axes) {
  Shape r = s;
  for (int a : axes) r[a] = 1;
  return r;
}

TEST(CpuReduceTest, ReductionsMatchTheReferenceForEveryAxisPattern) {
  struct Case {
    Shape shape;
    std::initializer_list<int> axes;
  };
  const Case cases[] = {
      {{1 << 20}, {0}},      {{300, 517}, {1}},   {{300, 517}, {0}},     {{100352, 32}, {0}},
      {{4, 70000}, {1}},     {{6, 50, 40}, {1}},  {{6, 50, 40}, {0, 1}}, {{6, 50, 40}, {1, 2}},
      {{6, 50, 40}, {0, 2}}, {{3, 1, 9000}, {0}}, {{2, 40000}, {0}},     {{5, 7}, {0, 1}},
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    for (DType d : {DType::float32, DType::float64}) {
      const Tensor x = randn(c.shape, seed++, 1.0, 0.25, d);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min}) {
        Tensor want = Tensor::empty(reduced(c.shape, c.axes), {d}),
               got = Tensor::empty(want.shape(), {d});
        ref().reduce(op, x, want);
        fast().reduce(op, x, got);
        EXPECT_TRUE(all_close(
            got, want, 1e-6,
            1e-6 * std::sqrt(static_cast<double>(x.numel()) / static_cast<double>(want.numel()))))
            << "op " << static_cast<int>(op) << " on " << x.describe();
      }
    }
  }
  // A transposed input.
  const Tensor t = randn({200, 300}, 9).transpose(0, 1);
  Tensor want = Tensor::empty({300, 1}), got = Tensor::empty({300, 1});
  ref().reduce(ReduceOp::sum, t, want);
  fast().reduce(ReduceOp::sum, t, got);
  EXPECT_TRUE(all_close(got, want, 1e-6, 1e-6));
}

TEST(CpuReduceTest, ReductionsPropagateNan) {
  Tensor x = randn({4, 1000}, 21);
  x.set({2, 500}, std::numeric_limits<double>::quiet_NaN());
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    Tensor want = Tensor::empty({4, 1}), got = Tensor::empty({4, 1});
    ref().reduce(op, x, want);
    fast().reduce(op, x, got);
    EXPECT_TRUE(all_close(got, want, 1e-6, 1e-5)) << "op " << static_cast<int>(op);
  }
}

TEST(CpuReduceTest, SumsAreBitwiseTheSameOnOneAndTwoThreads) {
  const int saved = num_threads();
  const Tensor big = randn({1 << 21}, 31, 1.0, 0.5);
  const Tensor cols = randn({100352, 32}, 32);
  const Tensor rows = randn({8, 300000}, 33);
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& [x, out_shape] :
         {std::pair{big, Shape{1}}, std::pair{cols, Shape{1, 32}}, std::pair{rows, Shape{8, 1}}}) {
      Tensor out = Tensor::empty(out_shape);
      fast().reduce(ReduceOp::sum, x, out);
      results[threads - 1].push_back(out);
    }
  }
  set_num_threads(saved);
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[0][i], results[1][i])) << "case " << i;
    Tensor want = empty_as(results[0][i]);
    const Tensor& x = i == 0 ? big : i == 1 ? cols : rows;
    ref().reduce(ReduceOp::sum, x, want);
    EXPECT_TRUE(all_close(results[0][i], want, 1e-6, 1e-6));
  }
}

TEST(CpuElementwiseTest, RepeatedCallsAreBitwiseDeterministic) {
  const Tensor x = randn({1 << 18}, 41), y = randn({1 << 18}, 42);
  Tensor a1 = empty_as(x), a2 = empty_as(x);
  fast().unary(UnaryOp::tanh, x, a1, {});
  fast().unary(UnaryOp::tanh, x, a2, {});
  EXPECT_TRUE(bitwise_equal(a1, a2));
  fast().binary(BinaryOp::mul, x, y, a1);
  fast().binary(BinaryOp::mul, x, y, a2);
  EXPECT_TRUE(bitwise_equal(a1, a2));
}

TEST(CpuInfoTest, ReportsVersionAndIsa) {
  EXPECT_EQ(dnnl_version_string().rfind("2.", 0), 0u) << dnnl_version_string();
  const std::string isa = dnnl_isa_name();
  EXPECT_NE(isa, "unknown");
  if (native_bf16()) {
    EXPECT_TRUE(avx512_available());
  }
  // oneDNN's JIT kernels and osprey's own run at one level: the cap (OSPREY_MAX_CPU_ISA, the ISA
  // matrix's tests) reaches both.
  EXPECT_EQ(isa, cpu_isa_name(effective_cpu_isa()));
  EXPECT_EQ(native_int8(), cpu_isa_has_vnni(effective_cpu_isa()));
  EXPECT_EQ(native_bf16(), cpu_isa_has_bf16(effective_cpu_isa()));
}

}  // namespace
}  // namespace osprey::cpu::testing
