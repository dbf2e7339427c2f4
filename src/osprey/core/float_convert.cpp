// Kernels behind float_convert.h. The scalar loops are the reference; the AVX2 kernels are built
// for the x86-64-v3 baseline; the AVX-512 ones carry a target attribute and run only when
// __builtin_cpu_supports says so and the ISA cap (cpu_isa.h) allows. Each vector kernel leaves its
// last n % width elements to the scalar loop. float8 encoding is integer SIMD of the steps in
// detail::f8_round_magnitude; float8 decoding goes through float16, whose layout float8 shares.
#include "osprey/core/float_convert.h"

#include <cpuid.h>
#include <immintrin.h>

#include <atomic>

#include "osprey/core/cpu_isa.h"
#include "osprey/core/error.h"

#define OSPREY_AVX512 __attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl")))
#define OSPREY_INLINE inline __attribute__((always_inline))

namespace osprey {

namespace {

template <class T>
struct KernelPair {
  void (*encode)(const float*, T*, int64_t);
  void (*decode)(const T*, float*, int64_t);
};
struct Kernels {
  detail::ConvertPath path;
  KernelPair<bfloat16> bf16;
  KernelPair<float16> f16;
  KernelPair<float8_e4m3fn> e4m3fn;
  KernelPair<float8_e5m2> e5m2;
};

template <class T>
void encode_scalar(const float* s, T* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = T(s[i]);
}
template <class T>
void decode_scalar(const T* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

// The f8 formats as template arguments: mantissa bits, bias, the smallest magnitude (f32 bits)
// that maps to kLimitCode (Inf for e5m2, 448 for e4m3fn, which saturates).
struct E4M3 {
  static constexpr int kMant = 3, kBias = 7;
  static constexpr int kLimit = 0x43e00000, kLimitCode = 0x7e;
};
struct E5M2 {
  static constexpr int kMant = 2, kBias = 15;
  static constexpr int kLimit = 0x47700000, kLimitCode = 0x7c;
};
constexpr int kF32Inf = 0x7f800000;

// ---------------------------------------------------------------- AVX2 + F16C (the baseline)

OSPREY_INLINE __m256i bf16_round_avx2(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i biased = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i rounded = _mm256_srli_epi32(biased, 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(kF32Inf));
  return _mm256_blendv_epi8(rounded, quiet, nan);  // 32-bit lanes holding 16-bit codes
}

void f32_to_bf16_avx2(const float* s, bfloat16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = bf16_round_avx2(_mm256_loadu_ps(s + i));
    const __m256i hi = bf16_round_avx2(_mm256_loadu_ps(s + i + 8));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
  }
  encode_scalar(s + i, d + i, n - i);
}

void bf16_to_f32_avx2(const bfloat16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  decode_scalar(s + i, d + i, n - i);
}

void f32_to_f16_avx2(const float* s, float16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  encode_scalar(s + i, d + i, n - i);
}

void f16_to_f32_avx2(const float16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(d + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
  decode_scalar(s + i, d + i, n - i);
}

// detail::f8_round_magnitude and the NaN / overflow cases of f32_to_e*_bits, eight lanes at once.
template <class F>
OSPREY_INLINE __m256i f8_encode_avx2(__m256 x) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i u = _mm256_castps_si256(x);
  const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
  const __m256i exp = _mm256_srli_epi32(a, 23);
  // Normal target: round away the low 23 - kMant bits, then rebias the exponent.
  constexpr int kShift = 23 - F::kMant;
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, kShift), one);
  const __m256i up = _mm256_add_epi32(_mm256_set1_epi32((1 << (kShift - 1)) - 1), lsb);
  const __m256i normal = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_add_epi32(a, up), kShift),
                                          _mm256_set1_epi32((127 - F::kBias) << F::kMant));
  // Subnormal target: shift the full significand by a per-lane count (clamped to 31, which gives
  // 0; f32 subnormals get the implicit bit too, harmless as they always shift out).
  const __m256i mant = _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi32(0x7fffff)),
                                       _mm256_set1_epi32(0x800000));
  const __m256i shift = _mm256_min_epu32(
      _mm256_sub_epi32(_mm256_set1_epi32(151 - F::kBias - F::kMant), exp), _mm256_set1_epi32(31));
  const __m256i half = _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(shift, one)), one);
  const __m256i sub_lsb = _mm256_and_si256(_mm256_srlv_epi32(mant, shift), one);
  const __m256i subnormal =
      _mm256_srlv_epi32(_mm256_add_epi32(_mm256_add_epi32(mant, half), sub_lsb), shift);
  const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(128 - F::kBias), exp);
  __m256i code = _mm256_blendv_epi8(normal, subnormal, is_sub);
  const __m256i big = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(F::kLimit - 1));
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32(F::kLimitCode), big);
  const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(kF32Inf));
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7f), nan);
  return _mm256_or_si256(code, sign);
}

template <class F, class T>
void f32_to_f8_avx2(const float* s, T* d, int64_t n) {
  int64_t i = 0;
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; i + 32 <= n; i += 32) {
    const __m256i c0 = f8_encode_avx2<F>(_mm256_loadu_ps(s + i));
    const __m256i c1 = f8_encode_avx2<F>(_mm256_loadu_ps(s + i + 8));
    const __m256i c2 = f8_encode_avx2<F>(_mm256_loadu_ps(s + i + 16));
    const __m256i c3 = f8_encode_avx2<F>(_mm256_loadu_ps(s + i + 24));
    // packus interleaves 128-bit lanes; the permute puts the four-byte groups back in order.
    const __m256i bytes =
        _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_permutevar8x32_epi32(bytes, order));
  }
  encode_scalar(s + i, d + i, n - i);
}

// Sixteen f8 codes (as 16-bit lanes) to the float16 bit patterns of their value times 2^-8 (e4m3fn)
// or of their value (e5m2); see detail::e4m3fn_bits_to_f32.
OSPREY_INLINE __m256i e4m3fn_to_f16_scaled(__m256i b) {
  const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
  const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi16(0x7f));
  const __m256i nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f));
  const __m256i h = _mm256_blendv_epi8(_mm256_slli_epi16(mag, 7), _mm256_set1_epi16(0x7e00), nan);
  return _mm256_or_si256(h, sign);
}

void e4m3fn_to_f32_avx2(const float8_e4m3fn* s, float* d, int64_t n) {
  int64_t i = 0;
  const __m256 scale = _mm256_set1_ps(256.0f);
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m256i h = e4m3fn_to_f16_scaled(_mm256_cvtepu8_epi16(b));
    _mm256_storeu_ps(d + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale));
    _mm256_storeu_ps(d + i + 8,
                     _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), scale));
  }
  decode_scalar(s + i, d + i, n - i);
}

void e5m2_to_f32_avx2(const float8_e5m2* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8);
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    _mm256_storeu_ps(d + i + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
  }
  decode_scalar(s + i, d + i, n - i);
}

// ---------------------------------------------------------------- AVX-512 (+BF16), run-time only

// GCC 12's AVX-512 intrinsics start from self-initialized "undefined" registers, which
// -Wmaybe-uninitialized reports at every inlined call.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

OSPREY_AVX512 void f32_to_bf16_avx512(const float* s, bfloat16* d, int64_t n) {
  int64_t i = 0;
  const __m512i exp_bits = _mm512_set1_epi32(kF32Inf);
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(s + i);
    // vcvtneps2bf16 rounds to nearest even and quiets NaN exactly as the scalar code does, but
    // flushes subnormal inputs to zero; redo those lanes (rare) in integer arithmetic.
    __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
    const __m512i u = _mm512_castps_si512(x);
    const __mmask16 sub = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, exp_bits), u,
                                                      _mm512_set1_epi32(0x7fffff));
    if (sub != 0) [[unlikely]] {
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
      const __m512i biased = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
      h = _mm256_mask_mov_epi16(h, sub, _mm512_cvtepi32_epi16(_mm512_srli_epi32(biased, 16)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  encode_scalar(s + i, d + i, n - i);
}

OSPREY_AVX512 void bf16_to_f32_avx512(const bfloat16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  decode_scalar(s + i, d + i, n - i);
}

OSPREY_AVX512 void f32_to_f16_avx512(const float* s, float16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  encode_scalar(s + i, d + i, n - i);
}

OSPREY_AVX512 void f16_to_f32_avx512(const float16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(h));
  }
  decode_scalar(s + i, d + i, n - i);
}

// f8_encode_avx2 with sixteen lanes and mask registers instead of blends.
template <class F>
OSPREY_AVX512 OSPREY_INLINE __m128i f8_encode_avx512(__m512 x) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i u = _mm512_castps_si512(x);
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
  const __m512i exp = _mm512_srli_epi32(a, 23);
  constexpr int kShift = 23 - F::kMant;
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, kShift), one);
  const __m512i up = _mm512_add_epi32(_mm512_set1_epi32((1 << (kShift - 1)) - 1), lsb);
  const __m512i normal = _mm512_sub_epi32(_mm512_srli_epi32(_mm512_add_epi32(a, up), kShift),
                                          _mm512_set1_epi32((127 - F::kBias) << F::kMant));
  const __m512i mant = _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0x7fffff)),
                                       _mm512_set1_epi32(0x800000));
  const __m512i shift = _mm512_min_epu32(
      _mm512_sub_epi32(_mm512_set1_epi32(151 - F::kBias - F::kMant), exp), _mm512_set1_epi32(31));
  const __m512i half = _mm512_sub_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(shift, one)), one);
  const __m512i sub_lsb = _mm512_and_si512(_mm512_srlv_epi32(mant, shift), one);
  const __m512i subnormal =
      _mm512_srlv_epi32(_mm512_add_epi32(_mm512_add_epi32(mant, half), sub_lsb), shift);
  const __mmask16 is_sub = _mm512_cmplt_epi32_mask(exp, _mm512_set1_epi32(128 - F::kBias));
  __m512i code = _mm512_mask_mov_epi32(normal, is_sub, subnormal);
  const __mmask16 big = _mm512_cmpge_epi32_mask(a, _mm512_set1_epi32(F::kLimit));
  code = _mm512_mask_mov_epi32(code, big, _mm512_set1_epi32(F::kLimitCode));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(kF32Inf));
  code = _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(0x7f));
  return _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign));
}

template <class F, class T>
OSPREY_AVX512 void f32_to_f8_avx512(const float* s, T* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     f8_encode_avx512<F>(_mm512_loadu_ps(s + i)));
  }
  encode_scalar(s + i, d + i, n - i);
}

OSPREY_AVX512 void e4m3fn_to_f32_avx512(const float8_e4m3fn* s, float* d, int64_t n) {
  int64_t i = 0;
  const __m512 scale = _mm512_set1_ps(256.0f);
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m256i h = e4m3fn_to_f16_scaled(_mm256_cvtepu8_epi16(b));
    _mm512_storeu_ps(d + i, _mm512_mul_ps(_mm512_cvtph_ps(h), scale));
  }
  decode_scalar(s + i, d + i, n - i);
}

OSPREY_AVX512 void e5m2_to_f32_avx512(const float8_e5m2* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8)));
  }
  decode_scalar(s + i, d + i, n - i);
}

#pragma GCC diagnostic pop

// ---------------------------------------------------------------- dispatch

constexpr Kernels kScalar{detail::ConvertPath::scalar,
                          {encode_scalar<bfloat16>, decode_scalar<bfloat16>},
                          {encode_scalar<float16>, decode_scalar<float16>},
                          {encode_scalar<float8_e4m3fn>, decode_scalar<float8_e4m3fn>},
                          {encode_scalar<float8_e5m2>, decode_scalar<float8_e5m2>}};
constexpr Kernels kAvx2{detail::ConvertPath::avx2,
                        {f32_to_bf16_avx2, bf16_to_f32_avx2},
                        {f32_to_f16_avx2, f16_to_f32_avx2},
                        {f32_to_f8_avx2<E4M3, float8_e4m3fn>, e4m3fn_to_f32_avx2},
                        {f32_to_f8_avx2<E5M2, float8_e5m2>, e5m2_to_f32_avx2}};
constexpr Kernels kAvx512{detail::ConvertPath::avx512,
                          {f32_to_bf16_avx512, bf16_to_f32_avx512},
                          {f32_to_f16_avx512, f16_to_f32_avx512},
                          {f32_to_f8_avx512<E4M3, float8_e4m3fn>, e4m3fn_to_f32_avx512},
                          {f32_to_f8_avx512<E5M2, float8_e5m2>, e5m2_to_f32_avx512}};

const Kernels* kernels_for(detail::ConvertPath path) noexcept {
  switch (path) {
    case detail::ConvertPath::avx512:
      return &kAvx512;
    case detail::ConvertPath::avx2:
      return &kAvx2;
    case detail::ConvertPath::scalar:
      break;
  }
  return &kScalar;
}

std::atomic<const Kernels*> g_kernels{nullptr};

const Kernels& kernels() noexcept {
  const Kernels* k = g_kernels.load(std::memory_order_acquire);
  if (k == nullptr) [[unlikely]] {
    k = kernels_for(detail::best_convert_path());
    g_kernels.store(k, std::memory_order_release);
  }
  return *k;
}

}  // namespace

namespace detail {

namespace {
// clang 14's __builtin_cpu_supports does not know "f16c" (GCC's does): CPUID leaf 1, ECX bit 29.
bool has_f16c() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
}  // namespace

bool cpu_supports(ConvertPath path) noexcept {
  __builtin_cpu_init();
  switch (path) {
    case ConvertPath::avx512:
      // The effective level is one the CPU has (AVX-512 F, BW, VL and BF16 included), within
      // the cap: under OSPREY_MAX_CPU_ISA=AVX2 the conversions run as on an AVX2 CPU.
      return cpu_isa_has_bf16(effective_cpu_isa());
    case ConvertPath::avx2:
      return __builtin_cpu_supports("avx2") && has_f16c();
    case ConvertPath::scalar:
      return true;
  }
  return false;
}

ConvertPath best_convert_path() noexcept {
  return cpu_supports(ConvertPath::avx512) ? ConvertPath::avx512 : ConvertPath::avx2;
}

ConvertPath convert_path() noexcept { return kernels().path; }

void set_convert_path(ConvertPath path) {
  OSPREY_CHECK(cpu_supports(path),
               "set_convert_path: this CPU lacks the instructions of conversion path {}",
               static_cast<int>(path));
  g_kernels.store(kernels_for(path), std::memory_order_release);
}

}  // namespace detail

void convert(const float* src, bfloat16* dst, int64_t n) noexcept {
  kernels().bf16.encode(src, dst, n);
}
void convert(const float* src, float16* dst, int64_t n) noexcept {
  kernels().f16.encode(src, dst, n);
}
void convert(const float* src, float8_e4m3fn* dst, int64_t n) noexcept {
  kernels().e4m3fn.encode(src, dst, n);
}
void convert(const float* src, float8_e5m2* dst, int64_t n) noexcept {
  kernels().e5m2.encode(src, dst, n);
}
void convert(const bfloat16* src, float* dst, int64_t n) noexcept {
  kernels().bf16.decode(src, dst, n);
}
void convert(const float16* src, float* dst, int64_t n) noexcept {
  kernels().f16.decode(src, dst, n);
}
void convert(const float8_e4m3fn* src, float* dst, int64_t n) noexcept {
  kernels().e4m3fn.decode(src, dst, n);
}
void convert(const float8_e5m2* src, float* dst, int64_t n) noexcept {
  kernels().e5m2.decode(src, dst, n);
}
// Plain loops: GCC vectorizes them to vcvtpd2ps / vcvtps2pd, which round exactly as static_cast.
void convert(const double* src, float* dst, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}
void convert(const float* src, double* dst, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<double>(src[i]);
}

}  // namespace osprey
