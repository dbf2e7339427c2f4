// RotaryEmbedding against the rotation written out element by element in float64, its
// relative-position property, start_index, config and errors.
#include "osprey/nn/layers/rotary_embedding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"

namespace osprey::nn {
namespace {

using test::value_error;
using test::wave;

TEST(RotaryEmbeddingTest, RotatesEachFeaturePairByPositionTimesFrequency) {
  auto rope =
      layers::RotaryEmbedding({.max_wavelength = 100, .scaling_factor = 2, .dtype = "float64"});
  const int64_t b = 2, t = 5, h = 3, d = 8, half = d / 2;
  const Tensor x = wave({b, t, h, d}, 1);  // float64
  const std::vector<double> got = rope(Variable(x)).value().to_vector<double>();
  const std::vector<double> in = x.to_vector<double>();
  for (int64_t n = 0; n < b * t * h; ++n) {
    const int64_t p = (n / h) % t;
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) / (std::pow(100.0, 2.0 * i / d) * 2.0);
      const double x1 = in[n * d + i], x2 = in[n * d + i + half];
      EXPECT_NEAR(got[n * d + i], x1 * std::cos(angle) - x2 * std::sin(angle), 1e-12);
      EXPECT_NEAR(got[n * d + i + half], x2 * std::cos(angle) + x1 * std::sin(angle), 1e-12);
    }
  }
}

TEST(RotaryEmbeddingTest, ScoresDependOnTheOffsetOnlyAndStartIndexShifts) {
  auto rope = layers::RotaryEmbedding({.dtype = "float64"});
  // The same query and key vectors at every position of [1, 8, 1, 16].
  Tensor q = wave({1, 1, 1, 16}, 2).expand({1, 8, 1, 16}).contiguous();
  Tensor k = wave({1, 1, 1, 16}, 3).expand({1, 8, 1, 16}).contiguous();
  const std::vector<double> rq = rope(Variable(q)).value().to_vector<double>();
  const std::vector<double> rk = rope(Variable(k)).value().to_vector<double>();
  const auto score = [&](int pq, int pk) {
    double s = 0;
    for (int i = 0; i < 16; ++i) s += rq[pq * 16 + i] * rk[pk * 16 + i];
    return s;
  };
  EXPECT_NEAR(score(3, 1), score(7, 5), 1e-12);
  EXPECT_NEAR(score(2, 2), score(6, 6), 1e-12);
  const Tensor step = rope->rotate(Variable(q.narrow(1, 5, 1).contiguous()), 5).value();
  const std::vector<double> s = step.to_vector<double>();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(s[i], rq[5 * 16 + i], 1e-12);
}

TEST(RotaryEmbeddingTest, ConfigAndErrors) {
  auto rope = layers::RotaryEmbedding({.max_wavelength = 500, .name = "rope"});
  EXPECT_EQ(layer_from_config("RotaryEmbedding", rope->get_config())->get_config(),
            rope->get_config());
  EXPECT_EQ(value_error([&] {
              rope(Variable(wave({1, 4, 3}, 1)));
            }),
            "rope: expected [batch, T, ..., features] with the sequence on axis 1 and an even "
            "number of features. Received: [1, 4, 3]");
}

}  // namespace
}  // namespace osprey::nn
