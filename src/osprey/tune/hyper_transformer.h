// HyperTransformer: a prebuilt hypermodel for token ids [batch, sequence_length] (ints in
// [0, vocab_size)), a small transformer in the shape of Keras's text classifier example and of
// nanoGPT, each part under hyperparameters:
//   Embedding(vocab_size, embed_dim) + PositionEmbedding(sequence_length) -> Dropout(dropout)
//   -> num_layers x TransformerEncoder (classification) or TransformerDecoder (language_model:
//      causal, position t sees 0..t)(ff_dim, num_heads, gelu, pre-norm, dropout)
//   -> LayerNormalization (the pre-norm stack's final one, GPT-2's)
//   classification: -> GlobalAveragePooling1D or GlobalMaxPooling1D -> Dense(num_classes,
//                      softmax), compiled with sparse_categorical_crossentropy and accuracy;
//   language_model: -> Dense(vocab_size): logits of the next token at every position
//                      [batch, T, vocab_size], compiled with sparse_categorical_crossentropy
//                      from logits and accuracy (of the next token).
// Pre-norm blocks train at the default rate without a warm-up, which a short budget needs. The
// defaults (a build with no trial values) are two blocks of 4 heads over embed_dim 64 with
// ff_dim 128, dropout 0.1, adam at 1e-3: as a language model of Tiny Shakespeare's characters
// (vocabulary 65, sequence_length 64, batch 32) that is 80 k parameters, and 300 steps take the
// validation loss to 2.40 (the uniform guess is ln 65 = 4.17; HyperLSTM's defaults reach 2.59
// in those steps at a quarter of the time). The costliest corner (4 blocks of embed_dim 256 and
// ff_dim 512) is about 30x the default's block compute; fix num_layers or narrow embed_dim
// (`fixed`) when the budget is tight.
//   tune::RandomSearch tuner(std::make_shared<tune::HyperTransformer>(
//                                tune::HyperTransformerOptions{.vocab_size = 20000,
//                                                              .sequence_length = 200,
//                                                              .num_classes = 2}),
//                            {.objective = "val_accuracy", .max_trials = 10});
// `fixed` fixes or narrows hyperparameters as HyperMLP's does (hyper_mlp.h):
//   tune::HyperParameters fixed;
//   fixed.set("num_layers", int64_t{1});                  // a value fixes
//   fixed.Choice("num_heads", {int64_t{2}, int64_t{4}});  // a declaration narrows
// embed_dim must divide by num_heads (each head takes embed_dim / num_heads features) for every
// pair the space can draw; the built-in ranges (multiples of 32, at most 8 heads) always do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

struct HyperTransformerOptions {
  int64_t vocab_size = 0;       // token ids lie in [0, vocab_size); at least 2
  int64_t sequence_length = 0;  // tokens per sample (the position table's length)
  // "classification" (one label per sequence) or "language_model" (the next token at every
  // position; hyper_text.h).
  std::string task = "classification";
  int num_classes = 0;  // classification: at least 2; language_model: 0
  std::optional<HyperParameters> fixed{};
};

class HyperTransformer : public HyperModel {
 public:
  // ValueError for a bad vocab_size, sequence_length, task or num_classes (hyper_text.h), a
  // `fixed` entry the model cannot use, or a space that can draw an embed_dim that num_heads
  // does not divide.
  explicit HyperTransformer(HyperTransformerOptions options);
  Model build(HyperParameters& hp) override;
  const HyperTransformerOptions& options() const { return options_; }

 private:
  HyperTransformerOptions options_;
};

}  // namespace osprey::tune
