// quant::quantize on the GPT and its transformer layers (issue 43). int8 swaps the token
// embedding (whose int8 table the tied head reads too), every attention and every feed-forward
// Dense; the model generates with and without the cache, saves and loads with identical logits,
// and fit refuses it. float8 swaps the Dense layers and the attentions, trains, and saves its
// scaling state. In train's tests because it needs models, quant and the trainer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "osprey/core/rng.h"
#include "osprey/io/safetensors.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/models/gpt.h"
#include "osprey/models/saving.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/quant/float8_multi_head_attention.h"
#include "osprey/quant/quantize.h"
#include "osprey/quant/quantized_multi_head_attention.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

namespace fs = std::filesystem;
using autograd::Variable;

constexpr int64_t kVocab = 11, kBlock = 8;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("osprey_quantize_gpt_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

models::GPTConfig config() {
  return {.vocab_size = kVocab, .block_size = kBlock, .n_layer = 2, .n_head = 2, .n_embd = 32};
}

// A language with a rule to learn: rows of (start + 5 t) mod 11, so a trained model's next
// token is clear, plus a little noise (every seventh token random) so it is not a lookup.
Tensor sequences(int64_t rows, int64_t steps, uint64_t seed) {
  const Philox rng(seed);
  std::vector<int64_t> ids;
  for (int64_t r = 0; r < rows; ++r) {
    const auto start = static_cast<int64_t>(rng(0, static_cast<uint64_t>(r))[0] % kVocab);
    for (int64_t t = 0; t < steps; ++t) {
      const auto draw = rng(1 + static_cast<uint64_t>(t), static_cast<uint64_t>(r))[0];
      ids.push_back(draw % 7 == 0 ? static_cast<int64_t>(draw / 7 % kVocab)
                                  : (start + 5 * t) % kVocab);
    }
  }
  return from_vector<int64_t>(ids, {rows, steps});
}

void compile(Model& model) {
  model.compile(std::make_shared<optim::Adam>(optim::AdamOptions{.learning_rate = 1e-2}),
                std::make_shared<losses::SparseCategoricalCrossentropy>(
                    losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
}

// Trained-ish: Adam steps on batches of the language. 150 steps take the loss from ln 11 ~ 2.4 to
// about 0.9 (the noise keeps it above ~0.7), so the logits have a clear maximum, as a trained
// model's do, and greedy decoding is not decided by near ties.
double train(Model& model, int64_t steps, uint64_t seed) {
  double loss = 0.0;
  for (int64_t i = 0; i < steps; ++i) {
    const Tensor all = sequences(16, kBlock + 1, seed + static_cast<uint64_t>(i));
    loss = model
               .train_on_batch(all.narrow(1, 0, kBlock).contiguous(),
                               all.narrow(1, 1, kBlock).contiguous())
               .at("loss");
  }
  return loss;
}

models::GPT& gpt_of(const Model& model) { return dynamic_cast<models::GPT&>(model.network()); }

Tensor logits(models::GPT& gpt, const Tensor& tokens) {
  return gpt.call_all({Variable(tokens)}, false)[0].value();
}

std::string class_of(models::GPT& gpt, const std::string& block, const std::string& sublayer) {
  for (const auto& l : gpt.get_layer(block)->sublayers()) {
    if (l->name() == sublayer) return l->class_name();
  }
  return "missing";
}

TEST(QuantizeGptTest, Int8SwapsTheEmbeddingEveryAttentionAndDenseKeepingWeightPaths) {
  nn::clear_session();
  models::GPT gpt(config());
  std::set<std::string> before;
  for (const Variable& v : gpt.variables()) before.insert(v.name());
  const std::vector<std::string> done = quant::quantize(gpt, "int8");
  std::vector<std::string> expected = {"gpt/token_embedding/embeddings"};
  for (const std::string b : {"gpt/block_0/", "gpt/block_1/"}) {
    for (const char* k : {"query", "key", "value", "attention_output"})
      expected.push_back(b + "self_attention/" + k + "/kernel");
    expected.push_back(b + "feedforward_intermediate_dense/kernel");
    expected.push_back(b + "feedforward_output_dense/kernel");
  }
  EXPECT_EQ(done, expected);
  EXPECT_EQ(gpt.get_layer("token_embedding")->class_name(), "QuantizedEmbedding");
  EXPECT_EQ(gpt.get_layer("position_embedding")->class_name(), "PositionEmbedding");
  EXPECT_EQ(class_of(gpt, "block_1", "self_attention"), "QuantizedMultiHeadAttention");
  EXPECT_EQ(class_of(gpt, "block_1", "feedforward_output_dense"), "QuantizedDense");
  EXPECT_EQ(class_of(gpt, "block_1", "feedforward_layer_norm"), "LayerNormalization");
  // Every float32 weight path is still there (int8 now where quantized), plus the scales.
  std::set<std::string> after;
  for (const Variable& v : gpt.variables()) after.insert(v.name());
  for (const std::string& name : before) EXPECT_TRUE(after.contains(name)) << name;
  EXPECT_TRUE(after.contains("gpt/block_0/self_attention/query/kernel_scale"));
  EXPECT_TRUE(after.contains("gpt/token_embedding/embeddings_scale"));
  EXPECT_EQ(quant::int8_layers(gpt).size(), 1u + 2u * 3u);
  testing::expect_error<ValueError>(
      [&] { quant::quantize(gpt, "int8"); },
      {"no Dense, Conv2D, MultiHeadAttention or Embedding layer left"});
}

TEST(QuantizeGptTest, ReplacingAGptLayerKeepsWhatTheModelReadsThroughIt) {
  nn::clear_session();
  models::GPT gpt(config());
  testing::expect_error<ValueError>(
      [&] {
        gpt.replace_sublayer("token_embedding",
                             layers::Dense(4, {}, {.name = "token_embedding"}).ptr());
      },
      {"gpt: the head shares the token embedding's table (tie_weights), so 'token_embedding' "
       "must stay a TiedEmbedding. Received: Dense"});
  testing::expect_error<ValueError>(
      [&] { gpt.replace_sublayer("block_0", layers::Dense(4, {}, {.name = "block_0"}).ptr()); },
      {"gpt: 'block_0' is a TransformerDecoder; a Dense cannot take its place"});
  testing::expect_error<ValueError>(
      [&] { gpt.replace_sublayer("nope", layers::Dense(4, {}, {.name = "nope"}).ptr()); },
      {"gpt: no layer named 'nope'"});
  auto& block = *gpt.get_layer("block_0");
  testing::expect_error<ValueError>(
      [&] { block.replace_sublayer("self_attention", layers::Dense(4, {}, {.name = "x"}).ptr()); },
      {"block_0: the layer replacing 'self_attention' must keep its name. Received: 'x'"});
  testing::expect_error<ValueError>(
      [&] { block.replace_sublayer("nope", layers::Dense(4, {}, {.name = "nope"}).ptr()); },
      {"block_0: no sublayer named 'nope'. Sublayers: self_attention_layer_norm"});
}

// The measured bounds (seeded, so they hold run to run): after training, the int8 logits differ
// from float32's by at most 1.5% of the float32 logits' range (measured: 0.37%, 0.028 of a range
// of 7.4, after 150 steps), and greedy generation picks float32's token at 95% of 4 x 24 steps
// (measured: all 96).
TEST(QuantizeGptTest, Int8LogitsStayCloseAndGreedyGenerationAgreesWithAndWithoutTheCache) {
  nn::clear_session();
  set_global_seed(11);
  Model model(std::make_shared<models::GPT>(config()));
  compile(model);
  const double loss = train(model, 150, 100);
  EXPECT_LT(loss, 1.2);
  models::GPT& gpt = gpt_of(model);
  const Tensor held_out = sequences(8, kBlock, 7);
  const Tensor float_logits = logits(gpt, held_out).clone();
  const Tensor prompt = sequences(4, 3, 9);
  const models::GenerateOptions greedy{.max_new_tokens = 24, .temperature = 0.0};
  const std::vector<int64_t> float_tokens =
      models::generate(gpt, prompt, greedy).to_vector<int64_t>();

  quant::quantize(gpt, "int8");
  const Tensor int8_logits = logits(gpt, held_out);
  const double range = max(float_logits).item() - min(float_logits).item();
  const double worst = max(abs(sub(int8_logits, float_logits))).item();
  EXPECT_LT(worst, 0.015 * range) << "max |int8 - float32| " << worst << ", range " << range;

  const std::vector<int64_t> cached = models::generate(gpt, prompt, greedy).to_vector<int64_t>();
  models::GenerateOptions uncached = greedy;
  uncached.use_cache = false;
  EXPECT_EQ(models::generate(gpt, prompt, uncached).to_vector<int64_t>(), cached);
  int64_t same = 0, total = 0;
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t t = 3; t < 27; ++t, ++total)
      same += cached[r * 27 + t] == float_tokens[r * 27 + t];
  }
  EXPECT_GE(static_cast<double>(same), 0.95 * static_cast<double>(total))
      << same << " of " << total << " greedy tokens agree";
}

TEST(QuantizeGptTest, Int8GptSavesAndLoadsWithIdenticalLogitsAndFitRefusesIt) {
  nn::clear_session();
  set_global_seed(12);
  Model model(std::make_shared<models::GPT>(config()));
  model.quantize("int8");
  compile(model);
  const Tensor tokens = sequences(3, kBlock, 5);
  const Tensor before = logits(gpt_of(model), tokens).clone();
  const fs::path dir = temp_dir("int8");
  model.save(dir.string());
  const io::SafetensorsFile file = io::load_safetensors(dir / "model.safetensors");
  EXPECT_EQ(file.find("gpt/block_0/self_attention/value/kernel")->dtype(), DType::int8);
  EXPECT_EQ(file.find("gpt/token_embedding/embeddings")->dtype(), DType::int8);
  Model loaded = load_model(dir.string());
  models::GPT& back = gpt_of(loaded);
  EXPECT_EQ(back.get_layer("token_embedding")->class_name(), "QuantizedEmbedding");
  EXPECT_EQ(class_of(back, "block_0", "self_attention"), "QuantizedMultiHeadAttention");
  EXPECT_EQ(back.get_config(), gpt_of(model).get_config());
  EXPECT_EQ(logits(back, tokens).to_vector<float>(), before.to_vector<float>());
  const models::GenerateOptions o{.max_new_tokens = 10, .temperature = 0.7, .top_k = 4, .seed = 3};
  const Tensor prompt = sequences(2, 2, 8);
  EXPECT_EQ(models::generate(back, prompt, o).to_vector<int64_t>(),
            models::generate(gpt_of(model), prompt, o).to_vector<int64_t>());
  fs::remove_all(dir);
  const Tensor all = sequences(4, kBlock + 1, 1);
  testing::expect_error<ValueError>(
      [&] {
        model.fit(all.narrow(1, 0, kBlock).contiguous(), all.narrow(1, 1, kBlock).contiguous(),
                  {.batch_size = 4, .epochs = 1, .verbose = 0});
      },
      {"fit: model 'gpt' holds int8-quantized layers (token_embedding, self_attention, "
       "feedforward_intermediate_dense, feedforward_output_dense, self_attention"});
}

TEST(QuantizeGptTest, Float8GptTrainsAndSavesItsScalingState) {
  nn::clear_session();
  set_global_seed(13);
  Model model(std::make_shared<models::GPT>(config()));
  compile(model);
  train(model, 5, 200);
  const std::vector<std::string> done =
      model.quantize("float8", {.float8 = {.amax_history_length = 4}});
  EXPECT_EQ(done.size(), 2u * 6u);  // per block: 4 attention kernels and 2 dense ones
  models::GPT& gpt = gpt_of(model);
  EXPECT_EQ(gpt.get_layer("token_embedding")->class_name(), "Embedding");
  EXPECT_EQ(class_of(gpt, "block_0", "self_attention"), "Float8MultiHeadAttention");
  EXPECT_EQ(class_of(gpt, "block_0", "feedforward_intermediate_dense"), "Float8Dense");
  const Tensor held_out = sequences(16, kBlock + 1, 77);
  const Tensor x = held_out.narrow(1, 0, kBlock).contiguous();
  const Tensor y = held_out.narrow(1, 1, kBlock).contiguous();
  const double loss_before = model.evaluate(x, y).at("loss");
  train(model, 30, 300);
  const double loss_after = model.evaluate(x, y).at("loss");
  EXPECT_LT(loss_after, loss_before);
  auto attention = std::dynamic_pointer_cast<quant::Float8MultiHeadAttention>(
      gpt.get_layer("block_1")->sublayers()[1]);
  ASSERT_NE(attention, nullptr);
  const std::vector<float> history = [&] {
    for (const nn::Weight& w : attention->own_weights()) {
      if (w.name == "attention_output/outputs_grad_amax_history")
        return w.variable.value().to_vector<float>();
    }
    return std::vector<float>{};
  }();
  ASSERT_EQ(history.size(), 4u);
  EXPECT_GT(*std::min_element(history.begin(), history.end()), 0.0f);  // 30 steps filled all 4

  const fs::path dir = temp_dir("float8");
  model.save(dir.string());
  Model loaded = load_model(dir.string());
  const auto vs = model.variables(), ls = loaded.variables();
  ASSERT_EQ(ls.size(), vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    EXPECT_EQ(ls[i].name(), vs[i].name());
    EXPECT_EQ(ls[i].value().to_vector<float>(), vs[i].value().to_vector<float>()) << vs[i].name();
  }
  EXPECT_EQ(class_of(gpt_of(loaded), "block_1", "self_attention"), "Float8MultiHeadAttention");
  EXPECT_EQ(logits(gpt_of(loaded), x).to_vector<float>(), logits(gpt, x).to_vector<float>());
  fs::remove_all(dir);
}

// The swaps inside a TransformerEncoder travel through a Sequential's config too, and a
// GroupedQueryAttention becomes a QuantizedMultiHeadAttention with its fewer key/value heads.
TEST(QuantizeGptTest, TransformerEncoderAndGroupedQueryAttentionQuantizeAndLoad) {
  nn::clear_session();
  set_global_seed(14);
  auto net = std::make_shared<models::Sequential>(
      std::vector<std::shared_ptr<nn::Layer>>{layers::TransformerEncoder(16, 2), layers::Dense(3)},
      models::SequentialOptions{.input_shape = {5, 8}});
  const Tensor x = random_normal({4, 5, 8}, {.seed = 2});
  const Tensor before = (*net)(Variable(x)).value().clone();
  EXPECT_EQ(quant::quantize(*net, "int8").size(), 4u + 2u + 1u);
  const Tensor after = (*net)(Variable(x)).value();
  EXPECT_LT(max(abs(sub(after, before))).item(), 0.02 * max(abs(before)).item());
  const fs::path dir = temp_dir("encoder");
  models::save_model(*net, dir);
  const models::LoadedModel loaded = models::load_model(dir);
  EXPECT_EQ((*loaded.model)(Variable(x)).value().to_vector<float>(), after.to_vector<float>());
  fs::remove_all(dir);

  auto gqa = layers::GroupedQueryAttention(4, 4, 2, {.name = "gqa"});
  const Tensor q = random_normal({2, 6, 16}, {.seed = 3});
  const Tensor float_out =
      gqa->attend(Variable(q), Variable(q), {}, {.use_causal_mask = true}).value().clone();
  auto int8 = quant::QuantizedMultiHeadAttention::from_attention(*gqa);
  EXPECT_EQ(int8->num_key_value_heads(), 2);
  const Tensor int8_out =
      int8->attend(Variable(q), Variable(q), {}, {.use_causal_mask = true}).value();
  EXPECT_LT(max(abs(sub(int8_out, float_out))).item(), 0.02 * max(abs(float_out)).item());
  const nlohmann::json saved = nn::serialize_layer(*int8);
  quant::register_layers();
  auto back = nn::deserialize_layer(saved, "gqa");
  back->build(int8->build_input_shapes());
  EXPECT_EQ(back->get_config(), int8->get_config());
}

}  // namespace
}  // namespace osprey
