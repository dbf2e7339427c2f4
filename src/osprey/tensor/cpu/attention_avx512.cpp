// The tiled attention kernels (attention_tiles.h) for AVX-512 (F, DQ, BW, VL): 16 floats per
// vector and masked tails. This file alone is compiled with -mavx512f... (tensor/CMakeLists.txt)
// and outside the unity batches; attention.cpp calls it only when effective_cpu_isa() allows
// AVX-512 (so OSPREY_MAX_CPU_ISA=AVX2 keeps it off). Everything here has internal linkage and
// no shared inline code is included (not simd_math.h, not Philox), so the linker cannot hand an
// AVX-512 copy of a shared function to the AVX2 code.
#include <immintrin.h>

#include "osprey/tensor/cpu/attention_tiles.h"

namespace osprey::cpu {

namespace {

// exp for 16 floats: simd_math.h's exp256 (Cephes' expf) with 512-bit registers and masks.
__m512 exp512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.7228391f), lo = _mm512_set1_ps(-87.3365447f);
  const __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __mmask16 isnan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  // 2^n in two halves, so that n = 128 does not overflow the exponent field.
  const __m512i ni = _mm512_cvtps_epi32(n);
  const __m512i h1 = _mm512_srai_epi32(ni, 1);
  const __m512i h2 = _mm512_sub_epi32(ni, h1);
  const __m512 s1 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h1, _mm512_set1_epi32(127)), 23));
  const __m512 s2 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h2, _mm512_set1_epi32(127)), 23));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  y = _mm512_mask_blend_ps(over, y, _mm512_set1_ps(__builtin_inff()));
  y = _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
  return _mm512_mask_blend_ps(isnan, y, x);
}

struct Avx512Floats {
  using V = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kMaxVectors = 4;  // per register tile row
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 lanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(lanes(n), p); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, lanes(n), v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V exp(V x) { return exp512(x); }
  // x where the 16 bools at m are true, else other.
  static V keep_where(const bool* m, V x, V other) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m));
    return _mm512_mask_blend_ps(_mm_test_epi8_mask(b, b), other, x);
  }
  static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
};

}  // namespace

AttentionKernels attention_kernels_avx512() { return AttentionTiles<Avx512Floats>::kernels(); }

}  // namespace osprey::cpu
