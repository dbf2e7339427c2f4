// RandomTranslation, and through it the resampling kernel (image_transform.h): each fill mode and
// both interpolations against arrays worked out by hand. A factor pair (f, f) forces the shift:
// f * size pixels.
#include "osprey/nn/layers/random_translation.h"

#include <gtest/gtest.h>

#include <set>

#include "osprey/core/rng.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {
namespace {

// One 4x5 image, pixel (y, x) = 5 y + x + 1:
//    1  2  3  4  5
//    6  7  8  9 10
//   11 12 13 14 15
//   16 17 18 19 20
Tensor image(int64_t batch = 1) {
  std::vector<float> v;
  for (int64_t i = 0; i < batch * 20; ++i) v.push_back(static_cast<float>(i % 20 + 1));
  return from_vector<float>(v, {batch, 4, 5, 1});
}

// One pixel down (0.25 of 4) and two to the left (-0.4 of 5): output (y, x) reads (y - 1, x + 2).
std::vector<float> down_one_left_two(const std::string& fill_mode,
                                     const std::string& interpolation = "bilinear") {
  auto shift = layers::RandomTranslation(
      {0.25, 0.25}, {-0.4, -0.4},
      {.fill_mode = fill_mode, .interpolation = interpolation, .fill_value = -1.0});
  return shift(Variable(image()), true).value().to_vector<float>();
}

TEST(RandomTranslationTest, ConstantFillPutsTheFillValueWhereNothingMovedIn) {
  EXPECT_EQ(down_one_left_two("constant"), (std::vector<float>{-1, -1, -1, -1, -1,  //
                                                               3,  4,  5,  -1, -1,  //
                                                               8,  9,  10, -1, -1,  //
                                                               13, 14, 15, -1, -1}));
}

TEST(RandomTranslationTest, ReflectFillMirrorsAboutTheEdgeOfTheLastPixel) {
  // (d c b a | a b c d | d c b a): row -1 is row 0; columns 5, 6 are columns 4, 3.
  EXPECT_EQ(down_one_left_two("reflect"), (std::vector<float>{3,  4,  5,  5,  4,  //
                                                              3,  4,  5,  5,  4,  //
                                                              8,  9,  10, 10, 9,  //
                                                              13, 14, 15, 15, 14}));
}

TEST(RandomTranslationTest, NearestFillRepeatsTheEdgePixel) {
  EXPECT_EQ(down_one_left_two("nearest"), (std::vector<float>{3,  4,  5,  5,  5,   //
                                                              3,  4,  5,  5,  5,   //
                                                              8,  9,  10, 10, 10,  //
                                                              13, 14, 15, 15, 15}));
}

TEST(RandomTranslationTest, WrapFillReadsFromTheOppositeEdge) {
  // Row -1 is row 3; columns 5, 6 are columns 0, 1.
  EXPECT_EQ(down_one_left_two("wrap"), (std::vector<float>{18, 19, 20, 16, 17,  //
                                                           3,  4,  5,  1,  2,   //
                                                           8,  9,  10, 6,  7,   //
                                                           13, 14, 15, 11, 12}));
}

TEST(RandomTranslationTest, WholePixelShiftsAreTheSameForBothInterpolations) {
  for (const char* mode : {"constant", "reflect", "nearest", "wrap"})
    EXPECT_EQ(down_one_left_two(mode, "nearest"), down_one_left_two(mode)) << mode;
}

TEST(RandomTranslationTest, BilinearHalfPixelShiftAveragesNeighbours) {
  // Half a pixel right (0.1 of 5): output x reads x - 0.5, the mean of columns x - 1 and x.
  auto constant = layers::RandomTranslation({0.0, 0.0}, {0.1, 0.1}, {.fill_mode = "constant"});
  const std::vector<float> c = constant(Variable(image()), true).value().to_vector<float>();
  // Column -1 is the fill value 0 here, and column 0 (reflected) under reflect.
  EXPECT_EQ(std::vector<float>(c.begin(), c.begin() + 5),
            (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(std::vector<float>(c.begin() + 15, c.end()),
            (std::vector<float>{8.0f, 16.5f, 17.5f, 18.5f, 19.5f}));
  auto reflect = layers::RandomTranslation({0.0, 0.0}, {0.1, 0.1});
  const std::vector<float> r = reflect(Variable(image()), true).value().to_vector<float>();
  EXPECT_EQ(std::vector<float>(r.begin(), r.begin() + 5),
            (std::vector<float>{1.0f, 1.5f, 2.5f, 3.5f, 4.5f}));
}

TEST(RandomTranslationTest, NearestInterpolationRoundsHalfPixelsAwayFromZero) {
  // x - 0.5 rounds to x for x >= 1 and to -1 (the fill value) for x = 0.
  auto shift = layers::RandomTranslation(
      {0.0, 0.0}, {0.1, 0.1},
      {.fill_mode = "constant", .interpolation = "nearest", .fill_value = -1});
  const std::vector<float> y = shift(Variable(image()), true).value().to_vector<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 5), (std::vector<float>{-1, 2, 3, 4, 5}));
}

TEST(RandomTranslationTest, EachImageGetsItsOwnShiftWithinTheFactors) {
  // Whole-pixel shifts only along x: factors (-0.4, 0.4) of width 5 give dx in [-2, 2]; nearest
  // interpolation and wrap make every output row a rotation of its input row.
  auto shift = layers::RandomTranslation(
      {0.0, 0.0}, {-0.4, 0.4}, {.fill_mode = "wrap", .interpolation = "nearest", .seed = 5});
  const std::vector<float> y = shift(Variable(image(32)), true).value().to_vector<float>();
  std::set<int> shifts;
  for (size_t i = 0; i < 32; ++i) {
    // Row 0 of image i is 1..5 rotated: its first value tells the shift.
    const float first = y[i * 20];
    const int s = (6 - static_cast<int>(first)) % 5;  // output x = 0 reads column -s (mod 5)
    shifts.insert(s > 2 ? s - 5 : s);
    for (int x = 0; x < 5; ++x)
      EXPECT_EQ(y[i * 20 + static_cast<size_t>(x)], static_cast<float>((x - s + 10) % 5 + 1));
  }
  EXPECT_GE(shifts.size(), 4u);
  for (int s : shifts) EXPECT_LE(std::abs(s), 2);
}

TEST(RandomTranslationTest, ThreeDimensionalInputsAreOneChannelImages) {
  auto shift = layers::RandomTranslation({0.25, 0.25}, {-0.4, -0.4}, {.fill_mode = "wrap"});
  const Variable y = shift(Variable(image().reshape({1, 4, 5})), true);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 5}));
  EXPECT_EQ(y.value().to_vector<float>(), down_one_left_two("wrap"));
}

TEST(RandomTranslationTest, ShiftsBfloat16ImagesUnderMixedPrecision) {
  auto shift = layers::RandomTranslation({0.25, 0.25}, {-0.4, -0.4},
                                         {.fill_mode = "wrap", .dtype = "mixed_bfloat16"});
  const Variable y = shift(Variable(image()), true);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.value().to_vector<float>(), down_one_left_two("wrap"));
}

TEST(RandomTranslationTest, IsTheIdentityInInference) {
  auto shift = layers::RandomTranslation(0.2, 0.2);
  const Variable x(image(3));
  EXPECT_TRUE(shift(x, false).is_same(x));
}

TEST(RandomTranslationTest, SameSeedSameShiftsAndEachCallDrawsAfresh) {
  const Variable x(test::wave({4, 6, 7, 2}, 1).to(DType::float32));
  const auto run = [&](RandomTranslation& l) { return l(x, true).value().to_vector<float>(); };
  auto a = layers::RandomTranslation(0.3, 0.3, {.seed = 11});
  const std::vector<float> a1 = run(*a), a2 = run(*a);
  EXPECT_NE(a1, a2);
  auto b = layers::RandomTranslation(0.3, 0.3, {.seed = 11});
  EXPECT_EQ(run(*b), a1);
  EXPECT_EQ(run(*b), a2);
  set_global_seed(5);
  auto c = layers::RandomTranslation(0.3, 0.3);
  const std::vector<float> c1 = run(*c);
  set_global_seed(5);
  auto d = layers::RandomTranslation(0.3, 0.3);
  EXPECT_EQ(run(*d), c1);
}

TEST(RandomTranslationTest, ConfigRoundTripsThroughTheRegistry) {
  auto shift = layers::RandomTranslation(
      {-0.1, 0.2}, {-0.3, 0.3},
      {.fill_mode = "constant", .interpolation = "nearest", .fill_value = 0.5, .seed = 4});
  const nlohmann::json c = shift->get_config();
  EXPECT_EQ(c["height_factor"], nlohmann::json::array({-0.1, 0.2}));
  EXPECT_EQ(c["width_factor"], nlohmann::json::array({-0.3, 0.3}));
  EXPECT_EQ(c["fill_mode"], "constant");
  EXPECT_EQ(c["interpolation"], "nearest");
  EXPECT_EQ(c["fill_value"], 0.5);
  EXPECT_EQ(c["seed"], 4);
  const auto back = layer_from_config("RandomTranslation", c);
  EXPECT_EQ(back->get_config(), c);
  const Variable x(test::wave({3, 5, 5, 1}, 2).to(DType::float32));
  EXPECT_EQ((*back)(x, true).value().to_vector<float>(), shift(x, true).value().to_vector<float>());
  // Keras writes a single number for a symmetric factor.
  nlohmann::json keras = c;
  keras["height_factor"] = 0.2;
  const auto from_number =
      std::dynamic_pointer_cast<RandomTranslation>(layer_from_config("RandomTranslation", keras));
  ASSERT_NE(from_number, nullptr);
  EXPECT_EQ(from_number->height_factor(), std::make_pair(-0.2, 0.2));
}

TEST(RandomTranslationTest, RejectsBadFactorsAndModes) {
  EXPECT_EQ(test::value_error([] { layers::RandomTranslation(1.5, 0.1); }),
            "RandomTranslation: height_factor must be a number or a pair [lower, upper] with -1 "
            "<= lower <= upper <= 1. Received: height_factor=[-1.5, 1.5]");
  EXPECT_EQ(test::value_error([] {
              layers::RandomTranslation({0.0, 0.0}, {0.3, 0.1});
            }),
            "RandomTranslation: width_factor must be a number or a pair [lower, upper] with -1 "
            "<= lower <= upper <= 1. Received: width_factor=[0.3, 0.1]");
  EXPECT_EQ(test::value_error([] { layers::RandomTranslation(0.1, 0.1, {.fill_mode = "mirror"}); }),
            "RandomTranslation: fill_mode must be one of reflect, wrap, constant, nearest. "
            "Received: fill_mode=mirror");
  EXPECT_EQ(
      test::value_error([] { layers::RandomTranslation(0.1, 0.1, {.interpolation = "bicubic"}); }),
      "RandomTranslation: interpolation must be one of bilinear, nearest. Received: "
      "interpolation=bicubic");
  EXPECT_EQ(test::value_error([] {
              layers::RandomTranslation(0.1, 0.1)(Variable(ones({2, 3, 4, 5, 6})), true);
            }),
            "RandomTranslation: expected images of shape [batch, height, width, channels] or "
            "[batch, height, width]. Received: [2, 3, 4, 5, 6]");
}

TEST(RandomTranslationTest, RefusesToTrainOnAnInputThatRequiresGrad) {
  const Variable x(image(), /*requires_grad=*/true);
  try {
    layers::RandomTranslation(0.1, 0.1)(x, true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(),
                 "RandomTranslation: augmentation layers pass no gradient to their input; place "
                 "them before any layer with weights");
  }
  // Without gradient recording nothing is lost, so the layer runs.
  autograd::NoGradGuard no_grad;
  EXPECT_EQ(layers::RandomTranslation(0.1, 0.1)(x, true).shape(), x.shape());
}

}  // namespace
}  // namespace osprey::nn
