// The index checks every embedding lookup layer (Embedding, quant::QuantizedEmbedding) runs on
// its input, so their messages name the layer and its input_dim rather than the kernel.
#pragma once

#include <string>

#include "osprey/core/error.h"
#include "osprey/tensor/tensor.h"

namespace osprey::nn::detail {

// ids as int32/int64 (float indices truncated, as Keras casts them), each checked in [0,
// input_dim).
inline Tensor embedding_indices(const Tensor& x, int64_t input_dim, const std::string& layer) {
  Tensor ids = x;
  if (ids.dtype() != DType::int32 && ids.dtype() != DType::int64) {
    OSPREY_CHECK(is_floating(ids.dtype()), "{}: expected integer indices. Received: {}", layer,
                 ids.describe());
    ids = ids.to(DType::int64);
  }
  const Tensor c = ids.to(DType::int64).contiguous();
  const int64_t* p = c.data<int64_t>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    OSPREY_CHECK(
        p[i] >= 0 && p[i] < input_dim,
        "{}: index {} at position {} is out of range: expected indices in [0, {}) (input_dim={})",
        layer, p[i], i, input_dim, input_dim);
  }
  return ids;
}

}  // namespace osprey::nn::detail
