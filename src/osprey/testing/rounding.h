// What a test may assume of floating-point results (docs/determinism.md). The same bits for the
// same ISA, thread count and batch split: tests assert those bitwise. Across batch splits (a
// batch of 7 rows against one of 60, a replica's share against the whole batch) or ISAs, oneDNN
// picks other kernels and blockings, which sum in another order: a result may then differ by the
// rounding of its dtype's sums, and tests allow that much, relative to the result's scale.
//   EXPECT_LE(max_abs_diff, testing::kFloat32ReorderedSums * max_abs_value);
#pragma once

#include <limits>

namespace osprey::testing {

// The relative difference two float32 computations of one model may show when their sums run in
// another order: 64 float32 epsilons (7.6e-6). A dot product of n terms reordered moves by up to
// about 2 (n - 1) u of the sum of magnitudes in the worst case and by sqrt(n) u typically (u =
// epsilon / 2); the layers of a small test model (widths up to a few hundred) compound a few of
// those. Observed on AVX2 against AVX-512: 1e-6 relative.
inline constexpr double kFloat32ReorderedSums = 64.0 * std::numeric_limits<float>::epsilon();

}  // namespace osprey::testing
