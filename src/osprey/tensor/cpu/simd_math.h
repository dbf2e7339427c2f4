// Vectorized exp and log for float32 on AVX2 (the x86-64-v3 baseline), after Cephes' expf and
// logf: range reduction, a short polynomial, the exponent rebuilt in the bits; about 1-2 ulp.
// exp gives 0 below -87.3 (where e^x is denormal), +inf above 88.7; log gives -inf at 0, NaN
// below 0, and handles denormals; NaN stays NaN. Written by hand because libmvec's versions need
// -ffast-math, which would also break the NaN handling the kernels promise, and oneDNN's JIT log
// is only good to about 1e-5 relative. Internal to tensor/cpu/.
#pragma once

#include <immintrin.h>

#include <cmath>

namespace osprey::cpu {

inline __m256 exp256(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.7228391f), lo = _mm256_set1_ps(-87.3365447f);
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 isnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(xc, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, xc);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n in two halves, so that n = 128 (x near the top) does not overflow the exponent field.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i h1 = _mm256_srai_epi32(ni, 1);
  const __m256i h2 = _mm256_sub_epi32(ni, h1);
  const __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h2, _mm256_set1_epi32(127)), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), over);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), under);
  return _mm256_blendv_ps(y, x, isnan);
}

inline __m256 log256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 nan_mask = _mm256_or_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ),
                                       _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m256 zero_mask = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
  const __m256 inf_mask = _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
  // Denormals: scale by 2^23 first and take 23 off the exponent.
  const __m256 denorm = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
  x = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), denorm);
  __m256i xi = _mm256_castps_si256(x);
  __m256 e =
      _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(xi, 23), _mm256_set1_epi32(126)));
  e = _mm256_sub_ps(e, _mm256_and_ps(denorm, _mm256_set1_ps(23.0f)));
  // Mantissa in [0.5, 1).
  __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
      _mm256_and_si256(xi, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));
  const __m256 small = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm256_sub_ps(e, _mm256_and_ps(small, one));
  m = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(small, m)), one);
  const __m256 z = _mm256_mul_ps(m, m);
  __m256 y = _mm256_set1_ps(7.0376836292e-2f);
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.1514610310e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.1676998740e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.2420140846e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.4249322787e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.6668057665e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(2.0000714765e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-2.4999993993e-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(3.3333331174e-1f));
  y = _mm256_mul_ps(_mm256_mul_ps(y, m), z);
  y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  __m256 r = _mm256_add_ps(m, y);
  r = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), r);
  r = _mm256_blendv_ps(r, _mm256_set1_ps(INFINITY), inf_mask);
  r = _mm256_blendv_ps(r, _mm256_set1_ps(-INFINITY), zero_mask);
  return _mm256_blendv_ps(r, _mm256_set1_ps(NAN), nan_mask);
}

// y[i] = f(x[i]) for n floats with a vector function f (the tail through a padded block).
template <class F>
inline void map256(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int64_t j = 0; j < n - i; ++j) t[j] = x[i + j];
    _mm256_store_ps(t, f(_mm256_load_ps(t)));
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = t[j];
  }
}

// y[i] = exp(x[i] - shift) for n floats; returns their sum in double (in a fixed order).
inline double exp_shifted(const float* x, float shift, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  if (i < n) {
    alignas(32) float tx[8] = {}, ty[8];
    const int64_t rest = n - i;
    for (int64_t j = 0; j < rest; ++j) tx[j] = x[i + j];
    _mm256_store_ps(ty, exp256(_mm256_sub_ps(_mm256_load_ps(tx), s)));
    for (int64_t j = 0; j < rest; ++j) {
      y[i + j] = ty[j];
      sum += ty[j];
    }
  }
  return sum;
}

}  // namespace osprey::cpu
