// The LSTM op (autograd::lstm, oneDNN's fused RNN primitive) forward + backward at one shape, and
// the same with a mask that gives sample i 128 - 2i real steps (oneDNN then runs one step at a
// time, tensor/cpu/rnn_masked.cpp), best of --reps; one JSON line. Moved here from a disabled
// timing test of tensor/cpu/cpu_rnn_test.cpp: timings belong in bench/, not in unit tests. On a
// shared machine --threads 1 gives the steadiest numbers (oneDNN's per-step barriers suffer most
// from a busy core).
//   bench_rnn [--batch 32] [--t 128] [--features 512] [--units 512] [--threads 2] [--reps 10]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>

#include "osprey/autograd/ops.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/factory.h"

namespace {

namespace os = osprey;
namespace ag = osprey::autograd;

double best_seconds(int reps, const std::function<void()>& fn) {
  fn();  // warm up: primitives created, memory cached
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the LSTM op forward + backward, plain and masked"};
  int64_t batch = 32, t = 128, features = 512, units = 512;
  int threads = 2, reps = 10;
  app.add_option("--batch", batch);
  app.add_option("--t", t);
  app.add_option("--features", features);
  app.add_option("--units", units);
  app.add_option("--threads", threads);
  app.add_option("--reps", reps);
  CLI11_PARSE(app, argc, argv);
  os::set_num_threads(threads);
  const auto rnd = [](const os::Shape& s, uint64_t seed) {
    return os::random_normal(s, {.seed = seed, .dtype = os::DType::float32, .stddev = 0.1});
  };
  const os::Tensor x = rnd({batch, t, features}, 1), w = rnd({features, 4 * units}, 2),
                   u = rnd({units, 4 * units}, 3), b = rnd({4 * units}, 4),
                   g = rnd({batch, t, units}, 5);
  std::vector<double> m(static_cast<size_t>(batch * t));
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t s = 0; s < t; ++s) m[static_cast<size_t>(i * t + s)] = s < t - 2 * i;
  }
  const os::Tensor mask = os::from_vector<double>(m, {batch, t}).to(os::DType::boolean);
  const auto step = [&](const os::RnnOptions& o) {
    ag::Variable xv(x, true), wv(w, true), uv(u, true), bv(b, true);
    const ag::RnnOutputs r = ag::lstm(xv, {}, {}, wv, uv, bv, o);
    ag::sum(ag::mul(r.outputs, ag::Variable(g))).backward();
  };
  const double plain = best_seconds(reps, [&] { step({}); });
  const double masked = best_seconds(reps, [&] { step({.mask = mask}); });
  fmt::print(R"({{"batch": {}, "t": {}, "features": {}, "units": {}, "threads": {}, )"
             R"("lstm_ms": {:.1f}, "masked_lstm_ms": {:.1f}, "masked_over_plain": {:.2f}}})"
             "\n",
             batch, t, features, units, threads, 1e3 * plain, 1e3 * masked, masked / plain);
}
