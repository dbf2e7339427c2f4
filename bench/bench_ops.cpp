// osprey's ops against what they are built on, measured in the same binary: matmul/linear and
// conv2d (forward, backward data, backward weights) through the public op API (tensor/ops.h)
// against the bare oneDNN primitive (created once, executed in the loop), and elementwise add and
// relu on 1M floats against memcpy of the same bytes. Counters: GFLOP/s for products, GB/s for
// memory-bound ops. bench/run_bench.sh prints the ratios.
//   bench_ops --benchmark_filter=Matmul --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
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

struct Mnk { int64_t m, k, n; };
const Mnk kShapes[] = {{128, 784, 512}, {128, 512, 256}, {128, 256, 10}, {1024, 1024, 1024}};

void set_flops(benchmark::State& st, double flops) {
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Matmul_Osprey(benchmark::State& st) {
  const Mnk s = kShapes[st.range(0)];
  const Tensor a = randn({s.m, s.k}, 1), b = randn({s.k, s.n}, 2);
  for (auto _ : st) {
    Tensor c = osprey::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(st, 2.0 * s.m * s.n * s.k);
}

void BM_Linear_Osprey(benchmark::State& st) {
  const Mnk s = kShapes[st.range(0)];
  const Tensor x = randn({s.m, s.k}, 1), w = randn({s.k, s.n}, 2), bias = randn({s.n}, 3);
  for (auto _ : st) {
    Tensor y = osprey::linear(x, w, &bias, osprey::Activation::relu);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_flops(st, 2.0 * s.m * s.n * s.k);
}

// Through autograd: weights that require gradients, so every call records a graph node.
void BM_LinearAutograd_Osprey(benchmark::State& st) {
  namespace ag = osprey::autograd;
  const Mnk s = kShapes[st.range(0)];
  const ag::Variable x(randn({s.m, s.k}, 1)), w(randn({s.k, s.n}, 2), true), b(randn({s.n}, 3), true);
  for (auto _ : st) {
    ag::Variable y = ag::linear(x, w, b, osprey::Activation::relu);
    benchmark::DoNotOptimize(y.value().raw_data());
  }
  set_flops(st, 2.0 * s.m * s.n * s.k);
}

// The backend kernel alone (output preallocated): the op layer's share of the overhead is the
// difference to BM_Matmul_Osprey.
void BM_MatmulKernel_Osprey(benchmark::State& st) {
  const Mnk s = kShapes[st.range(0)];
  const Tensor a = randn({s.m, s.k}, 1), b = randn({s.k, s.n}, 2);
  Tensor c = Tensor::empty({s.m, s.n});
  const osprey::Backend& be = osprey::cpu_backend();
  for (auto _ : st) {
    be.matmul(a, b, nullptr, c, {});
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_flops(st, 2.0 * s.m * s.n * s.k);
}

// The same product on the bare primitive: plain row-major operands, created once.
void dnnl_matmul(benchmark::State& st, bool linear) {
  const Mnk s = kShapes[st.range(0)];
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
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  if (linear) args[DNNL_ARG_BIAS] = bias;
  for (auto _ : st) {
    prim.execute(strm(), args);
    strm().wait();
  }
  set_flops(st, 2.0 * s.m * s.n * s.k);
}
void BM_Matmul_Dnnl(benchmark::State& st) { dnnl_matmul(st, false); }
void BM_Linear_Dnnl(benchmark::State& st) { dnnl_matmul(st, true); }

BENCHMARK(BM_Matmul_Osprey)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Matmul_Dnnl)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MatmulKernel_Osprey)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Linear_Osprey)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Linear_Dnnl)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LinearAutograd_Osprey)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- conv2d ----------------------------------------------------------------------------------

// Batch 128, NHWC, 3x3, stride 1, "same" padding.
struct ConvShape { int64_t h, w, c, o; };
const ConvShape kConvs[] = {{28, 28, 1, 32}, {14, 14, 32, 64}};
constexpr int64_t kBatch = 128;

double conv_flops(const ConvShape& s) { return 2.0 * kBatch * s.h * s.w * s.o * s.c * 9; }

osprey::Conv2dParams same_3x3() {
  return {.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1, .channels_last = true};
}

enum class Pass { forward, backward_data, backward_weights };

void osprey_conv(benchmark::State& st, Pass pass) {
  const ConvShape s = kConvs[st.range(0)];
  const osprey::Conv2dParams p = same_3x3();
  const Tensor x = randn({kBatch, s.h, s.w, s.c}, 1), w = randn({3, 3, s.c, s.o}, 2, 0.1), bias = randn({s.o}, 3);
  const Tensor dy = randn({kBatch, s.h, s.w, s.o}, 4);
  for (auto _ : st) {
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
  }
  set_flops(st, conv_flops(s));
}

// The bare primitives: nhwc data, weights in the primitive's preferred layout (prepared once,
// so this is the primitive alone; osprey's figure includes reordering its HWIO kernel).
void dnnl_conv(benchmark::State& st, Pass pass) {
  const ConvShape s = kConvs[st.range(0)];
  const dnnl::memory::dims strides{1, 1}, pad{1, 1};
  const dnnl::memory::desc xmd({kBatch, s.c, s.h, s.w}, dt::f32, tag::nhwc),
      ymd({kBatch, s.o, s.h, s.w}, dt::f32, tag::nhwc), wany({s.o, s.c, 3, 3}, dt::f32, tag::any),
      bmd({s.o}, dt::f32, tag::a);
  const auto fwd_desc = dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                        dnnl::algorithm::convolution_direct, xmd, wany, bmd, ymd,
                                                        strides, pad, pad);
  const dnnl::convolution_forward::primitive_desc fpd(fwd_desc, eng());
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  if (pass == Pass::forward) {
    prim = dnnl::convolution_forward(fpd);
    args = {{DNNL_ARG_SRC, filled(xmd)}, {DNNL_ARG_WEIGHTS, filled(fpd.weights_desc())},
            {DNNL_ARG_BIAS, filled(bmd)}, {DNNL_ARG_DST, dnnl::memory(ymd, eng())}};
  } else if (pass == Pass::backward_data) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, xmd, wany, ymd, strides, pad, pad),
        eng(), fpd);
    prim = dnnl::convolution_backward_data(pd);
    args = {{DNNL_ARG_DIFF_DST, filled(ymd)}, {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
            {DNNL_ARG_DIFF_SRC, dnnl::memory(xmd, eng())}};
  } else {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, xmd, wany, bmd, ymd, strides,
                                                 pad, pad),
        eng(), fpd);
    prim = dnnl::convolution_backward_weights(pd);
    args = {{DNNL_ARG_SRC, filled(xmd)}, {DNNL_ARG_DIFF_DST, filled(ymd)},
            {DNNL_ARG_DIFF_WEIGHTS, dnnl::memory(pd.diff_weights_desc(), eng())},
            {DNNL_ARG_DIFF_BIAS, dnnl::memory(bmd, eng())}};
  }
  for (auto _ : st) {
    prim.execute(strm(), args);
    strm().wait();
  }
  set_flops(st, conv_flops(s));
}

void BM_ConvFwd_Osprey(benchmark::State& st) { osprey_conv(st, Pass::forward); }
void BM_ConvFwd_Dnnl(benchmark::State& st) { dnnl_conv(st, Pass::forward); }
void BM_ConvBwdData_Osprey(benchmark::State& st) { osprey_conv(st, Pass::backward_data); }
void BM_ConvBwdData_Dnnl(benchmark::State& st) { dnnl_conv(st, Pass::backward_data); }
void BM_ConvBwdWeights_Osprey(benchmark::State& st) { osprey_conv(st, Pass::backward_weights); }
void BM_ConvBwdWeights_Dnnl(benchmark::State& st) { dnnl_conv(st, Pass::backward_weights); }

BENCHMARK(BM_ConvFwd_Osprey)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvFwd_Dnnl)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBwdData_Osprey)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBwdData_Dnnl)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBwdWeights_Osprey)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBwdWeights_Dnnl)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- elementwise -----------------------------------------------------------------------------

constexpr int64_t kElems = 1 << 20;

void set_bytes(benchmark::State& st, double bytes) {
  st.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
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

}  // namespace

BENCHMARK_MAIN();
