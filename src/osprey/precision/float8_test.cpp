// The float8 recipe against hand-computed values: round to nearest even on the e4m3fn and e5m2
// grids (subnormals, ties, saturation, NaN), the scale formula and the amax history.
#include "osprey/precision/float8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::precision {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> qdq(const std::vector<float>& xs, DType format, float scale,
                       float* amax = nullptr) {
  const Tensor x = from_vector<float>(xs, {static_cast<int64_t>(xs.size())});
  return quantize_dequantize(x, format, scale, amax).to_vector<float>();
}

TEST(Float8Test, E4m3fnRoundsToNearestEvenSaturatesAndKeepsSubnormals) {
  const float s = std::ldexp(1.0f, -9);  // the smallest e4m3fn subnormal
  const std::vector<float> got =
      qdq({448.0f, 464.0f, 1e6f, -1e6f, kInf, -kInf, 240.0f, 250.0f, 17.0f, 19.0f, -19.0f, s, s / 2,
           3 * s / 2, 0.7f * s, 7 * s, 8 * s, 0.0f},
          DType::float8_e4m3fn, 1.0f);
  const std::vector<float> want = {448.0f, 448.0f, 448.0f, -448.0f, 448.0f, -448.0f,
                                   240.0f, 256.0f, 16.0f,  20.0f,   -20.0f, s,
                                   0.0f,   2 * s,  s,      7 * s,   8 * s,  0.0f};
  EXPECT_EQ(got, want);
}

TEST(Float8Test, E5m2RoundsToNearestEvenAndSaturatesInsteadOfOverflowingToInf) {
  const float s = std::ldexp(1.0f, -16);  // the smallest e5m2 subnormal
  const std::vector<float> got =
      qdq({57344.0f, 60000.0f, 1e9f, kInf, -kInf, 5.5f, 4.5f, -6.5f, s, s / 2, 3 * s / 2, 1e-6f},
          DType::float8_e5m2, 1.0f);
  const std::vector<float> want = {57344.0f, 57344.0f, 57344.0f, 57344.0f, -57344.0f, 6.0f,
                                   4.0f,     -6.0f,    s,        0.0f,     2 * s,     0.0f};
  EXPECT_EQ(got, want);
}

TEST(Float8Test, TheScaleMultipliesBeforeRoundingAndDividesAfter) {
  // 3.3 * 100 = 330 lies in [256, 512) where e4m3fn steps by 32: 320 is nearest. -50 is a tie
  // between -48 (mantissa 100) and -52 (101): the even one wins.
  EXPECT_EQ(qdq({3.3f, 1000.0f, -0.5f}, DType::float8_e4m3fn, 100.0f),
            (std::vector<float>{320.0f / 100.0f, 448.0f / 100.0f, -48.0f / 100.0f}));
  // 1000 * 0.25 = 250 -> 256 -> 1024.
  EXPECT_EQ(qdq({1000.0f}, DType::float8_e4m3fn, 0.25f), (std::vector<float>{1024.0f}));
}

TEST(Float8Test, NanStaysNanAndAmaxIgnoresIt) {
  float amax = -1.0f;
  const std::vector<float> got = qdq({1.0f, std::nanf(""), -3.0f}, DType::float8_e5m2, 1.0f, &amax);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], -3.0f);
  EXPECT_EQ(amax, 3.0f);
  qdq({1.0f, -kInf}, DType::float8_e4m3fn, 1.0f, &amax);
  EXPECT_EQ(amax, kInf);
  qdq({}, DType::float8_e4m3fn, 1.0f, &amax);
  EXPECT_EQ(amax, 0.0f);
}

// A large tensor crosses block and thread-chunk boundaries; every element must equal the scalar
// conversion of core/float_types.h, and the input dtype may be wider than float32.
TEST(Float8Test, BulkResultEqualsTheScalarConversionElementByElement) {
  const Tensor x = random_normal({301, 517}, {.seed = 7, .stddev = 30.0});
  float amax = 0.0f;
  const float scale = 3.7f;
  const auto got = quantize_dequantize(x.to(DType::float64), DType::float8_e4m3fn, scale, &amax)
                       .to_vector<float>();
  const auto xs = x.to_vector<float>();
  float want_amax = 0.0f;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float v = std::clamp(xs[i] * scale, -448.0f, 448.0f);
    ASSERT_EQ(got[i], static_cast<float>(float8_e4m3fn(v)) / scale)
        << "element " << i << " x=" << xs[i];
    want_amax = std::max(want_amax, std::fabs(xs[i]));
  }
  EXPECT_EQ(amax, want_amax);
}

TEST(Float8Test, BadFormatScaleOrInputIsAClearError) {
  const Tensor x = ones({2});
  testing::expect_error<ValueError>(
      [&] { quantize_dequantize(x, DType::float32, 1.0f); },
      {"quantize_dequantize: format must be float8_e4m3fn or float8_e5m2", "Received: float32"});
  testing::expect_error<ValueError>(
      [&] { quantize_dequantize(x, DType::float8_e5m2, 0.0f); },
      {"quantize_dequantize: scale must be positive and finite", "scale=0"});
  testing::expect_error<ValueError>(
      [&] { quantize_dequantize(ones({2}, {DType::int32}), DType::float8_e5m2, 1.0f); },
      {"quantize_dequantize: x must be a floating-point tensor", "int32[2]"});
  testing::expect_error<ValueError>([&] { float8_max(DType::bfloat16); },
                                    {"float8_max: format must be", "Received: bfloat16"});
  testing::expect_error<ValueError>(
      [&] { Float8State::create(DType::float8_e4m3fn, {.amax_history_length = 0}); },
      {"Float8State: amax_history_length must be at least 1", "amax_history_length=0"});
  testing::expect_error<ValueError>([&] { check_delayed_scaling({.margin = -1}, "dense"); },
                                    {"dense: margin must be non-negative. Received: margin=-1"});
}

TEST(Float8Test, ScaleIsFormatMaxOverAmaxOverTwoToTheMargin) {
  EXPECT_EQ(float8_max(DType::float8_e4m3fn), 448.0f);
  EXPECT_EQ(float8_max(DType::float8_e5m2), 57344.0f);
  EXPECT_EQ(compute_scale(2.0f, 1.0f, DType::float8_e4m3fn), 224.0f);
  EXPECT_EQ(compute_scale(2.0f, 1.0f, DType::float8_e4m3fn, 1), 112.0f);
  EXPECT_EQ(compute_scale(4.0f, 1.0f, DType::float8_e5m2, 3), 57344.0f / 4.0f / 8.0f);
  EXPECT_EQ(compute_scale(3.0f, 1.0f, DType::float8_e4m3fn), 448.0f / 3.0f);
  // Nothing seen yet, or a non-finite amax or scale: keep the previous scale.
  EXPECT_EQ(compute_scale(0.0f, 5.0f, DType::float8_e4m3fn), 5.0f);
  EXPECT_EQ(compute_scale(kInf, 5.0f, DType::float8_e4m3fn), 5.0f);
  EXPECT_EQ(compute_scale(std::nanf(""), 5.0f, DType::float8_e4m3fn), 5.0f);
  EXPECT_EQ(compute_scale(1e-45f, 5.0f, DType::float8_e4m3fn), 5.0f);
}

TEST(Float8Test, TheHistoryKeepsTheNewestAmaxesAndTheScaleFollowsTheirMax) {
  const Float8State s =
      Float8State::create(DType::float8_e4m3fn, {.amax_history_length = 4, .margin = 1});
  EXPECT_EQ(s.scale.shape(), Shape{});
  EXPECT_EQ(s.scale.item(), 1.0);
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(record_amax(s, 1.0f), 448.0f / 1.0f / 2.0f);
  EXPECT_EQ(record_amax(s, 5.0f), 448.0f / 5.0f / 2.0f);
  EXPECT_EQ(record_amax(s, 2.0f), 448.0f / 5.0f / 2.0f);
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{2, 5, 1, 0}));
  record_amax(s, 3.0f);
  record_amax(s, 0.5f);  // 1 drops off; 5 is still in
  EXPECT_EQ(s.scale.item(), 448.0f / 5.0f / 2.0f);
  EXPECT_EQ(record_amax(s, 0.25f), 448.0f / 3.0f / 2.0f);  // 5 drops off
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{0.25f, 0.5f, 3, 2}));
}

TEST(Float8Test, DelayedScalingQuantizesWithTheScaleOfEarlierStepsAndUpdatesOnlyInTraining) {
  const Float8State s = Float8State::create(DType::float8_e4m3fn, {.amax_history_length = 3});
  const Tensor x1 = from_vector<float>({1.0f, -2.0f, 0.5f}, {3});
  EXPECT_EQ(delayed_quantize_dequantize(x1, s, true).to_vector<float>(),
            x1.to_vector<float>());  // scale 1
  EXPECT_EQ(s.scale.item(), 224.0);
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{2, 0, 0}));
  // Scale 224 from step 1: 3.3 * 224 saturates at 448 -> 2; -224 is on the grid -> -1.
  const Tensor x2 = from_vector<float>({3.3f, -1.0f}, {2});
  EXPECT_EQ(delayed_quantize_dequantize(x2, s, false).to_vector<float>(),
            (std::vector<float>{2.0f, -1.0f}));
  EXPECT_EQ(s.scale.item(), 224.0);  // inference: no update
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{2, 0, 0}));
  EXPECT_EQ(delayed_quantize_dequantize(x2, s, true).to_vector<float>(),
            (std::vector<float>{2.0f, -1.0f}));
  EXPECT_EQ(s.amax_history.to_vector<float>(), (std::vector<float>{3.3f, 2, 0}));
  EXPECT_EQ(static_cast<float>(s.scale.item()), 448.0f / 3.3f);
}

}  // namespace
}  // namespace osprey::precision
