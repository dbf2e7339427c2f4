// conv2d_int8: x_q [N, H, W, C] int8 * w_q [KH, KW, C, O] int8 (HWIO) -> y [N, OH, OW, O]
// float32, NHWC and groups 1 (anything else is the reference kernel's), dequantized by one scale
// per sample and per output channel, plus bias, activation and an optional fused max pool. Runs
// on the chunk scheme of int8_chunks.h: chunks of samples go through a cached one-thread oneDNN
// int8 convolution (exact on every ISA: execute_int8) and are dequantized (and pooled) while
// their sums are in cache.
// A convolution with few taps (kh * kw * c <= 64: the CNN's 3x3 first layer over one channel) runs
// as an int8 matmul over its unfolded input rows, where oneDNN's direct int8 convolution is slow.
// conv2d_int8 with a fused max pool pools the int32 sums of the chunk before dequantizing them
// (exact, see pool_dequantize), so the unpooled float32 output is never written.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "osprey/tensor/cpu/int8_chunks.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

// The geometry of one int8 convolution call in samples: x [N, H, W, C] int8 and the int32 sums
// [N, OH, OW, O], both contiguous NHWC; the pooled output [N, PH, PW, O] when a pool is fused.
struct ConvGeometry {
  int64_t h, w, c, oh, ow, o, ph = 0, pw = 0;
  int64_t in_per_sample() const { return h * w * c; }
  int64_t acc_per_sample() const { return oh * ow * o; }
  int64_t out_per_sample() const { return ph > 0 ? ph * pw * o : acc_per_sample(); }
};

// int8 NHWC x s8 HWIO (groups 1) -> s32 NHWC for mb samples (int8_src_type()); the weights in
// the layout the primitive prefers.
std::unique_ptr<Int8Entry> make_conv_entry(int64_t mb, const ConvGeometry& g, const Tensor& w,
                                           const Conv2dParams& p) {
  auto e = std::make_unique<Int8Entry>();
  try {
    const auto xmd =
        make_md({mb, g.c, g.h, g.w}, int8_src_type(), {g.in_per_sample(), 1, g.w * g.c, g.c});
    const auto ymd =
        make_md({mb, g.o, g.oh, g.ow}, dnnl_dt::s32, {g.acc_per_sample(), 1, g.ow * g.o, g.o});
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
    e->u8_src = int8_src_type() == dnnl_dt::u8;
    e->src_bytes = mb * g.in_per_sample();
    e->sums = mb * g.acc_per_sample();
    e->op = std::make_unique<DnnlOp>(
        pd, std::vector<DnnlOp::Arg>{
                {DNNL_ARG_SRC, xmd}, {DNNL_ARG_WEIGHTS, e->packed_b}, {DNNL_ARG_DST, ymd}});
    if (e->op->is_reference_impl()) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

// The cached primitive for mb samples on the calling thread's thread count (null: unsupported).
Int8Entry* conv_entry(int64_t mb, const ConvGeometry& g, const Tensor& w, const Conv2dParams& p) {
  PrimitiveKey key(OpKind::conv2d_int8);
  for (int64_t v : {mb, g.h, g.w, g.c, g.o, p.stride_h, p.stride_w, p.pad_top, p.pad_bottom,
                    p.pad_left, p.pad_right, p.dilation_h, p.dilation_w}) {
    key.add(v);
  }
  key.add_tensor(w);
  return primitive_cache().get<Int8Entry>(key, [&] { return make_conv_entry(mb, g, w, p); });
}

// A convolution whose kernel has at most this many taps (kh * kw * c) runs as an int8 matmul
// over the unfolded input instead: oneDNN's direct int8 convolution is slow at a tiny reduction
// (the CNN's first layer, 3x3 over one channel: 9 taps, 5 ms per batch of 256 where the AMX
// matmul of the same sums takes under 1), and the unfolded rows of such a layer are small.
constexpr int64_t kUnfoldMaxTaps = 64;

// The rows of the matmul that computes mb samples of a small convolution: row (s, oy, ox) holds
// the taps of output pixel (oy, ox) of sample s in the kernel's HWI order, 0 (the quantized 0.0)
// where a tap falls in the zero padding. x int8 NHWC; rows [mb * OH * OW, kh * kw * c].
void unfold_int8(const int8_t* x, int8_t* rows, int64_t mb, const ConvGeometry& g, int64_t kh,
                 int64_t kw, const Conv2dParams& p) {
  const int64_t c = g.c, taps = kh * kw * c, seg = kw * c;  // seg: one kernel row's taps
  // Fixed trip counts for the usual case (one channel, contiguous kernel rows): a byte loop the
  // compiler unrolls, where the general path pays index arithmetic and a bounds check per tap.
  const bool dense_rows = c == 1 && p.dilation_w == 1;
  for (int64_t s = 0; s < mb; ++s) {
    const int8_t* xs = x + s * g.in_per_sample();
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      int8_t* out_row = rows + (s * g.oh + oy) * g.ow * taps;
      for (int64_t i = 0; i < kh; ++i) {
        const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
        int8_t* r = out_row + i * seg;
        if (iy < 0 || iy >= g.h) {
          for (int64_t ox = 0; ox < g.ow; ++ox, r += taps) {
            std::memset(r, 0, static_cast<size_t>(seg));
          }
          continue;
        }
        const int8_t* xr = xs + iy * g.w * c;
        for (int64_t ox = 0; ox < g.ow; ++ox, r += taps) {
          const int64_t ix0 = ox * p.stride_w - p.pad_left;
          if (dense_rows && ix0 >= 0 && ix0 + kw <= g.w) {
            const int8_t* src = xr + ix0;
            if (kw == 3) {
              r[0] = src[0], r[1] = src[1], r[2] = src[2];
            } else {
              for (int64_t j = 0; j < kw; ++j) r[j] = src[j];
            }
            continue;
          }
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t ix = ix0 + j * p.dilation_w;
            if (ix < 0 || ix >= g.w) {
              std::memset(r + j * c, 0, static_cast<size_t>(c));
            } else {
              std::memcpy(r + j * c, xr + ix * c, static_cast<size_t>(c));
            }
          }
        }
      }
    }
  }
}

// Max-pools the int32 sums acc [mb, OH, OW, O] of a chunk, then dequantizes the maxima into y
// [mb, PH, PW, O] (float32). Pooling first is exact: the dequantization is non-decreasing in acc
// (positive scales, a bias per channel, relu), and so are float32 rounding and the int32 ->
// float32 conversion, so the maximum of the dequantized values is the dequantized maximum.
void pool_dequantize(const int32_t* acc, float* y, int64_t mb, const ConvGeometry& g,
                     const Pool2dParams& q, const Dequant& d) {
  const int64_t o = g.o;
  const float* rb = d.rb;
  const float* bias = d.bias;
  const __m256 zero = _mm256_setzero_ps();
  // The maxima of 8 channels stay in one register across the window (a maximum kept in memory
  // made every step a load, max and store, and half this function's time).
  // nb blocks of 8 channels at once (4: 32 channels, the loads of the window pixels independent
  // of each other, so they overlap), from channel k.
  const auto blocks = [&]<int nb>(std::integral_constant<int, nb>, const int32_t* a, float* out,
                                  float ra, int64_t k, int64_t r_lo, int64_t r_hi, int64_t c_lo,
                                  int64_t c_hi) {
    __m256i mx[nb];
    for (int b = 0; b < nb; ++b) mx[b] = _mm256_set1_epi32(std::numeric_limits<int32_t>::min());
    for (int64_t r = r_lo; r < r_hi; ++r) {
      for (int64_t c = c_lo; c < c_hi; ++c) {
        const int32_t* px = a + (r * g.ow + c) * o + k;
        for (int b = 0; b < nb; ++b) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px + 8 * b));
          mx[b] = _mm256_max_epi32(mx[b], v);
        }
      }
    }
    for (int b = 0; b < nb; ++b) {
      const int64_t kb = k + 8 * b;
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(ra), _mm256_loadu_ps(rb + kb));
      // One rounding, the fma of dequantize_rows (which the unfolded convolution runs): the fold
      // changes no bit of the predictions.
      const __m256 bv = bias != nullptr ? _mm256_loadu_ps(bias + kb) : zero;
      __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mx[b]), scale, bv);
      if (d.relu) v = _mm256_max_ps(v, zero);
      _mm256_storeu_ps(out + kb, v);
    }
  };
  for (int64_t s = 0; s < mb; ++s) {
    const float ra = 1.0f / d.a_scale[s];
    const int32_t* a = acc + s * g.acc_per_sample();
    float* out = y + s * g.out_per_sample();
    for (int64_t i = 0; i < g.ph; ++i) {
      const int64_t r0 = i * q.stride_h - q.pad_top;
      const int64_t r_lo = std::max<int64_t>(r0, 0), r_hi = std::min(r0 + q.kernel_h, g.oh);
      for (int64_t j = 0; j < g.pw; ++j) {
        const int64_t c0 = j * q.stride_w - q.pad_left;
        const int64_t c_lo = std::max<int64_t>(c0, 0), c_hi = std::min(c0 + q.kernel_w, g.ow);
        int64_t k = 0;
        for (; k + 32 <= o; k += 32) {
          blocks(std::integral_constant<int, 4>{}, a, out, ra, k, r_lo, r_hi, c_lo, c_hi);
        }
        for (; k + 8 <= o; k += 8) {
          blocks(std::integral_constant<int, 1>{}, a, out, ra, k, r_lo, r_hi, c_lo, c_hi);
        }
        for (; k < o; ++k) {
          int32_t mx = std::numeric_limits<int32_t>::min();
          for (int64_t r = r_lo; r < r_hi; ++r) {
            for (int64_t c = c_lo; c < c_hi; ++c) mx = std::max(mx, a[(r * g.ow + c) * o + k]);
          }
          float v = std::fma(static_cast<float>(mx), ra * rb[k], bias != nullptr ? bias[k] : 0.0f);
          if (d.relu) v = v > 0.0f ? v : 0.0f;
          out[k] = v;
        }
        out += o;
      }
    }
  }
}

}  // namespace

void conv2d_int8(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q, const Tensor& w_scale,
                 const Tensor* bias, Tensor& y, const Conv2dParams& p, Activation activation,
                 const Pool2dParams* pool) {
  // NCHW and grouped convolutions keep the reference path: the per-channel dequantization loop
  // below walks NHWC rows, and the quantized models here are channels_last.
  if (!p.channels_last || p.groups != 1 || y.numel() == 0 || x_q.numel() == 0 ||
      (pool != nullptr && !pool->channels_last)) {
    return reference::conv2d_int8(x_q, x_scale, w_q, w_scale, bias, y, p, activation, pool);
  }
  const Shape& xs = x_q.shape();
  const Shape& ws = w_q.shape();
  ConvGeometry g{.h = xs[1], .w = xs[2], .c = xs[3], .oh = 0, .ow = 0, .o = ws[3]};
  g.oh = (g.h + p.pad_top + p.pad_bottom - p.dilation_h * (ws[0] - 1) - 1) / p.stride_h + 1;
  g.ow = (g.w + p.pad_left + p.pad_right - p.dilation_w * (ws[1] - 1) - 1) / p.stride_w + 1;
  if (pool != nullptr) g.ph = y.shape()[1], g.pw = y.shape()[2];
  const int64_t n = xs[0];
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / (4 * g.acc_per_sample()), 1, n);
  const int64_t taps = ws[0] * ws[1] * g.c, pixels = g.oh * g.ow;
  const bool unfold = taps <= kUnfoldMaxTaps;
  const bool relu = activation == Activation::relu;
  const Dequant d{x_scale.data<float>(), reciprocals(w_scale),
                  bias != nullptr ? bias->data<float>() : nullptr, relu};
  const auto* x = static_cast<const int8_t*>(x_q.raw_data());
  char* out = static_cast<char*>(y.raw_data());
  // Each chunk of samples is convolved, then dequantized (and pooled) while its int32 sums are
  // still in the core's cache: one pass over memory instead of three (the sums, the
  // dequantization, the pooling).
  // The unfolded form multiplies [mb * OH * OW, taps] rows by the HWIO kernel read as [taps, O]:
  // the same int32 sums, in the same NHWC order.
  const auto entry_for = [&](int64_t mb) {
    return unfold ? matmul_entry(mb * pixels, taps, g.o) : conv_entry(mb, g, w_q, p);
  };
  const bool ok = run_chunks(
      n, 1, chunk, w_q, entry_for, [&](const Int8Entry& e, void* packed, int64_t s, int64_t mb) {
        thread_local std::vector<int32_t> sums;
        thread_local std::vector<int8_t> rows;
        if (pool != nullptr) sums.resize(static_cast<size_t>(chunk * g.acc_per_sample()));
        void* acc = pool != nullptr ? static_cast<void*>(sums.data())
                                    : static_cast<void*>(out + s * g.acc_per_sample() * 4);
        const int8_t* src = x + s * g.in_per_sample();
        if (unfold) {
          rows.resize(static_cast<size_t>(mb * pixels * taps));
          unfold_int8(src, rows.data(), mb, g, ws[0], ws[1], p);
          src = rows.data();
        }
        execute_int8(e, src, packed, acc);
        Dequant dc = d;
        dc.a_scale += s;
        if (pool != nullptr) {
          pool_dequantize(sums.data(), reinterpret_cast<float*>(out) + s * g.out_per_sample(), mb,
                          g, *pool, dc);
        } else {
          dequantize_rows(static_cast<char*>(acc), 0, mb * pixels, g.o, pixels, dc);
        }
      });
  if (!ok) return reference::conv2d_int8(x_q, x_scale, w_q, w_scale, bias, y, p, activation, pool);
  if (activation != Activation::none && !relu) unary(unary_op_of(activation), y, y, {});
}

}  // namespace osprey::cpu
