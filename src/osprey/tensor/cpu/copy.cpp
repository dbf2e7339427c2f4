// Fast copy (with casts) and fill. Dense same-dtype copies are a parallel memcpy; runs that are
// unit-stride (or broadcast) on the source convert in vectorized loops (float32 <-> bfloat16,
// float16, float64); transposing copies between oneDNN dtypes go to a cached oneDNN reorder
// (cache-blocked); other same-dtype copies walk their strides element by element; anything else
// (casts to integers, with their saturation rules) is the reference kernel's.
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/cpu/loops.h"
#include "osprey/tensor/reference/cast_value.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

inline uint16_t to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return (u & 0x7fffffffu) > 0x7f800000u
             ? static_cast<uint16_t>((u >> 16) | 0x40u)
             : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float from_bf16(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

void f32_to_bf16(const float* s, uint16_t* d, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = to_bf16(s[i]);
}
void bf16_to_f32(const uint16_t* s, float* d, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = from_bf16(s[i]);
}
void f32_to_f16(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) d[i] = static_cast<uint16_t>(_cvtss_sh(s[i], _MM_FROUND_TO_NEAREST_INT));
}
void f16_to_f32(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(d + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
  for (; i < n; ++i) d[i] = _cvtsh_ss(s[i]);
}
template <class S, class D>
void cast_run(const S* s, D* d, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
}

// Converts one unit-stride run; false when the pair is not handled here.
bool convert_run(DType sd, DType dd, const char* s, char* d, int64_t n) {
  using u16 = uint16_t;
  if (sd == DType::float32 && dd == DType::bfloat16) {
    f32_to_bf16(reinterpret_cast<const float*>(s), reinterpret_cast<u16*>(d), n);
  } else if (sd == DType::bfloat16 && dd == DType::float32) {
    bf16_to_f32(reinterpret_cast<const u16*>(s), reinterpret_cast<float*>(d), n);
  } else if (sd == DType::float32 && dd == DType::float16) {
    f32_to_f16(reinterpret_cast<const float*>(s), reinterpret_cast<u16*>(d), n);
  } else if (sd == DType::float16 && dd == DType::float32) {
    f16_to_f32(reinterpret_cast<const u16*>(s), reinterpret_cast<float*>(d), n);
  } else if (sd == DType::float32 && dd == DType::float64) {
    cast_run(reinterpret_cast<const float*>(s), reinterpret_cast<double*>(d), n);
  } else if (sd == DType::float64 && dd == DType::float32) {
    cast_run(reinterpret_cast<const double*>(s), reinterpret_cast<float*>(d), n);
  } else {
    return false;
  }
  return true;
}

bool convertible(DType sd, DType dd) {
  auto is = [&](DType a, DType b) { return (sd == a && dd == b) || (sd == b && dd == a); };
  return is(DType::float32, DType::bfloat16) || is(DType::float32, DType::float16) ||
         is(DType::float32, DType::float64);
}

// Copies n elements of `size` bytes from s (step ss elements) to d (step sd elements).
template <class U>
void strided_copy(const U* s, int64_t ss, U* d, int64_t sd, int64_t n) {
  if (ss == 1 && sd == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(U));
  } else if (ss == 0 && sd == 1) {
    const U v = *s;
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
  }
}

void strided_copy_bytes(size_t size, const char* s, int64_t ss, char* d, int64_t sd, int64_t n) {
  switch (size) {
    case 1:
      return strided_copy(reinterpret_cast<const uint8_t*>(s), ss, reinterpret_cast<uint8_t*>(d),
                          sd, n);
    case 2:
      return strided_copy(reinterpret_cast<const uint16_t*>(s), ss, reinterpret_cast<uint16_t*>(d),
                          sd, n);
    case 4:
      return strided_copy(reinterpret_cast<const uint32_t*>(s), ss, reinterpret_cast<uint32_t*>(d),
                          sd, n);
    default:
      return strided_copy(reinterpret_cast<const uint64_t*>(s), ss, reinterpret_cast<uint64_t*>(d),
                          sd, n);
  }
}

struct ReorderEntry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
};

// oneDNN reorders copy between float32/bfloat16/float16 (and within int8/uint8/int32) with
// cache blocking, which a transposing copy needs.
bool try_reorder(const Tensor& src, Tensor& dst) {
  const bool float_pair = convertible(src.dtype(), dst.dtype()) && src.dtype() != DType::float64 &&
                          dst.dtype() != DType::float64;
  const bool same = src.dtype() == dst.dtype() && to_dnnl(src.dtype()) != dnnl_dt::undef;
  if (!(float_pair || same) || !dnnl_layout_ok(src) || !dnnl_layout_ok(dst) || src.ndim() == 0)
    return false;
  PrimitiveKey key(OpKind::reorder);
  key.add_tensor(src);
  key.add_tensor(dst);
  auto* e = primitive_cache().get<ReorderEntry>(key, [&]() -> std::unique_ptr<ReorderEntry> {
    try {
      auto r = std::make_unique<ReorderEntry>();
      const auto smd = tensor_md(src), dmd = tensor_md(dst);
      dnnl::reorder::primitive_desc pd(engine(), smd, engine(), dmd, base_attr());
      r->op = std::make_unique<DnnlOp>(
          pd, std::vector<DnnlOp::Arg>{{DNNL_ARG_FROM, smd}, {DNNL_ARG_TO, dmd}});
      return r;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (e == nullptr) return false;
  e->op->execute({src.raw_data(), dst.raw_data()});
  return true;
}

}  // namespace

void copy(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DType sd = src.dtype(), dd = dst.dtype();
  const auto ssize = static_cast<int64_t>(src.itemsize()),
             dsize = static_cast<int64_t>(dst.itemsize());
  if (sd == dd && src.is_contiguous() && dst.is_contiguous()) {
    const char* s = bytes_of(src);
    char* d = bytes_of(dst);
    parallel_for(0, n * ssize, kGrain * 4, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  const LoopPlan<2> plan = make_plan<2>(dst.shape(), {&dst, &src});
  if (sd == dd) {
    if (!plan.vectorizable && try_reorder(src, dst)) return;
    for_each_run<2>(
        plan, {bytes_of(dst), bytes_of(src)}, {dsize, ssize},
        [&](const std::array<char*, 2>& p, int64_t len, const std::array<int64_t, 2>& st) {
          strided_copy_bytes(static_cast<size_t>(dsize), p[1], st[1], p[0], st[0], len);
        });
    return;
  }
  if (plan.vectorizable && convertible(sd, dd)) {
    for_each_run<2>(
        plan, {bytes_of(dst), bytes_of(src)}, {dsize, ssize},
        [&](const std::array<char*, 2>& p, int64_t len, const std::array<int64_t, 2>& st) {
          if (st[1] == 1) {
            convert_run(sd, dd, p[1], p[0], len);
            return;
          }
          // Broadcast source: convert one element, then repeat it.
          convert_run(sd, dd, p[1], p[0], 1);
          strided_copy_bytes(static_cast<size_t>(dsize), p[0], 0, p[0] + dsize, 1, len - 1);
        });
    return;
  }
  if (try_reorder(src, dst)) return;
  reference::copy(src, dst);
}

void fill(Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  const double v = reference::cast_value(dst.dtype(), value);
  const LoopPlan<1> plan = make_plan<1>(dst.shape(), {&dst});
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T x = from_double<T>(v);
    for_each_run<1>(
        plan, {bytes_of(dst)}, {static_cast<int64_t>(sizeof(T))},
        [&](const std::array<char*, 1>& p, int64_t len, const std::array<int64_t, 1>& st) {
          T* d = reinterpret_cast<T*>(p[0]);
          if (st[0] == 1) {
            for (int64_t i = 0; i < len; ++i) d[i] = x;
          } else {
            for (int64_t i = 0; i < len; ++i) d[i * st[0]] = x;
          }
        });
  });
}

}  // namespace osprey::cpu
