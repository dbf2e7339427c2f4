// Scaled dot-product attention, forward + backward, at one shape, in one process, printed as one
// JSON line: the tiled kernel (autograd::scaled_dot_product_attention, float32) against the same
// attention composed of osprey's oneDNN ops with the Tq x Tk scores materialized (matmul, softmax,
// matmul), and against the naive float64 reference kernel (--reference, slow at long T). Best of
// --reps; peak memory of the scores is the composed path's Tq * Tk * heads * batch * 4 bytes.
//   bench_attention [--batch 1] [--heads 4] [--kv-heads 4] [--t 1024] [--d 64] [--causal]
//                   [--threads 2] [--reps 5] [--reference] [--tiled-only]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <functional>

#include "osprey/autograd/ops.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/tensor/ops_attention.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace os = osprey;
namespace ag = osprey::autograd;

double best_seconds(int reps, const std::function<void()>& fn) {
  fn();  // warm up: buffers, primitives
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tiled attention forward + backward against materialized and naive attention"};
  int64_t batch = 1, heads = 4, kv_heads = 4, t = 1024, d = 64;
  int threads = 2, reps = 5;
  bool causal = false, reference = false, tiled_only = false;
  app.add_option("--batch", batch);
  app.add_option("--heads", heads);
  app.add_option("--kv-heads", kv_heads);
  app.add_option("--t", t);
  app.add_option("--d", d);
  app.add_option("--threads", threads);
  app.add_option("--reps", reps);
  app.add_flag("--causal", causal);
  app.add_flag("--reference", reference);
  app.add_flag("--tiled-only", tiled_only, "skip the composed path (for peak-RSS readings)");
  CLI11_PARSE(app, argc, argv);
  os::set_num_threads(threads);

  const auto rnd = [](const os::Shape& s, uint64_t seed) {
    return os::random_normal(s, {.seed = seed, .dtype = os::DType::float32});
  };
  const os::Tensor q = rnd({batch, heads, t, d}, 1), k = rnd({batch, kv_heads, t, d}, 2),
                   v = rnd({batch, kv_heads, t, d}, 3), g = rnd({batch, heads, t, d}, 4);
  const os::AttentionOptions opts{.causal = causal};

  const double tiled = best_seconds(reps, [&] {
    ag::Variable qv(q, true), kv(k, true), vv(v, true);
    ag::sum(ag::mul(ag::scaled_dot_product_attention(qv, kv, vv, opts), ag::Variable(g)))
        .backward();
  });

  const double tiled_forward = best_seconds(reps, [&] {
    (void)ag::scaled_dot_product_attention(ag::Variable(q), ag::Variable(k), ag::Variable(v), opts);
  });

  // The same attention from separate ops (kv heads repeated for grouped queries).
  const int64_t group = heads / kv_heads;
  // Only the composed path needs it: T x T floats, which a peak-RSS reading of the tiled path
  // (--tiled-only) must not count.
  const os::Tensor bias =
      causal && !tiled_only
          ? os::where(os::ge(os::arange(0, static_cast<double>(t)).reshape({t, 1}),
                             os::arange(0, static_cast<double>(t)).reshape({1, t})),
                      os::zeros({t, t}), os::full({t, t}, -INFINITY))
          : os::zeros({1});
  const double composed = tiled_only ? 0.0 : best_seconds(reps, [&] {
    ag::Variable qv(q, true), kv(k, true), vv(v, true);
    ag::Variable kr = kv, vr = vv;
    if (group > 1) {
      kr = ag::reshape(
          ag::expand(ag::reshape(kv, {batch, kv_heads, 1, t, d}), {batch, kv_heads, group, t, d}),
          {batch, heads, t, d});
      vr = ag::reshape(
          ag::expand(ag::reshape(vv, {batch, kv_heads, 1, t, d}), {batch, kv_heads, group, t, d}),
          {batch, heads, t, d});
    }
    const ag::Variable s = ag::add(
        ag::mul(ag::matmul(qv, ag::transpose(kr, 2, 3)), 1.0 / std::sqrt(static_cast<double>(d))),
        ag::Variable(bias));
    ag::sum(ag::mul(ag::matmul(ag::softmax(s, -1), vr), ag::Variable(g))).backward();
  });

  double naive = 0.0;
  if (reference) {
    const os::AttentionInputs in = os::resolve_attention(q, k, v, opts);
    const os::Backend& ref = os::reference_backend();
    naive = best_seconds(1, [&] {
      os::Tensor out = os::Tensor::empty(q.shape()), lse = os::Tensor::empty({batch, heads, t});
      os::Tensor dq = os::empty_like(q), dk = os::empty_like(k), dv = os::empty_like(v);
      ref.attention_forward(in.q, in.k, in.v, nullptr, nullptr, in.params, out, lse);
      ref.attention_backward(g, in.q, in.k, in.v, nullptr, nullptr, out, lse, in.params, dq, dk,
                             dv);
    });
  }
  fmt::print(
      "{{\"batch\": {}, \"heads\": {}, \"kv_heads\": {}, \"t\": {}, \"d\": {}, \"causal\": {}, "
      "\"threads\": {}, \"tiled_ms\": {:.2f}, \"tiled_forward_ms\": {:.2f}, \"composed_ms\": "
      "{:.2f}, \"composed_over_tiled\": "
      "{:.2f}, \"composed_scores_mib\": {:.1f}{}}}\n",
      batch, heads, kv_heads, t, d, causal, threads, 1e3 * tiled, 1e3 * tiled_forward,
      1e3 * composed, composed / tiled, static_cast<double>(batch * heads * t * t * 4) / (1 << 20),
      reference ? fmt::format(", \"naive_reference_ms\": {:.1f}, \"naive_over_tiled\": {:.1f}",
                              1e3 * naive, naive / tiled)
                : "");
}
