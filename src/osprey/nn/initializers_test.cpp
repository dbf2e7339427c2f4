#include "osprey/nn/initializers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {
namespace {

struct Stats {
  double mean = 0, stddev = 0, max_abs = 0;
};

Stats stats_of(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) {
    s.stddev += (x - s.mean) * (x - s.mean);
    s.max_abs = std::max(s.max_abs, std::abs(x));
  }
  s.stddev = std::sqrt(s.stddev / static_cast<double>(v.size()));
  return s;
}

TEST(InitializersTest, FansFollowKeras) {
  EXPECT_EQ(initializers::compute_fans({784, 512}), (std::pair<double, double>{784, 512}));
  // Conv2D kernel [kh, kw, in, out]: both fans times the receptive field.
  EXPECT_EQ(initializers::compute_fans({3, 3, 16, 32}), (std::pair<double, double>{144, 288}));
  EXPECT_EQ(initializers::compute_fans({10}), (std::pair<double, double>{10, 10}));
}

TEST(InitializersTest, GlorotUniformStaysWithinItsLimit) {
  // limit = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 500); a uniform's stddev is limit / sqrt(3).
  const double limit = std::sqrt(6.0 / 500.0);
  const Stats s = stats_of(initializers::get("glorot_uniform")({200, 300}, DType::float64, 7));
  EXPECT_LE(s.max_abs, limit);
  EXPECT_GT(s.max_abs, 0.99 * limit);
  EXPECT_NEAR(s.mean, 0.0, 0.002);
  EXPECT_NEAR(s.stddev, limit / std::sqrt(3.0), 0.01 * limit);
}

TEST(InitializersTest, HeNormalHasStddevSqrtTwoOverFanInAndIsTruncated) {
  // Keras draws a normal truncated at two standard deviations, with its stddev scaled up by
  // 1 / 0.8796 so the result keeps the variance 2 / fan_in.
  const double target = std::sqrt(2.0 / 400.0);
  const Stats s = stats_of(initializers::HeNormal()({400, 300}, DType::float64, 3));
  EXPECT_NEAR(s.stddev, target, 0.02 * target);
  EXPECT_NEAR(s.mean, 0.0, 0.002);
  EXPECT_LE(s.max_abs, 2.0 * target / 0.87962566103423978 + 1e-12);
  EXPECT_GT(s.max_abs, 1.9 * target / 0.87962566103423978);
}

TEST(InitializersTest, SameSeedSameValuesOtherSeedOtherValues) {
  const Initializer init = "glorot_normal";
  const auto a = init({16, 8}, DType::float32, 5).to_vector<float>();
  EXPECT_EQ(init({16, 8}, DType::float32, 5).to_vector<float>(), a);
  EXPECT_NE(init({16, 8}, DType::float32, 6).to_vector<float>(), a);
}

TEST(InitializersTest, ConstantsAndUniformRange) {
  EXPECT_EQ(initializers::Zeros()({3}, DType::float32, 0).to_vector<double>(),
            std::vector<double>(3, 0.0));
  EXPECT_EQ(initializers::Ones()({2}, DType::float64, 0).to_vector<double>(),
            std::vector<double>(2, 1.0));
  EXPECT_EQ(initializers::Constant(0.5)({2}, DType::float64, 0).to_vector<double>(),
            std::vector<double>(2, 0.5));
  const Stats s = stats_of(initializers::RandomUniform(-0.05, 0.05)({1000}, DType::float64, 1));
  EXPECT_LE(s.max_abs, 0.05);
}

TEST(InitializersTest, JsonRoundTripsAsKerasWritesIt) {
  const nlohmann::json j = initializers::RandomNormal(0.5, 0.2).to_json();
  EXPECT_EQ(j["class_name"], "RandomNormal");
  EXPECT_EQ(j["config"]["mean"], 0.5);
  EXPECT_EQ(j["config"]["stddev"], 0.2);
  EXPECT_EQ(initializers::from_json(j).to_json(), j);
  EXPECT_EQ(initializers::from_json("he_uniform").to_json()["class_name"], "HeUniform");
  EXPECT_EQ(initializers::from_json({{"class_name", "GlorotUniform"}, {"config", {}}}).name(),
            "glorot_uniform");
}

TEST(InitializersTest, UnknownNamesListTheKnownOnes) {
  EXPECT_EQ(test::value_error([] { initializers::get("identity"); }),
            "unknown initializer 'identity'. Expected one of: zeros, ones, glorot_uniform, "
            "glorot_normal, he_normal, he_uniform, lecun_normal, random_normal, random_uniform, "
            "orthogonal");
}

// W^T W = gain^2 I for a tall weight (flattened to [prod(shape[:-1]), last]), W W^T for a wide one.
TEST(InitializersTest, OrthogonalGivesOrthonormalColumnsOrRows) {
  const auto gram = [](const Tensor& w, bool columns) {
    const Tensor m = w.to(DType::float64).reshape({-1, w.shape()[w.ndim() - 1]});
    return columns ? matmul(m.transpose(0, 1), m) : matmul(m, m.transpose(0, 1));
  };
  const auto expect_identity = [](const Tensor& g, double scale, double tol) {
    const int64_t n = g.shape()[0];
    const std::vector<double> v = g.to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(v[static_cast<size_t>(i * n + j)], i == j ? scale : 0.0, tol) << i << "," << j;
  };
  const Initializer ortho = "orthogonal";
  expect_identity(gram(ortho({3, 4, 5}, DType::float32, 7), true), 1.0, 1e-5);  // 12 x 5
  expect_identity(gram(ortho({3, 7}, DType::float64, 8), false), 1.0, 1e-12);   // 3 x 7
  expect_identity(gram(initializers::Orthogonal(2.0)({64, 64}, DType::float64, 9), true), 4.0,
                  1e-11);
  EXPECT_EQ(ortho({6, 6}, DType::float64, 1).to_vector<double>(),
            ortho({6, 6}, DType::float64, 1).to_vector<double>());
  EXPECT_NE(ortho({6, 6}, DType::float64, 1).to_vector<double>(),
            ortho({6, 6}, DType::float64, 2).to_vector<double>());
  const nlohmann::json j = initializers::Orthogonal(0.5).to_json();
  EXPECT_EQ(j["class_name"], "Orthogonal");
  EXPECT_EQ(j["config"]["gain"], 0.5);
  EXPECT_EQ(initializers::from_json(j).to_json(), j);
  EXPECT_EQ(test::value_error([&] { ortho({5}, DType::float32, 1); }),
            "Orthogonal: the weight needs at least 2 dimensions. Received: [5]");
}

}  // namespace
}  // namespace osprey::nn
