// The dropout decisions of scaled dot-product attention, shared by every backend so that the
// reference and the tiled kernels, forward and backward, drop the same weights without storing a
// mask: weight (b, h, i, j) of the [B, H, Tq, Tk] weights, at row-major index e, is kept when
// word e % 4 of Philox(seed) at counter e / 4 gives a uniform number >= rate (core/rng.h).
// Internal to tensor/ (a kernel helper, not user API).
#pragma once

#include <array>
#include <cstdint>

#include "osprey/core/rng.h"

namespace osprey::detail {

class AttentionDropout {
 public:
  AttentionDropout(uint64_t seed, double rate) noexcept
      : rng_(seed), rate_(static_cast<float>(rate)), inv_keep_(1.0 / (1.0 - rate)) {}

  bool keep(int64_t e) const noexcept {
    const uint64_t u = static_cast<uint64_t>(e);
    return Philox::to_unit_float(rng_(u / 4)[u % 4]) >= rate_;
  }
  // The factor a kept weight is multiplied by: 1 / (1 - rate).
  double inv_keep() const noexcept { return inv_keep_; }

  // x[c] *= keep(e0 + c) ? 1 / (1 - rate) : 0 for c in [0, n): one Philox call per four weights.
  template <class T>
  void apply(int64_t e0, T* x, int64_t n) const noexcept {
    const T inv = static_cast<T>(inv_keep_);
    uint64_t block = ~uint64_t{0};
    std::array<uint32_t, 4> words{};
    for (int64_t c = 0; c < n; ++c) {
      const uint64_t e = static_cast<uint64_t>(e0 + c);
      if (e / 4 != block) {
        block = e / 4;
        words = rng_(block);
      }
      x[c] = Philox::to_unit_float(words[e % 4]) >= rate_ ? x[c] * inv : T(0);
    }
  }

 private:
  Philox rng_;
  float rate_;
  double inv_keep_;
};

}  // namespace osprey::detail
