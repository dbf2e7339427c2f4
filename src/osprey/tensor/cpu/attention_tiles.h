// The tiled attention kernel, written once over a vector type S and compiled per instruction
// set (attention_avx2.cpp, attention_avx512.cpp; attention.cpp picks one at run time). The
// FlashAttention algorithm (Dao et al. 2022) with FlashAttention-2's backward: a forward task owns
// a tile of BQ query rows, a backward task a chunk of BK-key tiles, and each walks the other axis
// tile by tile, so nothing of size Tq * Tk is ever stored.
//   forward:  s = scale * q_i k_j^T (+ mask); online softmax (running max m, running sum l);
//             o_i += dropout(exp(s - m)) v_j; at the end o_i /= l, lse_i = m + log(l).
//   backward: p = exp(s - lse_i) recomputed per tile, delta_i = rowsum(dout_i * o_i),
//             dv_j += dropout(p)^T dout_i, dp = dropout(dout_i v_j^T), ds = p * (dp - delta_i),
//             dk_j += scale * ds^T q_i, dq_i += scale * ds k_j.
// dq_i gathers from every key tile: instead of atomic adds (whose order, hence rounding, would
// depend on the threads), each backward task adds into its own dq buffer, one per chunk of keys,
// and attention.cpp sums the buffers in chunk order. The number of chunks depends only on the
// shapes (enough tasks for kAttentionTargetTasks threads, at most kAttentionMaxKeyChunks), so
// results are bitwise identical on any thread count, and the buffers take at most that many
// times dq's memory: linear in T.
// S must have internal linkage (an anonymous namespace in the .cpp): every instantiation is then
// private to its translation unit, and no AVX-512 copy of shared code can be picked by the linker
// for an AVX2-only CPU. Internal to tensor/cpu/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "osprey/tensor/cpu/tile_gemm.h"

namespace osprey::cpu {

constexpr int64_t kAttentionMaxKeyChunks = 8;  // the size of AttentionProblem::dq_chunks

// The problem as raw pointers: everything contiguous except the mask (element strides).
struct AttentionProblem {
  int64_t batch = 0, heads = 0, kv_heads = 0, tq = 0, tk = 0, d = 0, dv = 0;
  const float* q = nullptr;  // [B, H, Tq, D]
  const float* k = nullptr;  // [B, KVH, Tk, D]
  const float* v = nullptr;  // [B, KVH, Tk, Dv]
  // k and v transposed tile by tile, [B, KVH, key_tiles, D (Dv), BK] (zeros past Tk): each tile's
  // panel is contiguous, where a [D, Tk] layout would put its rows Tk floats apart (4 KiB for
  // Tk = 1024: every row in one cache set). vt is for backward only.
  const float* kt = nullptr;
  const float* vt = nullptr;
  const bool* bool_mask = nullptr;    // one of the two masks, or neither
  const float* float_mask = nullptr;  // added to the scaled scores
  int64_t mask_strides[4] = {0, 0, 0, 0};
  const bool* key_padding = nullptr;  // [B, Tk], true = a real key
  float scale = 1.0f;
  bool causal = false;
  double dropout_rate = 0.0;
  uint64_t dropout_seed = 0;
  // x[c] *= the dropout factor of weight e0 + c, for c in [0, n) (attention_dropout.h); defined
  // in attention.cpp so that Philox is compiled for the baseline instruction set only.
  void (*apply_dropout)(const AttentionProblem& p, int64_t e0, float* x, int64_t n) = nullptr;
  // Forward outputs / backward inputs and outputs.
  float* out = nullptr;          // [B, H, Tq, Dv]
  float* lse = nullptr;          // [B, H, Tq]
  const float* dout = nullptr;   // [B, H, Tq, Dv]
  const float* delta = nullptr;  // [B, H, Tq]: rowsum(dout * out)
  // [B, H, Tq, D] per chunk of keys, zeroed; dq = scale * their sum (the first is dq itself).
  float* dq_chunks[kAttentionMaxKeyChunks] = {};
  int64_t key_chunks = 1;

  int64_t tk_padded() const;  // Tk rounded up to whole key tiles
  float* dk = nullptr;
  float* dv_out = nullptr;
};

constexpr int64_t kAttentionBlockQ = 64;  // query rows per tile
constexpr int64_t kAttentionBlockK = 64;  // keys per tile (a multiple of every vector width)

inline int64_t attention_query_tiles(const AttentionProblem& p) {
  return (p.tq + kAttentionBlockQ - 1) / kAttentionBlockQ;
}
inline int64_t attention_key_tiles(const AttentionProblem& p) {
  return (p.tk + kAttentionBlockK - 1) / kAttentionBlockK;
}
// Floats of scratch one task needs (any of the three kinds).
inline int64_t attention_scratch_floats(const AttentionProblem& p) {
  const int64_t tile = kAttentionBlockQ * kAttentionBlockK;
  const int64_t rows = std::max(kAttentionBlockQ, kAttentionBlockK);
  return 3 * tile + rows * (p.d + p.dv) + 2 * rows + kAttentionBlockK;
}

inline int64_t AttentionProblem::tk_padded() const {
  return attention_key_tiles(*this) * kAttentionBlockK;
}

constexpr int64_t kAttentionTargetTasks = 16;
// Backward tasks per (batch, kv head): chunks of whole key tiles, as few as give
// kAttentionTargetTasks tasks in all (each chunk past the first costs a dq-sized buffer).
inline int64_t attention_key_chunks(const AttentionProblem& p) {
  const int64_t pairs = p.batch * p.kv_heads;
  int64_t chunks = (kAttentionTargetTasks + pairs - 1) / pairs;
  if (chunks > kAttentionMaxKeyChunks) chunks = kAttentionMaxKeyChunks;
  const int64_t tiles = attention_key_tiles(p);
  return chunks < tiles ? chunks : tiles;
}

// One instruction set's kernels; task numbering: forward takes (b * H + h) * query_tiles + tile,
// backward (b * KVH + g) * key_chunks + chunk.
struct AttentionKernels {
  void (*forward)(const AttentionProblem& p, int64_t task, float* scratch);
  void (*backward)(const AttentionProblem& p, int64_t task, float* scratch);
};

template <class S>
struct AttentionTiles {
  using V = typename S::V;
  static constexpr int W = S::kWidth;
  static constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  static constexpr int64_t BQ = kAttentionBlockQ, BK = kAttentionBlockK;

  // Plain loops instead of <algorithm>: a std::fill<float*> instantiated here would be a
  // function shared with other files, compiled for this file's instruction set.
  static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
  static float max(float a, float b) { return a < b ? b : a; }
  static void fill(float* begin, float* end, float x) {
    for (float* it = begin; it != end; ++it) *it = x;
  }
  static void copy(const float* begin, const float* end, float* to) {
    for (const float* it = begin; it != end; ++it) *to++ = *it;
  }

  static void gemm(int64_t m, int64_t n, int64_t kk, const float* a, int64_t a_m, int64_t a_k,
                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
    TileGemm<S>::gemm(m, n, kk, a, a_m, a_k, b, ldb, c, ldc, accumulate);
  }

  // ---- rows of a score tile -------------------------------------------------------------------
  static int64_t padded(int64_t n) { return (n + W - 1) / W * W; }

  // kb[c] = 0 for a real key j0 + c, -inf for padding and past n (to a whole vector): the key
  // padding of a tile as a vector to add, made once per tile instead of once per row.
  static void key_bias(const AttentionProblem& p, int64_t b, int64_t j0, int64_t n, float* kb) {
    const bool* kp = p.key_padding + b * p.tk + j0;
    for (int64_t c = 0; c < n; ++c) kb[c] = kp[c] ? 0.0f : kNegInf;
    for (int64_t c = n; c < padded(n); ++c) kb[c] = kNegInf;
  }

  // s[c] = scale * s[c] (+ mask) for the keys j0 + c of query row i, -inf where masked and on
  // the padding up to a whole vector. kb: key_bias() of the tile, or null without key padding.
  // Vector loops where the mask is dense along the keys (every mask but a broadcast key axis).
  static void scale_and_mask(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j0,
                             int64_t n, float* s, const float* kb) {
    const int64_t np = padded(n);
    const int64_t* ms = p.mask_strides;
    const int64_t row = b * ms[0] + h * ms[1] + i * ms[2] + j0 * ms[3];
    const bool no_mask = p.bool_mask == nullptr && p.float_mask == nullptr;
    if (no_mask || ms[3] == 1) {
      const bool* bm = p.bool_mask != nullptr ? p.bool_mask + row : nullptr;
      const float* fm = p.float_mask != nullptr ? p.float_mask + row : nullptr;
      const V sc = S::set1(p.scale), neg = S::set1(kNegInf);
      int64_t c = 0;
      if (no_mask) {  // whole vectors: the tile's padding lanes are overwritten below
        if (kb != nullptr) {
          for (; c < np; c += W) S::store(s + c, S::fma(S::load(s + c), sc, S::load(kb + c)));
        } else {
          for (; c < np; c += W) S::store(s + c, S::mul(S::load(s + c), sc));
        }
      } else {  // the mask row ends at n: vectors while they fit, then one key at a time
        for (; c + W <= n; c += W) {
          V x = S::mul(S::load(s + c), sc);
          if (kb != nullptr) x = S::add(x, S::load(kb + c));
          if (fm != nullptr) x = S::add(x, S::load(fm + c));
          if (bm != nullptr) x = S::keep_where(bm + c, x, neg);
          S::store(s + c, x);
        }
        for (; c < n; ++c) {
          float x = p.scale * s[c];
          if (kb != nullptr) x += kb[c];
          if (fm != nullptr) x += fm[c];
          if (bm != nullptr && !bm[c]) x = kNegInf;
          s[c] = x;
        }
      }
      if (p.causal) {
        for (int64_t k = i + 1 - j0 < 0 ? 0 : i + 1 - j0; k < n; ++k) s[k] = kNegInf;
      }
    } else {  // a mask broadcast along the keys (stride 0): element by element
      for (int64_t c = 0; c < n; ++c) {
        const int64_t j = j0 + c;
        float x = p.scale * s[c];
        if ((p.causal && j > i) || (kb != nullptr && kb[c] != 0.0f) ||
            (p.bool_mask != nullptr && !p.bool_mask[row + c * ms[3]])) {
          x = kNegInf;
        } else if (p.float_mask != nullptr) {
          x += p.float_mask[row + c * ms[3]];
        }
        s[c] = x;
      }
    }
    for (int64_t c = n; c < np; ++c) s[c] = kNegInf;
  }

  static float row_max(const float* s, int64_t np) {
    V m = S::set1(kNegInf);
    for (int64_t c = 0; c < np; c += W) m = S::max(m, S::load(s + c));
    return S::reduce_max(m);
  }

  // s[c] = exp(s[c] - shift); returns the sum.
  static float exp_sum(float* s, int64_t np, float shift) {
    const V sh = S::set1(shift);
    V acc = S::zero();
    for (int64_t c = 0; c < np; c += W) {
      const V e = S::exp(S::sub(S::load(s + c), sh));
      S::store(s + c, e);
      acc = S::add(acc, e);
    }
    return S::reduce_add(acc);
  }

  static void scale_row(float* x, int64_t n, float f) {
    const V fv = S::set1(f);
    int64_t c = 0;
    for (; c + W <= n; c += W) S::store(x + c, S::mul(S::load(x + c), fv));
    for (; c < n; ++c) x[c] *= f;
  }

  // The end of the keys that query rows [i0, i1) may see: causal rows stop at their own index.
  static int64_t key_end(const AttentionProblem& p, int64_t i1) {
    return p.causal ? min(p.tk, i1) : p.tk;
  }

  // ---- forward: one tile of query rows of one head ---------------------------------------
  static void forward(const AttentionProblem& p, int64_t task, float* scratch) {
    const int64_t tiles = attention_query_tiles(p);
    const int64_t bh = task / tiles, b = bh / p.heads, h = bh % p.heads;
    const int64_t g = h / (p.heads / p.kv_heads);
    const int64_t i0 = (task % tiles) * BQ, mq = min(BQ, p.tq - i0);
    const float* q = p.q + (bh * p.tq + i0) * p.d;
    const float* kt = p.kt + (b * p.kv_heads + g) * attention_key_tiles(p) * p.d * BK;
    const float* v = p.v + (b * p.kv_heads + g) * p.tk * p.dv;
    float* kb = p.key_padding != nullptr ? scratch : nullptr;  // [BK]
    float* s = scratch + BK;                                   // [BQ, BK]
    float* o = s + BQ * BK;                                    // [BQ, dv]
    float* m = o + BQ * p.dv;                                  // [BQ]
    float* l = m + BQ;                                         // [BQ]
    fill(o, o + mq * p.dv, 0.0f);
    fill(m, m + mq, kNegInf);
    fill(l, l + mq, 0.0f);
    const int64_t j_end = key_end(p, i0 + mq);
    for (int64_t j0 = 0; j0 < j_end; j0 += BK) {
      const int64_t nk = min(BK, j_end - j0), np = padded(nk);
      gemm(mq, nk, p.d, q, p.d, 1, kt + j0 * p.d, BK, s, BK, false);
      if (kb != nullptr) key_bias(p, b, j0, nk, kb);
      for (int64_t r = 0; r < mq; ++r) {
        const int64_t i = i0 + r;
        float* sr = s + r * BK;
        scale_and_mask(p, b, h, i, j0, nk, sr, kb);
        const float m_new = max(m[r], row_max(sr, np));
        if (m_new == kNegInf) {  // nothing to attend to yet: this tile adds nothing
          fill(sr, sr + np, 0.0f);
          continue;
        }
        const float alpha = m[r] == kNegInf ? 0.0f : std::exp(m[r] - m_new);
        l[r] = l[r] * alpha + exp_sum(sr, np, m_new);
        m[r] = m_new;
        if (alpha != 1.0f) scale_row(o + r * p.dv, p.dv, alpha);
        if (p.dropout_rate > 0.0) p.apply_dropout(p, (bh * p.tq + i) * p.tk + j0, sr, nk);
      }
      gemm(mq, p.dv, nk, s, BK, 1, v + j0 * p.dv, p.dv, o, p.dv, true);
    }
    for (int64_t r = 0; r < mq; ++r) {
      float* out = p.out + (bh * p.tq + i0 + r) * p.dv;
      if (l[r] == 0.0f) {  // no key to attend to: output 0, and lse +inf makes backward's p 0
        fill(out, out + p.dv, 0.0f);
        p.lse[bh * p.tq + i0 + r] = std::numeric_limits<float>::infinity();
        continue;
      }
      const float inv = 1.0f / l[r];
      for (int64_t c = 0; c < p.dv; ++c) out[c] = o[r * p.dv + c] * inv;
      p.lse[bh * p.tq + i0 + r] = m[r] + std::log(l[r]);
    }
  }

  // ---- backward: the score tile of rows [i0, i0 + mq) x keys [j0, j0 + nk) of head (b, h) ---
  // Leaves p (dropped: u) in pu, ds in ds; pu == pp without dropout.
  static void probabilities_and_ds(const AttentionProblem& p, int64_t b, int64_t h, int64_t g,
                                   int64_t i0, int64_t mq, int64_t j0, int64_t nk, const float* kb,
                                   float* pp, float* pu, float* ds) {
    const int64_t bh = b * p.heads + h, bg = b * p.kv_heads + g;
    const int64_t np = padded(nk);
    gemm(mq, nk, p.d, p.q + (bh * p.tq + i0) * p.d, p.d, 1, p.kt + (bg * p.tk_padded() + j0) * p.d,
         BK, pp, BK, false);
    gemm(mq, nk, p.dv, p.dout + (bh * p.tq + i0) * p.dv, p.dv, 1,
         p.vt + (bg * p.tk_padded() + j0) * p.dv, BK, ds, BK, false);
    for (int64_t r = 0; r < mq; ++r) {
      const int64_t i = i0 + r;
      float* pr = pp + r * BK;
      float* dr = ds + r * BK;
      scale_and_mask(p, b, h, i, j0, nk, pr, kb);
      exp_sum(pr, np, p.lse[bh * p.tq + i]);  // +inf lse (no key at all) gives p = 0
      if (p.dropout_rate > 0.0) {
        float* ur = pu + r * BK;
        copy(pr, pr + nk, ur);
        p.apply_dropout(p, (bh * p.tq + i) * p.tk + j0, ur, nk);
        p.apply_dropout(p, (bh * p.tq + i) * p.tk + j0, dr, nk);
      }
      const V delta = S::set1(p.delta[bh * p.tq + i]);
      for (int64_t c = 0; c < np; c += W) {
        const V pv = S::load(pr + c);
        S::store(dr + c, S::mul(pv, S::sub(S::load(dr + c), delta)));
      }
    }
  }

  // dk and dv of a chunk of key tiles of kv head g, summed over the query heads that share it
  // and over every query tile in a fixed order; the chunk's share of dq into its own buffer.
  static void backward(const AttentionProblem& p, int64_t task, float* scratch) {
    const int64_t chunks = p.key_chunks, tiles = attention_key_tiles(p);
    const int64_t bg = task / chunks, chunk = task % chunks;
    const int64_t b = bg / p.kv_heads, g = bg % p.kv_heads;
    const int64_t group = p.heads / p.kv_heads;
    float* kb = p.key_padding != nullptr ? scratch : nullptr;  // [BK]
    float* pp = scratch + BK;
    float* ds = pp + BQ * BK;
    float* pu = p.dropout_rate > 0.0 ? ds + BQ * BK : pp;
    float* dk = ds + 2 * BQ * BK;  // [BK, d]
    float* dv = dk + BK * p.d;     // [BK, dv]
    float* dq_part = p.dq_chunks[chunk];
    const float* k = p.k + bg * p.tk * p.d;
    for (int64_t tile = tiles * chunk / chunks; tile < tiles * (chunk + 1) / chunks; ++tile) {
      const int64_t j0 = tile * BK, nk = min(BK, p.tk - j0);
      fill(dk, dk + nk * p.d, 0.0f);
      fill(dv, dv + nk * p.dv, 0.0f);
      if (kb != nullptr) key_bias(p, b, j0, nk, kb);
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const int64_t bh = b * p.heads + h;
        for (int64_t i0 = p.causal ? j0 : 0; i0 < p.tq; i0 += BQ) {  // causal: rows i >= j0
          const int64_t mq = min(BQ, p.tq - i0);
          probabilities_and_ds(p, b, h, g, i0, mq, j0, nk, kb, pp, pu, ds);
          gemm(nk, p.dv, mq, pu, 1, BK, p.dout + (bh * p.tq + i0) * p.dv, p.dv, dv, p.dv, true);
          gemm(nk, p.d, mq, ds, 1, BK, p.q + (bh * p.tq + i0) * p.d, p.d, dk, p.d, true);
          gemm(mq, p.d, nk, ds, BK, 1, k + j0 * p.d, p.d, dq_part + (bh * p.tq + i0) * p.d, p.d,
               true);
        }
      }
      float* dk_out = p.dk + (bg * p.tk + j0) * p.d;
      for (int64_t e = 0; e < nk * p.d; ++e) dk_out[e] = p.scale * dk[e];
      copy(dv, dv + nk * p.dv, p.dv_out + (bg * p.tk + j0) * p.dv);
    }
  }

  static AttentionKernels kernels() { return {&forward, &backward}; }
};

}  // namespace osprey::cpu
