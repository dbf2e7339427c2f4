// The tiled attention kernels (attention_tiles.h) for AVX2 + FMA, the x86-64-v3 baseline every
// osprey build assumes: 8 floats per vector, exp from simd_math.h.
#include <immintrin.h>

#include "osprey/tensor/cpu/attention_tiles.h"
#include "osprey/tensor/cpu/simd_math.h"

namespace osprey::cpu {

namespace {

struct Avx2Floats {
  using V = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kMaxVectors = 2;  // per register tile row
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // Lanes [0, n) of a partial vector; the others read as 0 and are never written.
  static __m256i lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load_n(const float* p, int n) { return _mm256_maskload_ps(p, lanes(n)); }
  static void store_n(float* p, V v, int n) { _mm256_maskstore_ps(p, lanes(n), v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V exp(V x) { return exp256(x); }
  // x where the 8 bools at m are true, else other.
  static V keep_where(const bool* m, V x, V other) {
    const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m)));
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()));
    return _mm256_blendv_ps(other, x, keep);
  }
  static float reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

AttentionKernels attention_kernels_avx2() { return AttentionTiles<Avx2Floats>::kernels(); }

}  // namespace osprey::cpu
