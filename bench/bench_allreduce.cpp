// In-process all-reduce against memcpy, and the step-time cost of a strategy (issue 5):
//   BM_AllReduce/<bytes>/threads:N   N ranks (threads) all-reduce (mean) a buffer of <bytes> each
//   BM_Memcpy/<bytes>                one memcpy of the same bytes: the reference
//   BM_Overlap/<bucket KB>/<first bucket KB>/<0 communication thread | 1 backward thread>/threads:2
//                                    two replicas' MLP backward with bucketed all-reduce, against
//                                    the same step reduced after backward: hidden (the reducer's
//                                    stats), hidden_wall (time actually saved / reduction time),
//                                    ceiling (the most the buckets allow)
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
//   BM_ReduceOnRatio                 Mirrored on 2 virtual devices, buckets reduced on a
//                                    communication thread (a) vs on the replica threads (b)
//   BM_FashionMnistOverlap/<0|1|2>   the Fashion-MNIST MLP on Mirrored with 2 virtual devices:
//                                    default buckets vs one bucket reduced after backward
// Ratios (memcpy time / all-reduce time; Mirrored-1 / none) come from one run of this binary:
//   ./build/bench/bench_allreduce --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/autograd/ops.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/data_parallel/gradient_reducer.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

distribute::ReduceOn reduce_on(int64_t arg) {
  return arg == 0 ? distribute::ReduceOn::communication_thread
                  : distribute::ReduceOn::backward_thread;
}

// Args: bucket KB, first bucket KB, 0 = communication thread / 1 = backward thread. Each
// iteration runs one overlapped step (the reducer's hooks start buckets during backward) and one
// serial step (backward, then every bucket reduced on this thread), so that
//   hidden_wall = (serial step - overlapped step) / serial reduction time
// is the share of the reduction the overlap actually took off the step (medians), beside the
// reducer's own hidden = 1 - (wait + in-backward reductions) / reduction time and the ceiling
// (1 - the last bucket's share of the bytes). queued_us: per step, complete buckets waiting for
// their reducer to start.
void BM_Overlap(benchmark::State& state) {
  using autograd::Variable;
  const auto seed = 10 * static_cast<uint64_t>(state.thread_index());
  std::vector<Variable> w = {Variable(random_normal({784, 512}, {.seed = seed + 1}), true, "w1"),
                             Variable(random_normal({512, 512}, {.seed = seed + 2}), true, "w2"),
                             Variable(random_normal({512, 512}, {.seed = seed + 3}), true, "w3"),
                             Variable(random_normal({512, 10}, {.seed = seed + 4}), true, "w4")};
  const Variable x(random_normal({64, 784}, {.seed = seed + 5}));
  // Each benchmark thread is a virtual device with its share of the pool, as in MirroredStrategy.
  set_thread_limit(std::max(1, num_threads() / state.threads()));
  comm::Communicator& c = group(2).rank(state.thread_index());
  const distribute::ReducerOptions options{.bucket_bytes = state.range(0) << 10,
                                           .first_bucket_bytes = state.range(1) << 10,
                                           .reduce_on = reduce_on(state.range(2))};
  distribute::GradientReducer reducer(w, c, options);
  distribute::ReducerOptions serial_options = options;
  serial_options.reduce_on = distribute::ReduceOn::backward_thread;
  distribute::GradientReducer serial(w, c, serial_options);  // its hooks are idle outside its steps
  auto forward_backward = [&] {
    for (auto& v : w) v.zero_grad();
    Variable h = relu(matmul(x, w[0]));
    h = relu(matmul(h, w[1]));
    h = relu(matmul(h, w[2]));
    mean(matmul(h, w[3])).backward();
  };
  std::vector<double> overlapped, serial_step, serial_reduce;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    reducer.begin_step();
    forward_backward();
    reducer.finish_step();
    overlapped.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    forward_backward();
    const auto t1 = std::chrono::steady_clock::now();
    serial.begin_step();
    serial.finish_step();
    serial_step.push_back(seconds_since(t0));
    serial_reduce.push_back(seconds_since(t1));
  }
  const auto st = reducer.stats();
  const double reduce = median(serial_reduce);
  using benchmark::Counter;
  state.counters["hidden"] = Counter(st.hidden(), Counter::kAvgThreads);
  state.counters["ceiling"] = Counter(reducer.overlap_ceiling(), Counter::kAvgThreads);
  state.counters["hidden_wall"] = Counter(
      reduce > 0 ? (median(serial_step) - median(overlapped)) / reduce : 0.0, Counter::kAvgThreads);
  state.counters["step_ms"] = Counter(median(overlapped) * 1e3, Counter::kAvgThreads);
  state.counters["serial_ms"] = Counter(median(serial_step) * 1e3, Counter::kAvgThreads);
  state.counters["queued_us"] =
      Counter(st.steps > 0 ? st.queued_seconds / static_cast<double>(st.steps) * 1e6 : 0.0,
              Counter::kAvgThreads);
  set_thread_limit(0);
}
// Defaults (25 MB, 1 MB first) and 256 KB buckets, on either thread.
BENCHMARK(BM_Overlap)
    ->Args({25 << 10, 1 << 10, 0})
    ->Args({25 << 10, 1 << 10, 1})
    ->Args({256, 256, 0})
    ->Args({256, 256, 1})
    ->Threads(2)
    ->UseRealTime();

// The MLP 784-256-10 compiled with SGD and MSE: replicas 0 = no strategy (one device with
// num_threads() threads), n >= 1 = MirroredStrategy on n virtual devices.
Model step_model(int64_t replicas, distribute::MirroredOptions options = {}) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(256, "relu"), layers::Dense(10)}, {.input_shape = {784}});
  std::shared_ptr<const train::Strategy> s;
  if (replicas >= 1) {
    s = std::make_shared<distribute::MirroredStrategy>(
        distribute::virtual_devices(static_cast<int>(replicas)), options);
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
double burst(Model& m, int steps, const Tensor& x, const Tensor& y) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) m.train_on_batch(x, y);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

// Times a and b alternately, a burst of steps each: counters a_ms, b_ms (median step times) and
// ratio = samples/s of b over a. after_warmup runs once the first bursts are done.
void time_alternately(benchmark::State& state, Model& a, Model& b,
                      const std::function<void()>& after_warmup = {}, const Tensor& x = step_x(),
                      const Tensor& y = step_y()) {
  constexpr int kBurst = 10;
  burst(a, kBurst, x, y);  // primitives, replicas, workers and slots created outside the timing
  burst(b, kBurst, x, y);
  if (after_warmup) after_warmup();
  std::vector<double> ta, tb;
  for (auto _ : state) {
    ta.push_back(burst(a, kBurst, x, y));
    tb.push_back(burst(b, kBurst, x, y));
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
  Model m =
      Sequential({layers::Dense(256), layers::BatchNormalization({.synchronized = synchronized}),
                  layers::Activation("relu"), layers::Dense(10)},
                 {.input_shape = {784}});
  m.compile(
      "sgd", "mse", {},
      {.strategy = std::make_shared<distribute::MirroredStrategy>(distribute::virtual_devices(2))});
  return m;
}

void BM_SyncBnRatio(benchmark::State& state) {
  Model a = bn_step_model(false), b = bn_step_model(true);
  time_alternately(state, a, b);  // ratio: samples/s synchronized over per-replica
}
BENCHMARK(BM_SyncBnRatio)->UseRealTime();

// Mirrored on 2 virtual devices, the MLP 784-256-10: buckets reduced on a communication thread
// (a) against on each replica's own thread (b); ratio = samples/s of b over a.
void BM_ReduceOnRatio(benchmark::State& state) {
  Model a = step_model(2, {.reduce_on = distribute::ReduceOn::communication_thread});
  Model b = step_model(2, {.reduce_on = distribute::ReduceOn::backward_thread});
  time_alternately(state, a, b);
}
BENCHMARK(BM_ReduceOnRatio)->UseRealTime();

// The Fashion-MNIST MLP (applications::fashion_mnist_model("mlp"): 784-512-256-10 with biases,
// SGD, sparse categorical cross-entropy, global batch 128) on Mirrored with 2 virtual devices.
// Arg: where buckets are reduced, 0 = communication thread, 1 = backward thread, 2 = the default.
// b: default buckets (25 MB, 1 MB first); a: the serial reference, every gradient in one bucket,
// reduced by each replica's thread after backward. Counters: hidden and ceiling (b's reducers),
// hidden_wall = (a step - b step) / a's reduction time per step (the time the overlap took off
// the step), a_ms, b_ms, ratio = samples/s of b over a.
std::shared_ptr<distribute::MirroredStrategy> fmnist_strategy(distribute::MirroredOptions options) {
  return std::make_shared<distribute::MirroredStrategy>(distribute::virtual_devices(2), options);
}

Model fmnist_model(const std::shared_ptr<distribute::MirroredStrategy>& s) {
  nn::clear_session();
  Model m = applications::fashion_mnist_model("mlp");
  m.compile("sgd", "sparse_categorical_crossentropy", {}, {.strategy = s});
  return m;
}

void BM_FashionMnistOverlap(benchmark::State& state) {
  static const Tensor x = random_uniform({kStepBatch, 28, 28}, {.seed = 3});
  static const Tensor y = [] {
    Tensor t = Tensor::empty({kStepBatch}, {DType::int64});
    for (int64_t i = 0; i < kStepBatch; ++i) t.data<int64_t>()[i] = (i * 7) % 10;
    return t;
  }();
  distribute::MirroredOptions options;
  if (state.range(0) < 2) options.reduce_on = reduce_on(state.range(0));
  const auto serial = fmnist_strategy({.bucket_bytes = distribute::kDefaultBucketBytes,
                                       .first_bucket_bytes = distribute::kDefaultBucketBytes,
                                       .reduce_on = distribute::ReduceOn::backward_thread});
  const auto overlapped = fmnist_strategy(options);
  Model a = fmnist_model(serial), b = fmnist_model(overlapped);
  time_alternately(
      state, a, b,
      [&] {
        serial->reset_reducer_stats();
        overlapped->reset_reducer_stats();
      },
      x, y);
  const auto sa = serial->reducer_stats(), sb = overlapped->reducer_stats();
  const double reduce_ms =
      sa.steps > 0 ? sa.reduce_seconds / static_cast<double>(sa.steps) * 1e3 : 0.0;
  state.counters["hidden"] = sb.hidden();
  state.counters["ceiling"] = sb.ceiling;
  state.counters["reduce_ms"] = reduce_ms;
  state.counters["hidden_wall"] =
      reduce_ms > 0 ? (state.counters["a_ms"] - state.counters["b_ms"]) / reduce_ms : 0.0;
}
BENCHMARK(BM_FashionMnistOverlap)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
