// C[m, n] (+)= sum_k A(m, k) B[k, n] for the small tiles of attention_tiles.h, over a vector
// type S (kWidth floats, kMaxVectors vectors per register-tile row, load/store with partial
// tails, fma, add): register tiles of up to 6 rows by kMaxVectors vectors, B's rows broadcast
// against A's elements, so A may be read in any layout: A(m, k) = a[m * a_m + k * a_k] serves
// both A and A^T without a copy. B and C are row-major with leading dimensions ldb and ldc.
// Internal to tensor/cpu/; as for attention_tiles.h, S must have internal linkage.
#pragma once

#include <cstdint>

namespace osprey::cpu {

template <class S>
struct TileGemm {
  using V = typename S::V;
  static constexpr int W = S::kWidth;

  static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

  // Register tiles of MR rows by NV vectors; the last vector may be partial (Tail).
  template <int MR, int NV, bool Tail>
  static void micro(int64_t kk, const float* a, int64_t a_m, int64_t a_k, const float* b,
                    int64_t ldb, float* c, int64_t ldc, int tail, bool accumulate) {
    V acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = S::zero();
    }
    for (int64_t k = 0; k < kk; ++k) {
      const float* bk = b + k * ldb;
      V bv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        bv[v] = (Tail && v == NV - 1) ? S::load_n(bk + v * W, tail) : S::load(bk + v * W);
      }
      const float* ak = a + k * a_k;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const V ar = S::set1(ak[r * a_m]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = S::fma(ar, bv[v], acc[r][v]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        float* cp = c + r * ldc + v * W;
        if (Tail && v == NV - 1) {
          V x = acc[r][v];
          if (accumulate) x = S::add(x, S::load_n(cp, tail));
          S::store_n(cp, x, tail);
        } else {
          V x = acc[r][v];
          if (accumulate) x = S::add(x, S::load(cp));
          S::store(cp, x);
        }
      }
    }
  }

  // Up to S::kMaxVectors vectors per register tile (2 for AVX2's 16 registers, 4 for AVX-512's
  // 32), the last one partial when tail.
  template <int MR>
  static void micro_cols(int nv, bool tail, int64_t kk, const float* a, int64_t a_m, int64_t a_k,
                         const float* b, int64_t ldb, float* c, int64_t ldc, int n_tail,
                         bool accumulate) {
    switch (nv) {
      case 4:
        if constexpr (S::kMaxVectors >= 4) {
          if (tail) return micro<MR, 4, true>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
          return micro<MR, 4, false>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
        }
        break;
      case 3:
        if constexpr (S::kMaxVectors >= 3) {
          if (tail) return micro<MR, 3, true>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
          return micro<MR, 3, false>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
        }
        break;
      case 2:
        if (tail) return micro<MR, 2, true>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
        return micro<MR, 2, false>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
      default:
        break;
    }
    if (tail) return micro<MR, 1, true>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
    return micro<MR, 1, false>(kk, a, a_m, a_k, b, ldb, c, ldc, n_tail, accumulate);
  }

  static void gemm(int64_t m, int64_t n, int64_t kk, const float* a, int64_t a_m, int64_t a_k,
                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
    constexpr int kRows = 6;
    constexpr int64_t kCols = S::kMaxVectors * W;
    for (int64_t j = 0; j < n; j += kCols) {
      const int64_t cols = min(kCols, n - j);
      const int nv = static_cast<int>((cols + W - 1) / W);
      const int n_tail = static_cast<int>(cols % W);
      const bool tail = n_tail != 0;
      for (int64_t i = 0; i < m; i += kRows) {
        const float* ai = a + i * a_m;
        float* ci = c + i * ldc + j;
        switch (min(kRows, m - i)) {
          case 6:
            micro_cols<6>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
          case 5:
            micro_cols<5>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
          case 4:
            micro_cols<4>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
          case 3:
            micro_cols<3>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
          case 2:
            micro_cols<2>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
          default:
            micro_cols<1>(nv, tail, kk, ai, a_m, a_k, b + j, ldb, ci, ldc, n_tail, accumulate);
            break;
        }
      }
    }
  }
};

}  // namespace osprey::cpu
