// In-process all-reduce against memcpy, and the step-time cost of a strategy (issue 5):
//   BM_AllReduce/<bytes>/threads:N   N ranks (threads) all-reduce (mean) a buffer of <bytes> each
//   BM_Memcpy/<bytes>                one memcpy of the same bytes: the reference
//   BM_Overlap/<bucket KB>/threads:2 two replicas' MLP backward with bucketed all-reduce; counter
//                                    hidden = fraction of the reduction time hidden behind backward
//   BM_Step/<0|1|2>                  one MLP train_on_batch (global batch 128): 0 = no strategy,
//                                    1 = Mirrored on 1 device, 2 = Mirrored on 2 virtual devices
//   BM_StepRatio/<a>/<b>             configurations a and b (as BM_Step) timed alternately, a
//                                    burst of steps each, in the same process: counters a_ms and
//                                    b_ms (median step times) and ratio = samples/s of b / of a,
//                                    so load from other processes hits both sides alike
//   BM_SyncBnRatio                   the MLP 784-256(BatchNormalization)-10 on Mirrored with 2
//                                    virtual devices, per-replica (a) against synchronized (b)
//                                    BatchNormalization, timed alternately as BM_StepRatio: ratio =
//                                    samples/s synchronized / per-replica (the cost of the two
//                                    cross-replica all-reduces per layer and step)
// Ratios (memcpy time / all-reduce time; Mirrored-1 / none) come from one run of this binary:
//   ./build/bench/bench_allreduce --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "osprey/autograd/ops.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/gradient_reducer.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/mirrored_strategy.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace {

using namespace osprey;

comm::InProcessGroup& group(int n) {
  static std::unique_ptr<comm::InProcessGroup> g2 = std::make_unique<comm::InProcessGroup>(2);
  static std::unique_ptr<comm::InProcessGroup> g4 = std::make_unique<comm::InProcessGroup>(4);
  return n == 2 ? *g2 : *g4;
}

void BM_AllReduce(benchmark::State& state) {
  const auto count = static_cast<int64_t>(state.range(0)) / 4;
  std::vector<float> buf(static_cast<size_t>(count), 1.0f);
  comm::Communicator& c = group(state.threads()).rank(state.thread_index());
  for (auto _ : state) {
    c.all_reduce(buf.data(), count, comm::ReduceOp::mean);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AllReduce)->RangeMultiplier(16)->Range(4 << 10, 64 << 20)->Threads(2)->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(16)->Range(4 << 10, 64 << 20)->UseRealTime();

void BM_Overlap(benchmark::State& state) {
  using autograd::Variable;
  const auto seed = static_cast<uint64_t>(10 * state.thread_index());
  std::vector<Variable> w = {Variable(random_normal({784, 512}, {.seed = seed + 1}), true, "w1"),
                             Variable(random_normal({512, 512}, {.seed = seed + 2}), true, "w2"),
                             Variable(random_normal({512, 512}, {.seed = seed + 3}), true, "w3"),
                             Variable(random_normal({512, 10}, {.seed = seed + 4}), true, "w4")};
  const Variable x(random_normal({64, 784}, {.seed = seed + 5}));
  // Each benchmark thread is a virtual device with its share of the pool, as in MirroredStrategy.
  set_thread_limit(std::max(1, num_threads() / state.threads()));
  distribute::GradientReducer reducer(w, group(2).rank(state.thread_index()), state.range(0) << 10);
  for (auto _ : state) {
    reducer.begin_step();
    for (auto& v : w) v.zero_grad();
    Variable h = relu(matmul(x, w[0]));
    h = relu(matmul(h, w[1]));
    h = relu(matmul(h, w[2]));
    mean(matmul(h, w[3])).backward();
    reducer.finish_step();
  }
  const auto st = reducer.stats();
  state.counters["hidden"] = benchmark::Counter(
      st.reduce_seconds > 0 ? 1.0 - st.wait_seconds / st.reduce_seconds : 0.0, benchmark::Counter::kAvgThreads);
  set_thread_limit(0);
}
BENCHMARK(BM_Overlap)->Arg(256)->Arg(25 << 10)->Threads(2)->UseRealTime();

// The MLP 784-256-10 compiled with SGD and MSE: replicas 0 = no strategy (one device with
// num_threads() threads), n >= 1 = MirroredStrategy on n virtual devices.
Model step_model(int64_t replicas) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(256, "relu"), layers::Dense(10)}, {.input_shape = {784}});
  std::shared_ptr<const train::Strategy> s;
  if (replicas >= 1) {
    s = std::make_shared<distribute::MirroredStrategy>(distribute::virtual_devices(static_cast<int>(replicas)));
  }
  m.compile("sgd", "mse", {}, {.strategy = s});
  return m;
}

constexpr int64_t kStepBatch = 128;
const Tensor& step_x() {
  static const Tensor x = random_normal({kStepBatch, 784}, {.seed = 1});
  return x;
}
const Tensor& step_y() {
  static const Tensor y = random_normal({kStepBatch, 10}, {.seed = 2});
  return y;
}

void BM_Step(benchmark::State& state) {
  Model m = step_model(state.range(0));
  m.train_on_batch(step_x(), step_y());
  for (auto _ : state) m.train_on_batch(step_x(), step_y());
  state.SetItemsProcessed(state.iterations() * kStepBatch);  // samples per second
}
BENCHMARK(BM_Step)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

// Seconds per step of a burst of train_on_batch calls.
double burst(Model& m, int steps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) m.train_on_batch(step_x(), step_y());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Times a and b alternately, a burst of steps each: counters a_ms, b_ms (median step times) and
// ratio = samples/s of b over a.
void time_alternately(benchmark::State& state, Model& a, Model& b) {
  constexpr int kBurst = 10;
  burst(a, kBurst);  // primitives, replicas, workers and slots created outside the timing
  burst(b, kBurst);
  std::vector<double> ta, tb;
  for (auto _ : state) {
    ta.push_back(burst(a, kBurst));
    tb.push_back(burst(b, kBurst));
  }
  const double ma = median(ta), mb = median(tb);
  state.counters["a_ms"] = ma * 1e3;
  state.counters["b_ms"] = mb * 1e3;
  state.counters["ratio"] = mb > 0 ? ma / mb : 0.0;
}

void BM_StepRatio(benchmark::State& state) {
  Model a = step_model(state.range(0)), b = step_model(state.range(1));
  time_alternately(state, a, b);
}
// none vs Mirrored on 1 device (the overhead), 1 device with every thread vs 2 virtual devices.
BENCHMARK(BM_StepRatio)->Args({0, 1})->Args({0, 2})->UseRealTime();

Model bn_step_model(bool synchronized) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(256), layers::BatchNormalization({.synchronized = synchronized}),
                        layers::Activation("relu"), layers::Dense(10)},
                       {.input_shape = {784}});
  m.compile("sgd", "mse", {}, {.strategy = std::make_shared<distribute::MirroredStrategy>(distribute::virtual_devices(2))});
  return m;
}

void BM_SyncBnRatio(benchmark::State& state) {
  Model a = bn_step_model(false), b = bn_step_model(true);
  time_alternately(state, a, b);  // ratio: samples/s synchronized over per-replica
}
BENCHMARK(BM_SyncBnRatio)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
