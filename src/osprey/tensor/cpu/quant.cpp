// Fast int8 kernels. quantize_rows_int8 is a vectorizable loop over rows in parallel.
// conv2d_int8 (NHWC, groups 1) is the same scheme as matmul_int8 below: a cached oneDNN s8 x s8
// -> s32 convolution (forward_inference) into y's storage, then the shared dequantization pass,
// with one activation scale per sample (oneDNN 2.6 has neither runtime output scales for
// convolutions nor per-row scales, so the pass is ours).
// matmul_int8 runs one cached oneDNN matmul primitive s8 x s8 -> s32 (AVX512-VNNI or AMX where
// the CPU has them) writing the int32 sums into out's own storage (same size as the float32
// result), then one parallel pass dequantizes them in place: acc * ((1 / a_scale[m]) *
// (1 / b_scale[n])) + bias, then the activation. Per-row scales are not a oneDNN 2.6
// output-scale mask for matmul, which is why the dequantization is a loop of ours.
// The weights go to oneDNN in the blocked layout it asks for (format "any"): with plain [K, N]
// weights it re-packs them on every call, 4x slower at [256, 784] x [784, 512] on AMX. The packed
// copy is cached per weight tensor and checked against a copy of the plain bytes on every call
// (a memcmp split over the threads: serial, it reads ~530 KB per MLP batch, an estimated 5% of a
// 2-thread predict), so weights changed in place (set_weights, load) repack.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

// An int8 primitive (matmul or convolution) with its weights' plain and preferred layouts.
struct Int8Entry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
  dnnl::memory::desc plain_b, packed_b;
};

// Weights packed for one primitive's layout, with the plain bytes they were packed from.
struct PackedWeights {
  dnnl::memory::desc md;
  std::vector<int8_t> plain;
  Tensor packed;
};

// memcmp(a, b, n) == 0, in parallel chunks of at least 64 KiB.
bool same_bytes(const int8_t* a, const int8_t* b, size_t n) {
  std::atomic<bool> same{true};
  parallel_for(0, static_cast<int64_t>(n), 65536, [&](int64_t lo, int64_t hi) {
    if (std::memcmp(a + lo, b + lo, static_cast<size_t>(hi - lo)) != 0)
      same.store(false, std::memory_order_relaxed);
  });
  return same.load();
}

class PackedWeightCache {
 public:
  // The packed form of b (plain [K, N] int8) in layout e.packed_b, packing it when absent or stale.
  std::shared_ptr<const PackedWeights> get(const Tensor& b, const Int8Entry& e) {
    const auto* data = static_cast<const int8_t*>(b.raw_data());
    const size_t n = static_cast<size_t>(b.numel());
    std::shared_ptr<const PackedWeights> found;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& p : map_[data]) {
        if (p->md == e.packed_b && p->plain.size() == n) found = p;
      }
    }
    if (found != nullptr && same_bytes(found->plain.data(), data, n)) return found;
    auto p = std::make_shared<PackedWeights>();
    p->md = e.packed_b;
    p->plain.assign(data, data + n);
    p->packed = Tensor::empty({static_cast<int64_t>(e.packed_b.get_size())}, {DType::int8});
    dnnl::memory src(e.plain_b, engine(), const_cast<int8_t*>(data));
    dnnl::memory dst(e.packed_b, engine(), p->packed.raw_data());
    dnnl::stream st = stream();
    dnnl::reorder(src, dst).execute(st, src, dst);
    st.wait();
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() > kMaxTensors) map_.clear();  // entries in use stay alive through shared_ptr
    auto& list = map_[data];
    std::erase_if(list, [&](const auto& q) { return q->md == p->md; });
    list.push_back(p);
    return p;
  }

 private:
  static constexpr size_t kMaxTensors = 256;
  std::mutex mutex_;
  std::map<const void*, std::vector<std::shared_ptr<const PackedWeights>>> map_;
};

PackedWeightCache& packed_weights() {
  static PackedWeightCache cache;
  return cache;
}

std::unique_ptr<Int8Entry> make_entry(int64_t m, int64_t k, int64_t n) {
  auto e = std::make_unique<Int8Entry>();
  try {
    const auto amd = make_md({m, k}, dnnl_dt::s8, {k, 1});
    e->plain_b = make_md({k, n}, dnnl_dt::s8, {n, 1});
    const dnnl::memory::desc any_b({k, n}, dnnl_dt::s8, dnnl::memory::format_tag::any);
    const auto omd = make_md({m, n}, dnnl_dt::s32, {n, 1});
    const dnnl::primitive_attr attr = base_attr();
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(amd, any_b, omd), attr, engine());
    e->packed_b = pd.weights_desc();
    e->op = std::make_unique<DnnlOp>(
        pd, std::vector<DnnlOp::Arg>{{DNNL_ARG_SRC, amd}, {DNNL_ARG_WEIGHTS, e->packed_b}, {DNNL_ARG_DST, omd}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

// Dequantizes in place the int32 sums in out, rows [m] of n columns (row i of sample
// i / rows_per_scale): act(acc * ((1 / a_scale[sample]) * (1 / b_scale[j])) + bias[j]). Each
// 4-byte slot holds an int32 and becomes its float32 value (memcpy keeps the type punning defined;
// it compiles to plain loads and stores).
void dequantize_int32(Tensor& out, int64_t m, int64_t n, int64_t rows_per_scale,
                      const Tensor& a_scale, const Tensor& b_scale, const Tensor* bias,
                      Activation activation) {
  char* o = static_cast<char*>(out.raw_data());
  const float* sa = a_scale.data<float>();
  // 1 / b_scale once per call, not once per element (the same float32 the reference divides).
  thread_local std::vector<float> recip;
  recip.resize(static_cast<size_t>(n));
  const float* sb = b_scale.data<float>();
  for (int64_t j = 0; j < n; ++j) recip[static_cast<size_t>(j)] = 1.0f / sb[j];
  const float* rb = recip.data();
  const float* bp = bias != nullptr ? bias->data<float>() : nullptr;
  const bool relu = activation == Activation::relu;
  parallel_for(0, m, std::max<int64_t>(1, 16384 / n), [=](int64_t lo, int64_t hi) {
    // Locals, not the closure's members: the byte stores may alias those, which stops
    // vectorization. The bias and relu choices are hoisted out of the inner loop.
    const int64_t n_local = n, rows_local = rows_per_scale;
    const float* __restrict rb_local = rb;
    const float* __restrict bias_local = bp;
    const bool relu_local = relu;
    for (int64_t i = lo; i < hi; ++i) {
      const float ra = 1.0f / sa[i / rows_local];
      char* __restrict row = o + i * n_local * 4;
      for (int64_t j = 0; j < n_local; ++j) {
        int32_t acc;
        std::memcpy(&acc, row + j * 4, 4);
        float v = static_cast<float>(acc) * (ra * rb_local[j]);
        v += bias_local != nullptr ? bias_local[j] : 0.0f;
        if (relu_local) v = v > 0.0f ? v : 0.0f;
        std::memcpy(row + j * 4, &v, 4);
      }
    }
  });
  if (activation != Activation::none && !relu) unary(unary_op_of(activation), out, out, {});
}

// s8 NHWC x s8 HWIO (groups 1) -> s32 NHWC; the weights in the layout the primitive prefers.
std::unique_ptr<Int8Entry> make_conv_entry(const Tensor& x, const Tensor& w, const Tensor& y,
                                           const Conv2dParams& p) {
  auto e = std::make_unique<Int8Entry>();
  try {
    const auto xmd = tensor_md(x, {0, 3, 1, 2}),
               ymd = make_md({y.shape()[0], y.shape()[3], y.shape()[1], y.shape()[2]}, dnnl_dt::s32,
                             {y.strides()[0], y.strides()[3], y.strides()[1], y.strides()[2]});
    const Shape& s = w.shape();
    const Shape& st = w.strides();
    e->plain_b = make_md({s[3], s[2], s[0], s[1]}, dnnl_dt::s8, {st[3], st[2], st[0], st[1]});
    const dnnl::memory::desc any_w(e->plain_b.dims(), dnnl_dt::s8, dnnl::memory::format_tag::any);
    const dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, xmd, any_w, ymd,
        {p.stride_h, p.stride_w}, {p.dilation_h - 1, p.dilation_w - 1}, {p.pad_top, p.pad_left},
        {p.pad_bottom, p.pad_right});
    const dnnl::convolution_forward::primitive_desc pd(d, base_attr(), engine());
    e->packed_b = pd.weights_desc();
    e->op = std::make_unique<DnnlOp>(
        pd, std::vector<DnnlOp::Arg>{
                {DNNL_ARG_SRC, xmd}, {DNNL_ARG_WEIGHTS, e->packed_b}, {DNNL_ARG_DST, ymd}});
    if (e->op->is_reference_impl()) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

}  // namespace

void quantize_rows_int8(const Tensor& x, Tensor& q, Tensor& scale) {
  const int64_t m = x.shape()[0], k = x.shape()[1];
  const float* xp = x.data<float>();
  int8_t* qp = q.data<int8_t>();
  float* sp = scale.data<float>();
  parallel_for(0, m, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)), [=](int64_t b, int64_t e) {
    const int64_t k_local = k;  // int8 stores may alias the closure's members: keep k in a register
    for (int64_t i = b; i < e; ++i) {
      const float* __restrict row = xp + i * k_local;
      int8_t* __restrict qrow = qp + i * k_local;
      // Eight running maxima: a plain max reduction does not vectorize without -ffast-math.
      float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t j = 0;
      for (; j + 8 <= k_local; j += 8) {
        for (int l = 0; l < 8; ++l) {
          const float a = std::fabs(row[j + l]);
          lanes[l] = a > lanes[l] ? a : lanes[l];
        }
      }
      float amax = 0.0f;
      for (float l : lanes) amax = std::max(amax, l);
      for (; j < k_local; ++j) amax = std::max(amax, std::fabs(row[j]));
      const float s = 127.0f / (amax + 1e-7f);
      sp[i] = s;
      for (int64_t t = 0; t < k_local; ++t) {
        float v = std::rint(row[t] * s);  // inlined (vroundps); nearbyint is a libm call
        v = v < -127.0f ? -127.0f : v;
        v = v > 127.0f ? 127.0f : v;
        qrow[t] = static_cast<int8_t>(static_cast<int32_t>(v));
      }
    }
  });
}

void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation) {
  const int64_t m = a_q.shape()[0], k = a_q.shape()[1], n = b_q.shape()[1];
  if (out.numel() == 0) return;
  if (k == 0) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  PrimitiveKey key(OpKind::matmul_int8);
  key.add(m);
  key.add(k);
  key.add(n);
  auto* e = primitive_cache().get<Int8Entry>(key, [&] { return make_entry(m, k, n); });
  if (e == nullptr) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  const std::shared_ptr<const PackedWeights> packed = packed_weights().get(b_q, *e);
  e->op->execute({a_q.raw_data(), packed->packed.raw_data(), out.raw_data()});
  dequantize_int32(out, m, n, 1, a_scale, b_scale, bias, activation);
}

void conv2d_int8(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q, const Tensor& w_scale,
                 const Tensor* bias, Tensor& y, const Conv2dParams& p, Activation activation) {
  // NCHW and grouped convolutions keep the reference path: the per-channel dequantization loop
  // below walks NHWC rows, and the quantized models here are channels_last.
  if (!p.channels_last || p.groups != 1 || y.numel() == 0 || x_q.numel() == 0) {
    return reference::conv2d_int8(x_q, x_scale, w_q, w_scale, bias, y, p, activation);
  }
  PrimitiveKey key(OpKind::conv2d_int8);
  key.add_tensor(x_q);
  key.add_tensor(w_q);
  for (int64_t v : {p.stride_h, p.stride_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right,
                    p.dilation_h, p.dilation_w}) {
    key.add(v);
  }
  auto* e = primitive_cache().get<Int8Entry>(key, [&] { return make_conv_entry(x_q, w_q, y, p); });
  if (e == nullptr)
    return reference::conv2d_int8(x_q, x_scale, w_q, w_scale, bias, y, p, activation);
  const std::shared_ptr<const PackedWeights> packed = packed_weights().get(w_q, *e);
  e->op->execute({x_q.raw_data(), packed->packed.raw_data(), y.raw_data()});
  const Shape& s = y.shape();
  dequantize_int32(y, s[0] * s[1] * s[2], s[3], s[1] * s[2], x_scale, w_scale, bias, activation);
}

std::string int8_matmul_impl(int64_t m, int64_t k, int64_t n) {
  auto e = make_entry(m, k, n);
  return e == nullptr ? std::string() : std::string(e->op->impl());
}

}  // namespace osprey::cpu
