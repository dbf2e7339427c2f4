#include "osprey/nn/layers/random_zoom.h"

#include <gtest/gtest.h>

#include <set>

#include "osprey/core/rng.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {
namespace {

// One h x w image, pixel (y, x) = w y + x + 1.
Tensor image(int64_t h, int64_t w, int64_t batch = 1) {
  std::vector<float> v;
  for (int64_t i = 0; i < batch * h * w; ++i) v.push_back(static_cast<float>(i % (h * w) + 1));
  return from_vector<float>(v, {batch, h, w, 1});
}

// A 5x4 image (rows 1-4, 5-8, ..., 17-20) zoomed out 2x in height (factor 1) and in 0.6x in
// width (factor -0.4), nearest interpolation. Output (y, x) reads (2 y - 2, 0.6 x + 0.6): rows
// -2, 0, 2, 4, 6 and columns 0.6, 1.2, 1.8, 2.4, which round to 1, 1, 2, 2.
std::vector<float> zoomed(const std::string& fill_mode) {
  auto zoom = layers::RandomZoom({1.0, 1.0}, {.width_factor = std::make_pair(-0.4, -0.4),
                                              .fill_mode = fill_mode,
                                              .interpolation = "nearest",
                                              .fill_value = -1.0});
  return zoom(Variable(image(5, 4)), true).value().to_vector<float>();
}

TEST(RandomZoomTest, NearestZoomWithReflectMatchesAHandComputation) {
  // Reflected, rows -2 and 6 of 5 are rows 1 and 3.
  EXPECT_EQ(zoomed("reflect"), (std::vector<float>{6,  6,  7,  7,   //
                                                   2,  2,  3,  3,   //
                                                   10, 10, 11, 11,  //
                                                   18, 18, 19, 19,  //
                                                   14, 14, 15, 15}));
}

TEST(RandomZoomTest, ZoomingOutWithConstantFillLeavesABorder) {
  EXPECT_EQ(zoomed("constant"), (std::vector<float>{-1, -1, -1, -1,  //
                                                    2,  2,  3,  3,   //
                                                    10, 10, 11, 11,  //
                                                    18, 18, 19, 19,  //
                                                    -1, -1, -1, -1}));
}

TEST(RandomZoomTest, WithoutAWidthFactorBothAxesZoomAlike) {
  // Zoom in 2x (factor -0.5) on 5x5 about the centre: output (y, x) reads (y / 2 + 1, x / 2 + 1).
  // Bilinear interpolation of pixel values linear in (y, x) gives 5 (y/2 + 1) + (x/2 + 1) + 1.
  auto zoom = layers::RandomZoom({-0.5, -0.5});
  const std::vector<float> y = zoom(Variable(image(5, 5)), true).value().to_vector<float>();
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 5; ++c)
      EXPECT_FLOAT_EQ(y[static_cast<size_t>(5 * r + c)], 2.5f * r + 0.5f * c + 7.0f) << r << c;
  }
}

TEST(RandomZoomTest, DrawsEachImagesZoomWithinTheFactors) {
  // A constant image zoomed out with constant fill 0 keeps a centred block of ones whose size
  // shows the zoom z in [1, 2] (factors (0, 1)): output column x reads round(4 + (x - 4) z),
  // inside [0, 8] for all |x - 4| <= 2, for |x - 4| = 3 when z < 1.5, for 4 when z < 1.125.
  auto zoom = layers::RandomZoom({0.0, 1.0},
                                 {.fill_mode = "constant", .interpolation = "nearest", .seed = 2});
  const std::vector<float> y = zoom(Variable(ones({16, 9, 9, 1})), true).value().to_vector<float>();
  std::set<int> sizes;
  for (size_t i = 0; i < 16; ++i) {
    int in_row = 0, in_column = 0;
    for (size_t k = 0; k < 9; ++k) {
      in_row += y[i * 81 + 4 * 9 + k] == 1.0f ? 1 : 0;
      in_column += y[i * 81 + k * 9 + 4] == 1.0f ? 1 : 0;
    }
    EXPECT_TRUE(in_row == 5 || in_row == 7 || in_row == 9) << in_row;
    EXPECT_EQ(in_column, in_row);  // no width factor: the same zoom both ways
    sizes.insert(in_row);
  }
  EXPECT_GE(sizes.size(), 2u);  // each image its own zoom
}

TEST(RandomZoomTest, IsTheIdentityInInference) {
  auto zoom = layers::RandomZoom(0.3);
  const Variable x(image(4, 4, 2));
  EXPECT_TRUE(zoom(x, false).is_same(x));
}

TEST(RandomZoomTest, SameSeedSameZoomsAndEachCallDrawsAfresh) {
  const Variable x(test::wave({4, 6, 7, 2}, 1).to(DType::float32));
  const auto run = [&](RandomZoom& l) { return l(x, true).value().to_vector<float>(); };
  auto a = layers::RandomZoom(0.3, {.seed = 11});
  const std::vector<float> a1 = run(*a), a2 = run(*a);
  EXPECT_NE(a1, a2);
  auto b = layers::RandomZoom(0.3, {.seed = 11});
  EXPECT_EQ(run(*b), a1);
  EXPECT_EQ(run(*b), a2);
}

TEST(RandomZoomTest, ConfigRoundTripsThroughTheRegistry) {
  auto zoom = layers::RandomZoom(0.2, {.width_factor = std::make_pair(-0.1, 0.3), .seed = 6});
  const nlohmann::json c = zoom->get_config();
  EXPECT_EQ(c["height_factor"], nlohmann::json::array({-0.2, 0.2}));
  EXPECT_EQ(c["width_factor"], nlohmann::json::array({-0.1, 0.3}));
  EXPECT_EQ(c["fill_mode"], "reflect");
  EXPECT_EQ(c["interpolation"], "bilinear");
  EXPECT_EQ(c["fill_value"], 0.0);
  EXPECT_EQ(c["seed"], 6);
  const auto back = layer_from_config("RandomZoom", c);
  EXPECT_EQ(back->get_config(), c);
  const Variable x(test::wave({3, 5, 6, 1}, 2).to(DType::float32));
  EXPECT_EQ((*back)(x, true).value().to_vector<float>(), zoom(x, true).value().to_vector<float>());
  EXPECT_TRUE(layers::RandomZoom(0.1)->get_config()["width_factor"].is_null());
  nlohmann::json keras = c;  // Keras writes numbers for symmetric factors, null for none
  keras["height_factor"] = 0.5;
  keras["width_factor"] = nullptr;
  const auto from_keras =
      std::dynamic_pointer_cast<RandomZoom>(layer_from_config("RandomZoom", keras));
  ASSERT_NE(from_keras, nullptr);
  EXPECT_EQ(from_keras->height_factor(), std::make_pair(-0.5, 0.5));
  EXPECT_FALSE(from_keras->width_factor().has_value());
}

TEST(RandomZoomTest, RejectsBadFactorsAndModes) {
  EXPECT_EQ(test::value_error([] {
              layers::RandomZoom({0.3, 0.1});
            }),
            "RandomZoom: height_factor must be a number or a pair [lower, upper] with -1 <= lower "
            "<= upper <= 1. Received: height_factor=[0.3, 0.1]");
  EXPECT_EQ(test::value_error(
                [] { layers::RandomZoom(0.1, {.width_factor = std::make_pair(-1.5, 0.0)}); }),
            "RandomZoom: width_factor must be a number or a pair [lower, upper] with -1 <= lower "
            "<= upper <= 1. Received: width_factor=[-1.5, 0]");
  EXPECT_EQ(test::value_error([] { layers::RandomZoom(0.1, {.fill_mode = "edge"}); }),
            "RandomZoom: fill_mode must be one of reflect, wrap, constant, nearest. Received: "
            "fill_mode=edge");
  EXPECT_EQ(test::value_error([] { layers::RandomZoom(0.1, {.interpolation = "bicubic"}); }),
            "RandomZoom: interpolation must be one of bilinear, nearest. Received: "
            "interpolation=bicubic");
}

TEST(RandomZoomTest, RefusesToTrainOnAnInputThatRequiresGrad) {
  try {
    layers::RandomZoom(0.1)(Variable(image(4, 4), /*requires_grad=*/true), true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(),
                 "RandomZoom: augmentation layers pass no gradient to their input; place them "
                 "before any layer with weights");
  }
}

}  // namespace
}  // namespace osprey::nn
