// Fast unary and binary elementwise kernels for float32 and float64. Arithmetic runs in
// vectorized loops over the runs of a LoopPlan (contiguous, or broadcast along a unit-stride
// run as bias adds are); transcendental float32 ops (exp, log, sqrt, rsqrt, sigmoid, tanh, gelu
// and their gradients) go to oneDNN's JIT eltwise primitives, which are vectorized with the
// accuracy of libm. NaN semantics follow the reference kernel: relu, clamp, sign, maximum and
// minimum keep NaN. Integer and half-precision dtypes, and rare layouts, fall back.
#include <cmath>
#include <limits>

#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/cpu/loops.h"
#include "osprey/tensor/cpu/simd_math.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

// ---- oneDNN eltwise ----------------------------------------------------------------------

struct EltwiseEntry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
};

// Forward: y = alg(x) over n dense elements; backward: dx = dy * alg'(x) (src = x).
EltwiseEntry* eltwise_entry(bool backward, dnnl::algorithm alg, float alpha, float beta, DType d,
                            int64_t n) {
  PrimitiveKey key(backward ? OpKind::eltwise_bwd : OpKind::eltwise_fwd);
  key.add(static_cast<int64_t>(alg));
  key.add_double(alpha);
  key.add_double(beta);
  key.add(static_cast<int64_t>(d));
  key.add(n);
  return primitive_cache().get<EltwiseEntry>(key, [&]() -> std::unique_ptr<EltwiseEntry> {
    try {
      auto e = std::make_unique<EltwiseEntry>();
      const auto md = make_md({n}, to_dnnl(d), {1});
      const dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg, md, alpha, beta);
      if (!backward) {
        const dnnl::eltwise_forward::primitive_desc pd(fd, base_attr(), engine());
        e->op = std::make_unique<DnnlOp>(
            pd, std::vector<DnnlOp::Arg>{{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, md}});
      } else {
        const dnnl::eltwise_forward::primitive_desc hint(fd, engine());
        const dnnl::eltwise_backward::primitive_desc pd(
            dnnl::eltwise_backward::desc(alg, md, md, alpha, beta), base_attr(), engine(), hint);
        e->op = std::make_unique<DnnlOp>(
            pd, std::vector<DnnlOp::Arg>{
                    {DNNL_ARG_SRC, md}, {DNNL_ARG_DIFF_DST, md}, {DNNL_ARG_DIFF_SRC, md}});
      }
      if (e->op->is_reference_impl()) return nullptr;
      return e;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

// The oneDNN algorithm (and alpha, beta) for a transcendental unary op; undef when the op is
// arithmetic (done by our loops) or has no oneDNN counterpart.
dnnl::algorithm unary_alg(UnaryOp op, const UnaryParams& p, float& alpha, float& beta) {
  alpha = 0.f;
  beta = 0.f;
  switch (op) {
    case UnaryOp::exp:
      return dnnl::algorithm::eltwise_exp;
    case UnaryOp::sqrt:
      return dnnl::algorithm::eltwise_sqrt;
    case UnaryOp::rsqrt:
      alpha = 1.f;
      beta = -0.5f;
      return dnnl::algorithm::eltwise_pow;
    case UnaryOp::sigmoid:
      return dnnl::algorithm::eltwise_logistic;
    case UnaryOp::tanh:
      return dnnl::algorithm::eltwise_tanh;
    case UnaryOp::gelu_tanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case UnaryOp::gelu_erf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case UnaryOp::pow_scalar:
      if (p.alpha == 0.5) return dnnl::algorithm::eltwise_sqrt;
      if (p.alpha == -0.5) {
        alpha = 1.f;
        beta = -0.5f;
        return dnnl::algorithm::eltwise_pow;
      }
      return dnnl::algorithm::undef;
    default:
      return dnnl::algorithm::undef;
  }
}

// ---- arithmetic loops -----------------------------------------------------------------------

// y[i] = f(x[i * step]) for a run; step is 0 (broadcast) or 1.
template <class T, class F>
void unary_run(const T* x, int64_t step, T* y, int64_t n, F f) {
  if (step == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  } else {
    const T v = f(x[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

template <class T, class F>
void run_unary_plan(const Tensor& x, Tensor& y, F f) {
  const LoopPlan<2> plan = make_plan<2>(y.shape(), {&y, &x});
  const auto sz = static_cast<int64_t>(sizeof(T));
  for_each_run<2>(plan, {bytes_of(y), bytes_of(x)}, {sz, sz},
                  [&](const std::array<char*, 2>& p, int64_t n, const std::array<int64_t, 2>& st) {
                    unary_run(reinterpret_cast<const T*>(p[1]), st[1], reinterpret_cast<T*>(p[0]),
                              n, f);
                  });
}

// Integer powers by repeated multiplication (exact for squares, 1 ulp-level otherwise).
template <class T>
inline T ipow(T x, int k) {
  T r = T(1);
  const bool inv = k < 0;
  for (int i = 0; i < (inv ? -k : k); ++i) r *= x;
  return inv ? T(1) / r : r;
}

// False when op is not an arithmetic op of ours.
template <class T>
bool arithmetic_unary(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p) {
  const T a = static_cast<T>(p.alpha), b = static_cast<T>(p.beta);
  const double ad = p.alpha;
  switch (op) {
    case UnaryOp::neg:
      run_unary_plan<T>(x, y, [](T v) { return -v; });
      return true;
    case UnaryOp::abs:
      run_unary_plan<T>(x, y, [](T v) { return std::fabs(v); });
      return true;
    case UnaryOp::square:
      run_unary_plan<T>(x, y, [](T v) { return v * v; });
      return true;
    case UnaryOp::reciprocal:
      run_unary_plan<T>(x, y, [](T v) { return T(1) / v; });
      return true;
    case UnaryOp::relu:
      run_unary_plan<T>(x, y, [](T v) { return (v > T(0) || v != v) ? v : T(0); });
      return true;
    case UnaryOp::sign:
      run_unary_plan<T>(
          x, y, [](T v) { return v > T(0) ? T(1) : (v < T(0) ? T(-1) : (v == v ? T(0) : v)); });
      return true;
    // Scalar ops in double, as the reference: one rounding, not two.
    case UnaryOp::add_scalar:
      run_unary_plan<T>(x, y, [ad](T v) { return static_cast<T>(v + ad); });
      return true;
    case UnaryOp::mul_scalar:
      run_unary_plan<T>(x, y, [ad](T v) { return static_cast<T>(v * ad); });
      return true;
    case UnaryOp::rsub_scalar:
      run_unary_plan<T>(x, y, [ad](T v) { return static_cast<T>(ad - v); });
      return true;
    case UnaryOp::clamp:
      // std::max/min return their first argument when a comparison is false: NaN stays NaN.
      run_unary_plan<T>(x, y, [a, b](T v) { return std::min(std::max(v, a), b); });
      return true;
    case UnaryOp::pow_scalar: {
      const double e = p.alpha;
      if (e == std::trunc(e) && std::fabs(e) <= 4) {
        const int k = static_cast<int>(e);
        run_unary_plan<T>(x, y, [k](T v) { return ipow(v, k); });
      } else {
        run_unary_plan<T>(x, y, [a](T v) { return std::pow(v, a); });
      }
      return true;
    }
    default:
      return false;
  }
}

template <class T, class TO, class F>
void binary_run(const T* a, int64_t sa, const T* b, int64_t sb, TO* o, int64_t n, F f) {
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1) {
    const T bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sb == 1) {
    const T av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    const TO v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class T, class TO, class F>
void run_binary_plan(const LoopPlan<3>& plan, const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const auto st = static_cast<int64_t>(sizeof(T)), so = static_cast<int64_t>(sizeof(TO));
  for_each_run<3>(plan, {bytes_of(out), bytes_of(a), bytes_of(b)}, {so, st, st},
                  [&](const std::array<char*, 3>& p, int64_t n, const std::array<int64_t, 3>& s) {
                    binary_run(reinterpret_cast<const T*>(p[1]), s[1],
                               reinterpret_cast<const T*>(p[2]), s[2], reinterpret_cast<TO*>(p[0]),
                               n, f);
                  });
}

template <class T>
bool arithmetic_binary(BinaryOp op, const LoopPlan<3>& plan, const Tensor& a, const Tensor& b,
                       Tensor& out) {
  switch (op) {
    case BinaryOp::add:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return x + y; });
      return true;
    case BinaryOp::sub:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return x - y; });
      return true;
    case BinaryOp::mul:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return x * y; });
      return true;
    case BinaryOp::div:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return x / y; });
      return true;
    case BinaryOp::pow:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return std::pow(x, y); });
      return true;
    case BinaryOp::maximum:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return x < y ? y : (y != y ? y : x); });
      return true;
    case BinaryOp::minimum:
      run_binary_plan<T, T>(plan, a, b, out, [](T x, T y) { return y < x ? y : (y != y ? y : x); });
      return true;
    case BinaryOp::relu_backward:
      run_binary_plan<T, T>(plan, a, b, out, [](T dy, T x) { return x > T(0) ? dy : T(0); });
      return true;
    case BinaryOp::sigmoid_backward:
      run_binary_plan<T, T>(plan, a, b, out, [](T dy, T y) { return dy * y * (T(1) - y); });
      return true;
    case BinaryOp::tanh_backward:
      run_binary_plan<T, T>(plan, a, b, out, [](T dy, T y) { return dy * (T(1) - y * y); });
      return true;
    default:
      return false;
  }
}

template <class T>
bool comparison(BinaryOp op, const LoopPlan<3>& plan, const Tensor& a, const Tensor& b,
                Tensor& out) {
  switch (op) {
    case BinaryOp::eq:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x == y; });
      return true;
    case BinaryOp::ne:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x != y; });
      return true;
    case BinaryOp::lt:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x < y; });
      return true;
    case BinaryOp::le:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x <= y; });
      return true;
    case BinaryOp::gt:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x > y; });
      return true;
    case BinaryOp::ge:
      run_binary_plan<T, bool>(plan, a, b, out, [](T x, T y) { return x >= y; });
      return true;
    default:
      return false;
  }
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
         op == BinaryOp::gt || op == BinaryOp::ge;
}

// t when its innermost run is unit-stride or broadcast, else a dense copy.
Tensor runnable(const Tensor& t) {
  const int nd = t.ndim();
  int inner = nd - 1;
  while (inner >= 0 && t.shape()[inner] == 1) --inner;
  if (inner < 0) return t;
  const int64_t s = t.strides()[inner];
  return (s == 0 || s == 1) ? t : t.contiguous();
}

}  // namespace

void unary(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p) {
  const DType d = x.dtype();
  if (y.numel() == 0) return;
  const bool half = d == DType::bfloat16 || d == DType::float16;
  if (y.dtype() != d || !y.is_contiguous() ||
      (d != DType::float32 && d != DType::float64 && !half)) {
    return reference::unary(op, x, y, p);
  }
  float alpha = 0.f, beta = 0.f;
  dnnl::algorithm alg = unary_alg(op, p, alpha, beta);
  // float32 relu runs in our loops; 16-bit relu (a Conv2D activation under mixed precision) in
  // oneDNN's, which read and write bfloat16 directly.
  if (alg == dnnl::algorithm::undef && op == UnaryOp::relu && half)
    alg = dnnl::algorithm::eltwise_relu;
  if (alg != dnnl::algorithm::undef && dnnl_float_ok(d)) {
    EltwiseEntry* e = eltwise_entry(false, alg, alpha, beta, d, y.numel());
    if (e != nullptr) {
      if (x.is_contiguous()) {
        e->op->execute({x.raw_data(), y.raw_data()});
      } else {
        copy(x, y);
        e->op->execute({y.raw_data(), y.raw_data()});
      }
      return;
    }
  }
  if (d == DType::float32 && op == UnaryOp::log) {
    const Tensor xr = runnable(x);
    const LoopPlan<2> plan = make_plan<2>(y.shape(), {&y, &xr});
    for_each_run<2>(
        plan, {bytes_of(y), bytes_of(xr)}, {4, 4},
        [&](const std::array<char*, 2>& q, int64_t n, const std::array<int64_t, 2>& st) {
          const float* xs = reinterpret_cast<const float*>(q[1]);
          float* ys = reinterpret_cast<float*>(q[0]);
          if (st[1] == 1) return map256(xs, ys, n, log256);
          map256(xs, ys, 1, log256);
          for (int64_t i = 1; i < n; ++i) ys[i] = ys[0];
        });
    return;
  }
  if (d == DType::float32 && arithmetic_unary<float>(op, runnable(x), y, p)) return;
  if (d == DType::float64 && arithmetic_unary<double>(op, runnable(x), y, p)) return;
  if (half) {
    // Through float32, as binary() does for 16-bit arithmetic.
    Tensor y32 = Tensor::empty(y.shape(), {DType::float32, y.device()});
    unary(op, x.to(DType::float32), y32, p);
    copy(y32, y);
    return;
  }
  reference::unary(op, x, y, p);
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const DType d = a.dtype();
  if (out.numel() == 0) return;
  const bool cmp = is_comparison(op);
  const bool ok =
      b.dtype() == d && out.dtype() == (cmp ? DType::boolean : d) && out.is_contiguous();
  if (!ok) return reference::binary(op, a, b, out);
  if ((op == BinaryOp::gelu_tanh_backward || op == BinaryOp::gelu_erf_backward)) {
    if (dnnl_float_ok(d) && a.is_contiguous() && b.is_contiguous()) {
      const auto alg = op == BinaryOp::gelu_tanh_backward ? dnnl::algorithm::eltwise_gelu_tanh
                                                          : dnnl::algorithm::eltwise_gelu_erf;
      EltwiseEntry* e = eltwise_entry(true, alg, 0.f, 0.f, d, out.numel());
      if (e != nullptr) {
        e->op->execute({b.raw_data(), a.raw_data(), out.raw_data()});
        return;
      }
    }
    return reference::binary(op, a, b, out);
  }
  if (op == BinaryOp::relu_backward && dnnl_float_ok(d) && a.is_contiguous() && b.is_contiguous()) {
    // dy * (x > 0) is oneDNN's relu backward on src x: one pass in the tensors' own dtype.
    EltwiseEntry* e = eltwise_entry(true, dnnl::algorithm::eltwise_relu, 0.f, 0.f, d, out.numel());
    if (e != nullptr) {
      e->op->execute({b.raw_data(), a.raw_data(), out.raw_data()});
      return;
    }
  }
  if ((d == DType::bfloat16 || d == DType::float16) && !cmp) {
    // 16-bit arithmetic goes through float32 (vectorized conversions), as the CPU has no
    // 16-bit arithmetic; the reference kernel would go through double one element at a time.
    const Tensor a32 = a.to(DType::float32), b32 = b.to(DType::float32);
    Tensor o32 = Tensor::empty(out.shape(), {DType::float32, out.device()});
    binary(op, a32, b32, o32);
    copy(o32, out);
    return;
  }
  if (d != DType::float32 && d != DType::float64) return reference::binary(op, a, b, out);
  const Tensor ar = runnable(a), br = runnable(b);
  const LoopPlan<3> plan = make_plan<3>(out.shape(), {&out, &ar, &br});
  if (!plan.vectorizable) return reference::binary(op, a, b, out);
  const bool done = d == DType::float32 ? (cmp ? comparison<float>(op, plan, ar, br, out)
                                               : arithmetic_binary<float>(op, plan, ar, br, out))
                                        : (cmp ? comparison<double>(op, plan, ar, br, out)
                                               : arithmetic_binary<double>(op, plan, ar, br, out));
  if (!done) reference::binary(op, a, b, out);
}

}  // namespace osprey::cpu
