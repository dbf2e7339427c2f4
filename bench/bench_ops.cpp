// osprey's ops against what they are built on, measured in the same binary: matmul/linear and
// conv2d (forward, backward data, backward weights) through the public op API (tensor/ops.h)
// against the bare oneDNN primitive (created once, executed in the loop), and elementwise add and
// relu on 1M floats against memcpy of the same bytes. Counters: GFLOP/s for products, GB/s for
// memory-bound ops. bench/run_bench.sh prints the ratios.
//   bench_ops --benchmark_filter=Matmul --benchmark_repetitions=5
// Every case is a setup function returning the call to measure, so the same call can also be
// counted in instructions: `bench_ops --count` runs each case under callgrind client requests
// (bench/count_overhead.sh), which is exact where timing on a shared VM is not.
#include <benchmark/benchmark.h>
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "osprey/autograd/ops.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/backend.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace {

using osprey::Tensor;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Call = std::function<void()>;

// Runs a prepared call in the benchmark loop.
void loop(benchmark::State& st, const Call& call) {
  for (auto _ : st) call();
}

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& strm() {
  static dnnl::stream s(eng());
  return s;
}

Tensor randn(const osprey::Shape& s, uint64_t seed, double stddev = 1.0) {
  return osprey::random_normal(s, {.seed = seed, .stddev = stddev});
}

// A dnnl::memory with its own buffer, filled with small values.
dnnl::memory filled(const dnnl::memory::desc& md) {
  dnnl::memory m(md, eng());
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = md.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
  return m;
}

// ---- matmul / linear -----------------------------------------------------------------------

struct Mnk {
  int64_t m, k, n;
};
const Mnk kShapes[] = {{128, 784, 512}, {128, 512, 256}, {128, 256, 10}, {1024, 1024, 1024}};

void set_flops(benchmark::State& st, double flops) {
  st.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

Call osprey_matmul(int shape) {
  const Mnk s = kShapes[shape];
  const Tensor a = randn({s.m, s.k}, 1), b = randn({s.k, s.n}, 2);
  return [=] {
    Tensor c = osprey::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  };
}

Call osprey_linear(int shape) {
  const Mnk s = kShapes[shape];
  const Tensor x = randn({s.m, s.k}, 1), w = randn({s.k, s.n}, 2), bias = randn({s.n}, 3);
  return [=] {
    Tensor y = osprey::linear(x, w, &bias, osprey::Activation::relu);
    benchmark::DoNotOptimize(y.raw_data());
  };
}

// Through autograd: weights that require gradients, so every call records a graph node.
Call osprey_linear_autograd(int shape) {
  namespace ag = osprey::autograd;
  const Mnk s = kShapes[shape];
  const ag::Variable x(randn({s.m, s.k}, 1)), w(randn({s.k, s.n}, 2), true),
      b(randn({s.n}, 3), true);
  return [=] {
    ag::Variable y = ag::linear(x, w, b, osprey::Activation::relu);
    benchmark::DoNotOptimize(y.value().raw_data());
  };
}

// The backend kernel alone (output preallocated): the op layer's share of the overhead is the
// difference to osprey_matmul.
Call osprey_matmul_kernel(int shape) {
  const Mnk s = kShapes[shape];
  const Tensor a = randn({s.m, s.k}, 1), b = randn({s.k, s.n}, 2);
  Tensor c = Tensor::empty({s.m, s.n});
  return [=]() mutable {
    osprey::cpu_backend().matmul(a, b, nullptr, c, {});
    benchmark::DoNotOptimize(c.raw_data());
  };
}

// The same product on the bare primitive: plain row-major operands, created once.
Call onednn_matmul(int shape, bool linear) {
  const Mnk s = kShapes[shape];
  const dnnl::memory::desc amd({s.m, s.k}, dt::f32, tag::ab), bmd({s.k, s.n}, dt::f32, tag::ab),
      cmd({s.m, s.n}, dt::f32, tag::ab), biasmd({1, s.n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  dnnl::matmul::primitive_desc pd;
  if (linear) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, biasmd, cmd), attr, eng());
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, cmd), attr, eng());
  }
  dnnl::matmul prim(pd);
  dnnl::memory a = filled(amd), b = filled(bmd), c(cmd, eng()), bias = filled(biasmd);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  if (linear) args[DNNL_ARG_BIAS] = bias;
  return [prim, args] {
    prim.execute(strm(), args);
    strm().wait();
  };
}

// ---- conv2d ----------------------------------------------------------------------------------

// Batch 128, NHWC, 3x3, stride 1, "same" padding.
struct ConvShape {
  int64_t h, w, c, o;
};
const ConvShape kConvs[] = {{28, 28, 1, 32}, {14, 14, 32, 64}};
constexpr int64_t kBatch = 128;

double conv_flops(const ConvShape& s) { return 2.0 * kBatch * s.h * s.w * s.o * s.c * 9; }

osprey::Conv2dParams same_3x3() {
  return {.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .channels_last = true};
}

enum class Pass { forward, backward_data, backward_weights };

Call osprey_conv(int shape, Pass pass) {
  const ConvShape s = kConvs[shape];
  const osprey::Conv2dParams p = same_3x3();
  const Tensor x = randn({kBatch, s.h, s.w, s.c}, 1), w = randn({3, 3, s.c, s.o}, 2, 0.1),
               bias = randn({s.o}, 3);
  const Tensor dy = randn({kBatch, s.h, s.w, s.o}, 4);
  return [=] {
    if (pass == Pass::forward) {
      Tensor y = osprey::conv2d(x, w, &bias, p);
      benchmark::DoNotOptimize(y.raw_data());
    } else if (pass == Pass::backward_data) {
      Tensor dx = osprey::conv2d_backward_data(dy, w, x.shape(), p);
      benchmark::DoNotOptimize(dx.raw_data());
    } else {
      Tensor db;
      Tensor dw = osprey::conv2d_backward_weights(dy, x, w.shape(), &db, p);
      benchmark::DoNotOptimize(dw.raw_data());
    }
  };
}

// The bare primitives: nhwc data, weights in the primitive's preferred layout (prepared once,
// so this is the primitive alone; osprey's figure includes reordering its HWIO kernel).
Call onednn_conv(int shape, Pass pass) {
  const ConvShape s = kConvs[shape];
  const dnnl::memory::dims strides{1, 1}, pad{1, 1};
  const dnnl::memory::desc xmd({kBatch, s.c, s.h, s.w}, dt::f32, tag::nhwc),
      ymd({kBatch, s.o, s.h, s.w}, dt::f32, tag::nhwc), wany({s.o, s.c, 3, 3}, dt::f32, tag::any),
      bmd({s.o}, dt::f32, tag::a);
  const auto fwd_desc = dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                        dnnl::algorithm::convolution_direct, xmd,
                                                        wany, bmd, ymd, strides, pad, pad);
  const dnnl::convolution_forward::primitive_desc fpd(fwd_desc, eng());
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  if (pass == Pass::forward) {
    prim = dnnl::convolution_forward(fpd);
    args = {{DNNL_ARG_SRC, filled(xmd)},
            {DNNL_ARG_WEIGHTS, filled(fpd.weights_desc())},
            {DNNL_ARG_BIAS, filled(bmd)},
            {DNNL_ARG_DST, dnnl::memory(ymd, eng())}};
  } else if (pass == Pass::backward_data) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, xmd, wany, ymd,
                                              strides, pad, pad),
        eng(), fpd);
    prim = dnnl::convolution_backward_data(pd);
    args = {{DNNL_ARG_DIFF_DST, filled(ymd)},
            {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
            {DNNL_ARG_DIFF_SRC, dnnl::memory(xmd, eng())}};
  } else {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, xmd, wany,
                                                 bmd, ymd, strides, pad, pad),
        eng(), fpd);
    prim = dnnl::convolution_backward_weights(pd);
    args = {{DNNL_ARG_SRC, filled(xmd)},
            {DNNL_ARG_DIFF_DST, filled(ymd)},
            {DNNL_ARG_DIFF_WEIGHTS, dnnl::memory(pd.diff_weights_desc(), eng())},
            {DNNL_ARG_DIFF_BIAS, dnnl::memory(bmd, eng())}};
  }
  return [prim, args] {
    prim.execute(strm(), args);
    strm().wait();
  };
}

// ---- elementwise -----------------------------------------------------------------------------

constexpr int64_t kElems = 1 << 20;

void set_bytes(benchmark::State& st, double bytes) {
  st.counters["GBps"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Add_Osprey(benchmark::State& st) {
  const Tensor a = randn({kElems}, 1), b = randn({kElems}, 2);
  for (auto _ : st) {
    Tensor c = osprey::add(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_bytes(st, 3.0 * kElems * sizeof(float));  // two reads, one write
}

void BM_Relu_Osprey(benchmark::State& st) {
  const Tensor x = randn({kElems}, 1);
  for (auto _ : st) {
    Tensor y = osprey::relu(x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(st, 2.0 * kElems * sizeof(float));
}

// memcpy of the 4 MiB of one operand (read + write counted, as for the ops): single-threaded,
// and split over the thread pool as osprey's kernels are.
void BM_Memcpy(benchmark::State& st) {
  std::vector<float> src(kElems, 1.0f), dst(kElems);
  const bool parallel = st.range(0) != 0;
  for (auto _ : st) {
    if (parallel) {
      osprey::parallel_for(0, kElems, 32768, [&](int64_t b, int64_t e) {
        std::memcpy(dst.data() + b, src.data() + b, static_cast<size_t>(e - b) * sizeof(float));
      });
    } else {
      std::memcpy(dst.data(), src.data(), kElems * sizeof(float));
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bytes(st, 2.0 * kElems * sizeof(float));
}

BENCHMARK(BM_Add_Osprey)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Relu_Osprey)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- instruction counts ------------------------------------------------------------------------

// Under `valgrind --tool=callgrind --collect-atstart=no`, each case is warmed up (primitives
// created, caches filled), then 10 calls are collected and dumped under the case's name; outside
// valgrind the client requests do nothing. `--count SUBSTRING` counts only the cases whose name
// contains it. bench/count_overhead.sh turns the dumps into ratios.
int count_instructions(const std::string& filter) {
  struct Case {
    std::string name;
    std::function<Call()>
        make;  // set up only when the case is selected: setup is slow under valgrind
  };
  std::vector<Case> cases;
  const char* mnk[] = {"128x784x512", "128x512x256", "128x256x10", "1024^3"};
  for (int i = 0; i < 4; ++i) {
    const std::string shape = mnk[i];
    cases.push_back({"matmul_dnnl/" + shape, [i] { return onednn_matmul(i, false); }});
    cases.push_back({"matmul_kernel/" + shape, [i] { return osprey_matmul_kernel(i); }});
    cases.push_back({"matmul_osprey/" + shape, [i] { return osprey_matmul(i); }});
    cases.push_back({"linear_dnnl/" + shape, [i] { return onednn_matmul(i, true); }});
    cases.push_back({"linear_osprey/" + shape, [i] { return osprey_linear(i); }});
    cases.push_back({"linear_autograd/" + shape, [i] { return osprey_linear_autograd(i); }});
  }
  const char* convs[] = {"28x28x1-32", "14x14x32-64"};
  const std::pair<const char*, Pass> passes[] = {{"fwd", Pass::forward},
                                                 {"bwd_data", Pass::backward_data},
                                                 {"bwd_weights", Pass::backward_weights}};
  for (int i = 0; i < 2; ++i) {
    for (const auto& [pname, pass] : passes) {
      const std::string op = std::string("conv_") + pname, shape = convs[i];
      cases.push_back({op + "_dnnl/" + shape, [i, pass = pass] { return onednn_conv(i, pass); }});
      cases.push_back({op + "_osprey/" + shape, [i, pass = pass] { return osprey_conv(i, pass); }});
    }
  }
  constexpr int kCalls = 10;
  for (const Case& c : cases) {
    if (c.name.find(filter) == std::string::npos) continue;
    const Call call = c.make();
    for (int w = 0; w < 3; ++w) call();
    CALLGRIND_TOGGLE_COLLECT;
    for (int r = 0; r < kCalls; ++r) call();
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(c.name.c_str());
    std::printf("counted %s (%d calls)\n", c.name.c_str(), kCalls);
    std::fflush(stdout);
  }
  return 0;
}

// Matmul/linear and conv cases, registered under the names bench/run_bench.sh pairs up.
void register_cases() {
  using Make = Call (*)(int);
  const std::pair<const char*, Make> products[] = {
      {"BM_Matmul_Osprey", osprey_matmul},
      {"BM_Matmul_Dnnl", [](int i) { return onednn_matmul(i, false); }},
      {"BM_MatmulKernel_Osprey", osprey_matmul_kernel},
      {"BM_Linear_Osprey", osprey_linear},
      {"BM_Linear_Dnnl", [](int i) { return onednn_matmul(i, true); }},
      {"BM_LinearAutograd_Osprey", osprey_linear_autograd}};
  for (const auto& [name, make] : products) {
    benchmark::RegisterBenchmark(name,
                                 [make = make](benchmark::State& st) {
                                   const Mnk s = kShapes[st.range(0)];
                                   loop(st, make(static_cast<int>(st.range(0))));
                                   set_flops(st, 2.0 * s.m * s.n * s.k);
                                 })
        ->DenseRange(0, 3)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  using MakeConv = Call (*)(int, Pass);
  const std::pair<const char*, Pass> passes[] = {{"Fwd", Pass::forward},
                                                 {"BwdData", Pass::backward_data},
                                                 {"BwdWeights", Pass::backward_weights}};
  const std::pair<const char*, MakeConv> sides[] = {{"Osprey", osprey_conv}, {"Dnnl", onednn_conv}};
  for (const auto& [pname, pass] : passes) {
    for (const auto& [side, make] : sides) {
      benchmark::RegisterBenchmark((std::string("BM_Conv") + pname + "_" + side).c_str(),
                                   [make = make, pass = pass](benchmark::State& st) {
                                     loop(st, make(static_cast<int>(st.range(0)), pass));
                                     set_flops(st, conv_flops(kConvs[st.range(0)]));
                                   })
          ->DenseRange(0, 1)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--count") == 0)
    return count_instructions(argc > 2 ? argv[2] : "");
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
