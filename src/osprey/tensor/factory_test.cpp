#include "osprey/tensor/factory.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/parallel.h"
#include "osprey/tensor/ops.h"

namespace osprey {
namespace {

TEST(FactoryTest, ConstantsAndRanges) {
  EXPECT_EQ(ones({2, 2}).to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(full({3}, 2.5, {DType::float64}).to_vector<double>(),
            (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(arange(0.0, 1.0, 0.25).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(arange(5.0, 0.0, -2.0).to_vector<float>(), (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(zeros_like(ones({2, 3}, {DType::int32})).dtype(), DType::int32);
  EXPECT_THROW(arange(0.0, 1.0, 0.0), ValueError);
}

TEST(FactoryTest, FromVectorChecksTheElementCount) {
  try {
    from_vector<float>({1, 2, 3}, {2, 2});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "from_vector: 3 values do not fill shape [2, 2] (4 elements)");
  }
}

TEST(FactoryTest, SameSeedSameNumbersOnAnyThreadCount) {
  const int saved = num_threads();
  set_num_threads(1);
  const std::vector<float> a = random_normal({1000, 37}, {.seed = 7}).to_vector<float>();
  const std::vector<float> u1 = random_uniform({4096}, {.seed = 9}).to_vector<float>();
  set_num_threads(2);
  const std::vector<float> b = random_normal({1000, 37}, {.seed = 7}).to_vector<float>();
  const std::vector<float> u2 = random_uniform({4096}, {.seed = 9}).to_vector<float>();
  set_num_threads(saved);
  EXPECT_EQ(a, b);
  EXPECT_EQ(u1, u2);
  EXPECT_NE(a, random_normal({1000, 37}, {.seed = 8}).to_vector<float>());
}

TEST(FactoryTest, RandomMomentsMatchTheirDistributions) {
  Tensor n =
      random_normal({200000}, {.seed = 1, .dtype = DType::float64, .mean = 2.0, .stddev = 3.0});
  const double m = mean(n).item();
  const double var = mean(square(add(n, -m))).item();
  EXPECT_NEAR(m, 2.0, 0.03);  // 4.5 standard errors
  EXPECT_NEAR(std::sqrt(var), 3.0, 0.03);
  Tensor u = random_uniform({200000}, {.seed = 2, .low = -1.0, .high = 3.0});
  EXPECT_NEAR(mean(u).item(), 1.0, 0.015);
  EXPECT_GE(min(u).item(), -1.0);
  EXPECT_LT(max(u).item(), 3.0);
  Tensor b = random_bernoulli({100000}, 0.3, {.seed = 3});
  EXPECT_NEAR(mean(b).item(), 0.3, 0.007);
  EXPECT_EQ(sum(mul(b, sub(b, ones({1})))).item(), 0.0);  // only zeros and ones
}

}  // namespace
}  // namespace osprey
