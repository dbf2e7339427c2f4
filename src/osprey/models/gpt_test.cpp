// Tests of models/gpt.h: the GPT's forward against a float64 PyTorch reference
// (gpt_torch_references.py), the key/value cache against the full forward, generation with the
// cache against generation without it (greedy and sampled), saving, and the errors that name
// the argument.
#include "osprey/models/gpt.h"

#include <gtest/gtest.h>

#include "osprey/io/io_test_util.h"
#include "osprey/models/gpt_torch_values.h"
#include "osprey/models/saving.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

using nn::test::value_error;
using nn::test::wave;

// The reference model's shape: vocab 11, block 8, 2 layers, 2 heads, n_embd 16, no biases.
GPTConfig small_config() {
  return {.vocab_size = 11, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16};
}

// Every weight from wave() with its index as the tag (LayerNormalization scales around 1), as
// gpt_torch_references.py makes them.
void set_wave_weights(GPT& gpt) {
  std::vector<Tensor> w;
  int tag = 0;
  for (const Variable& v : gpt.variables()) {
    const bool gamma = v.name().ends_with("gamma");
    w.push_back(wave(v.shape(), tag++, 0.1, gamma ? 1.0 : 0.0).to(v.dtype()));
  }
  gpt.set_weights(w);
}

// Token ids (7 j + 3 i + 5 t) mod 11 at row j, position t of batch i: the reference's batch().
Tensor reference_tokens(int64_t i, int64_t rows = 3, int64_t steps = 8) {
  std::vector<int64_t> ids;
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t t = 0; t < steps; ++t) ids.push_back((7 * j + 3 * i + 5 * t) % 11);
  }
  return from_vector<int64_t>(ids, {rows, steps});
}

std::vector<float> logits(GPT& gpt, const Tensor& tokens) {
  return gpt.call_all({Variable(tokens)}, false)[0].value().to_vector<float>();
}

TEST(GptTest, WeightsAreNamedAndOrderedAsTheReference) {
  GPT gpt(small_config());
  std::vector<std::string> names;
  for (const Variable& v : gpt.variables()) names.push_back(v.name());
  ASSERT_EQ(names.size(), 19u);
  EXPECT_EQ(names[0], "gpt/token_embedding/embeddings");
  EXPECT_EQ(names[1], "gpt/position_embedding/embeddings");
  EXPECT_EQ(names[2], "gpt/block_0/self_attention_layer_norm/gamma");
  EXPECT_EQ(names[3], "gpt/block_0/self_attention/query/kernel");
  EXPECT_EQ(names[6], "gpt/block_0/self_attention/attention_output/kernel");
  EXPECT_EQ(names[7], "gpt/block_0/feedforward_layer_norm/gamma");
  EXPECT_EQ(names[8], "gpt/block_0/feedforward_intermediate_dense/kernel");
  EXPECT_EQ(names[9], "gpt/block_0/feedforward_output_dense/kernel");
  EXPECT_EQ(names[18], "gpt/final_norm/gamma");
  // nanoGPT's size for this shape: 11*16 + 8*16 + 2 * (16 + 4*256 + 16 + 2*1024) + 16.
  EXPECT_EQ(gpt.count_params(), 176 + 128 + 2 * (16 + 1024 + 16 + 2048) + 16);
}

TEST(GptTest, ForwardMatchesPyTorch) {
  GPT gpt(small_config());
  set_wave_weights(gpt);
  const std::vector<float> got = logits(gpt, reference_tokens(0));
  ASSERT_EQ(got.size(), test::kGptLogits0.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], test::kGptLogits0[i], 1e-5 * (1 + std::abs(test::kGptLogits0[i])))
        << "logit " << i;
  }
}

TEST(GptTest, CachedStepsEqualTheFullForward) {
  GPT gpt(small_config());
  const Tensor tokens = reference_tokens(1, 2, 8);
  const std::vector<float> full = logits(gpt, tokens);
  GPT::Cache cache = gpt.make_cache(2);
  // A prefix of 3 (causal prefill), one token, then 4 at once (each seeing the cache and the
  // ones before it).
  std::vector<Tensor> parts = {gpt.next_logits(tokens.narrow(1, 0, 3).contiguous(), cache),
                               gpt.next_logits(tokens.narrow(1, 3, 1).contiguous(), cache),
                               gpt.next_logits(tokens.narrow(1, 4, 4).contiguous(), cache)};
  EXPECT_EQ(cache.length(), 8);
  std::vector<float> stepped(full.size());
  int64_t at = 0;
  for (const Tensor& p : parts) {
    const int64_t t = p.size(1), v = p.size(2);
    const std::vector<float> values = p.to_vector<float>();
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < t * v; ++i)
        stepped[static_cast<size_t>(b * 8 * v + at * v + i)] =
            values[static_cast<size_t>(b * t * v + i)];
    }
    at += t;
  }
  for (size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(stepped[i], full[i], 1e-5) << i;
}

TEST(GptTest, GenerationWithTheCacheEqualsGenerationWithout) {
  GPT gpt(small_config());
  const Tensor prompt = reference_tokens(2, 2, 3);
  // 3 + 12 tokens outgrow block_size 8: the window slides for the last steps.
  for (const GenerateOptions& o :
       {GenerateOptions{.max_new_tokens = 12, .temperature = 0.0},
        GenerateOptions{.max_new_tokens = 12, .temperature = 0.8, .top_k = 5, .seed = 7},
        GenerateOptions{.max_new_tokens = 12, .temperature = 1.3, .top_p = 0.9, .seed = 9}}) {
    GenerateOptions uncached = o;
    uncached.use_cache = false;
    const Tensor a = generate(gpt, prompt, o);
    const Tensor b = generate(gpt, prompt, uncached);
    ASSERT_EQ(a.shape(), (Shape{2, 15}));
    EXPECT_EQ(a.to_vector<int64_t>(), b.to_vector<int64_t>()) << "temperature " << o.temperature;
    EXPECT_EQ(a.narrow(1, 0, 3).contiguous().to_vector<int64_t>(), prompt.to_vector<int64_t>());
    for (int64_t id : a.to_vector<int64_t>()) EXPECT_TRUE(id >= 0 && id < 11);
  }
}

// The window form, for any causal language model: the GPT run as a plain Network on windows
// right-padded to block_size draws the very tokens of its own generate(), since no position sees
// the padding after it; so the padding changes nothing, the window slides past block_size as it
// should, and each row reads its last real position.
TEST(GptTest, WindowGenerationOfACausalNetworkEqualsTheGpts) {
  GPT gpt(small_config());
  const Tensor prompt = reference_tokens(2, 2, 3);
  for (const GenerateOptions& o :
       {GenerateOptions{.max_new_tokens = 12, .temperature = 0.0},
        GenerateOptions{.max_new_tokens = 12, .temperature = 0.8, .top_k = 5, .seed = 7}}) {
    const Tensor a = generate(gpt, prompt, o);
    const Tensor b = generate(static_cast<Network&>(gpt), 8, prompt, o);
    EXPECT_EQ(a.to_vector<int64_t>(), b.to_vector<int64_t>()) << "temperature " << o.temperature;
  }
  EXPECT_EQ(
      value_error([&] { generate(static_cast<Network&>(gpt), 4, reference_tokens(0, 1, 5)); }),
      "generate: the prompt has 5 tokens; the model takes at most 4 (block_size)");
  EXPECT_EQ(
      value_error([&] { generate(static_cast<Network&>(gpt), 0, reference_tokens(0, 1, 2)); }),
      "generate: block_size must be >= 1. Received: 0");
}

TEST(GptTest, SamplingFollowsTheSeedAndTopKOfOneIsGreedy) {
  GPT gpt(small_config());
  const Tensor prompt = reference_tokens(3, 1, 2);
  const auto run = [&](GenerateOptions o) {
    o.max_new_tokens = 6;
    return generate(gpt, prompt, o).to_vector<int64_t>();
  };
  EXPECT_EQ(run({.temperature = 1.0, .seed = 1}), run({.temperature = 1.0, .seed = 1}));
  EXPECT_EQ(run({.temperature = 1.0, .top_k = 1, .seed = 4}), run({.temperature = 0.0}));
  bool differs = false;
  for (uint64_t s = 2; s < 8 && !differs; ++s)
    differs = run({.temperature = 2.0, .seed = 1}) != run({.temperature = 2.0, .seed = s});
  EXPECT_TRUE(differs) << "six seeds drew the same six tokens at temperature 2";
}

TEST(GptTest, SavesAndLoads) {
  io::testing::TempDir dir;
  auto gpt = std::make_shared<GPT>(small_config(), "shakespeare");
  save_model(*gpt, dir.path() / "m");
  LoadedModel loaded = load_model(dir.path() / "m");
  auto* back = dynamic_cast<GPT*>(loaded.model.get());
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->name(), "shakespeare");
  EXPECT_EQ(back->config().n_layer, 2);
  const Tensor tokens = reference_tokens(4);
  EXPECT_EQ(logits(*back, tokens), logits(*gpt, tokens));
}

TEST(GptTest, BadInputIsNamed) {
  GPT gpt(small_config());
  EXPECT_EQ(value_error([&] { generate(gpt, reference_tokens(0, 1, 9)); }),
            "generate: the prompt has 9 tokens; the model takes at most 8 (block_size)");
  EXPECT_EQ(value_error([&] {
              logits(gpt, from_vector<int64_t>({1, 2, 11}, {1, 3}));
            }),
            "gpt: token id 11 at position 2 is outside the vocabulary [0, 11)");
  EXPECT_EQ(value_error([&] { logits(gpt, reference_tokens(0, 1, 9)); }),
            "gpt: 9 tokens after 0 run past block_size (8), the longest context the model takes");
  GPT::Cache cache = gpt.make_cache(1);
  gpt.next_logits(reference_tokens(0, 1, 6), cache);
  EXPECT_EQ(value_error([&] { gpt.next_logits(reference_tokens(0, 1, 3), cache); }),
            "gpt: 3 tokens after 6 run past block_size (8), the longest context the model takes");
  EXPECT_EQ(value_error([&] { generate(gpt, reference_tokens(0, 1, 2), {.top_p = 0.0}); }),
            "generate: top_p must be in (0, 1]. Received: 0");
  GPTConfig odd = small_config();
  odd.n_head = 3;
  EXPECT_EQ(value_error([&] { GPT g(odd); }),
            "GPT: n_embd (16) must be a multiple of n_head (3), which splits it into heads");
}

}  // namespace
}  // namespace osprey::models
