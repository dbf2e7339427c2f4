// The prebuilt hypermodels, HyperMLP and HyperCNN: what their defaults build (layers, output
// shape, parameters against a hand count), the search space they declare, how `fixed` fixes and
// narrows it, that any sample of the space builds and trains a step, and their option errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "osprey/core/rng.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/hyper_cnn.h"
#include "osprey/tune/hyper_mlp.h"
#include "osprey/tune/hyper_models_test_helpers.h"

namespace osprey::tune {
namespace {

using test_helpers::build;
using test_helpers::layer_classes;
using test_helpers::random_values;
using test_helpers::space_lines;
using test_helpers::space_names;

const HyperMLPOptions kMlp{.input_shape = {28, 28}, .num_classes = 10};
const HyperCNNOptions kCnn{.input_shape = {28, 28}, .num_classes = 10};

TEST(HyperMLPTest, DefaultsBuildTwoDenseLayersOf256WithDropoutAndAdam) {
  HyperMLP hm(kMlp);
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Flatten", "Dense", "Dropout", "Dense", "Dropout", "Dense"}));
  // 784 -> 256 -> 256 -> 10, each Dense with a bias.
  EXPECT_EQ(model.count_params(), (784 * 256 + 256) + (256 * 256 + 256) + (256 * 10 + 10));
  EXPECT_EQ(model.count_params(), 269322);
  const auto dropout = std::dynamic_pointer_cast<nn::Dropout>(model.layers()[2]);
  ASSERT_NE(dropout, nullptr);
  EXPECT_DOUBLE_EQ(dropout->rate(), 0.2);
  const Tensor p = model.predict(random_uniform({3, 28, 28}, {.seed = 1}));
  EXPECT_EQ(p.shape(), (Shape{3, 10}));
  EXPECT_EQ(model.trainer().optimizer().class_name(), "Adam");
  EXPECT_DOUBLE_EQ(model.trainer().optimizer().learning_rate(), 1e-3);
  EXPECT_EQ(model.trainer().loss().name(), "sparse_categorical_crossentropy");
}

TEST(HyperMLPTest, TheSearchSpaceListsEveryHyperparameterWithItsRange) {
  HyperMLP hm(kMlp);
  HyperParameters hp;
  build(hm, hp);
  EXPECT_EQ(space_lines(hp),
            (std::vector<std::string>{
                "Int num_layers: [1, 3], linear, default 2",
                "Int units_0: [32, 512] step 32, linear, default 256",
                "Int units_1: [32, 512] step 32, linear, default 256, when num_layers in {2, 3}",
                "Int units_2: [32, 512] step 32, linear, default 256, when num_layers in {3}",
                "Float dropout: [0, 0.5] step 0.1, linear, default 0.2",
                "Choice optimizer: {adam, sgd, rmsprop}, default adam",
                "Float learning_rate: [0.0001, 0.01], log, default 0.001"}));
  // The default trial: units_2 is inactive with two layers, so it has no value.
  EXPECT_FALSE(hp.has_value("units_2"));
  EXPECT_EQ(hp.get("units_1").as_int(), 256);
}

TEST(HyperMLPTest, FixedValuesFixAndDeclarationsNarrow) {
  HyperParameters fixed;
  fixed.set("num_layers", int64_t{1});
  fixed.set("optimizer", "sgd");
  fixed.Int("units_0", 64, 128, {.step = 64, .default_value = 128});
  HyperMLP hm({.input_shape = {6}, .num_classes = 3, .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  // units_1 and units_2 can never be active with one layer, so they are not declared.
  EXPECT_EQ(space_lines(hp),
            (std::vector<std::string>{"Fixed num_layers: {1}, default 1",
                                      "Int units_0: [64, 128] step 64, linear, default 128",
                                      "Float dropout: [0, 0.5] step 0.1, linear, default 0.2",
                                      "Fixed optimizer: {sgd}, default sgd",
                                      "Float learning_rate: [0.0001, 0.01], log, default 0.001"}));
  EXPECT_EQ(model.count_params(), (6 * 128 + 128) + (128 * 3 + 3));
  const auto* sgd = dynamic_cast<const optim::SGD*>(&model.trainer().optimizer());
  ASSERT_NE(sgd, nullptr);
  EXPECT_DOUBLE_EQ(sgd->momentum(), 0.9);
  // The oracle's other value of units_0 builds too.
  HyperParameters other = hp.copy_space();
  other.set("units_0", int64_t{64});
  EXPECT_EQ(build(hm, other).count_params(), (6 * 64 + 64) + (64 * 3 + 3));
}

TEST(HyperMLPTest, BadOptionsGiveClearErrors) {
  auto expect = [](HyperMLPOptions o, const std::string& message) {
    try {
      HyperMLP hm(std::move(o));
      ADD_FAILURE() << "expected: " << message;
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), message.c_str());
    }
  };
  expect({.input_shape = {28, 28}, .num_classes = 1},
         "HyperMLP: num_classes must be at least 2. Received: num_classes=1");
  expect({.num_classes = 10},
         "HyperMLP: input_shape must give one sample's dimensions, e.g. {28, 28}. Received: an "
         "empty input_shape");
  expect({.input_shape = {28, 0}, .num_classes = 10},
         "HyperMLP: input_shape dimensions must be positive. Received: input_shape=[28, 0]");
  HyperParameters typo;
  typo.set("units", int64_t{64});
  expect({.input_shape = {28, 28}, .num_classes = 10, .fixed = typo},
         "HyperMLP: fixed names hyperparameters the model does not read: units. It reads: "
         "num_layers, units_0, units_1, units_2, dropout, optimizer, learning_rate");
  HyperParameters kind;
  kind.set("units_0", 0.5);
  expect({.input_shape = {28, 28}, .num_classes = 10, .fixed = kind},
         "HyperMLP: fixed hyperparameter 'units_0' must take int values within [1, 65536]. "
         "Received: Fixed {0.5}, default 0.5");
  HyperParameters optimizer;
  optimizer.Choice("optimizer", {"adam", "adagrad"});
  expect({.input_shape = {28, 28}, .num_classes = 10, .fixed = optimizer},
         "HyperMLP: fixed hyperparameter 'optimizer' must take values among {adam, sgd, "
         "rmsprop}. Received: Choice {adam, adagrad}, default adam");
  HyperParameters layers_n;
  layers_n.Int("num_layers", 1, 4);
  expect({.input_shape = {28, 28}, .num_classes = 10, .fixed = layers_n},
         "HyperMLP: fixed hyperparameter 'num_layers' must take int values within [1, 3]. "
         "Received: Int [1, 4], linear, default 1");
}

TEST(HyperCNNTest, DefaultsBuildTheDocumentedNetwork) {
  HyperCNN hm(kCnn);
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Reshape", "RandomFlip", "Conv2D", "MaxPooling2D", "Dropout",
                                      "Conv2D", "MaxPooling2D", "Dropout", "Flatten", "Dense",
                                      "Dropout", "Dense"}));
  // 3x3 convolutions with bias, 1 -> 32 -> 64 channels; 28 -> 14 -> 7 after the poolings.
  const int64_t conv = (3 * 3 * 1 * 32 + 32) + (3 * 3 * 32 * 64 + 64);
  const int64_t dense = (7 * 7 * 64 * 128 + 128) + (128 * 10 + 10);
  EXPECT_EQ(model.count_params(), conv + dense);
  EXPECT_EQ(model.count_params(), 421642);
  const auto flip = std::dynamic_pointer_cast<nn::RandomFlip>(model.layers()[1]);
  ASSERT_NE(flip, nullptr);
  EXPECT_EQ(flip->mode(), "horizontal");
  const auto conv0 = std::dynamic_pointer_cast<nn::Conv2D>(model.layers()[2]);
  ASSERT_NE(conv0, nullptr);
  EXPECT_EQ(conv0->filters(), 32);
  EXPECT_EQ(conv0->options().padding, "same");
  const auto dropout = std::dynamic_pointer_cast<nn::Dropout>(model.layers()[4]);
  ASSERT_NE(dropout, nullptr);
  EXPECT_DOUBLE_EQ(dropout->rate(), 0.1);
  const Tensor p = model.predict(random_uniform({2, 28, 28}, {.seed = 2}));
  EXPECT_EQ(p.shape(), (Shape{2, 10}));
  EXPECT_EQ(model.trainer().optimizer().class_name(), "Adam");
  EXPECT_DOUBLE_EQ(model.trainer().optimizer().learning_rate(), 1e-3);
}

TEST(HyperCNNTest, TheSearchSpaceListsEveryHyperparameterWithItsRange) {
  HyperCNN hm(kCnn);
  HyperParameters hp;
  build(hm, hp);
  EXPECT_EQ(space_lines(hp),
            (std::vector<std::string>{
                "Boolean augment: {false, true}, default true",
                "Choice flip: {none, horizontal}, default horizontal, when augment in {true}",
                "Float translation: [0, 0.15] step 0.05, linear, default 0, when augment in {true}",
                "Float zoom: [0, 0.15] step 0.05, linear, default 0, when augment in {true}",
                "Int num_blocks: [2, 3], linear, default 2",
                "Int filters_0: [16, 64] step 16, linear, default 32",
                "Int filters_1: [32, 128] step 32, linear, default 64",
                "Int filters_2: [64, 128] step 32, linear, default 128, when num_blocks in {3}",
                "Int convs_per_block: [1, 2], linear, default 1",
                "Boolean batch_norm: {false, true}, default false",
                "Float dropout: [0, 0.5] step 0.05, linear, default 0.1",
                "Choice head: {flatten, global_average}, default flatten",
                "Int dense_units: [64, 256] step 64, linear, default 128",
                "Float dense_dropout: [0, 0.5] step 0.05, linear, default 0.2",
                "Choice optimizer: {adam, sgd, rmsprop}, default adam",
                "Float learning_rate: [0.0001, 0.01], log, default 0.001"}));
}

TEST(HyperCNNTest, TranslationAndZoomAddTheirLayersAfterTheFlip) {
  HyperParameters fixed;
  fixed.set("translation", 0.1);
  fixed.set("zoom", 0.05);
  HyperCNN hm(
      {.input_shape = {28, 28}, .num_classes = 10, .fill_mode = "constant", .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  const std::vector<std::string> classes = layer_classes(model);
  EXPECT_EQ(std::vector<std::string>(classes.begin(), classes.begin() + 5),
            (std::vector<std::string>{"Reshape", "RandomFlip", "RandomTranslation", "RandomZoom",
                                      "Conv2D"}));
  const auto shift = std::dynamic_pointer_cast<nn::RandomTranslation>(model.layers()[2]);
  ASSERT_NE(shift, nullptr);
  EXPECT_EQ(shift->height_factor(), (std::pair<double, double>{-0.1, 0.1}));
  EXPECT_EQ(shift->width_factor(), (std::pair<double, double>{-0.1, 0.1}));
  EXPECT_EQ(shift->fill_mode(), "constant");
  const auto zoom = std::dynamic_pointer_cast<nn::RandomZoom>(model.layers()[3]);
  ASSERT_NE(zoom, nullptr);
  EXPECT_EQ(zoom->height_factor(), (std::pair<double, double>{-0.05, 0.05}));
  EXPECT_EQ(zoom->fill_mode(), "constant");
}

TEST(HyperCNNTest, BatchNormalizationFollowsEachConvolutionInsteadOfItsBiasAndRelu) {
  HyperParameters fixed;
  fixed.set("batch_norm", true);
  HyperCNN hm({.input_shape = {28, 28}, .num_classes = 10, .augment = false, .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Reshape", "Conv2D", "BatchNormalization", "Activation",
                                      "MaxPooling2D", "Dropout", "Conv2D", "BatchNormalization",
                                      "Activation", "MaxPooling2D", "Dropout", "Flatten", "Dense",
                                      "Dropout", "Dense"}));
  // No convolution bias; each normalization has gamma, beta and the two moving statistics.
  const int64_t conv = (3 * 3 * 1 * 32 + 4 * 32) + (3 * 3 * 32 * 64 + 4 * 64);
  EXPECT_EQ(model.count_params(), conv + (7 * 7 * 64 * 128 + 128) + (128 * 10 + 10));
}

TEST(HyperCNNTest, WithoutAugmentationARank3InputGoesStraightToTheConvolutions) {
  HyperCNN hm({.input_shape = {28, 28, 1}, .num_classes = 10, .augment = false});
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model)[0], "Conv2D");
  EXPECT_EQ(space_names(hp)[0], "num_blocks");
  EXPECT_EQ(hp.find("flip"), nullptr);
  EXPECT_EQ(model.predict(random_uniform({2, 28, 28, 1}, {.seed = 3})).shape(), (Shape{2, 10}));
}

TEST(HyperCNNTest, FixedValuesAreHonored) {
  HyperParameters fixed;
  fixed.set("augment", false);
  fixed.set("num_blocks", int64_t{3});
  fixed.set("convs_per_block", int64_t{2});
  fixed.set("dropout", 0.0);
  fixed.set("head", "global_average");
  fixed.set("dense_dropout", 0.0);
  fixed.Int("filters_0", 16, 16);
  fixed.Choice("filters_2", {int64_t{64}});
  HyperCNN hm({.input_shape = {16, 16, 3}, .num_classes = 4, .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  // augment is off for good, so flip, translation and zoom are never active: not declared.
  EXPECT_EQ(space_names(hp), (std::vector<std::string>{
                                 "augment", "num_blocks", "filters_0", "filters_1", "filters_2",
                                 "convs_per_block", "batch_norm", "dropout", "head", "dense_units",
                                 "dense_dropout", "optimizer", "learning_rate"}));
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Conv2D", "Conv2D", "MaxPooling2D", "Conv2D", "Conv2D",
                                      "MaxPooling2D", "Conv2D", "Conv2D", "MaxPooling2D",
                                      "GlobalAveragePooling2D", "Dense", "Dense"}));
  // Two 3x3 convolutions with bias per block: 3 -> 16 -> 16, 16 -> 64 -> 64, 64 -> 64 -> 64.
  const int64_t convs = (27 * 16 + 16) + (144 * 16 + 16) + (144 * 64 + 64) + (576 * 64 + 64) +
                        (576 * 64 + 64) + (576 * 64 + 64);
  EXPECT_EQ(model.count_params(), convs + (64 * 128 + 128) + (128 * 4 + 4));
  EXPECT_EQ(model.predict(random_uniform({2, 16, 16, 3}, {.seed = 4})).shape(), (Shape{2, 4}));
}

TEST(HyperCNNTest, BadOptionsGiveClearErrors) {
  auto expect = [](HyperCNNOptions o, const std::string& message) {
    try {
      HyperCNN hm(std::move(o));
      ADD_FAILURE() << "expected: " << message;
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), message.c_str());
    }
  };
  expect({.input_shape = {28, 28}, .num_classes = 0},
         "HyperCNN: num_classes must be at least 2. Received: num_classes=0");
  expect({.num_classes = 10},
         "HyperCNN: input_shape must be [height, width] or [height, width, channels]. Received: "
         "input_shape=[]");
  expect({.input_shape = {784}, .num_classes = 10},
         "HyperCNN: input_shape must be [height, width] or [height, width, channels]. Received: "
         "input_shape=[784]");
  expect({.input_shape = {4, 4}, .num_classes = 10},
         "HyperCNN: input_shape is too small for 3 blocks of 2x2 pooling (at least 8x8). "
         "Received: input_shape=[4, 4]");
  HyperParameters two;
  two.set("num_blocks", int64_t{2});
  EXPECT_NO_THROW(HyperCNN({.input_shape = {4, 4}, .num_classes = 10, .fixed = two}));
  HyperParameters flip;
  flip.set("flip", "vertical");
  expect({.input_shape = {28, 28}, .num_classes = 10, .fixed = flip},
         "HyperCNN: fixed hyperparameter 'flip' must take values among {none, horizontal}. "
         "Received: Fixed {vertical}, default vertical");
  HyperParameters no_augment;
  no_augment.set("zoom", 0.1);
  expect({.input_shape = {28, 28}, .num_classes = 10, .augment = false, .fixed = no_augment},
         "HyperCNN: fixed names hyperparameters the model does not read: zoom. It reads: "
         "num_blocks, filters_0, filters_1, filters_2, convs_per_block, batch_norm, dropout, "
         "head, dense_units, dense_dropout, optimizer, learning_rate");
  try {
    HyperCNN hm({.input_shape = {28, 28}, .num_classes = 10, .fill_mode = "mirror"});
    ADD_FAILURE() << "expected a fill_mode error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("mirror"), std::string::npos) << e.what();
  }
}

// Any point of either space builds and takes a finite training step on a tiny batch.
TEST(HyperModelsTest, RandomSamplesOfEverySpaceBuildAndTrainOneStep) {
  std::mt19937 rng(2024);
  const Tensor x = random_uniform({4, 16, 16}, {.seed = 5});
  const Tensor y = from_vector<int64_t>({0, 1, 2, 1}, Shape{4});
  HyperMLP mlp({.input_shape = {16, 16}, .num_classes = 3});
  HyperCNN cnn({.input_shape = {16, 16}, .num_classes = 3});
  for (HyperModel* hm : std::vector<HyperModel*>{&mlp, &cnn}) {
    HyperParameters space;
    build(*hm, space);
    for (int sample = 0; sample < 6; ++sample) {
      set_global_seed(static_cast<uint64_t>(sample));
      HyperParameters hp = random_values(space, rng);
      Model model = build(*hm, hp);
      const train::Logs logs = model.train_on_batch(x, y);
      EXPECT_TRUE(std::isfinite(logs.at("loss"))) << hp.to_json().dump();
      EXPECT_EQ(model.predict(x).shape(), (Shape{4, 3})) << hp.to_json().dump();
    }
  }
}

}  // namespace
}  // namespace osprey::tune
