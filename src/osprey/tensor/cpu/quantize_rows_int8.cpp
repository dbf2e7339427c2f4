// quantize_rows_int8: x [M, K] float32 -> q [M, K] int8 and scale [M], one abs-max scale per
// row, bit for bit as reference::quantize_rows_int8: a hand-vectorized AVX2 loop over the rows,
// in parallel.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/kernels.h"

namespace osprey::cpu {

namespace {

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
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1));
  parallel_for(0, m, grain, [=](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      sp[i] = quantize_row(xp + i * k, qp + i * k, k);
    }
  });
}

}  // namespace osprey::cpu
