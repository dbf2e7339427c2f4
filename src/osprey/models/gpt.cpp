#include "osprey/models/gpt.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/embedding.h"
#include "osprey/nn/layers/layer_normalization.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/position_embedding.h"
#include "osprey/tensor/factory.h"

namespace osprey::models {

namespace {

void check_config(const GPTConfig& c) {
  OSPREY_CHECK(
      c.vocab_size > 0 && c.block_size > 0 && c.n_layer > 0 && c.n_head > 0 && c.n_embd > 0,
      "GPT: vocab_size, block_size, n_layer, n_head and n_embd must be positive. "
      "Received: vocab_size={}, block_size={}, n_layer={}, n_head={}, n_embd={}",
      c.vocab_size, c.block_size, c.n_layer, c.n_head, c.n_embd);
  OSPREY_CHECK(c.n_embd % c.n_head == 0,
               "GPT: n_embd ({}) must be a multiple of n_head ({}), which splits it into heads",
               c.n_embd, c.n_head);
}

nn::LayerOptions gpt_options(const GPTConfig& c, std::string name) {
  return {name.empty() ? "gpt" : std::move(name), c.dtype, true};
}

}  // namespace

GPT::GPT(GPTConfig config, std::string name) : GPT(std::move(config), std::move(name), {}) {}

GPT::GPT(GPTConfig config, std::string name, nn::SublayerSwaps swaps)
    : Network("GPT", (check_config(config), gpt_options(config, std::move(name)))),
      config_(std::move(config)),
      swaps_(std::move(swaps)) {
  const GPTConfig& c = config_;
  const std::string dtype = dtype_policy().name();
  // nanoGPT's initialization: every matrix N(0, 0.02), the projections back into the residual
  // stream N(0, 0.02 / sqrt(2 * n_layer)).
  const nn::Initializer normal = nn::initializers::RandomNormal(0.0, 0.02);
  token_embedding_ = std::make_shared<nn::Embedding>(
      c.vocab_size, c.n_embd,
      nn::EmbeddingOptions{
          .embeddings_initializer = normal, .name = "token_embedding", .dtype = dtype});
  position_embedding_ = std::make_shared<nn::PositionEmbedding>(
      c.block_size, nn::PositionEmbeddingOptions{
                        .initializer = normal, .name = "position_embedding", .dtype = dtype});
  embedding_dropout_ = std::make_shared<nn::Dropout>(
      c.dropout, nn::DropoutOptions{.name = "embedding_dropout", .dtype = dtype});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    blocks_.push_back(std::make_shared<nn::TransformerDecoder>(
        4 * c.n_embd, c.n_head,
        nn::TransformerOptions{.dropout = c.dropout,
                               .activation = "gelu",
                               .layer_norm_epsilon = 1e-5,
                               .normalize_first = true,
                               .use_bias = c.bias,
                               .kernel_initializer = normal,
                               .output_kernel_initializer = nn::initializers::RandomNormal(
                                   0.0, 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer))),
                               .name = "block_" + std::to_string(i),
                               .dtype = dtype}));
  }
  final_norm_ = std::make_shared<nn::LayerNormalization>(nn::LayerNormalizationOptions{
      .epsilon = 1e-5, .center = c.bias, .name = "final_norm", .dtype = dtype});
  if (!c.tie_weights) {
    lm_head_ = std::make_shared<nn::Dense>(
        c.vocab_size, "linear",
        nn::DenseOptions{
            .use_bias = false, .kernel_initializer = normal, .name = "lm_head", .dtype = dtype});
  }
  // The layers a saved model had swapped (quant::quantize's forms) come from their saved configs.
  token_embedding_ = swaps_.resolve(token_embedding_, this->name());
  for (auto& b : blocks_) b = swaps_.resolve(b, this->name());
  if (lm_head_) lm_head_ = swaps_.resolve(lm_head_, this->name());
  OSPREY_CHECK(lm_head_ || dynamic_cast<nn::TiedEmbedding*>(token_embedding_.get()) != nullptr,
               "{}: with tie_weights, the token embedding must share its table (a TiedEmbedding). "
               "Received: {}",
               this->name(), token_embedding_->class_name());
  for (const auto& l : layers()) adopt(l);
  // Built now: the shapes follow from the config, so a loaded model's weights have somewhere to
  // go before any call.
  build({Shape{-1, c.block_size}});
}

std::vector<std::shared_ptr<nn::Layer>> GPT::layers() const {
  std::vector<std::shared_ptr<nn::Layer>> out = {token_embedding_, position_embedding_,
                                                 embedding_dropout_};
  out.insert(out.end(), blocks_.begin(), blocks_.end());
  out.push_back(final_norm_);
  if (lm_head_) out.push_back(lm_head_);
  return out;
}

void GPT::build_impl(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape tokens = input_shapes[0];
  const Shape seq{tokens[0], tokens[1], config_.n_embd};
  token_embedding_->build({tokens});
  position_embedding_->build({seq});
  embedding_dropout_->build({seq});
  for (const auto& b : blocks_) b->build({seq});
  final_norm_->build({seq});
  if (lm_head_) lm_head_->build({seq});
}

Shape GPT::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  OSPREY_CHECK(s.ndim() == 2 && s[1] <= config_.block_size,
               "{}: expected tokens [batch, T] with T <= block_size ({}). Received: {}", name(),
               config_.block_size, s.to_string());
  return {s[0], s[1], config_.vocab_size};
}

void GPT::check_tokens(const Tensor& tokens, int64_t start) const {
  const Shape& s = tokens.shape();
  OSPREY_CHECK(s.ndim() == 2 && s[1] >= 1,
               "{}: expected tokens [batch, T] with T >= 1. Received: {}", name(), s.to_string());
  OSPREY_CHECK(tokens.dtype() == DType::int32 || tokens.dtype() == DType::int64,
               "{}: tokens must be int32 or int64 ids. Received: {}", name(),
               dtype_name(tokens.dtype()));
  OSPREY_CHECK(start + s[1] <= config_.block_size,
               "{}: {} tokens after {} run past block_size ({}), the longest context the model "
               "takes",
               name(), s[1], start, config_.block_size);
  const Tensor ids = tokens.to(DType::int64).contiguous();
  const auto* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    OSPREY_CHECK(p[i] >= 0 && p[i] < config_.vocab_size,
                 "{}: token id {} at position {} is outside the vocabulary [0, {})", name(), p[i],
                 i, config_.vocab_size);
  }
}

void GPT::replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) {
  // The layers the model reads through a concrete type keep it: the head reads the token
  // embedding's table (with tie_weights), every step the position embedding's rows.
  if (layer != nullptr && name == token_embedding_->name()) {
    OSPREY_CHECK(lm_head_ || dynamic_cast<nn::TiedEmbedding*>(layer.get()) != nullptr,
                 "{}: the head shares the token embedding's table (tie_weights), so '{}' must "
                 "stay a TiedEmbedding. Received: {}",
                 this->name(), name, layer->class_name());
  }
  if (layer != nullptr && name == position_embedding_->name()) {
    OSPREY_CHECK(dynamic_cast<nn::PositionEmbedding*>(layer.get()) != nullptr,
                 "{}: '{}' must stay a PositionEmbedding. Received: {}", this->name(), name,
                 layer->class_name());
  }
  const bool replaced = nn::replace_in_slot(token_embedding_, name, layer, *this) ||
                        nn::replace_in_slot(position_embedding_, name, layer, *this) ||
                        nn::replace_in_slot(embedding_dropout_, name, layer, *this) ||
                        nn::replace_in_slot(final_norm_, name, layer, *this) ||
                        nn::replace_in_slot(lm_head_, name, layer, *this) ||
                        std::any_of(blocks_.begin(), blocks_.end(), [&](auto& b) {
                          return nn::replace_in_slot(b, name, layer, *this);
                        });
  if (!replaced) get_layer(name);  // the ValueError listing the layers
  swaps_.record(name);
}

Variable GPT::head(const Variable& h) {
  if (lm_head_) return (*lm_head_)(h);
  // The table the lookup reads, float32 or int8 (quant::QuantizedEmbedding): the weights tied.
  return dynamic_cast<nn::TiedEmbedding&>(*token_embedding_).reverse(h);
}

std::vector<Variable> GPT::call_all(const std::vector<Variable>& inputs, bool training) {
  check_num_inputs(inputs.size(), 1);
  check_tokens(inputs[0].value(), 0);
  const int64_t t = inputs[0].shape()[1];
  auto& pos = static_cast<nn::PositionEmbedding&>(*position_embedding_);
  Variable h = autograd::add((*token_embedding_)(inputs[0], training), pos.positions(t));
  h = (*embedding_dropout_)(h, training);
  for (const auto& b : blocks_) h = (*b)(h, training);
  return {head((*final_norm_)(h, training))};
}

GPT::Cache GPT::make_cache(int64_t batch) const {
  Cache cache;
  for (const auto& b : blocks_)
    cache.blocks.push_back(b->self_attention()->make_cache(batch, config_.block_size));
  return cache;
}

Tensor GPT::next_logits(const Tensor& tokens, Cache& cache) {
  autograd::NoGradGuard no_grad;
  const int64_t start = cache.length();
  check_tokens(tokens, start);
  OSPREY_CHECK(cache.blocks.size() == blocks_.size(),
               "{}: the cache has {} blocks; the model has {} (use make_cache())", name(),
               cache.blocks.size(), blocks_.size());
  auto& pos = static_cast<nn::PositionEmbedding&>(*position_embedding_);
  Variable h =
      autograd::add((*token_embedding_)(Variable(tokens)), pos.positions(tokens.size(1), start));
  for (size_t i = 0; i < blocks_.size(); ++i) h = blocks_[i]->call_cached(h, cache.blocks[i]);
  return head((*final_norm_)(h)).value().to(DType::float32);
}

std::vector<Network::LayerRow> GPT::summary_rows() const {
  std::vector<LayerRow> rows;
  const Shape seq{-1, config_.block_size, config_.n_embd};
  for (const auto& l : layers())
    rows.push_back({l->name(), l->class_name(), seq, l->count_params()});
  rows.back().output_shape = {-1, config_.block_size, config_.vocab_size};
  if (!lm_head_) rows.back().output_shape = seq;  // the tied head has no row of its own
  return rows;
}

nlohmann::json GPT::get_config() const {
  nlohmann::json c = {{"name", name()},
                      {"trainable", trainable()},
                      {"dtype", dtype_policy().name()},
                      {"vocab_size", config_.vocab_size},
                      {"block_size", config_.block_size},
                      {"n_layer", config_.n_layer},
                      {"n_head", config_.n_head},
                      {"n_embd", config_.n_embd},
                      {"dropout", config_.dropout},
                      {"bias", config_.bias},
                      {"tie_weights", config_.tie_weights}};
  swaps_.write(c, layers());
  return c;
}

std::shared_ptr<nn::Layer> GPT::from_config(const nlohmann::json& c) {
  GPTConfig g;
  g.vocab_size = c.at("vocab_size").get<int64_t>();
  g.block_size = c.at("block_size").get<int64_t>();
  g.n_layer = c.at("n_layer").get<int64_t>();
  g.n_head = c.at("n_head").get<int64_t>();
  g.n_embd = c.at("n_embd").get<int64_t>();
  g.dropout = c.value("dropout", 0.0);
  g.bias = c.value("bias", false);
  g.tie_weights = c.value("tie_weights", true);
  g.dtype = c.value("dtype", std::string());
  nn::SublayerSwaps swaps;
  const std::string name = c.value("name", std::string());
  swaps.read(c, name.empty() ? "gpt" : name);
  // make_shared cannot reach the private constructor.
  std::shared_ptr<GPT> m(new GPT(g, name, std::move(swaps)));
  m->set_trainable(c.value("trainable", true));
  return m;
}

namespace {

// One token id from logits [vocab] under the options; u is a uniform draw in [0, 1).
int64_t sample(std::vector<float> logits, const GenerateOptions& o, double u) {
  const int64_t v = static_cast<int64_t>(logits.size());
  if (o.temperature == 0.0) {
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  }
  std::vector<int64_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  int64_t keep = o.top_k > 0 ? std::min(o.top_k, v) : v;
  std::vector<double> p(keep);
  const double top = logits[order[0]];
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[order[i]] - top) / o.temperature);
    total += p[i];
  }
  if (o.top_p < 1.0) {  // the smallest prefix whose probability reaches top_p
    double mass = 0;
    int64_t n = 0;
    while (n < keep && mass < o.top_p * total) mass += p[n++];
    keep = std::max<int64_t>(n, 1);
    total = mass;
  }
  double target = u * total;
  for (int64_t i = 0; i < keep; ++i) {
    target -= p[i];
    if (target < 0) return order[i];
  }
  return order[keep - 1];
}

// The checks and the loop both generate()s share: logits(out, begin, t) gives the logits
// [batch, steps, vocab] whose last step predicts token t from the context out[:, begin:t].
Tensor sample_tokens(
    const Tensor& prompt, int64_t block_size, const GenerateOptions& o,
    const std::function<Tensor(const Tensor& out, int64_t begin, int64_t t)>& logits_of) {
  OSPREY_CHECK(prompt.ndim() == 2 && prompt.size(1) >= 1 && prompt.size(0) >= 1,
               "generate: prompt must be token ids [batch, T] with T >= 1. Received: {}",
               prompt.shape().to_string());
  OSPREY_CHECK(prompt.size(1) <= block_size,
               "generate: the prompt has {} tokens; the model takes at most {} (block_size)",
               prompt.size(1), block_size);
  OSPREY_CHECK(o.max_new_tokens >= 0, "generate: max_new_tokens must be >= 0. Received: {}",
               o.max_new_tokens);
  OSPREY_CHECK(o.temperature >= 0, "generate: temperature must be >= 0. Received: {}",
               o.temperature);
  OSPREY_CHECK(o.top_k >= 0, "generate: top_k must be >= 0. Received: {}", o.top_k);
  OSPREY_CHECK(o.top_p > 0 && o.top_p <= 1, "generate: top_p must be in (0, 1]. Received: {}",
               o.top_p);
  autograd::NoGradGuard no_grad;
  const int64_t batch = prompt.size(0), t0 = prompt.size(1), total = t0 + o.max_new_tokens;
  Tensor out = zeros({batch, total}, {.dtype = DType::int64});
  out.narrow(1, 0, t0).copy_(prompt.to(DType::int64));
  auto* ids = out.data<int64_t>();
  const Philox rng(o.seed);
  for (int64_t t = t0; t < total; ++t) {
    // The context is the last block_size tokens.
    const Tensor logits = logits_of(out, std::max<int64_t>(0, t - block_size), t);
    const int64_t steps = logits.size(1), v = logits.size(2);
    const auto* l = logits.contiguous().data<float>();
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = l + (b * steps + steps - 1) * v;
      const auto words = rng(static_cast<uint64_t>(t), static_cast<uint64_t>(b));
      ids[b * total + t] =
          sample(std::vector<float>(row, row + v), o, Philox::to_unit_double(words[0], words[1]));
    }
  }
  return out;
}

}  // namespace

Tensor generate(GPT& model, const Tensor& prompt, const GenerateOptions& o) {
  GPT::Cache cache;
  return sample_tokens(
      prompt, model.config().block_size, o, [&](const Tensor& out, int64_t begin, int64_t t) {
        // With the cache, only the tokens it lacks run.
        if (o.use_cache && begin == 0) {
          if (cache.blocks.empty()) cache = model.make_cache(out.size(0));
          return model.next_logits(out.narrow(1, cache.length(), t - cache.length()).contiguous(),
                                   cache);
        }
        const Variable context(out.narrow(1, begin, t - begin).contiguous());
        return model.call_all({context}, false)[0].value().to(DType::float32);
      });
}

Tensor generate(Network& model, int64_t block_size, const Tensor& prompt,
                const GenerateOptions& o) {
  OSPREY_CHECK(block_size >= 1, "generate: block_size must be >= 1. Received: {}", block_size);
  return sample_tokens(prompt, block_size, o, [&](const Tensor& out, int64_t begin, int64_t t) {
    Tensor window = zeros({out.size(0), block_size}, {.dtype = DType::int64});
    window.narrow(1, 0, t - begin).copy_(out.narrow(1, begin, t - begin));
    const Tensor logits = model.call_all({Variable(window)}, false)[0].value();
    OSPREY_CHECK(logits.ndim() == 3 && logits.size(1) == block_size,
                 "generate: a language model gives logits [batch, {}, vocab] for {} tokens. "
                 "Received: {}",
                 block_size, block_size, logits.shape().to_string());
    return logits.narrow(1, 0, t - begin).to(DType::float32);
  });
}

}  // namespace osprey::models
