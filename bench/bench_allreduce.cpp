// In-process all-reduce against memcpy, and the step-time cost of a strategy (issue 5):
//   BM_AllReduce/<bytes>/threads:N   N ranks (threads) all-reduce (mean) a buffer of <bytes> each
//   BM_Memcpy/<bytes>                one memcpy of the same bytes: the reference
//   BM_Overlap/<bucket KB>/threads:2 two replicas' MLP backward with bucketed all-reduce; counter
//                                    hidden = fraction of the reduction time hidden behind backward
//   BM_Step/<0|1|2>                  one MLP train_on_batch (global batch 128): 0 = no strategy,
//                                    1 = Mirrored on 1 device, 2 = Mirrored on 2 virtual devices
// Ratios (memcpy time / all-reduce time; Mirrored-1 / none) come from one run of this binary:
//   ./build/bench/bench_allreduce --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "osprey/autograd/ops.h"
#include "osprey/comm/in_process.h"
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
}
BENCHMARK(BM_Overlap)->Arg(256)->Arg(25 << 10)->Threads(2)->UseRealTime();

void BM_Step(benchmark::State& state) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(256, "relu"), layers::Dense(10)}, {.input_shape = {784}});
  std::shared_ptr<const train::Strategy> s;
  if (state.range(0) >= 1) s = std::make_shared<distribute::MirroredStrategy>(distribute::virtual_devices(static_cast<int>(state.range(0))));
  m.compile("sgd", "mse", {}, {.strategy = s});
  const Tensor x = random_normal({128, 784}, {.seed = 1});
  const Tensor y = random_normal({128, 10}, {.seed = 2});
  m.train_on_batch(x, y);
  for (auto _ : state) m.train_on_batch(x, y);
  state.SetItemsProcessed(state.iterations() * 128);  // samples per second
}
BENCHMARK(BM_Step)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
