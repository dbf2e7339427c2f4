// GPT: a decoder-only transformer language model in nanoGPT's shape (Karpathy's model.py, itself
// GPT-2's): token and learned position embeddings, n_layer pre-norm TransformerDecoder blocks
// (causal self-attention, a 4x GELU feed-forward network), a final LayerNormalization and a
// head onto the vocabulary that shares the token embedding's table (weight tying). tokens
// [batch, T] (int, T <= block_size) -> logits [batch, T, vocab_size]; train it with
// sparse_categorical_crossentropy from logits. generate() samples from it with a key/value
// cache, so each new token costs one step, not a re-run of the prefix.
//   auto net = std::make_shared<models::GPT>(models::GPTConfig{.vocab_size = 65});
//   Tensor next = models::generate(*net, prompt, {.max_new_tokens = 200, .top_k = 10});
// applications::gpt() wraps one in a Model ready to compile. quant::quantize(gpt, "int8" |
// "float8") swaps its layers through replace_sublayer (the blocks' too), and the config keeps the
// swaps (nn/sublayer_swaps.h), so a quantized GPT saves, loads and generates.
#pragma once

#include "osprey/models/network.h"
#include "osprey/nn/layers/transformer.h"
#include "osprey/nn/sublayer_swaps.h"

namespace osprey::models {

struct GPTConfig {
  int64_t vocab_size = 65;
  int64_t block_size = 64;  // the longest sequence (context) the model takes
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  double dropout = 0.0;     // after the embeddings, attention and feed-forward outputs
  bool bias = false;        // biases in the projections and LayerNormalization's beta (nanoGPT)
  bool tie_weights = true;  // the head is the token embedding's table transposed
  std::string dtype{};      // dtype policy; empty: the global one
};

class GPT : public Network {
 public:
  explicit GPT(GPTConfig config, std::string name = "");
  const GPTConfig& config() const { return config_; }

  std::vector<std::shared_ptr<nn::Layer>> layers() const override;
  // Network::replace_sublayer for any of the layers: a block must stay a TransformerDecoder and,
  // with tie_weights, the token embedding an nn::TiedEmbedding (the head reads its table).
  void replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) override;
  // [tokens] -> [logits]
  std::vector<Variable> call_all(const std::vector<Variable>& inputs, bool training) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<LayerRow> summary_rows() const override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

  // Incremental decoding: one key/value cache per block, holding up to block_size positions.
  struct Cache {
    std::vector<nn::AttentionCache> blocks;
    int64_t length() const { return blocks.empty() ? 0 : blocks[0].length; }
  };
  Cache make_cache(int64_t batch) const;
  // The logits [batch, t, vocab] (float32) of the next t tokens [batch, t] after those already
  // in the cache, which they join. No gradients. ValueError naming the model when they would
  // run past block_size or hold an id outside the vocabulary.
  Tensor next_logits(const Tensor& tokens, Cache& cache);

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;

 private:
  GPT(GPTConfig config, std::string name, nn::SublayerSwaps swaps);
  Variable head(const Variable& h);
  void check_tokens(const Tensor& tokens, int64_t start) const;

  GPTConfig config_;
  std::shared_ptr<nn::Layer> token_embedding_, position_embedding_, embedding_dropout_, final_norm_,
      lm_head_;
  std::vector<std::shared_ptr<nn::TransformerDecoder>> blocks_;
  nn::SublayerSwaps swaps_;
};

struct GenerateOptions {
  int64_t max_new_tokens = 256;
  double temperature = 1.0;  // 0: greedy (the most likely token every step)
  int64_t top_k = 0;         // sample among the k most likely (0: all)
  double top_p = 1.0;        // sample among the smallest set holding this probability (nucleus)
  uint64_t seed = 0;         // the draws are a function of (seed, batch row, step)
  // Off: every step re-runs the whole context, as nanoGPT's generate(); the tokens are the same,
  // only slower. Either way, once the sequence outgrows block_size the context is its last
  // block_size tokens, whose positions shift every step, so each such step re-runs that window.
  bool use_cache = true;
};

// prompt [batch, T] int (1 <= T <= block_size) -> [batch, T + max_new_tokens] int64: the prompt
// followed by the sampled tokens. ValueError naming the argument for a bad prompt or options.
Tensor generate(GPT& model, const Tensor& prompt, const GenerateOptions& options = {});

// The same sampling from any causal language model over windows of block_size tokens: `model`
// maps token ids [batch, block_size] to logits [batch, block_size, vocab] where position t
// depends on tokens 0..t only (tune::HyperTransformer's and HyperLSTM's language models,
// applications::rnn_language_model). Each step runs the last block_size tokens right-padded with
// token 0 to block_size, which changes nothing before the padding, and reads the logits of the
// last real one; no cache (options.use_cache is ignored). Same prompt and option checks.
Tensor generate(Network& model, int64_t block_size, const Tensor& prompt,
                const GenerateOptions& options = {});

}  // namespace osprey::models
