#include "osprey/nn/build_limits.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::nn {
namespace {

using testing::expect_error;

BuildLimits expecting(std::map<std::string, ExpectedWeight> weights) {
  BuildLimits limits;
  limits.source = "m/model.safetensors";
  limits.expected = std::move(weights);
  return limits;
}

TEST(BuildLimitsTest, WeightsThatMatchTheExpectationsAreBuilt) {
  NameScope names;
  BuildLimitsScope scope(expecting(
      {{"dense/kernel", {DType::float32, {3, 4}}}, {"dense/bias", {DType::float32, {4}}}}));
  auto dense = layers::Dense(4);
  dense->build({Shape{2, 3}});
  EXPECT_EQ(dense->variables().size(), 2u);
}

TEST(BuildLimitsTest, AWeightOfAnotherShapeDtypeOrNameIsRefusedBeforeItExists) {
  {
    NameScope names;
    BuildLimitsScope scope(expecting({{"dense/kernel", {DType::float32, {3, 4}}}}));
    auto dense = layers::Dense(5);
    expect_error<IoError>(
        [&] {
          dense->build({Shape{2, 3}});
        },
        {"m/model.safetensors: weight \"dense/kernel\" has shape [3, 4], the "
         "model expects [3, 5]"});
    EXPECT_TRUE(dense->variables().empty());
  }
  {
    NameScope names;
    BuildLimitsScope scope(expecting({{"dense/kernel", {DType::float64, {3, 4}}}}));
    auto dense = layers::Dense(4);
    expect_error<IoError>(
        [&] {
          dense->build({Shape{2, 3}});
        },
        {"weight \"dense/kernel\" has dtype float64, the model expects float32"});
  }
  {
    NameScope names;
    BuildLimitsScope scope(expecting({}));
    auto dense = layers::Dense(4);
    expect_error<IoError>(
        [&] {
          dense->build({Shape{2, 3}});
        },
        {"m/model.safetensors: weight \"dense/kernel\" is missing"});
  }
}

// A layer built before it joins its model has no prefix yet: its weights match the file's by the
// end of their path. However they match, the weights together hold at most what the file does.
TEST(BuildLimitsTest, WeightsMatchByTheEndOfTheirPathAndNeverExceedTheFile) {
  BuildLimitsScope scope(expecting({{"heads/dense/kernel", {DType::float32, {3, 4}}}}));
  auto first = layers::Dense(4, {}, {.use_bias = false, .name = "dense"});
  first->build({Shape{2, 3}});
  EXPECT_EQ(first->variables().size(), 1u);
  auto second = layers::Dense(4, {}, {.use_bias = false, .name = "dense"});
  expect_error<IoError>(
      [&] {
        second->build({Shape{2, 3}});
      },
      {"m/model.safetensors: the model's weights need more than the 12 elements "
       "the file holds (at weight \"dense/kernel\" of shape [3, 4])"});
  auto other = layers::Dense(4, {}, {.use_bias = false, .name = "ense"});
  expect_error<IoError>(
      [&] {
        other->build({Shape{2, 3}});
      },
      {"weight \"ense/kernel\" is missing"});
}

TEST(BuildLimitsTest, TheWeightBudgetCountsEveryWeightOfTheScope) {
  NameScope names;
  BuildLimits limits;
  limits.source = "fuzz input";
  limits.max_weight_elements = 20;  // kernel 3x4 + bias 4 = 16 fit; a second bias does not
  BuildLimitsScope scope(limits);
  auto a = layers::Dense(4);
  a->build({Shape{2, 3}});
  auto b = layers::Dense(5);
  expect_error<ValueError>(
      [&] {
        b->build({Shape{2, 1}});
      },
      {"fuzz input: weight \"dense_1/kernel\" of shape [1, 5] takes the model "
       "past 20 weight elements"});
  // A shape whose element count overflows is past any budget, not a wrapped small number.
  auto c = layers::Dense(int64_t{1} << 40);
  expect_error<ValueError>(
      [&] {
        c->build({Shape{2, int64_t{1} << 40}});
      },
      {"takes the model past 20 weight elements"});
}

// A user's layer that infers its output shape the default way: by running on zeros.
class Identity : public SingleInputLayer {
 public:
  Identity() : SingleInputLayer("Identity", LayerOptions{.name = "identity"}) {}

 protected:
  Variable call_single(const Variable& x, bool) override { return x; }
};

TEST(BuildLimitsTest, ShapeInferenceIsBoundedAndTheOuterLimitsComeBack) {
  auto identity = std::make_shared<Identity>();
  {
    BuildLimits limits;
    limits.source = "fuzz input";
    limits.max_activation_elements = 1000;
    BuildLimitsScope scope(limits);
    expect_error<ValueError>(
        [&] {
          identity->compute_output_shape({Shape{-1, 100, 100}});
        },
        {"fuzz input: identity would run on an input of shape [1, 100, 100], past 1000 elements"});
    {
      BuildLimitsScope unbounded(BuildLimits{});
      EXPECT_EQ(identity->compute_output_shape({Shape{-1, 100, 100}}), (Shape{-1, 100, 100}));
    }
    EXPECT_THROW(identity->compute_output_shape({Shape{-1, 100, 100}}), ValueError);
  }
  EXPECT_EQ(identity->compute_output_shape({Shape{-1, 100, 100}}), (Shape{-1, 100, 100}));
}

}  // namespace
}  // namespace osprey::nn
