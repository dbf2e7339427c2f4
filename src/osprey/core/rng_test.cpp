// Philox-4x32-10 against the known-answer vectors of the Random123 distribution (kat_vectors),
// and the properties the rest of osprey relies on: purity and the unit-interval mappings.
#include "osprey/core/rng.h"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace osprey {
namespace {

// Random123 lists the counter as four words c0..c3 and the key as k0, k1; Philox takes the counter
// as lo = c1:c0, hi = c3:c2 and the seed as k1:k0.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const uint64_t seed = (static_cast<uint64_t>(k[1]) << 32) | k[0];
  return Philox(seed)((static_cast<uint64_t>(c[1]) << 32) | c[0],
                      (static_cast<uint64_t>(c[3]) << 32) | c[2]);
}

TEST(PhiloxTest, MatchesTheRandom123KnownAnswerVectors) {
  using W4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox({0, 0, 0, 0}, {0, 0}), (W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, OutputIsAPureFunctionOfSeedAndCounter) {
  const Philox a(42), b(42), c(43);
  EXPECT_EQ(a(7, 1), b(7, 1));
  EXPECT_NE(a(7, 1), c(7, 1));
  EXPECT_NE(a(7, 1), a(8, 1));
  EXPECT_NE(a(7, 1), a(7, 2));
  std::set<uint32_t> words;
  for (uint64_t i = 0; i < 1000; ++i) {
    for (uint32_t w : a(i)) words.insert(w);
  }
  EXPECT_GT(words.size(), 3990u);  // 4000 words; a 32-bit collision or two is possible
}

TEST(PhiloxTest, UnitFloatsStayInsideTheHalfOpenInterval) {
  EXPECT_EQ(Philox::to_unit_float(0), 0.0f);
  EXPECT_LT(Philox::to_unit_float(0xffffffffu), 1.0f);
  EXPECT_EQ(Philox::to_unit_float(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(Philox::to_unit_float(0x80000000u), 0.5f);
  EXPECT_EQ(Philox::to_unit_double(0, 0), 0.0);
  EXPECT_EQ(Philox::to_unit_double(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
  EXPECT_EQ(Philox::to_unit_double(0x80000000u, 0), 0.5);
  const Philox rng(3);
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) sum += Philox::to_unit_float(rng(i)[0]);
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(PhiloxTest, GlobalSeedMakesNextSeedReproducible) {
  set_global_seed(1234);
  const uint64_t a0 = next_seed(), a1 = next_seed();
  set_global_seed(1234);
  EXPECT_EQ(next_seed(), a0);
  EXPECT_EQ(next_seed(), a1);
  EXPECT_NE(a0, a1);
  set_global_seed(1235);
  EXPECT_NE(next_seed(), a0);
}

}  // namespace
}  // namespace osprey
