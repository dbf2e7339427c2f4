// Fast int8 kernels. quantize_rows_int8 is an AVX2 loop over rows in parallel.
// matmul_int8 and conv2d_int8 (NHWC, groups 1) share one scheme: the threads claim cache-sized
// chunks of the rows (samples) and, for each, run a cached one-thread oneDNN s8 x s8 -> s32
// primitive (AVX512-VNNI or AMX where the CPU has them) and dequantizes the chunk's int32
// sums in place while they are still in its cache: acc * ((1 / a_scale[row or sample]) *
// (1 / b_scale[n])) + bias, then relu inline (other activations in a pass after). oneDNN 2.6 has
// no per-row output scales for matmul nor runtime output scales for convolutions, which is why
// the dequantization is a loop of ours. One parallel region per call: oneDNN's own, then one per
// pass after it, cost a barrier each, and the passes re-read sums another core wrote.
// A convolution with few taps (kh * kw * c <= 64: the CNN's 3x3 first layer over one channel) runs
// as an int8 matmul over its unfolded input rows, where oneDNN's direct int8 convolution is slow.
// conv2d_int8 with a fused max pool pools the int32 sums of the chunk before dequantizing them
// (exact, see pool_dequantize), so the unpooled float32 output is never written.
// The weights go to oneDNN in the blocked layout it asks for (format "any"): with plain [K, N]
// weights it re-packs them on every call, 4x slower at [256, 784] x [784, 512] on AMX. The packed
// copy is cached per weight tensor and primitive layout and checked against a copy of the plain
// bytes on every call (each thread compares them for its own chunks: ~400 KB for the MLP's first
// kernel, from cache), so weights changed in place (set_weights, load) repack.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
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

// The cached s8 x s8 -> s32 matmul primitive for [m, k] x [k, n] (null: unsupported).
Int8Entry* matmul_entry(int64_t m, int64_t k, int64_t n) {
  PrimitiveKey key(OpKind::matmul_int8);
  key.add(m);
  key.add(k);
  key.add(n);
  return primitive_cache().get<Int8Entry>(key, [&] { return make_entry(m, k, n); });
}

// 1 / b_scale, once per call, not once per element (the same float32 the reference divides by).
// In a thread-local buffer of the calling thread, valid until its next call.
const float* reciprocals(const Tensor& b_scale) {
  thread_local std::vector<float> recip;
  const int64_t n = b_scale.numel();
  recip.resize(static_cast<size_t>(n));
  const float* sb = b_scale.data<float>();
  for (int64_t j = 0; j < n; ++j) recip[static_cast<size_t>(j)] = 1.0f / sb[j];
  return recip.data();
}

// What the dequantization of a row needs: act(fma(acc, (1 / a_scale) * rb[j], bias[j])), with
// rb = reciprocals(b_scale), bias null or [n], and relu the only activation done inline.
struct Dequant {
  const float* a_scale;  // one per sample
  const float* rb;
  const float* bias;
  bool relu;
};

// Serially dequantizes in place the int32 sums of rows [lo, hi) of n columns (row i belongs to
// sample i / rows_per_scale). Each 4-byte slot holds an int32 and becomes its float32 value
// (memcpy keeps the type punning defined; it compiles to plain loads and stores).
void dequantize_rows(char* o, int64_t lo, int64_t hi, int64_t n, int64_t rows_per_scale,
                     const Dequant& d) {
  // Locals, not struct members behind a pointer: the byte stores may alias those, which stops
  // vectorization. The bias and relu choices are hoisted out of the inner loop.
  const int64_t n_local = n, rows_local = rows_per_scale;
  const float* __restrict rb_local = d.rb;
  const float* __restrict bias_local = d.bias;
  const bool relu_local = d.relu;
  for (int64_t i = lo; i < hi; ++i) {
    const float ra = 1.0f / d.a_scale[i / rows_local];
    char* __restrict row = o + i * n_local * 4;
    for (int64_t j = 0; j < n_local; ++j) {
      int32_t acc;
      std::memcpy(&acc, row + j * 4, 4);
      float v = std::fma(static_cast<float>(acc), ra * rb_local[j],
                         bias_local != nullptr ? bias_local[j] : 0.0f);
      if (relu_local) v = v > 0.0f ? v : 0.0f;
      std::memcpy(row + j * 4, &v, 4);
    }
  }
}

// The geometry of one int8 convolution call in samples: x [N, H, W, C] int8 and the int32 sums
// [N, OH, OW, O], both contiguous NHWC; the pooled output [N, PH, PW, O] when a pool is fused.
struct ConvGeometry {
  int64_t h, w, c, oh, ow, o, ph = 0, pw = 0;
  int64_t in_per_sample() const { return h * w * c; }
  int64_t acc_per_sample() const { return oh * ow * o; }
  int64_t out_per_sample() const { return ph > 0 ? ph * pw * o : acc_per_sample(); }
};

// s8 NHWC x s8 HWIO (groups 1) -> s32 NHWC for mb samples; the weights in the layout the
// primitive prefers.
std::unique_ptr<Int8Entry> make_conv_entry(int64_t mb, const ConvGeometry& g, const Tensor& w,
                                           const Conv2dParams& p) {
  auto e = std::make_unique<Int8Entry>();
  try {
    const auto xmd =
        make_md({mb, g.c, g.h, g.w}, dnnl_dt::s8, {g.in_per_sample(), 1, g.w * g.c, g.c});
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
          for (int64_t ox = 0; ox < g.ow; ++ox, r += taps) std::memset(r, 0, static_cast<size_t>(seg));
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
  const auto blocks = [&]<int nb>(std::integral_constant<int, nb>, const int32_t* a, float* out, float ra,
                                  int64_t k, int64_t r_lo, int64_t r_hi, int64_t c_lo, int64_t c_hi) {
    __m256i mx[nb];
    for (int b = 0; b < nb; ++b) mx[b] = _mm256_set1_epi32(std::numeric_limits<int32_t>::min());
    for (int64_t r = r_lo; r < r_hi; ++r) {
      for (int64_t c = c_lo; c < c_hi; ++c) {
        const int32_t* px = a + (r * g.ow + c) * o + k;
        for (int b = 0; b < nb; ++b) {
          mx[b] = _mm256_max_epi32(mx[b], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px + 8 * b)));
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
        for (; k + 32 <= o; k += 32) blocks(std::integral_constant<int, 4>{}, a, out, ra, k, r_lo, r_hi, c_lo, c_hi);
        for (; k + 8 <= o; k += 8) blocks(std::integral_constant<int, 1>{}, a, out, ra, k, r_lo, r_hi, c_lo, c_hi);
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

// The int32 sums of one chunk stay in this much cache before they are dequantized (and pooled):
// half the 2 MiB L2 of a core here, leaving room for the chunk's int8 input and the weights.
constexpr int64_t kChunkBytes = int64_t{1} << 20;

// Runs [0, count) rows (or samples) in chunks of at most `chunk` (and at most a thread's share,
// so every thread gets work) with one-thread primitives (entry_for(mb) for mb rows): the threads
// claim chunks in turn, and body(entry, packed weights, first row, mb) runs a chunk and
// post-processes its int32 sums on the thread that wrote them, while they are in its cache. One
// parallel region per call, not one for oneDNN and one per pass after it; rows are independent,
// and a chunk's result does not depend on the thread that runs it. Claiming (rather than a fixed
// half each) lets one thread take over the chunks of another that the OS has descheduled, which on
// these shared machines is what stalls a barrier. False when oneDNN has no primitive for a chunk
// (the caller then runs the reference kernel).
template <class EntryFor, class Body>
bool run_chunks(int64_t count, int64_t grain, int64_t chunk, const Tensor& weights,
                EntryFor&& entry_for, Body&& body) {
  const int64_t threads =
      std::clamp<int64_t>(count / std::max<int64_t>(grain, 1), 1, num_threads());
  chunk = std::clamp<int64_t>(chunk, 1, (count + threads - 1) / threads);
  const int64_t chunks = (count + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  std::atomic<bool> ok{true};
  parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    const ThreadLimitGuard one_thread(1);
    for (int64_t c = next.fetch_add(1); c < chunks && ok.load(std::memory_order_relaxed);
         c = next.fetch_add(1)) {
      const int64_t s = c * chunk, mb = std::min(chunk, count - s);
      Int8Entry* e = entry_for(mb);
      if (e == nullptr) {
        ok.store(false);
        return;
      }
      const std::shared_ptr<const PackedWeights> packed = packed_weights().get(weights, *e);
      body(*e, packed->packed.raw_data(), s, mb);
    }
  });
  return ok.load();
}

// Rows of an int8 product per thread at least: one AMX tile is 16 rows.
constexpr int64_t kMinRowsPerThread = 16;

// Quantizes one row of k floats to int8 by the seeds' abs-max formula and returns its scale,
// exactly as reference::quantize_rows_int8 (same float32 products, round half to even, NaN left
// out of the maximum). Hand-vectorized for AVX2: GCC keeps the maximum scalar (no -ffast-math)
// and packs the int8 results through byte blends, which made this pass as slow as the int8
// convolution it feeds.
float quantize_row(const float* row, int8_t* q, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    // max_ps returns its second operand when either is NaN: a NaN element leaves the maximum.
    m0 = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(row + j)), m0);
    m1 = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(row + j + 8)), m1);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  float amax = 0.0f;
  for (float l : lanes) amax = std::max(amax, l);
  for (; j < k; ++j) amax = std::max(amax, std::fabs(row[j]));
  const float s = 127.0f / (amax + 1e-7f);
  const __m256 vs = _mm256_set1_ps(s), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const auto to_int = [&](const float* p) {
    const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(p), vs),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
  };
  // packs works within 128-bit lanes; the permutation puts the 32 bytes back in order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  j = 0;
  for (; j + 32 <= k; j += 32) {
    const __m256i a = _mm256_packs_epi32(to_int(row + j), to_int(row + j + 8));
    const __m256i b = _mm256_packs_epi32(to_int(row + j + 16), to_int(row + j + 24));
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), bytes);
  }
  for (; j < k; ++j) {
    float v = std::rint(row[j] * s);
    v = v > -127.0f ? v : -127.0f;  // the vector loop's max_ps and min_ps, NaN to -127 included
    v = v < 127.0f ? v : 127.0f;
    q[j] = static_cast<int8_t>(static_cast<int32_t>(v));
  }
  return s;
}

}  // namespace

void quantize_rows_int8(const Tensor& x, Tensor& q, Tensor& scale) {
  const int64_t m = x.shape()[0], k = x.shape()[1];
  const float* xp = x.data<float>();
  int8_t* qp = q.data<int8_t>();
  float* sp = scale.data<float>();
  parallel_for(0, m, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)), [=](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      sp[i] = quantize_row(xp + i * k, qp + i * k, k);
    }
  });
}

void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation) {
  const int64_t m = a_q.shape()[0], k = a_q.shape()[1], n = b_q.shape()[1];
  if (out.numel() == 0) return;
  if (k == 0) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  const bool relu = activation == Activation::relu;
  const Dequant d{a_scale.data<float>(), reciprocals(b_scale),
                  bias != nullptr ? bias->data<float>() : nullptr, relu};
  const auto* a = static_cast<const int8_t*>(a_q.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  const auto entry_for = [&](int64_t mb) { return matmul_entry(mb, k, n); };
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / (4 * n));
  const bool ok =
      run_chunks(m, kMinRowsPerThread, chunk, b_q, entry_for,
                 [&](const Int8Entry& e, void* packed, int64_t r, int64_t mb) {
                   e.op->execute({const_cast<int8_t*>(a + r * k), packed, o + r * n * 4});
                   dequantize_rows(o, r, r + mb, n, 1, d);
                 });
  if (!ok) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  if (activation != Activation::none && !relu) unary(unary_op_of(activation), out, out, {});
}

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
      n, 1, chunk, w_q, entry_for,
      [&](const Int8Entry& e, void* packed, int64_t s, int64_t mb) {
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
        e.op->execute({const_cast<int8_t*>(src), packed, acc});
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

std::string int8_matmul_impl(int64_t m, int64_t k, int64_t n) {
  auto e = make_entry(m, k, n);
  return e == nullptr ? std::string() : std::string(e->op->impl());
}

}  // namespace osprey::cpu
