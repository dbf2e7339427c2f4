// Fast scaled dot-product attention on the CPU: the tiled FlashAttention kernels of
// attention_tiles.h, in AVX-512 where effective_cpu_isa() allows it and in AVX2 otherwise.
// Written by hand because oneDNN 2.6 (Debian 12) has no fused attention primitive (the fused
// SDPA of its Graph API came with 3.x), and composing its matmul and softmax primitives would
// materialize the Tq x Tk scores, which is what this kernel exists to avoid; a oneDNN matmul call
// per tile costs about as much in overhead as a 64 x 64 tile takes to multiply, and would nest
// oneDNN's OpenMP regions inside ours.
// Work is split into tasks of 64 query rows (forward) or chunks of 64-key tiles (backward) per
// head over the shared pool (core/parallel.h); every sum runs in an order fixed by the shapes,
// so results do not depend on the thread count.
// float32 runs here; bfloat16/float16 run on float32 copies (float32 accumulation) and are stored
// back; float64 goes to the reference kernel (used by the float64 gradient checks).
#include <algorithm>
#include <limits>
#include <vector>

#include "osprey/core/parallel.h"
#include "osprey/tensor/attention_dropout.h"
#include "osprey/tensor/cpu/attention_tiles.h"
#include "osprey/tensor/cpu/dnnl_info.h"
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

AttentionKernels attention_kernels_avx2();
AttentionKernels attention_kernels_avx512();

namespace {

const AttentionKernels& attention_kernels() {
  static const AttentionKernels k =
      avx512_available() ? attention_kernels_avx512() : attention_kernels_avx2();
  return k;
}

void apply_attention_dropout(const AttentionProblem& p, int64_t e0, float* x, int64_t n) {
  osprey::detail::AttentionDropout(p.dropout_seed, p.dropout_rate).apply(e0, x, n);
}

bool half(DType d) { return d == DType::bfloat16 || d == DType::float16; }

// t [B, G, T, D] (contiguous float32) transposed tile by tile to [B, G, tiles, D, BK], zeros
// past T: the layout AttentionProblem::kt and vt take.
Tensor transposed_tiles(const Tensor& t) {
  const int64_t bg = t.size(0) * t.size(1), len = t.size(2), d = t.size(3);
  constexpr int64_t bk = kAttentionBlockK;
  const int64_t tiles = (len + bk - 1) / bk;
  Tensor out = Tensor::empty({bg, tiles, d, bk}, {DType::float32});
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  parallel_for(0, bg * tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t j0 = (task % tiles) * bk, n = std::min(bk, len - j0);
      const float* from = src + ((task / tiles) * len + j0) * d;
      float* to = dst + task * d * bk;
      for (int64_t c = 0; c < d; ++c) {
        for (int64_t j = 0; j < n; ++j) to[c * bk + j] = from[j * d + c];
        for (int64_t j = n; j < bk; ++j) to[c * bk + j] = 0.0f;
      }
    }
  });
  return out;
}

AttentionProblem describe(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                          const Tensor* key_padding, const AttentionParams& params) {
  AttentionProblem p;
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.tq = q.size(2);
  p.d = q.size(3);
  p.kv_heads = k.size(1);
  p.tk = k.size(2);
  p.dv = v.size(3);
  p.q = q.data<float>();
  p.k = k.data<float>();
  p.v = v.data<float>();
  if (mask != nullptr) {
    if (mask->dtype() == DType::boolean) {
      p.bool_mask = mask->data<bool>();
    } else {
      p.float_mask = mask->data<float>();
    }
    for (int a = 0; a < 4; ++a) p.mask_strides[a] = mask->strides()[a];
  }
  if (key_padding != nullptr) p.key_padding = key_padding->data<bool>();
  p.scale = static_cast<float>(params.scale);
  p.causal = params.causal;
  p.dropout_rate = params.dropout_rate;
  p.dropout_seed = params.dropout_seed;
  p.apply_dropout = &apply_attention_dropout;
  return p;
}

// Runs kernel over tasks [0, n) on the pool, each thread with its own scratch.
void run_tasks(const AttentionProblem& p, int64_t n,
               void (*kernel)(const AttentionProblem&, int64_t, float*)) {
  const auto scratch_floats = static_cast<size_t>(attention_scratch_floats(p));
  parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    for (int64_t t = begin; t < end; ++t) kernel(p, t, scratch.data());
  });
}

bool fast_path(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  const DType d = q.dtype();
  if (d != DType::float32 && !half(d)) return false;
  if (k.dtype() != d || v.dtype() != d) return false;
  return mask == nullptr || mask->dtype() == DType::boolean || mask->dtype() == DType::float32;
}

Tensor as_float32(const Tensor& t) { return t.to(DType::float32).contiguous(); }
// Where a kernel writes t's value: t itself when it is contiguous float32, else a float32 copy
// stored back into t afterwards.
Tensor float32_result(const Tensor& t) {
  return t.dtype() == DType::float32 && t.is_contiguous() ? t : float32_like(t);
}

}  // namespace

void attention_forward(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                       const Tensor* mask, const Tensor* key_padding, const AttentionParams& params,
                       Tensor& out, Tensor& lse) {
  if (!fast_path(q_in, k_in, v_in, mask)) {
    return reference::attention_forward(q_in, k_in, v_in, mask, key_padding, params, out, lse);
  }
  const Tensor q = as_float32(q_in), k = as_float32(k_in), v = as_float32(v_in);
  const Tensor kt = transposed_tiles(k);
  Tensor out32 = float32_result(out);
  AttentionProblem p = describe(q, k, v, mask, key_padding, params);
  p.kt = kt.data<float>();
  p.out = out32.data<float>();
  p.lse = lse.data<float>();
  run_tasks(p, p.batch * p.heads * attention_query_tiles(p), attention_kernels().forward);
  if (!out32.shares_storage(out)) copy(out32, out);
}

void attention_backward(const Tensor& dout_in, const Tensor& q_in, const Tensor& k_in,
                        const Tensor& v_in, const Tensor* mask, const Tensor* key_padding,
                        const Tensor& out_in, const Tensor& lse, const AttentionParams& params,
                        Tensor& dq, Tensor& dk, Tensor& dv) {
  if (!fast_path(q_in, k_in, v_in, mask)) {
    return reference::attention_backward(dout_in, q_in, k_in, v_in, mask, key_padding, out_in, lse,
                                         params, dq, dk, dv);
  }
  const Tensor q = as_float32(q_in), k = as_float32(k_in), v = as_float32(v_in);
  const Tensor dout = as_float32(dout_in), out = as_float32(out_in);
  const Tensor kt = transposed_tiles(k), vt = transposed_tiles(v);
  const Tensor lse32 = as_float32(lse);
  // delta[row] = rowsum(dout * out): the softmax backward's correction, once per query row.
  const int64_t rows = q.size(0) * q.size(1) * q.size(2), dv_size = v.size(3);
  Tensor delta = Tensor::empty({rows}, {DType::float32});
  {
    const float* o = out.data<float>();
    const float* g = dout.data<float>();
    float* dl = delta.data<float>();
    parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float s = 0.0f;
        for (int64_t c = 0; c < dv_size; ++c) s += o[r * dv_size + c] * g[r * dv_size + c];
        dl[r] = s;
      }
    });
  }
  Tensor dq32 = float32_result(dq), dk32 = float32_result(dk), dv32 = float32_result(dv);
  AttentionProblem p = describe(q, k, v, mask, key_padding, params);
  p.kt = kt.data<float>();
  p.vt = vt.data<float>();
  p.lse = lse32.data<float>();  // read only in backward
  p.dout = dout.data<float>();
  p.delta = delta.data<float>();
  p.key_chunks = attention_key_chunks(p);
  const int64_t n = q.numel(), chunks = p.key_chunks;
  dq32.fill_(0.0);
  Tensor extra = chunks > 1 ? zeros({chunks - 1, n}, {DType::float32}) : Tensor();
  p.dq_chunks[0] = dq32.data<float>();
  for (int64_t c = 1; c < chunks; ++c) p.dq_chunks[c] = extra.data<float>() + (c - 1) * n;
  p.dk = dk32.data<float>();
  p.dv_out = dv32.data<float>();
  run_tasks(p, p.batch * p.kv_heads * chunks, attention_kernels().backward);
  // dq = scale * the chunks' buffers summed in chunk order.
  {
    float* const* part = p.dq_chunks;
    const float scale = p.scale;
    parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        float s = part[0][e];
        for (int64_t c = 1; c < chunks; ++c) s += part[c][e];
        part[0][e] = scale * s;
      }
    });
  }
  if (!dq32.shares_storage(dq)) copy(dq32, dq);
  if (!dk32.shares_storage(dk)) copy(dk32, dk);
  if (!dv32.shares_storage(dv)) copy(dv32, dv);
}

}  // namespace osprey::cpu
