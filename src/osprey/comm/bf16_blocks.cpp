#include "osprey/comm/bf16_blocks.h"

#include "osprey/core/float_types.h"

namespace osprey::comm {

void Bf16Blocks::pack(const float* data, int64_t count, int ranks) {
  ranks_ = ranks;
  count_ = count;
  block_ = (count + ranks - 1) / ranks;
  const auto total = static_cast<size_t>(block_ * ranks);
  send_.assign(total, 0);
  recv_.resize(total);
  for (int64_t i = 0; i < count; ++i)
    send_[static_cast<size_t>(i)] = detail::f32_to_bf16_bits(data[i]);
}

void Bf16Blocks::reduce(ReduceOp op) {
  for (int64_t i = 0; i < block_; ++i) {
    float acc = detail::bf16_bits_to_f32(recv_[static_cast<size_t>(i)]);
    for (int q = 1; q < ranks_; ++q)
      acc += detail::bf16_bits_to_f32(recv_[static_cast<size_t>(q * block_ + i)]);
    if (op == ReduceOp::mean) acc /= static_cast<float>(ranks_);
    send_[static_cast<size_t>(i)] = detail::f32_to_bf16_bits(acc);
  }
}

void Bf16Blocks::unpack(float* data) const {
  for (int64_t i = 0; i < count_; ++i)
    data[i] = detail::bf16_bits_to_f32(recv_[static_cast<size_t>(i)]);
}

}  // namespace osprey::comm
