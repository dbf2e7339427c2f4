#include "osprey/core/rng.h"

#include <atomic>

namespace osprey {

namespace {
std::atomic<uint64_t> g_seed{0x5EED0517ull};
std::atomic<uint64_t> g_counter{0};
}  // namespace

void set_global_seed(uint64_t seed) noexcept {
  g_seed.store(seed);
  g_counter.store(0);
}

uint64_t next_seed() noexcept {
  const uint64_t n = g_counter.fetch_add(1);
  const auto w = Philox(g_seed.load())(n, 0x6E657874ull);
  return (static_cast<uint64_t>(w[0]) << 32) | w[1];
}

GlobalSeedState global_seed_state() noexcept { return {g_seed.load(), g_counter.load()}; }

void set_global_seed_state(const GlobalSeedState& state) noexcept {
  g_seed.store(state.seed);
  g_counter.store(state.counter);
}

}  // namespace osprey
