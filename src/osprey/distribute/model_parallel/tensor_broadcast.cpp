#include "osprey/distribute/model_parallel/tensor_broadcast.h"

#include <array>

#include "osprey/core/error.h"

namespace osprey::distribute {

Tensor broadcast_tensor(comm::Communicator& c, const Tensor& t, int root) {
  constexpr int kMaxDims = 7;
  std::array<float, kMaxDims + 1> header{};
  if (c.rank() == root && !t.defined()) {
    header[0] = -1.0F;  // nothing to send: every rank returns an undefined tensor
  } else if (c.rank() == root) {
    OSPREY_CHECK(t.ndim() <= kMaxDims, "broadcast_tensor: at most {} dimensions. Received: {}",
                 kMaxDims, t.shape().to_string());
    header[0] = static_cast<float>(t.ndim());
    for (int d = 0; d < t.ndim(); ++d) {
      // The header travels as floats: exact for sizes below 2^24.
      OSPREY_CHECK(t.size(d) < (int64_t{1} << 24),
                   "broadcast_tensor: dimension {} of {} is too large", d, t.shape().to_string());
      header[static_cast<size_t>(d) + 1] = static_cast<float>(t.size(d));
    }
  }
  c.broadcast(header.data(), kMaxDims + 1, root);
  if (header[0] < 0.0F) return {};
  Shape shape;
  for (int d = 0; d < static_cast<int>(header[0]); ++d)
    shape.push_back(static_cast<int64_t>(header[static_cast<size_t>(d) + 1]));
  Tensor out =
      c.rank() == root ? t.to(DType::float32).clone() : Tensor::empty(shape, {DType::float32});
  c.broadcast(out, root);
  return out;
}

}  // namespace osprey::distribute
