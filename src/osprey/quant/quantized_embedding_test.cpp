#include "osprey/quant/quantized_embedding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/nn/layers/embedding.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::quant {
namespace {

using autograd::Variable;

std::shared_ptr<nn::Embedding> built_embedding(int64_t vocab, int64_t dim) {
  auto e = std::make_shared<nn::Embedding>(
      vocab, dim, nn::EmbeddingOptions{.embeddings_initializer = "glorot_uniform"});
  e->build({Shape{-1, 4}});
  return e;
}

TEST(QuantizedEmbeddingTest, TheTableIsInt8WithOneSeedsFormulaScalePerRow) {
  nn::clear_session();
  auto e = built_embedding(30, 12);
  e->set_path_prefix("sequential");
  auto q = QuantizedEmbedding::from_embedding(*e);
  q->set_path_prefix("sequential");
  const auto vars = q->variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name(), "sequential/embedding/embeddings");
  EXPECT_EQ(vars[0].value().dtype(), DType::int8);
  EXPECT_EQ(vars[1].name(), "sequential/embedding/embeddings_scale");
  EXPECT_EQ(vars[1].shape(), (Shape{30}));
  const auto t = e->embeddings().value().to_vector<double>();
  const auto s = q->embeddings_scale().value().to_vector<double>();
  for (int64_t r = 0; r < 30; ++r) {
    double amax = 0.0;
    for (int64_t j = 0; j < 12; ++j) amax = std::max(amax, std::fabs(t[r * 12 + j]));
    EXPECT_NEAR(s[r], 127.0 / (amax + 1e-7), 127.0 / amax * 2.4e-7) << "row " << r;
  }
}

// A lookup is row_q / row_scale: one float32 division, so within 2^-24 relative of the float64
// quotient of the same int8 value and scale, and within half a step (0.5 / scale) of the float
// table.
TEST(QuantizedEmbeddingTest, LookupDequantizesTheGatheredRowsOnly) {
  nn::clear_session();
  auto e = built_embedding(30, 12);
  auto q = QuantizedEmbedding::from_embedding(*e);
  const Tensor ids = from_vector<int64_t>({3, 0, 29, 3, 17, 8}, {2, 3});
  const Tensor y = (*q)(Variable(ids)).value();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 12}));
  ASSERT_EQ(y.dtype(), DType::float32);
  const auto yv = y.to_vector<double>(), t = e->embeddings().value().to_vector<double>();
  const auto tq = q->embeddings().value().to_vector<int8_t>();
  const auto s = q->embeddings_scale().value().to_vector<double>();
  const auto iv = ids.to_vector<int64_t>();
  for (size_t i = 0; i < iv.size(); ++i) {
    for (int64_t j = 0; j < 12; ++j) {
      const double want = static_cast<double>(tq[iv[i] * 12 + j]) / s[iv[i]];
      const double got = yv[i * 12 + j];
      EXPECT_NEAR(got, want, std::fabs(want) * 6e-8 + 1e-30) << i << "," << j;
      EXPECT_LE(std::fabs(got - t[iv[i] * 12 + j]), 0.5 / s[iv[i]] * (1 + 1e-6)) << i << "," << j;
    }
  }
  // int32 and float indices give the same rows, as for Embedding.
  EXPECT_EQ((*q)(Variable(ids.to(DType::int32))).value().to_vector<float>(), y.to_vector<float>());
}

// An Embedding with mask_zero stays one: the int8 form marks index 0 as padding too, and keeps
// saying so through its config.
TEST(QuantizedEmbeddingTest, MaskZeroCarriesOverToTheInt8Form) {
  nn::clear_session();
  auto e = std::make_shared<nn::Embedding>(10, 4, nn::EmbeddingOptions{.mask_zero = true});
  e->build({Shape{-1, 3}});
  auto q = QuantizedEmbedding::from_embedding(*e);
  const Tensor ids = from_vector<int64_t>({3, 0, 9, 0, 0, 1}, {2, 3});
  EXPECT_EQ((*q)(Variable(ids)).mask().to(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 1, 0, 0, 1}));
  auto again = QuantizedEmbedding::from_config(q->get_config());
  EXPECT_TRUE(again->supports_masking());
  EXPECT_FALSE(QuantizedEmbedding::from_embedding(*built_embedding(10, 4))->supports_masking());
}

TEST(QuantizedEmbeddingTest, OutOfRangeIndicesAndBadConfigsAreValueErrors) {
  nn::clear_session();
  auto q = QuantizedEmbedding::from_embedding(*built_embedding(10, 4));
  testing::expect_error<ValueError>(
      [&] {
        (*q)(Variable(from_vector<int64_t>({1, 10}, {2})));
      },
      {"embedding: index 10 at position 1 is out of range", "input_dim=10"});
  const nlohmann::json c = q->get_config();
  EXPECT_EQ(c["quantization_mode"], "int8");
  EXPECT_EQ(QuantizedEmbedding::from_config(c)->get_config(), c);
  nlohmann::json bad = c;
  bad["quantization_mode"] = "int4";
  testing::expect_error<ValueError>(
      [&] { QuantizedEmbedding::from_config(bad); },
      {"QuantizedEmbedding: quantization_mode must be \"int8\"", "int4"});
  nn::Embedding unbuilt(5, 2);
  testing::expect_error<ValueError>([&] { QuantizedEmbedding::from_embedding(unbuilt); },
                                    {"not built"});
}

}  // namespace
}  // namespace osprey::quant
