// Scaled dot-product attention as one op, without gradients: the checks (named
// "scaled_dot_product_attention", with the shapes), option resolution and output allocation
// around the Backend kernels attention_forward/backward (backend.h). autograd/ops/attention.h
// makes it differentiable; the layers build on that.
//   q [batch, heads, Tq, d] · k [batch, kv_heads, Tk, d] · v [batch, kv_heads, Tk, dv]
//     -> out [batch, heads, Tq, dv]
// Semantics, as PyTorch 2's torch.nn.functional.scaled_dot_product_attention:
// softmax(scale * q k^T + mask) v with dropout on the softmax weights; causal is top-left
// aligned (query i sees keys j <= i, also when Tq != Tk, as PyTorch's is_causal and Keras's
// use_causal_mask), so a decoder step with a key/value cache passes causal = false. Grouped-query
// attention: query head h reads kv head h / (heads / kv_heads). A query row left with no key to
// attend to (fully masked) gives output 0 and gradients 0, never NaN.
#pragma once

#include <cstdint>
#include <optional>

#include "osprey/tensor/backend.h"

namespace osprey {

struct AttentionOptions {
  bool causal = false;
  // Broadcastable to [batch, heads, Tq, Tk] (numpy rules, aligned right: [Tq, Tk],
  // [batch, 1, Tq, Tk], [batch, 1, 1, Tk], ...): bool, true = may attend (Keras's
  // attention_mask and PyTorch 2's bool attn_mask), or float, added to the scaled scores
  // (-inf masks). Not differentiated.
  Tensor mask{};
  // [batch, Tk] bool, true = a real key, false = padding (Keras's mask convention; note that
  // PyTorch's nn.MultiheadAttention key_padding_mask means the opposite). Combines with mask.
  Tensor key_padding_mask{};
  std::optional<double> scale{};  // default 1 / sqrt(d)
  double dropout = 0.0;           // rate on the attention weights, in [0, 1)
  uint64_t seed = 0;              // of the dropout decisions (attention_dropout.h)
};

// The checked inputs as the kernels take them: q, k, v contiguous; mask expanded to
// [batch, heads, Tq, Tk] (float masks cast to float32, or float64 for float64 q); key padding
// contiguous [batch, Tk] bool.
struct AttentionInputs {
  Tensor q, k, v, mask, key_padding;
  AttentionParams params;
};

struct AttentionOutputs {
  Tensor out;  // [batch, heads, Tq, dv]
  Tensor lse;  // [batch, heads, Tq]: log-sum-exp of each row of scores, kept for backward
};

struct AttentionGrads {
  Tensor dq, dk, dv;
};

// Throws ValueError naming the op, the argument and the shapes/dtypes for bad input.
AttentionInputs resolve_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& options);
AttentionOutputs attention_forward(const AttentionInputs& in);
AttentionGrads attention_backward(const AttentionInputs& in, const AttentionOutputs& forward,
                                  const Tensor& dout);
// softmax(scale * q k^T + mask) before dropout, [batch, heads, Tq, Tk]: materialized, for
// inspection (return_attention_scores) of small cases.
Tensor attention_weights(const AttentionInputs& in);

// The forward output alone.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

}  // namespace osprey
