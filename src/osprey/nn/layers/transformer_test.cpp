// Tests of TransformerEncoder / TransformerDecoder and PositionEmbedding: what each block computes
// against the same layers composed by hand, causality, cross-attention, the cached decoder step,
// configs, and the errors that name the layer. (The GPT built from them is checked against
// PyTorch in models/gpt_test.cpp.)
#include "osprey/nn/layers/transformer.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/nn/layers/position_embedding.h"

namespace osprey::nn {
namespace {

using test::value_error;
using test::wave;

std::vector<float> values(const Variable& v) { return v.value().to_vector<float>(); }

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol = 1e-5) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "element " << i;
}

std::vector<std::string> weight_names(const Layer& l) {
  std::vector<std::string> out;
  for (const Variable& v : l.variables()) out.push_back(v.name());
  return out;
}

TEST(TransformerTest, PreNormDecoderIsTheResidualComposition) {
  auto block = layers::TransformerDecoder(32, 2, {.activation = "gelu", .normalize_first = true});
  const Variable x(wave({2, 5, 8}, 1).to(DType::float32));
  const Variable y = block(x);
  // By hand, from the block's own sublayers: x + attn(ln1(x)), then h + ff(ln2(h)).
  std::map<std::string, std::shared_ptr<Layer>> by_name;
  for (const auto& l : block->sublayers()) by_name[l->name()] = l;
  auto& attn = static_cast<MultiHeadAttention&>(*by_name.at("self_attention"));
  const Variable a = (*by_name.at("self_attention_layer_norm"))(x);
  const Variable h = autograd::add(x, attn.attend(a, a, {}, {.use_causal_mask = true}));
  const Variable f = (*by_name.at("feedforward_output_dense"))(
      (*by_name.at("feedforward_intermediate_dense"))((*by_name.at("feedforward_layer_norm"))(h)));
  expect_close(values(y), values(autograd::add(h, f)));
}

TEST(TransformerTest, PostNormEncoderIsTheResidualComposition) {
  auto block = layers::TransformerEncoder(16, 4);
  const Variable x(wave({1, 6, 8}, 2).to(DType::float32));
  const Variable y = block(x);
  std::map<std::string, std::shared_ptr<Layer>> by_name;
  for (const auto& l : block->sublayers()) by_name[l->name()] = l;
  auto& attn = static_cast<MultiHeadAttention&>(*by_name.at("self_attention"));
  const Variable h =
      (*by_name.at("self_attention_layer_norm"))(autograd::add(x, attn.attend(x, x)));
  const Variable f =
      (*by_name.at("feedforward_output_dense"))((*by_name.at("feedforward_intermediate_dense"))(h));
  expect_close(values(y), values((*by_name.at("feedforward_layer_norm"))(autograd::add(h, f))));
}

TEST(TransformerTest, TheDecoderIsCausalAndTheEncoderIsNot) {
  auto decoder = layers::TransformerDecoder(16, 2);
  auto encoder = layers::TransformerEncoder(16, 2);
  Tensor a = wave({1, 6, 4}, 3).to(DType::float32);
  Tensor b = a.clone();
  b.narrow(1, 5, 1).copy_(wave({1, 1, 4}, 9).to(DType::float32));  // change the last step only
  const auto first5 = [](const Variable& v) {
    return v.value().narrow(1, 0, 5).contiguous().to_vector<float>();
  };
  expect_close(first5(decoder(Variable(a))), first5(decoder(Variable(b))), 0.0);
  EXPECT_NE(first5(encoder(Variable(a))), first5(encoder(Variable(b))));
}

TEST(TransformerTest, CrossAttentionAndCachedSteps) {
  auto block = layers::TransformerDecoder(16, 2, {.normalize_first = true, .name = "dec"});
  const Variable x(wave({2, 5, 8}, 4).to(DType::float32));
  const Variable memory(wave({2, 7, 8}, 5).to(DType::float32));
  const Variable full = block(std::vector<Variable>{x, memory});
  EXPECT_EQ(full.shape(), (Shape{2, 5, 8}));
  // Three normalizations (gamma, beta), two attentions (8 each), two dense layers (2 each).
  EXPECT_EQ(weight_names(*block).size(), 3u * 2 + 2u * 8 + 2u * 2);
  // Cached: two steps, then three; each sees the cache and the encoder's output.
  AttentionCache cache = block->self_attention()->make_cache(2, 5);
  const Variable s1 =
      block->call_cached(Variable(x.value().narrow(1, 0, 2).contiguous()), cache, memory);
  const Variable s2 =
      block->call_cached(Variable(x.value().narrow(1, 2, 3).contiguous()), cache, memory);
  const Variable stepped = autograd::concat({s1, s2}, 1);
  expect_close(values(stepped), values(full));
  EXPECT_EQ(value_error([&] { block->call_cached(Variable(x.value()), cache, memory); }),
            "self_attention: 5 new positions after 5 overflow the cache's capacity of 5");
  EXPECT_EQ(value_error([&] { block(x); }),
            "dec: the block was built with an encoder_sequence; call it the same way");
}

TEST(TransformerTest, ConfigRoundTripAndWeightNames) {
  auto block = layers::TransformerEncoder(64, 4,
                                          {.dropout = 0.1,
                                           .activation = "gelu",
                                           .normalize_first = true,
                                           .use_bias = false,
                                           .name = "enc"});
  block->build({Shape{-1, 10, 32}});
  EXPECT_EQ(
      weight_names(*block),
      (std::vector<std::string>{
          "enc/self_attention_layer_norm/gamma", "enc/self_attention/query/kernel",
          "enc/self_attention/key/kernel", "enc/self_attention/value/kernel",
          "enc/self_attention/attention_output/kernel", "enc/feedforward_layer_norm/gamma",
          "enc/feedforward_intermediate_dense/kernel", "enc/feedforward_output_dense/kernel"}));
  const nlohmann::json c = block->get_config();
  EXPECT_EQ(c["intermediate_dim"], 64);
  EXPECT_EQ(c["num_heads"], 4);
  EXPECT_EQ(c["activation"], "gelu");
  const auto back = layer_from_config("TransformerEncoder", c);
  EXPECT_EQ(back->get_config(), c);
  back->build({Shape{-1, 10, 32}});
  EXPECT_EQ(back->count_params(), block->count_params());
}

TEST(TransformerTest, BadInputIsNamed) {
  auto block = layers::TransformerEncoder(16, 3, {.name = "enc"});
  EXPECT_EQ(value_error([&] {
              block(Variable(wave({1, 4, 8}, 1).to(DType::float32)));
            }),
            "enc: the input width 8 must be a multiple of num_heads (3), which splits it into "
            "heads. Received: [1, 4, 8]");
  EXPECT_EQ(value_error([&] { layers::TransformerDecoder(0, 2); }),
            "TransformerDecoder: intermediate_dim and num_heads must be positive. Received: "
            "intermediate_dim=0, num_heads=2");
  EXPECT_EQ(
      value_error([&] { layers::TransformerEncoder(8, 2, {.activation = "nope"}); }).substr(0, 24),
      "unknown activation 'nope");
}

TEST(PositionEmbeddingTest, AddsTheRowsOfItsTable) {
  auto pos = layers::PositionEmbedding(6, {.name = "pos"});
  const Variable x(wave({2, 4, 3}, 1).to(DType::float32));
  const Variable y = pos(x);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3}));
  test::set_weight(*pos, "embeddings", wave({6, 3}, 2));
  const std::vector<float> table = wave({6, 3}, 2).to_vector<float>();
  const std::vector<float> got = values(pos(x));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(got[b * 12 + i], table[i]);
  }
  const std::vector<float> later = values(pos->positions(2, 3));
  expect_close(later, std::vector<float>(table.begin() + 9, table.begin() + 15), 0.0);
  EXPECT_EQ(pos->get_config()["sequence_length"], 6);
  EXPECT_EQ(value_error([&] {
              pos(Variable(wave({1, 7, 3}, 1).to(DType::float32)));
            }),
            "pos: the input has 7 steps; the layer holds 6 positions (sequence_length). "
            "Received: [1, 7, 3]");
  EXPECT_EQ(value_error([&] { pos->positions(2, 5); }),
            "pos: positions [5, 7) run past the 6 the layer holds (sequence_length)");
}

}  // namespace
}  // namespace osprey::nn
