// The oneDNN recurrent kernels against the reference ones (every cell, several shapes, forward
// and backward), their primitive cache, and the cases they hand to the reference (masks).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "osprey/tensor/cpu/cpu_test_util.h"
#include "osprey/tensor/cpu/primitive_cache.h"

namespace osprey::cpu {
namespace {

using namespace osprey::cpu::testing;

struct CellCase {
  const char* name;
  RnnParams params;
  int64_t gates;
};

const std::vector<CellCase>& cell_cases() {
  static const std::vector<CellCase> c{
      {"lstm", {.cell = RnnCell::lstm}, 4},
      {"gru", {.cell = RnnCell::gru}, 3},
      {"gru reset_after", {.cell = RnnCell::gru_reset_after}, 3},
      {"simple_rnn tanh", {.cell = RnnCell::simple_rnn}, 1},
      {"simple_rnn relu", {.cell = RnnCell::simple_rnn, .activation = Activation::relu}, 1},
  };
  return c;
}

// Inputs, results and gradients of one run on one backend.
struct Problem {
  Tensor x, h0, c0, kernel, recurrent, bias, mask;
  Problem(const CellCase& c, int64_t batch, int64_t steps, int64_t features, int64_t units,
          uint64_t seed)
      : x(randn({batch, steps, features}, seed)),
        h0(randn({batch, units}, seed + 1, 0.5)),
        kernel(randn({features, c.gates * units}, seed + 3, 0.4)),
        recurrent(randn({units, c.gates * units}, seed + 4, 0.4)),
        bias(randn(c.params.cell == RnnCell::gru_reset_after ? Shape{2, c.gates * units}
                                                             : Shape{c.gates * units},
                   seed + 5, 0.3)) {
    if (c.params.cell == RnnCell::lstm) c0 = randn({batch, units}, seed + 2, 0.5);
  }
  RnnArgs args() const {
    return {.x = &x,
            .h0 = &h0,
            .c0 = c0.defined() ? &c0 : nullptr,
            .kernel = &kernel,
            .recurrent_kernel = &recurrent,
            .bias = &bias,
            .mask = mask.defined() ? &mask : nullptr};
  }
};

struct Outcome {
  Tensor y, h, c, ws, dx, dh0, dc0, dk, dr, db;
};

Outcome run(const Backend& be, const Problem& pr, const RnnParams& p, const Tensor& dy,
            const Tensor& dh, const Tensor& dc) {
  const bool lstm = p.cell == RnnCell::lstm;
  const int64_t b = pr.x.size(0), t = pr.x.size(1), u = pr.recurrent.size(0);
  Outcome r;
  r.y = Tensor::empty({b, t, u});
  r.h = Tensor::empty({b, u});
  if (lstm) r.c = Tensor::empty({b, u});
  be.rnn_forward(pr.args(), p, r.y, r.h, lstm ? &r.c : nullptr, &r.ws);
  r.dx = empty_as(pr.x), r.dh0 = empty_as(pr.h0), r.dk = empty_as(pr.kernel);
  r.dr = empty_as(pr.recurrent), r.db = empty_as(pr.bias);
  if (lstm) r.dc0 = empty_as(pr.c0);
  const RnnResults out{.y = &r.y, .h_n = &r.h, .c_n = lstm ? &r.c : nullptr, .workspace = &r.ws};
  be.rnn_backward(pr.args(), p, out, dy, dh, lstm ? &dc : nullptr,
                  {.dx = &r.dx,
                   .dh0 = &r.dh0,
                   .dc0 = lstm ? &r.dc0 : nullptr,
                   .dkernel = &r.dk,
                   .drecurrent_kernel = &r.dr,
                   .dbias = &r.db});
  return r;
}

void expect_same(const Outcome& got, const Outcome& want, bool lstm, double rtol, double atol) {
  EXPECT_TRUE(all_close(got.y, want.y, rtol, atol)) << "y";
  EXPECT_TRUE(all_close(got.h, want.h, rtol, atol)) << "h_n";
  if (lstm) {
    EXPECT_TRUE(all_close(got.c, want.c, rtol, atol)) << "c_n";
  }
  EXPECT_TRUE(all_close(got.dx, want.dx, rtol, atol)) << "dx";
  EXPECT_TRUE(all_close(got.dh0, want.dh0, rtol, atol)) << "dh0";
  if (lstm) {
    EXPECT_TRUE(all_close(got.dc0, want.dc0, rtol, atol)) << "dc0";
  }
  EXPECT_TRUE(all_close(got.dk, want.dk, rtol, atol)) << "dkernel";
  EXPECT_TRUE(all_close(got.dr, want.dr, rtol, atol)) << "drecurrent_kernel";
  EXPECT_TRUE(all_close(got.db, want.db, rtol, atol)) << "dbias";
}

TEST(CpuRnnTest, OneDnnKernelsMatchTheReferenceAtSeveralShapes) {
  struct Dims {
    int64_t batch, steps, features, units;
  };
  const std::vector<Dims> dims{
      {1, 1, 3, 2}, {1, 6, 5, 4}, {3, 1, 4, 7}, {4, 9, 8, 5}, {2, 5, 16, 16}};
  uint64_t seed = 100;
  for (const CellCase& c : cell_cases()) {
    for (const Dims& d : dims) {
      SCOPED_TRACE(std::string(c.name) + " batch " + std::to_string(d.batch) + " steps " +
                   std::to_string(d.steps) + " features " + std::to_string(d.features) + " units " +
                   std::to_string(d.units));
      const Problem pr(c, d.batch, d.steps, d.features, d.units, seed);
      const Tensor dy = randn({d.batch, d.steps, d.units}, seed + 10);
      const Tensor dh = randn({d.batch, d.units}, seed + 11),
                   dc = randn({d.batch, d.units}, seed + 12);
      seed += 20;
      const Outcome fast_run = run(fast(), pr, c.params, dy, dh, dc);
      ASSERT_TRUE(fast_run.ws.defined()) << "the oneDNN path did not run";
      EXPECT_EQ(fast_run.ws.dtype(), DType::uint8);
      const Outcome ref_run = run(ref(), pr, c.params, dy, dh, dc);
      expect_same(fast_run, ref_run, c.params.cell == RnnCell::lstm, 1e-4, 1e-5);
      // Inference (no workspace: oneDNN's forward_inference) gives the training outputs.
      const bool lstm = c.params.cell == RnnCell::lstm;
      Tensor y = empty_as(fast_run.y), h = empty_as(fast_run.h);
      Tensor cn = lstm ? empty_as(fast_run.c) : Tensor();
      fast().rnn_forward(pr.args(), c.params, y, h, lstm ? &cn : nullptr, nullptr);
      EXPECT_TRUE(all_close(y, fast_run.y, 1e-4, 1e-5)) << "inference y";
      EXPECT_TRUE(all_close(h, fast_run.h, 1e-4, 1e-5)) << "inference h_n";
    }
  }
}

TEST(CpuRnnTest, ASecondCallCreatesNoPrimitive) {
  const CellCase& c = cell_cases()[0];
  const Problem pr(c, 2, 4, 3, 5, 7);
  const Tensor dy = randn({2, 4, 5}, 8), dh = randn({2, 5}, 9), dc = randn({2, 5}, 10);
  run(fast(), pr, c.params, dy, dh, dc);
  const int64_t created = dnnl_primitives_created();
  const Outcome again = run(fast(), pr, c.params, dy, dh, dc);
  EXPECT_EQ(dnnl_primitives_created(), created);
  EXPECT_TRUE(again.ws.defined());
}

TEST(CpuRnnTest, MaskedBatchesRunOneDnnStepByStepAndMatchTheReference) {
  // Rows: padded at the end, padded at the start (go_backwards of the former), holes, all
  // masked, no step masked; with masked steps repeating the state or outputting 0.
  const std::vector<double> mask{1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1,
                                 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  uint64_t seed = 300;
  for (const CellCase& c : cell_cases()) {
    for (const bool zero_out : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (zero_out ? " zero outputs" : ""));
      RnnParams params = c.params;
      params.zero_output_for_mask = zero_out;
      Problem pr(c, 5, 5, 3, 4, seed);
      pr.mask = from_vector<double>(mask, {5, 5}).to(DType::boolean);
      const Tensor dy = randn({5, 5, 4}, seed + 10), dh = randn({5, 4}, seed + 11),
                   dc = randn({5, 4}, seed + 12);
      seed += 20;
      const Outcome f = run(fast(), pr, params, dy, dh, dc);
      ASSERT_TRUE(f.ws.defined()) << "the oneDNN path did not run";
      expect_same(f, run(ref(), pr, params, dy, dh, dc), c.params.cell == RnnCell::lstm, 1e-4,
                  1e-5);
      const bool lstm = c.params.cell == RnnCell::lstm;
      Tensor y = empty_as(f.y), h = empty_as(f.h), cn = lstm ? empty_as(f.c) : Tensor();
      fast().rnn_forward(pr.args(), params, y, h, lstm ? &cn : nullptr, nullptr);
      EXPECT_TRUE(all_close(y, f.y, 1e-4, 1e-5)) << "inference y";
    }
  }
}

TEST(CpuRnnTest, Bfloat16RunsTheFloat32KernelsAndRoundsTheResults) {
  for (const CellCase& c : cell_cases()) {
    SCOPED_TRACE(c.name);
    const Problem pr(c, 3, 5, 6, 4, 31);
    Problem half = pr;
    for (Tensor* t : {&half.x, &half.h0, &half.c0, &half.kernel, &half.recurrent, &half.bias}) {
      if (t->defined()) *t = t->to(DType::bfloat16);
    }
    // The float32 run sees the same (rounded) values.
    Problem rounded = half;
    for (Tensor* t : {&rounded.x, &rounded.h0, &rounded.c0, &rounded.kernel, &rounded.recurrent,
                      &rounded.bias}) {
      if (t->defined()) *t = t->to(DType::float32);
    }
    const Tensor dy = randn({3, 5, 4}, 32), dh = randn({3, 4}, 33), dc = randn({3, 4}, 34);
    const bool lstm = c.params.cell == RnnCell::lstm;
    const Outcome want = run(fast(), rounded, c.params, dy, dh, dc);
    Outcome got;
    got.y = Tensor::empty({3, 5, 4}, {DType::bfloat16});
    got.h = Tensor::empty({3, 4}, {DType::bfloat16});
    if (lstm) got.c = Tensor::empty({3, 4}, {DType::bfloat16});
    fast().rnn_forward(half.args(), c.params, got.y, got.h, lstm ? &got.c : nullptr, &got.ws);
    ASSERT_TRUE(got.ws.defined()) << "the oneDNN path did not run";
    EXPECT_TRUE(all_close(got.y, want.y, 1e-2, 1e-2));
    EXPECT_TRUE(all_close(got.h, want.h, 1e-2, 1e-2));
    for (Tensor* t : {&got.dx, &got.dh0, &got.dk, &got.dr, &got.db}) *t = Tensor();
    got.dx = Tensor::empty(pr.x.shape(), {DType::bfloat16});
    got.dh0 = Tensor::empty(pr.h0.shape(), {DType::bfloat16});
    got.dk = Tensor::empty(pr.kernel.shape(), {DType::bfloat16});
    got.dr = Tensor::empty(pr.recurrent.shape(), {DType::bfloat16});
    got.db = Tensor::empty(pr.bias.shape(), {DType::bfloat16});
    if (lstm) got.dc0 = Tensor::empty(pr.c0.shape(), {DType::bfloat16});
    const Tensor dyh = dy.to(DType::bfloat16), dhh = dh.to(DType::bfloat16),
                 dch = dc.to(DType::bfloat16);
    const RnnResults out{
        .y = &got.y, .h_n = &got.h, .c_n = lstm ? &got.c : nullptr, .workspace = &got.ws};
    fast().rnn_backward(half.args(), c.params, out, dyh, dhh, lstm ? &dch : nullptr,
                        {.dx = &got.dx,
                         .dh0 = &got.dh0,
                         .dc0 = lstm ? &got.dc0 : nullptr,
                         .dkernel = &got.dk,
                         .drecurrent_kernel = &got.dr,
                         .dbias = &got.db});
    // dy rounded to bfloat16 moves the gradients by up to ~0.4% of their scale.
    EXPECT_TRUE(all_close(got.dx, want.dx, 2e-2, 2e-2)) << "dx";
    EXPECT_TRUE(all_close(got.dk, want.dk, 2e-2, 2e-2)) << "dkernel";
    EXPECT_TRUE(all_close(got.dr, want.dr, 2e-2, 2e-2)) << "drecurrent_kernel";
    EXPECT_TRUE(all_close(got.db, want.db, 2e-2, 2e-2)) << "dbias";
  }
}

}  // namespace
}  // namespace osprey::cpu
