#include "osprey/tune/hyper_transformer.h"

#include <fmt/format.h>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tune/hyper_text.h"

namespace osprey::tune {

namespace {

struct TransformerValues {
  int64_t num_layers = 0, num_heads = 0, embed_dim = 0, ff_dim = 0;
  double dropout = 0;
  std::string pooling;  // classification only
  detail::OptimizerValues optimizer;
};

// Every hyperparameter, in the order a search space summary lists them (the header draws the
// network they shape): num_layers (1-4, 2); num_heads (1, 2, 4 or 8, 4); embed_dim (32-256 step
// 32, 64); ff_dim (64-512 step 64, 128); dropout (0-0.3 step 0.05, 0.1); pooling
// (global_average / global_max, global_average; classification only); optimizer and
// learning_rate (hyper_mlp.h).
TransformerValues declare_transformer(HyperParameters& hp, const detail::PrebuiltSpace& space,
                                      bool classifies) {
  TransformerValues v;
  v.num_layers = space.declare(hp, detail::int_hp("num_layers", 1, 4, {}, 2), 1, 32).as_int();
  const auto heads = HyperParameter::Choice(
      "num_heads", {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, true, int64_t{4});
  v.num_heads = space.declare(hp, heads, 1, 64).as_int();
  v.embed_dim = space.declare(hp, detail::int_hp("embed_dim", 32, 256, 32, 64), 1, 4096).as_int();
  v.ff_dim = space.declare(hp, detail::int_hp("ff_dim", 64, 512, 64, 128), 1, 16384).as_int();
  v.dropout =
      space
          .declare(hp, HyperParameter::Float("dropout", 0.0, 0.3, 0.05, Sampling::linear, 0.1), 0.0,
                   0.95)
          .as_double();
  if (classifies) {
    v.pooling = space
                    .declare(hp, HyperParameter::Choice("pooling", {"global_average", "global_max"},
                                                        {}, "global_average"))
                    .as_string();
  }
  v.optimizer = detail::declare_optimizer(hp, space);
  return v;
}

// Every value an Int or Choice hyperparameter can take.
std::vector<int64_t> int_values(const HyperParameter& h) {
  std::vector<int64_t> out;
  if (h.type == HpType::Int) {
    for (auto i = static_cast<int64_t>(h.min_value); i <= static_cast<int64_t>(h.max_value); ++i)
      if (h.contains(Value(i))) out.push_back(i);
  } else {
    for (const Value& v : h.values) out.push_back(v.as_int());
  }
  return out;
}

detail::TextTask text_task(const HyperTransformerOptions& o) {
  return {.owner = "HyperTransformer",
          .vocab_size = o.vocab_size,
          .sequence_length = o.sequence_length,
          .task = o.task,
          .num_classes = o.num_classes};
}

}  // namespace

HyperTransformer::HyperTransformer(HyperTransformerOptions options) : options_(std::move(options)) {
  const detail::TextTask task = text_task(options_);
  task.check();
  const detail::PrebuiltSpace space("HyperTransformer",
                                    options_.fixed ? &*options_.fixed : nullptr);
  HyperParameters all;
  declare_transformer(all, detail::PrebuiltSpace("HyperTransformer", nullptr), task.classifies());
  space.check_names(all);
  HyperParameters probe;
  declare_transformer(probe, space, task.classifies());  // the kind and range of every override
  for (const int64_t d : int_values(*probe.find("embed_dim"))) {
    for (const int64_t h : int_values(*probe.find("num_heads"))) {
      OSPREY_CHECK(d % h == 0,
                   "HyperTransformer: embed_dim must be divisible by num_heads (each head takes "
                   "embed_dim / num_heads features), but the space can draw embed_dim={} with "
                   "num_heads={}",
                   d, h);
    }
  }
}

Model HyperTransformer::build(HyperParameters& hp) {
  const detail::TextTask task = text_task(options_);
  const TransformerValues v = declare_transformer(
      hp, detail::PrebuiltSpace("HyperTransformer", options_.fixed ? &*options_.fixed : nullptr),
      task.classifies());
  auto tokens = nn::Input({options_.sequence_length}, "tokens", DType::int64);
  // Positions start as small as tokens (keras_hub's TokenAndPositionEmbedding gives both Keras's
  // "uniform"): PositionEmbedding's own glorot default is about 8x the token vectors at these
  // widths, and the tokens take many more steps to stand out.
  const nn::EmbeddingOptions embedding;
  auto x = layers::Embedding(options_.vocab_size, v.embed_dim, embedding)(tokens);
  auto positions = layers::PositionEmbedding(options_.sequence_length,
                                             {.initializer = embedding.embeddings_initializer})(x);
  auto h = layers::Add()(std::vector{x, positions});
  if (v.dropout > 0) h = layers::Dropout(v.dropout)(h);
  const nn::TransformerOptions block{
      .dropout = v.dropout, .activation = "gelu", .normalize_first = true};
  for (int64_t i = 0; i < v.num_layers; ++i) {
    h = task.classifies() ? layers::TransformerEncoder(v.ff_dim, v.num_heads, block)(h)
                          : layers::TransformerDecoder(v.ff_dim, v.num_heads, block)(h);
  }
  h = layers::LayerNormalization({.epsilon = block.layer_norm_epsilon})(h);
  if (task.classifies()) {
    h = v.pooling == "global_max" ? layers::GlobalMaxPooling1D()(h)
                                  : layers::GlobalAveragePooling1D()(h);
  }
  Model model(std::make_shared<models::Functional>(std::vector{tokens},
                                                   std::vector{(*task.output_layer())(h)}));
  task.compile(model, v.optimizer);
  return model;
}

}  // namespace osprey::tune
