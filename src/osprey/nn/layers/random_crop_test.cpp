#include "osprey/nn/layers/random_crop.h"

#include <gtest/gtest.h>

#include <set>

#include "osprey/core/rng.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {
namespace {

// n images h x w x c whose every element is distinct: 1000 i + 100 c + 10 y + x.
Tensor images(int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k)
          v.push_back(static_cast<float>(1000 * i + 100 * k + 10 * y + x));
      }
    }
  }
  return from_vector<float>(v, {n, h, w, c});
}

TEST(RandomCropTest, TrainingCutsAWindowOutOfEachImage) {
  auto crop = layers::RandomCrop(4, 5, {.seed = 1});
  const Tensor x = images(8, 6, 7, 2);
  const Tensor y = crop(Variable(x), true).value();
  ASSERT_EQ(y.shape(), (Shape{8, 4, 5, 2}));
  std::set<std::pair<int64_t, int64_t>> corners;
  for (int64_t i = 0; i < 8; ++i) {
    // The window's top-left pixel names its place: 1000 i + 10 top + left.
    const auto first = static_cast<int64_t>(y.at({i, 0, 0, 0}));
    const int64_t top = (first - 1000 * i) / 10, left = (first - 1000 * i) % 10;
    ASSERT_TRUE(top >= 0 && top <= 2 && left >= 0 && left <= 2) << first;
    corners.insert({top, left});
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 5; ++c) {
        for (int64_t k = 0; k < 2; ++k)
          EXPECT_EQ(y.at({i, r, c, k}), x.at({i, top + r, left + c, k})) << i << r << c << k;
      }
    }
  }
  EXPECT_GE(corners.size(), 3u);  // each image its own window
}

TEST(RandomCropTest, InferenceResizesTheCentredWindowOfTheTargetAspectRatio) {
  // 4x6 to 2x3: the aspect ratio matches, so the whole image is resized by half; each output
  // pixel reads (2 y + 0.5, 2 x + 0.5), the mean of a 2x2 block: 12 y + 2 x + 3.5 for pixel
  // values 6 y + x.
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  const Variable x(from_vector<float>(v, {1, 4, 6, 1}));
  EXPECT_EQ(layers::RandomCrop(2, 3)(x, false).value().to_vector<float>(),
            (std::vector<float>{3.5f, 5.5f, 7.5f, 15.5f, 17.5f, 19.5f}));
  // 4x6 to 4x4: the centred 4x4 window (columns 1-4), no resizing.
  EXPECT_EQ(layers::RandomCrop(4, 4)(x, false).value().to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4, 7, 8, 9, 10, 13, 14, 15, 16, 19, 20, 21, 22}));
}

TEST(RandomCropTest, ImagesSmallerThanTheWindowAreResizedUpInTrainingToo) {
  // 2x2 to 4x4 with half-pixel centres: output row y reads (y + 0.5) / 2 - 0.5, that is
  // -0.25, 0.25, 0.75, 1.25, clamped to the edge rows: weights of row 1 are 0, 1/4, 3/4, 1.
  const Variable x(from_vector<float>({0, 1, 2, 3}, {1, 2, 2}));
  const std::vector<float> want = {0,   0.25, 0.75, 1,    //
                                   0.5, 0.75, 1.25, 1.5,  //
                                   1.5, 1.75, 2.25, 2.5,  //
                                   2,   2.25, 2.75, 3};
  auto crop = layers::RandomCrop(4, 4);
  const Variable y = crop(x, true);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 4}));
  EXPECT_EQ(y.value().to_vector<float>(), want);
  EXPECT_EQ(crop(x, false).value().to_vector<float>(), want);
}

TEST(RandomCropTest, IsTheIdentityInInferenceOnImagesOfTheTargetSize) {
  const Variable x(images(2, 4, 5, 1));
  EXPECT_TRUE(layers::RandomCrop(4, 5)(x, false).is_same(x));
}

TEST(RandomCropTest, SameSeedSameWindowsAndEachCallDrawsAfresh) {
  const Variable x(images(6, 9, 9, 1));
  const auto run = [&](RandomCrop& l) { return l(x, true).value().to_vector<float>(); };
  auto a = layers::RandomCrop(5, 5, {.seed = 3});
  const std::vector<float> a1 = run(*a), a2 = run(*a);
  EXPECT_NE(a1, a2);
  auto b = layers::RandomCrop(5, 5, {.seed = 3});
  EXPECT_EQ(run(*b), a1);
  EXPECT_EQ(run(*b), a2);
  set_global_seed(8);
  auto c = layers::RandomCrop(5, 5);
  const std::vector<float> c1 = run(*c);
  set_global_seed(8);
  auto d = layers::RandomCrop(5, 5);
  EXPECT_EQ(run(*d), c1);
}

TEST(RandomCropTest, ComputesItsOutputShape) {
  auto crop = layers::RandomCrop(24, 20);
  EXPECT_EQ(crop->compute_output_shape({{-1, 28, 28, 1}}), (Shape{-1, 24, 20, 1}));
  EXPECT_EQ(crop->compute_output_shape({{-1, 28, 28}}), (Shape{-1, 24, 20}));
}

TEST(RandomCropTest, ConfigRoundTripsThroughTheRegistry) {
  auto crop = layers::RandomCrop(3, 4, {.seed = 12, .name = "crop"});
  const nlohmann::json c = crop->get_config();
  EXPECT_EQ(c["height"], 3);
  EXPECT_EQ(c["width"], 4);
  EXPECT_EQ(c["seed"], 12);
  const auto back = layer_from_config("RandomCrop", c);
  EXPECT_EQ(back->get_config(), c);
  const Variable x(images(4, 6, 6, 1));
  EXPECT_EQ((*back)(x, true).value().to_vector<float>(), crop(x, true).value().to_vector<float>());
}

TEST(RandomCropTest, RejectsASizeThatIsNotPositive) {
  EXPECT_EQ(test::value_error([] { layers::RandomCrop(0, 5); }),
            "RandomCrop: height and width must be positive. Received: height=0, width=5");
  EXPECT_EQ(test::value_error([] {
              layers::RandomCrop(2, 2)(Variable(ones({4, 4})), true);
            }),
            "RandomCrop: expected images of shape [batch, height, width, channels] or [batch, "
            "height, width]. Received: [4, 4]");
}

TEST(RandomCropTest, RefusesToTrainOnAnInputThatRequiresGrad) {
  try {
    layers::RandomCrop(2, 2)(Variable(images(1, 4, 4, 1), /*requires_grad=*/true), true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(),
                 "RandomCrop: augmentation layers pass no gradient to their input; place them "
                 "before any layer with weights");
  }
}

}  // namespace
}  // namespace osprey::nn
