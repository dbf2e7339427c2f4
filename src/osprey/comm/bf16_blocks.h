// Bf16Blocks: the arithmetic of all_reduce_bf16 for backends that only move bytes (MPI, Gloo). The
// data is rounded to bf16 and cut into one block per rank; an all-to-all hands rank r every rank's
// block r, which reduce() sums in float32 in rank order; an all-gather hands every rank the summed
// blocks, which unpack() writes back as float32. The buffers grow once and are reused.
//   blocks.pack(data, n, size);
//   all_to_all(blocks.send(), blocks.recv(), blocks.block());  // the backend's call
//   blocks.reduce(op);
//   all_gather(blocks.send(), blocks.recv(), blocks.block());
//   blocks.unpack(data);
#pragma once

#include <cstdint>
#include <vector>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

class Bf16Blocks {
 public:
  // Rounds data[0, count) to bf16 into size() blocks of block() elements (the last zero padded).
  void pack(const float* data, int64_t count, int ranks);
  // recv() holds every rank's block for this rank: their float32 sum in rank order (divided by
  // the rank count for a mean), rounded to bf16, into the first block of send().
  void reduce(ReduceOp op);
  // recv() holds every rank's reduced block: the first `count` of them, as float32, into data.
  void unpack(float* data) const;

  int64_t block() const noexcept { return block_; }
  uint16_t* send() noexcept { return send_.data(); }
  uint16_t* recv() noexcept { return recv_.data(); }
  size_t total() const noexcept { return send_.size(); }

 private:
  int ranks_ = 1;
  int64_t count_ = 0, block_ = 0;
  std::vector<uint16_t> send_, recv_;
};

}  // namespace osprey::comm
