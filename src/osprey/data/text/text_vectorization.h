// TextVectorization: raw strings to the tensors a model takes, as keras.layers.TextVectorization.
// Each text is standardized (ASCII lowercase, ASCII punctuation removed), split (ASCII
// whitespace, or UTF-8 characters), expanded to n-grams, and looked up in a vocabulary learned
// by adapt() or given. It runs before the model, on the host, as Keras runs it in tf.data;
// to_json()/from_json() (or save/load) keep its state beside the model's weights.
//   text::TextVectorization vectorize({.max_tokens = 20000, .output_sequence_length = 200});
//   vectorize.adapt(train.texts);                 // vocabulary by frequency: "", "[UNK]", "the"...
//   Tensor x = vectorize({"The cat sat.", "A dog"});   // int64 [2, 200]: 0 = padding, 1 = OOV
//   // output_mode "multi_hot", "count", "tf_idf": float32 [2, vocabulary_size()]
// Strings come as std::vector<std::string>, one per example (osprey tensors are numeric).
// Where osprey differs: split=none gives int64 [N, 1] (Keras: [N]); ngrams takes one N (Keras
// also takes a tuple of widths); standardize and split take Keras's names, not callables.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/text/index_lookup.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct TextVectorizationOptions {
  // The vocabulary's size with the reserved indices (padding and OOV); unset: every token.
  std::optional<int64_t> max_tokens = std::nullopt;
  // "lower_and_strip_punctuation", "lower", "strip_punctuation"; nullopt: none (Keras's None).
  std::optional<std::string> standardize = "lower_and_strip_punctuation";
  // "whitespace", "character"; nullopt: each text is one token.
  std::optional<std::string> split = "whitespace";
  // N: the 1-, 2-, ..., N-grams of the tokens, joined by a space; nullopt: the tokens alone.
  std::optional<int64_t> ngrams = std::nullopt;
  std::string output_mode = "int";  // "int", "multi_hot", "count", "tf_idf"
  // int: pad (with 0) or cut every row to this length; unset: the longest row in the batch.
  std::optional<int64_t> output_sequence_length = std::nullopt;
  // multi_hot, count, tf_idf: output width max_tokens even when the vocabulary is smaller.
  bool pad_to_max_tokens = false;
  // A given vocabulary (without "" and "[UNK]", or starting with them); adapt() is then refused.
  std::vector<std::string> vocabulary = {};
  std::vector<float> idf_weights = {};  // tf_idf with a given vocabulary: one per term
};

class TextVectorization {
 public:
  // ValueError naming the field for a bad option, as Keras's checks.
  explicit TextVectorization(TextVectorizationOptions options = {});

  // Learns the vocabulary (and idf weights) from `texts`. ValueError when they hold no token.
  void adapt(const std::vector<std::string>& texts);
  void set_vocabulary(std::vector<std::string> vocabulary, std::vector<float> idf_weights = {});
  // "" (int mode) and "[UNK]" first, then the tokens: a term's index is its output value.
  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const { return lookup_.vocabulary_size(); }
  const TextVectorizationOptions& options() const { return options_; }

  // int: int64 [N, length] (Embedding's indices); others: float32 [N, depth].
  Tensor operator()(const std::vector<std::string>& texts) const;
  // The tokens (n-grams included) of one text after standardize and split: what gets looked up.
  std::vector<std::string> tokens(const std::string& text) const;

  // {"config": {Keras's field names}, "vocabulary": [...], "idf_weights": [...]}.
  nlohmann::json to_json() const;
  static TextVectorization from_json(const nlohmann::json& j);
  // The JSON in a file; IoError naming the file.
  void save(const std::string& path) const;
  static TextVectorization load(const std::string& path);

 private:
  TextVectorization(TextVectorizationOptions options, detail::IndexLookup<std::string> lookup);
  TextVectorizationOptions options_;
  detail::IndexLookup<std::string> lookup_;
};

}  // namespace osprey::data::text
