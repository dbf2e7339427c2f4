// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011, as in cuRAND and JAX): the
// i-th number of a stream is a pure function of (seed, stream offset, i), so a tensor filled in
// parallel holds the same numbers on any thread count, and a generator can be split without
// coordination.
//   Philox rng(seed);  auto block = rng(counter);  // four independent 32-bit words
#pragma once

#include <array>
#include <cstdint>

namespace osprey {

class Philox {
 public:
  explicit Philox(uint64_t seed) noexcept
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}

  // Four random 32-bit words for a 128-bit counter (hi:lo).
  std::array<uint32_t, 4> operator()(uint64_t lo, uint64_t hi = 0) const noexcept {
    std::array<uint32_t, 4> c{static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32),
                              static_cast<uint32_t>(hi), static_cast<uint32_t>(hi >> 32)};
    std::array<uint32_t, 2> k = key_;
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
      const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
      c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
      k[0] += kW0;
      k[1] += kW1;
    }
    return c;
  }

  // Uniform float in [0, 1) from a 32-bit word (24 random bits, exactly representable).
  static float to_unit_float(uint32_t x) noexcept {
    return static_cast<float>(x >> 8) * 0x1.0p-24f;
  }
  // Uniform double in [0, 1) from two words (53 random bits).
  static double to_unit_double(uint32_t hi, uint32_t lo) noexcept {
    const uint64_t v = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
    return static_cast<double>(v & ((1ull << 53) - 1)) * 0x1.0p-53;
  }

 private:
  static constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  static constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::array<uint32_t, 2> key_;
};

// The process-wide default seed for ops that draw random numbers without an explicit seed
// (dropout, initializers): set_seed(s) makes a whole program reproducible.
void set_global_seed(uint64_t seed) noexcept;
// Returns a fresh seed derived from the global seed and a process-wide counter.
uint64_t next_seed() noexcept;

// The global seed stream's position: a training backup saves it so that a resumed run draws the
// same seeds (unseeded Dropout, initializers) as the run it continues.
struct GlobalSeedState {
  uint64_t seed = 0;
  uint64_t counter = 0;  // next_seed() calls since set_global_seed
};
GlobalSeedState global_seed_state() noexcept;
void set_global_seed_state(const GlobalSeedState& state) noexcept;

}  // namespace osprey
