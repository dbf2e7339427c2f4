#include "osprey/nn/layers/random_flip.h"

#include <gtest/gtest.h>

#include <set>

#include "osprey/core/rng.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {
namespace {

// n copies of a 3x4 image with two channels: pixel (y, x) holds (10 y + x, -(10 y + x)).
Tensor images(int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 4; ++x) {
        v.push_back(static_cast<float>(10 * y + x));
        v.push_back(-static_cast<float>(10 * y + x));
      }
    }
  }
  return from_vector<float>(v, {n, 3, 4, 2});
}

// The same image flipped by hand.
std::vector<float> flipped(bool horizontal, bool vertical) {
  std::vector<float> v;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) {
      const int sy = vertical ? 2 - y : y, sx = horizontal ? 3 - x : x;
      v.push_back(static_cast<float>(10 * sy + sx));
      v.push_back(-static_cast<float>(10 * sy + sx));
    }
  }
  return v;
}

// Which of the four flips each output image is; -1 for none of them.
std::vector<int> classify(const Tensor& out) {
  const std::vector<float> all = out.to_vector<float>();
  const size_t per_image = 24;
  std::vector<int> kinds;
  for (size_t i = 0; i * per_image < all.size(); ++i) {
    const std::vector<float> one(all.begin() + static_cast<std::ptrdiff_t>(i * per_image),
                                 all.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_image));
    int kind = -1;
    for (int k = 0; k < 4; ++k) {
      if (one == flipped((k & 1) != 0, (k & 2) != 0)) kind = k;
    }
    kinds.push_back(kind);
  }
  return kinds;
}

TEST(RandomFlipTest, HorizontalFlipMirrorsEachRowOfAboutHalfTheImages) {
  auto flip = layers::RandomFlip("horizontal", {.seed = 3});
  const std::vector<int> kinds = classify(flip(Variable(images(64)), true).value());
  int mirrored = 0;
  for (int k : kinds) {
    EXPECT_TRUE(k == 0 || k == 1) << k;  // unchanged, or each row reversed
    mirrored += k == 1 ? 1 : 0;
  }
  EXPECT_GT(mirrored, 16);
  EXPECT_LT(mirrored, 48);
}

TEST(RandomFlipTest, VerticalFlipReversesTheOrderOfTheRows) {
  auto flip = layers::RandomFlip("vertical", {.seed = 3});
  const std::vector<int> kinds = classify(flip(Variable(images(64)), true).value());
  std::set<int> seen(kinds.begin(), kinds.end());
  EXPECT_EQ(seen, (std::set<int>{0, 2}));
}

TEST(RandomFlipTest, BothModesDrawTheTwoFlipsIndependently) {
  auto flip = layers::RandomFlip();
  EXPECT_EQ(flip->mode(), "horizontal_and_vertical");
  const std::vector<int> kinds = classify(flip(Variable(images(64)), true).value());
  std::set<int> seen(kinds.begin(), kinds.end());
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
}

TEST(RandomFlipTest, ThreeDimensionalInputsAreOneChannelImages) {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  std::set<std::vector<float>> seen;
  auto flip = layers::RandomFlip("horizontal", {.seed = 1});
  for (int call = 0; call < 16; ++call) {
    const Variable y = flip(Variable(x), true);
    EXPECT_EQ(y.shape(), x.shape());
    seen.insert(y.value().to_vector<float>());
  }
  EXPECT_EQ(seen, (std::set<std::vector<float>>{{1, 2, 3, 4, 5, 6}, {3, 2, 1, 6, 5, 4}}));
}

TEST(RandomFlipTest, IsTheIdentityInInference) {
  auto flip = layers::RandomFlip();
  const Variable x(images(4));
  EXPECT_TRUE(flip(x, false).is_same(x));
}

TEST(RandomFlipTest, FlipsBfloat16ImagesUnderMixedPrecision) {
  auto flip = layers::RandomFlip("horizontal", {.seed = 3, .dtype = "mixed_bfloat16"});
  const Variable y = flip(Variable(images(64)), true);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  // The same seed draws the same flips in float32; the small integers are exact in bfloat16.
  auto reference = layers::RandomFlip("horizontal", {.seed = 3});
  EXPECT_EQ(y.value().to_vector<float>(),
            reference(Variable(images(64)), true).value().to_vector<float>());
}

TEST(RandomFlipTest, AnOwnSeedRepeatsItsSequenceAndEachCallDrawsAfresh) {
  const Variable x(images(32));
  set_global_seed(1);
  auto a = layers::RandomFlip("horizontal_and_vertical", {.seed = 7});
  const std::vector<int> a1 = classify(a(x, true).value()), a2 = classify(a(x, true).value());
  EXPECT_NE(a1, a2);
  set_global_seed(2);
  auto b = layers::RandomFlip("horizontal_and_vertical", {.seed = 7});
  EXPECT_EQ(classify(b(x, true).value()), a1);
  EXPECT_EQ(classify(b(x, true).value()), a2);
}

TEST(RandomFlipTest, IsReproducibleGivenTheGlobalSeed) {
  const Variable x(images(32));
  set_global_seed(42);
  auto a = layers::RandomFlip();
  const std::vector<int> a1 = classify(a(x, true).value());
  set_global_seed(42);
  auto b = layers::RandomFlip();
  EXPECT_EQ(classify(b(x, true).value()), a1);
}

TEST(RandomFlipTest, OutputIsAConstant) {
  const Variable y = layers::RandomFlip()(Variable(images(2)), true);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(RandomFlipTest, RefusesToTrainOnAnInputThatRequiresGrad) {
  const Variable x(images(2), /*requires_grad=*/true);
  try {
    layers::RandomFlip()(x, true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(),
                 "RandomFlip: augmentation layers pass no gradient to their input; place them "
                 "before any layer with weights");
  }
}

TEST(RandomFlipTest, ConfigRoundTripsThroughTheRegistry) {
  auto flip = layers::RandomFlip("vertical", {.seed = 9, .name = "flip"});
  const nlohmann::json saved = serialize_layer(*flip);
  EXPECT_EQ(saved["config"]["mode"], "vertical");
  EXPECT_EQ(saved["config"]["seed"], 9);
  EXPECT_TRUE(layers::RandomFlip()->get_config()["seed"].is_null());
  const auto back = std::dynamic_pointer_cast<RandomFlip>(
      layer_from_config(saved["class_name"], saved["config"]));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->get_config(), saved["config"]);
  EXPECT_EQ(back->name(), "flip");
  const Variable x(images(16));
  EXPECT_EQ(classify((*back)(x, true).value()), classify(flip(x, true).value()));
}

TEST(RandomFlipTest, RejectsAnUnknownModeAndNonImageInputs) {
  EXPECT_EQ(test::value_error([] { layers::RandomFlip("diagonal"); }),
            "RandomFlip: mode must be one of horizontal, vertical, horizontal_and_vertical. "
            "Received: mode=diagonal");
  EXPECT_EQ(test::value_error([] {
              layers::RandomFlip()(Variable(ones({3, 4})), false);
            }),
            "RandomFlip: expected images of shape [batch, height, width, channels] or [batch, "
            "height, width]. Received: [3, 4]");
  EXPECT_EQ(test::value_error([] {
              layers::RandomFlip()(Variable(ones({2, 3, 4, 1}, {DType::int32})), true);
            }),
            "RandomFlip: expected floating-point images. Received: int32[2, 3, 4, 1]");
}

}  // namespace
}  // namespace osprey::nn
