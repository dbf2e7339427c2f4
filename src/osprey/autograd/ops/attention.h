// Differentiable scaled dot-product attention as one op: the backend's tiled kernel (FlashAttention
// forward with a saved log-sum-exp per row, FlashAttention-2 backward that recomputes the score
// tiles), so memory grows linearly with the sequence length in forward and backward. Shapes,
// masks, causal alignment, grouped-query heads and dropout are as tensor/ops_attention.h says
// (PyTorch 2's scaled_dot_product_attention semantics). Gradients flow to query, key and value;
// masks are constants. 16-bit inputs are computed in float32 and keep their dtype.
//   Variable y = scaled_dot_product_attention(q, k, v, {.causal = true});
//   auto [y2, w] = scaled_dot_product_attention_with_weights(q, k, v, {.mask = pad});
#pragma once

#include "osprey/autograd/variable.h"
#include "osprey/tensor/ops_attention.h"

namespace osprey::autograd {

using osprey::AttentionOptions;

// q [batch, heads, Tq, d], k [batch, kv_heads, Tk, d], v [batch, kv_heads, Tk, dv]
//   -> [batch, heads, Tq, dv]
Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionOptions& options = {});

struct AttentionResult {
  Variable output;
  Tensor weights;  // softmax weights before dropout, [batch, heads, Tq, Tk]; not differentiated
};
// As above, and the attention weights, materialized (Keras's return_attention_scores): meant
// for inspecting small cases, since they take Tq * Tk memory per head.
AttentionResult scaled_dot_product_attention_with_weights(const Variable& q, const Variable& k,
                                                          const Variable& v,
                                                          const AttentionOptions& options = {});

}  // namespace osprey::autograd
