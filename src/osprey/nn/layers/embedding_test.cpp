#include "osprey/nn/layers/embedding.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(EmbeddingTest, ShapeAndParameterCountMatchKeras) {
  // Keras: Embedding(1000, 64) on [None, 20] -> [None, 20, 64], 64000 params.
  auto emb = layers::Embedding(1000, 64);
  EXPECT_EQ(emb->compute_output_shape({{-1, 20}}), (Shape{-1, 20, 64}));
  const Variable y = emb(Variable(zeros({8, 20}, {DType::int64})));
  EXPECT_EQ(y.shape(), (Shape{8, 20, 64}));
  EXPECT_EQ(y.dtype(), DType::float32);
  EXPECT_EQ(emb->count_params(), 64000);
  EXPECT_EQ(emb->embeddings().name(), emb->name() + "/embeddings");
}

TEST(EmbeddingTest, LooksUpRowsAndInitializesUniformly) {
  auto emb = layers::Embedding(50, 4, {.dtype = "float64"});
  const Variable ids(from_vector<int32_t>({3, 0, 3, 49}, {2, 2}));
  const Variable y = emb(ids);
  const Tensor& table = emb->embeddings().value();
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(y.value().at({0, 0, j}), table.at({3, j}));
    EXPECT_EQ(y.value().at({1, 1, j}), table.at({49, j}));
  }
  for (double v : table.to_vector<double>()) {
    EXPECT_LE(std::abs(v), 0.05);
  }
  // Float indices are truncated to integers, as Keras casts them.
  EXPECT_EQ(emb(Variable(from_vector<double>({3.0}, {1}))).value().at({0, 1}), table.at({3, 1}));
}

TEST(EmbeddingTest, RepeatedIndicesAccumulateGradients) {
  auto emb = layers::Embedding(5, 2, {.dtype = "float64"});
  autograd::sum(emb(Variable(from_vector<int64_t>({1, 1, 4}, {3})))).backward();
  EXPECT_EQ(emb->embeddings().grad().to_vector<double>(),
            (std::vector<double>{0, 0, 2, 2, 0, 0, 0, 0, 1, 1}));
}

TEST(EmbeddingTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::Embedding(10, 3, {.dtype = "float64"}); }, Shape{2, 5},
      {.output_shape = {2, 5, 3},
       .params = 30,
       .weights = {{"embeddings", {10, 3}}},
       .make_input = [](int, const Shape& s, uint64_t seed) {
         // Uniform in [0, 10), truncated: ids 0..9.
         return random_uniform(s, {.seed = seed, .dtype = DType::float64, .high = 10.0})
             .to(DType::int64);
       }});
}

TEST(EmbeddingTest, ConfigUsesKerasFieldNames) {
  const nlohmann::json c = layers::Embedding(100, 8, {.name = "tokens"})->get_config();
  EXPECT_EQ(c["input_dim"], 100);
  EXPECT_EQ(c["output_dim"], 8);
  EXPECT_EQ(c["embeddings_initializer"]["class_name"], "RandomUniform");
  EXPECT_EQ(c["embeddings_initializer"]["config"]["minval"], -0.05);
  EXPECT_EQ(c["embeddings_initializer"]["config"]["maxval"], 0.05);
  EXPECT_EQ(c["mask_zero"], false);
  EXPECT_TRUE(c["embeddings_regularizer"].is_null());
}

TEST(EmbeddingTest, RejectsOutOfRangeIndicesAndBadSizes) {
  EXPECT_EQ(
      test::value_error([] { layers::Embedding(0, 8); }),
      "Embedding: input_dim and output_dim must be positive. Received: input_dim=0, output_dim=8");
  auto emb = layers::Embedding(1000, 8, {.name = "emb"});
  EXPECT_EQ(test::value_error([&] {
              emb(Variable(from_vector<int64_t>({5, 1000, 2}, {3})));
            }),
            "emb: index 1000 at position 1 is out of range: expected indices in [0, 1000) "
            "(input_dim=1000)");
  EXPECT_EQ(test::value_error([&] { emb(Variable(from_vector<int32_t>({-1}, {1}))); }),
            "emb: index -1 at position 0 is out of range: expected indices in [0, 1000) "
            "(input_dim=1000)");
}

}  // namespace
}  // namespace osprey::nn
