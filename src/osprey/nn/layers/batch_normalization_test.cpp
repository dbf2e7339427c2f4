#include "osprey/nn/layers/batch_normalization.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 references (float64): x = wave([4, 3], 13, 2, 0.5), gamma = wave([3], 14, 0.3, 1),
// beta = wave([3], 15, 0.2), epsilon 1e-3.
// F.batch_norm(x, None, None, gamma, beta, training=True, eps=1e-3):
// [4, 3]
const std::vector<double> kBnTrain = {
    1.7872675039426957,  2.0025148444247,     2.055043730041304,   1.0947215802643735,
    0.7625897618317717,  0.32274909914753463, -0.6241883817218872, -0.9020128470002149,
    -1.1341122597425835, -1.4603086797220468, -1.1424572060381546, -0.6974379919017434,
};
// The moving statistics after that step, Keras's way (momentum 0.99, the biased batch variance;
// PyTorch's own running_var would use the unbiased one): 0.01 * mean, 0.99 + 0.01 * var.
// [3]
const std::vector<double> kBnMovingMean = {
    0.005352036663198836,
    0.0025979598581376416,
    0.00016898791779781653,
};
// [3]
const std::vector<double> kBnMovingVar = {
    1.0153407034147282,
    1.0137134456623185,
    1.0086497242743357,
};
// F.batch_norm(x, moving_mean, moving_var, gamma, beta, training=False, eps=1e-3):
// [4, 3]
const std::vector<double> kBnInfer = {
    3.390369248362101,  3.294163370200773,  2.765106732747248,    2.296604492608361,
    1.3982756149162983, 0.4101170713984938, -0.41813697139286876, -1.1469585672163398,
    -1.570431374009186, -1.738654329527908, -1.5146061957117403,  -0.97678906409125,
};
// Channels first, no gamma/beta: F.batch_norm on wave([2, 3, 2, 2], 16, 1.5, -0.3), training:
// [2, 3, 2, 2]
const std::vector<double> kBnTrainNchw = {
    1.2813790399197214,  0.8869071259898476,  0.15588970149211734, -0.8127334545254662,
    -0.3279074264917894, -0.8005469415164457, -1.1914235628003096, -1.4476339733377352,
    -1.1970567237966097, -1.0218926248095725, -0.5337993275284775, 0.20116203000884636,
    -1.8433959272280414, -0.7698108420249954, 0.19145773756567708, 0.9103066188111402,
    1.121457049901796,   1.1160330678090233,  0.9329718662781114,  0.5970499201573491,
    1.9411056624006626,  1.0289496895874737,  0.15215102875091507, -0.570619734613237,
};

TEST(BatchNormalizationTest, ParameterCountsMatchKeras) {
  // Keras: BatchNormalization() on 64 channels: 256 params, 128 of them non-trainable.
  auto bn = layers::BatchNormalization();
  bn->build({{-1, 8, 8, 64}});
  EXPECT_EQ(bn->count_params(), 256);
  EXPECT_EQ(bn->trainable_variables().size(), 2u);
  ASSERT_EQ(bn->non_trainable_variables().size(), 2u);
  EXPECT_EQ(bn->non_trainable_variables()[0].name(), bn->name() + "/moving_mean");
  EXPECT_EQ(bn->moving_variance().name(), bn->name() + "/moving_variance");
  EXPECT_FALSE(bn->moving_mean().requires_grad());
  auto plain = layers::BatchNormalization({.axis = 1, .center = false, .scale = false});
  plain->build({{-1, 16, 5, 5}});
  EXPECT_EQ(plain->count_params(), 32);
  EXPECT_TRUE(plain->trainable_variables().empty());
}

TEST(BatchNormalizationTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::BatchNormalization({.dtype = "float64"}); }, Shape{4, 3},
      {.output_shape = {4, 3},
       .params = 12,
       .non_trainable_params = 6,
       .weights = {{"gamma", {3}}, {"beta", {3}}, {"moving_mean", {3}}, {"moving_variance", {3}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::BatchNormalization(
            {.axis = 1, .momentum = 0.9, .center = false, .dtype = "float64"});
      },
      Shape{3, 2, 3, 2},
      {.output_shape = {3, 2, 3, 2},
       .params = 6,
       .non_trainable_params = 4,
       .weights = {{"gamma", {2}}, {"moving_mean", {2}}, {"moving_variance", {2}}}});
}

TEST(BatchNormalizationTest, TrainingMatchesPyTorchAndUpdatesMovingStatisticsInPlace) {
  auto bn = layers::BatchNormalization({.dtype = "float64"});
  bn->build({{4, 3}});
  test::set_weight(*bn, "gamma", wave({3}, 14, 0.3, 1.0));
  test::set_weight(*bn, "beta", wave({3}, 15, 0.2));
  const Variable x(wave({4, 3}, 13, 2.0, 0.5));
  const Variable moving_mean = bn->moving_mean();  // the same Variable after the update
  test::expect_values_near(bn(x, /*training=*/true).value(), kBnTrain);
  test::expect_values_near(moving_mean.value(), kBnMovingMean);
  test::expect_values_near(bn->moving_variance().value(), kBnMovingVar);
  test::expect_values_near(bn(x, /*training=*/false).value(), kBnInfer);
  // Inference leaves the moving statistics alone.
  test::expect_values_near(bn->moving_mean().value(), kBnMovingMean);
}

TEST(BatchNormalizationTest, ChannelsFirstWithoutScaleOrCenterMatchesPyTorch) {
  auto bn =
      layers::BatchNormalization({.axis = 1, .center = false, .scale = false, .dtype = "float64"});
  test::expect_values_near(bn(Variable(wave({2, 3, 2, 2}, 16, 1.5, -0.3)), true).value(),
                           kBnTrainNchw);
}

TEST(BatchNormalizationTest, NonTrainableLayerRunsInInferenceMode) {
  auto bn = layers::BatchNormalization({.dtype = "float64", .trainable = false});
  const Variable x(wave({4, 3}, 13, 2.0, 0.5));
  const Variable y = bn(x, /*training=*/true);
  // Moving statistics untouched (zeros / ones), so y = x / sqrt(1 + epsilon).
  EXPECT_EQ(bn->moving_mean().value().to_vector<double>(), std::vector<double>(3, 0.0));
  EXPECT_NEAR(y.value().at({1, 2}), x.value().at({1, 2}) / std::sqrt(1.001), 1e-12);
}

TEST(BatchNormalizationTest, ConfigUsesKerasFieldNamesAndKeepsSynchronized) {
  auto bn = layers::BatchNormalization({.momentum = 0.9, .synchronized = true, .name = "bn"});
  const nlohmann::json c = bn->get_config();
  EXPECT_EQ(c["axis"], -1);
  EXPECT_EQ(c["momentum"], 0.9);
  EXPECT_EQ(c["epsilon"], 1e-3);
  EXPECT_EQ(c["center"], true);
  EXPECT_EQ(c["scale"], true);
  EXPECT_EQ(c["gamma_initializer"]["class_name"], "Ones");
  EXPECT_EQ(c["moving_variance_initializer"]["class_name"], "Ones");
  EXPECT_EQ(c["synchronized"], true);
  auto back = std::dynamic_pointer_cast<BatchNormalization>(BatchNormalization::from_config(c));
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->options().synchronized);
  EXPECT_EQ(back->get_config(), c);
}

TEST(BatchNormalizationTest, RejectsBadArguments) {
  EXPECT_EQ(test::value_error([] { layers::BatchNormalization({.momentum = 1.5}); }),
            "BatchNormalization: momentum must be in [0, 1]. Received: momentum=1.5");
  auto bn = layers::BatchNormalization({.axis = 3, .name = "bn"});
  EXPECT_EQ(test::value_error([&] {
              bn(Variable(zeros({2, 4})));
            }),
            "bn: axis 3 is out of range for an input of shape [2, 4] (expected a non-batch axis)");
  auto built = layers::BatchNormalization({.name = "bn2"});
  built(Variable(ones({2, 4})));
  EXPECT_EQ(test::value_error([&] {
              built(Variable(ones({2, 5})));
            }),
            "bn2: expected 4 channels on axis -1. Received: [2, 5]");
}

}  // namespace
}  // namespace osprey::nn
