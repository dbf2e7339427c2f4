#include "osprey/nn/layer.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/layers/layer_test_helpers.h"

namespace osprey::nn {
namespace {

// A layer that relies on the base class's compute_output_shape (one zero batch through call()).
class Twice : public SingleInputLayer {
 public:
  Twice() : SingleInputLayer("Twice", {}) {}

 protected:
  Variable call_single(const Variable& x, bool) override { return autograd::mul(x, 2.0); }
};

TEST(LayerTest, NamesAreUniqueSnakeCaseOfTheClassAsKeras) {
  clear_session();
  EXPECT_EQ(layers::Dense(2)->name(), "dense");
  EXPECT_EQ(layers::Dense(2)->name(), "dense_1");
  EXPECT_EQ(layers::Conv2D(2, 3)->name(), "conv2d");
  EXPECT_EQ(layers::BatchNormalization()->name(), "batch_normalization");
  EXPECT_EQ(layers::Dense(2, {}, {.name = "head"})->name(), "head");
  EXPECT_EQ(layers::Dense(2)->name(), "dense_2");
  clear_session();
  EXPECT_EQ(layers::Dense(2)->name(), "dense");
}

TEST(LayerTest, SnakeCaseMatchesKerasForBuiltInClassNames) {
  EXPECT_EQ(to_snake_case("Dense"), "dense");
  EXPECT_EQ(to_snake_case("BatchNormalization"), "batch_normalization");
  EXPECT_EQ(to_snake_case("Conv2D"), "conv2d");
  EXPECT_EQ(to_snake_case("MaxPooling2D"), "max_pooling2d");
  EXPECT_EQ(to_snake_case("GlobalAveragePooling2D"), "global_average_pooling2d");
  EXPECT_EQ(to_snake_case("ReLU"), "re_lu");
}

TEST(LayerTest, BuildsLazilyFromTheFirstInput) {
  auto dense = layers::Dense(4);
  EXPECT_FALSE(dense->built());
  EXPECT_TRUE(dense->variables().empty());
  dense(Variable(zeros({2, 3})));
  EXPECT_TRUE(dense->built());
  EXPECT_EQ(dense->build_input_shapes(), (std::vector<Shape>{{2, 3}}));
  ASSERT_EQ(dense->variables().size(), 2u);
  dense->build({{2, 99}});  // idempotent: nothing rebuilt
  EXPECT_EQ(dense->kernel().shape(), (Shape{3, 4}));
}

TEST(LayerTest, PathPrefixRenamesExistingWeights) {
  auto dense = layers::Dense(4, {}, {.name = "dense_7"});
  dense->build({{-1, 3}});
  EXPECT_EQ(dense->kernel().name(), "dense_7/kernel");
  dense->set_path_prefix("sequential");
  EXPECT_EQ(dense->path(), "sequential/dense_7");
  EXPECT_EQ(dense->kernel().name(), "sequential/dense_7/kernel");
  EXPECT_EQ(dense->bias().name(), "sequential/dense_7/bias");
  dense->set_path_prefix("");
  EXPECT_EQ(dense->kernel().name(), "dense_7/kernel");
}

TEST(LayerTest, TrainableFlagControlsGradientsAndTheTrainableLists) {
  auto dense = layers::Dense(4);
  dense->build({{-1, 3}});
  EXPECT_EQ(dense->trainable_variables().size(), 2u);
  dense->set_trainable(false);
  EXPECT_TRUE(dense->trainable_variables().empty());
  EXPECT_EQ(dense->non_trainable_variables().size(), 2u);
  EXPECT_FALSE(dense->kernel().requires_grad());
  EXPECT_EQ(dense->get_config()["trainable"], false);
  dense->set_trainable(true);
  EXPECT_TRUE(dense->kernel().requires_grad());
  auto frozen = layers::Dense(4, {}, {.trainable = false});
  frozen->build({{-1, 3}});
  EXPECT_TRUE(frozen->trainable_variables().empty());
}

TEST(LayerTest, RegularizationLossesPenalizeRegularizedTrainableWeights) {
  auto dense = layers::Dense(2, {},
                             {.kernel_regularizer = Regularizer::l2(0.1),
                              .bias_regularizer = Regularizer::l1(0.5),
                              .dtype = "float64"});
  dense->build({{-1, 3}});
  test::set_weight(*dense, "kernel", from_vector<double>({1, 2, 3, -1, -2, -3}, {3, 2}));
  test::set_weight(*dense, "bias", from_vector<double>({-4, 2}, {2}));
  const std::vector<Variable> losses = dense->regularization_losses();
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_DOUBLE_EQ(losses[0].item(), 0.1 * 28);  // 0.1 * sum(w^2)
  EXPECT_DOUBLE_EQ(losses[1].item(), 0.5 * 6);   // 0.5 * sum|b|
  EXPECT_TRUE(layers::Dense(2)->regularization_losses().empty());
  dense->set_trainable(false);
  EXPECT_TRUE(dense->regularization_losses().empty());
}

TEST(LayerTest, DefaultComputeOutputShapeRunsOneZeroBatch) {
  auto twice = make_layer<Twice>();
  EXPECT_EQ(twice->compute_output_shape({{-1, 3, 5}}), (Shape{-1, 3, 5}));
  EXPECT_EQ(twice->name(), "twice");
}

TEST(LayerTest, FunctionalCallsProduceSymbolicShapes) {
  const SymbolicTensor in = Input({28, 28, 1});
  EXPECT_EQ(in.shape(), (Shape{-1, 28, 28, 1}));
  const SymbolicTensor h = layers::Flatten()(layers::MaxPooling2D(2)(layers::Conv2D(8, 3)(in)));
  EXPECT_EQ(h.shape(), (Shape{-1, 13 * 13 * 8}));
  const SymbolicTensor cat =
      layers::Concatenate()(std::vector<SymbolicTensor>{h, layers::Dense(4)(h)});
  EXPECT_EQ(cat.shape(), (Shape{-1, 13 * 13 * 8 + 4}));
  ASSERT_NE(cat.node()->layer, nullptr);
  EXPECT_EQ(cat.node()->layer->class_name(), "Concatenate");
}

TEST(LayerTest, RejectsTheWrongNumberOfInputsAndNonFloatDtypes) {
  auto dense = layers::Dense(2, {}, {.name = "d"});
  EXPECT_EQ(test::value_error([&] {
              dense(std::vector<Variable>{Variable(zeros({1, 2})), Variable(zeros({1, 2}))});
            }),
            "d: expected 1 input(s), received 2");
  EXPECT_EQ(test::value_error([] { layers::Dense(2, {}, {.name = "i", .dtype = "int32"}); }),
            "i: unknown dtype policy 'int32'. Valid policies: float32, float64, float16, bfloat16, "
            "mixed_float16, mixed_bfloat16");
}

}  // namespace
}  // namespace osprey::nn
