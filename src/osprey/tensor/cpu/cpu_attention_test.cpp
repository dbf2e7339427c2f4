// The tiled attention kernel (cpu/attention.cpp) against the naive float64 reference, forward and
// backward, at shapes that exercise partial tiles, Tq != Tk, causal alignment, every mask kind,
// grouped-query heads and dropout. The float32 kernel must agree within 1e-5 of the largest value
// of each result (and 1e-5 relative per element above that).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "osprey/core/parallel.h"
#include "osprey/tensor/allocator.h"
#include "osprey/tensor/cpu/cpu_test_util.h"
#include "osprey/tensor/ops.h"
#include "osprey/tensor/ops_attention.h"

namespace osprey::cpu::testing {
namespace {

enum class MaskKind {
  none,
  key_padding,
  bool_per_batch,    // [batch, 1, Tq, Tk]
  float_2d,          // [Tq, Tk], added
  bool_full,         // [batch, heads, Tq, Tk]
  rows,              // [batch, 1, Tq, 1]: stride 0 along the keys; masks whole query rows
  bool_and_padding,  // [batch, 1, Tq, Tk] and a key padding mask
};

struct Case {
  int64_t batch, heads, kv_heads, tq, tk, d, dv;
  bool causal;
  MaskKind mask;
  double dropout = 0.0;
};

std::string name(const Case& c) {
  return fmt::format("B{} H{}/{} Tq{} Tk{} d{}/{}{} mask{} dropout{}", c.batch, c.heads, c.kv_heads,
                     c.tq, c.tk, c.d, c.dv, c.causal ? " causal" : "", static_cast<int>(c.mask),
                     c.dropout);
}

double max_abs(const Tensor& t) {
  double m = 0.0;
  for (double v : values(t)) m = std::max(m, std::abs(v));
  return m;
}

::testing::AssertionResult close(const Tensor& got, const Tensor& want) {
  return all_close(got, want, 1e-5, 1e-5 * std::max(max_abs(want), 1e-30));
}

Tensor to(const Tensor& t, DType d) {
  Tensor out = empty_as(t, d);
  ref().copy(t, out);
  return out;
}

// The mask of a case, already resolved as the op layer hands it to kernels.
AttentionInputs inputs(const Case& c, DType dtype) {
  AttentionOptions o{.causal = c.causal, .dropout = c.dropout, .seed = 77};
  switch (c.mask) {
    case MaskKind::none:
      break;
    case MaskKind::key_padding:  // about 30% of the keys are padding
      o.key_padding_mask = gt(randu({c.batch, c.tk}, 6, 0.0, 1.0, DType::float64),
                              full({c.batch, c.tk}, 0.3, {DType::float64}));
      break;
    case MaskKind::bool_per_batch:
      o.mask = gt(randu({c.batch, 1, c.tq, c.tk}, 7, 0.0, 1.0, DType::float64),
                  full({1}, 0.5, {DType::float64}));
      break;
    case MaskKind::float_2d:
      o.mask = randn({c.tq, c.tk}, 8, 2.0, 0.0, DType::float64);
      break;
    case MaskKind::rows:
      o.mask = gt(randu({c.batch, 1, c.tq, 1}, 10, 0.0, 1.0, DType::float64),
                  full({1}, 0.2, {DType::float64}));
      break;
    case MaskKind::bool_and_padding:
      o.mask = gt(randu({c.batch, 1, c.tq, c.tk}, 7, 0.0, 1.0, DType::float64),
                  full({1}, 0.3, {DType::float64}));
      o.key_padding_mask = gt(randu({c.batch, c.tk}, 6, 0.0, 1.0, DType::float64),
                              full({c.batch, c.tk}, 0.3, {DType::float64}));
      break;
    case MaskKind::bool_full:
      o.mask = gt(randu({c.batch, c.heads, c.tq, c.tk}, 9, 0.0, 1.0, DType::float64),
                  full({1}, 0.2, {DType::float64}));
      break;
  }
  if (o.mask.defined() && o.mask.dtype() != DType::boolean) o.mask = to(o.mask, dtype);
  // Values rounded to float32 first, so that both kernels see the same numbers.
  const auto in = [&](const Shape& s, uint64_t seed) {
    return to(randn(s, seed, 1.0, 0.0, DType::float32), dtype);
  };
  return resolve_attention(in({c.batch, c.heads, c.tq, c.d}, 1),
                           in({c.batch, c.kv_heads, c.tk, c.d}, 2),
                           in({c.batch, c.kv_heads, c.tk, c.dv}, 3), o);
}

void run(const Backend& be, const AttentionInputs& in, const Tensor& dout, Tensor& out, Tensor& lse,
         Tensor& dq, Tensor& dk, Tensor& dv) {
  const Tensor* m = in.mask.defined() ? &in.mask : nullptr;
  const Tensor* kp = in.key_padding.defined() ? &in.key_padding : nullptr;
  be.attention_forward(in.q, in.k, in.v, m, kp, in.params, out, lse);
  be.attention_backward(dout, in.q, in.k, in.v, m, kp, out, lse, in.params, dq, dk, dv);
}

void expect_matches_reference(const Case& c) {
  SCOPED_TRACE(name(c));
  const AttentionInputs f32 = inputs(c, DType::float32), f64 = inputs(c, DType::float64);
  const Tensor dout32 = randn({c.batch, c.heads, c.tq, c.dv}, 4);
  const Tensor dout64 = to(dout32, DType::float64);
  Tensor out = empty_as(dout32), lse = Tensor::empty({c.batch, c.heads, c.tq});
  Tensor dq = empty_as(f32.q), dk = empty_as(f32.k), dv = empty_as(f32.v);
  run(fast(), f32, dout32, out, lse, dq, dk, dv);
  Tensor out_r = empty_as(dout64),
         lse_r = Tensor::empty({c.batch, c.heads, c.tq}, {DType::float64});
  Tensor dq_r = empty_as(f64.q), dk_r = empty_as(f64.k), dv_r = empty_as(f64.v);
  run(ref(), f64, dout64, out_r, lse_r, dq_r, dk_r, dv_r);
  EXPECT_TRUE(close(out, out_r)) << "out";
  EXPECT_TRUE(all_close(lse, lse_r, 1e-5, 1e-5)) << "lse";
  EXPECT_TRUE(close(dq, dq_r)) << "dq";
  EXPECT_TRUE(close(dk, dk_r)) << "dk";
  EXPECT_TRUE(close(dv, dv_r)) << "dv";
}

TEST(CpuAttentionTest, MatchesReferenceWithPartialTilesAndTqDifferentFromTk) {
  expect_matches_reference({1, 2, 2, 70, 70, 16, 16, false, MaskKind::none});
  expect_matches_reference({2, 2, 2, 33, 130, 8, 12, false, MaskKind::none});
  expect_matches_reference({1, 1, 1, 150, 20, 5, 3, false, MaskKind::none});
  expect_matches_reference({1, 1, 1, 1, 1, 1, 1, false, MaskKind::none});
}

TEST(CpuAttentionTest, MatchesReferenceWhenCausal) {
  expect_matches_reference({1, 2, 2, 100, 100, 16, 16, true, MaskKind::none});
  expect_matches_reference({1, 2, 1, 140, 65, 32, 24, true, MaskKind::none});  // Tq > Tk
  expect_matches_reference({2, 1, 1, 7, 200, 4, 5, true, MaskKind::none});     // Tq < Tk
}

TEST(CpuAttentionTest, MatchesReferenceWithEveryMaskKind) {
  expect_matches_reference({2, 2, 2, 67, 90, 8, 8, false, MaskKind::key_padding});
  expect_matches_reference({2, 2, 1, 67, 90, 8, 8, true, MaskKind::key_padding});
  expect_matches_reference({2, 2, 2, 40, 75, 8, 8, false, MaskKind::bool_per_batch});
  expect_matches_reference({1, 3, 3, 40, 75, 8, 8, true, MaskKind::float_2d});
  expect_matches_reference({2, 2, 2, 70, 66, 8, 8, false, MaskKind::bool_full});
  expect_matches_reference({2, 2, 2, 70, 66, 8, 8, true, MaskKind::rows});
  expect_matches_reference({2, 4, 2, 70, 83, 8, 8, true, MaskKind::bool_and_padding});
}

TEST(CpuAttentionTest, MatchesReferenceWithGroupedQueryHeads) {
  expect_matches_reference({2, 8, 2, 65, 65, 16, 16, false, MaskKind::none});
  expect_matches_reference({1, 6, 1, 80, 130, 64, 64, true, MaskKind::key_padding});
}

TEST(CpuAttentionTest, MatchesReferenceWithDropout) {
  expect_matches_reference({2, 2, 1, 70, 90, 8, 8, false, MaskKind::none, 0.2});
  expect_matches_reference({1, 2, 2, 66, 66, 8, 8, true, MaskKind::key_padding, 0.5});
}

TEST(CpuAttentionTest, Bfloat16InputsAccumulateInFloat32) {
  const Case c{1, 2, 2, 70, 70, 16, 16, true, MaskKind::none};
  const AttentionInputs f32 = inputs(c, DType::float32);
  AttentionInputs b16 = f32;
  b16.q = to(f32.q, DType::bfloat16);
  b16.k = to(f32.k, DType::bfloat16);
  b16.v = to(f32.v, DType::bfloat16);
  AttentionInputs back = f32;  // the bfloat16 values in float32
  back.q = to(b16.q, DType::float32);
  back.k = to(b16.k, DType::float32);
  back.v = to(b16.v, DType::float32);
  const Tensor out16 = attention_forward(b16).out, out32 = attention_forward(back).out;
  EXPECT_EQ(out16.dtype(), DType::bfloat16);
  // The same float32 computation, rounded once to bfloat16 (8 bits of mantissa).
  EXPECT_TRUE(all_close(out16, out32, 1.0 / 128, 1e-6));
}

// Every sum runs in an order fixed by the shapes (dq's per-chunk buffers are added in chunk
// order), so one thread and several give the same bits.
TEST(CpuAttentionTest, ResultsDoNotDependOnTheThreadCount) {
  const Case c{2, 4, 2, 300, 700, 16, 16, true, MaskKind::key_padding, 0.1};
  const AttentionInputs in = inputs(c, DType::float32);
  const auto run_with = [&](int threads) {
    const int before = num_threads();
    set_num_threads(threads);
    const AttentionOutputs fwd = attention_forward(in);
    const AttentionGrads g = attention_backward(in, fwd, randn(fwd.out.shape(), 4));
    set_num_threads(before);
    return std::vector<std::vector<double>>{values(fwd.out), values(g.dq), values(g.dk),
                                            values(g.dv)};
  };
  EXPECT_EQ(run_with(1), run_with(3));
}

// Memory grows with T, never with T * T: forward + backward at T = 4096 on one head allocates
// a few MiB (inputs, outputs, transposed k and v, dq's chunk buffers), where one float32 score
// matrix alone would take 64 MiB.
TEST(CpuAttentionTest, LongSequencesRunInLinearMemory) {
  const Case c{1, 1, 1, 4096, 4096, 16, 16, true, MaskKind::none};
  const AttentionInputs in = inputs(c, DType::float32);
  Allocator& alloc = Allocator::instance();
  alloc.reset_peak();
  const int64_t before = alloc.stats().bytes_in_use;
  const AttentionOutputs fwd = attention_forward(in);
  const AttentionGrads g = attention_backward(in, fwd, ones(fwd.out.shape()));
  const int64_t grew = alloc.stats().peak_bytes_in_use - before;
  EXPECT_LT(grew, 8 << 20) << grew << " bytes";
  for (double v : values(g.dq)) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace osprey::cpu::testing
